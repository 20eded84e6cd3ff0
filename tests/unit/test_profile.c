/* Unit tests for the profile model: stack dedup, buckets, live table, scaling. */
/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include <math.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/hash.h"
#include "profile/profile.h"
#include "profile/sampler.h"

struct sum {
	size_t nbuckets;
	uint64_t alloc_count, alloc_bytes, inuse_count, inuse_bytes;
	const struct profile_bucket *last;
	struct profile_bucket copy[16];
	uint64_t pcs[16][PROFILE_MAX_FRAMES];
};

static int sum_cb(const struct profile_bucket *b, void *arg)
{
	struct sum *s = arg;

	if (s->nbuckets < 16) {
		s->copy[s->nbuckets] = *b;
		memcpy(s->pcs[s->nbuckets], b->pcs, b->npcs * sizeof(*b->pcs));
		s->copy[s->nbuckets].pcs = s->pcs[s->nbuckets];
	}
	s->nbuckets++;
	s->alloc_count += b->alloc_count;
	s->alloc_bytes += b->alloc_bytes;
	s->inuse_count += b->inuse_count;
	s->inuse_bytes += b->inuse_bytes;
	return 0;
}

static struct sum sum_of(const struct profile *p)
{
	struct sum s;

	memset(&s, 0, sizeof(s));
	expect_int_eq(profile_foreach(p, sum_cb, &s), 0);
	return s;
}

static void test_dedup_and_buckets(void)
{
	const uint64_t a[] = { 0x401124, 0x401457, 0x401500 };
	const uint64_t b[] = { 0x401200, 0x401457 };
	struct profile *p = profile_new(524288);
	struct sum s;

	profile_record_alloc(p, a, 3, 1024, 0x1000);
	profile_record_alloc(p, a, 3, 1024, 0x2000);
	profile_record_alloc(p, a, 3, 1024, 0x3000);
	profile_record_alloc(p, a, 3, 64, 0x4000);      /* same stack, other size */
	profile_record_alloc(p, b, 2, 512, 0x5000);
	profile_record_alloc(p, b, 2, 512, 0x6000);
	expect_int_eq(profile_nstacks(p), 2);
	expect_int_eq(profile_nbuckets(p), 3);
	expect_int_eq(profile_nlive(p), 6);
	expect_int_eq(profile_rate(p), 524288);

	expect_int_eq(profile_record_free(p, 0x2000), 1);
	expect_int_eq(profile_record_free(p, 0x3000), 1);
	expect_int_eq(profile_record_free(p, 0x6000), 1);
	expect_int_eq(profile_record_free(p, 0x6000), 0);      /* double free */
	expect_int_eq(profile_record_free(p, 0x7777), 0);      /* unknown */
	expect_int_eq(profile_record_free(p, 0), 0);

	s = sum_of(p);
	expect_int_eq(s.nbuckets, 3);
	/* creation order: (a,1024), (a,64), (b,512) */
	expect_int_eq(s.copy[0].size, 1024);
	expect_int_eq(s.copy[0].npcs, 3);
	expect_u64_eq(s.copy[0].pcs[0], 0x401124);
	expect_u64_eq(s.copy[0].pcs[2], 0x401500);
	expect_int_eq(s.copy[0].alloc_count, 3);
	expect_int_eq(s.copy[0].alloc_bytes, 3072);
	expect_int_eq(s.copy[0].inuse_count, 1);
	expect_int_eq(s.copy[0].inuse_bytes, 1024);
	expect_int_eq(s.copy[1].size, 64);
	expect_int_eq(s.copy[1].inuse_count, 1);
	expect_int_eq(s.copy[2].size, 512);
	expect_int_eq(s.copy[2].alloc_count, 2);
	expect_int_eq(s.copy[2].alloc_bytes, 1024);
	expect_int_eq(s.copy[2].inuse_count, 1);
	expect_int_eq(s.copy[2].inuse_bytes, 512);
	expect_int_eq(profile_total_alloc_bytes(p), 3 * 1024 + 64 + 2 * 512);
	expect_int_eq(profile_total_alloc_count(p), 6);
	profile_free(p);
}

static void test_missed_free_and_null(void)
{
	const uint64_t a[] = { 0x10, 0x20 };
	const uint64_t b[] = { 0x30 };
	struct profile *p = profile_new(1);
	struct sum s;

	profile_record_alloc(p, a, 2, 100, 0xabc0);
	profile_record_alloc(p, b, 1, 200, 0xabc0);     /* same ptr again */
	expect_int_eq(profile_nlive(p), 1);
	s = sum_of(p);
	expect_int_eq(s.copy[0].inuse_count, 0);
	expect_int_eq(s.copy[0].inuse_bytes, 0);
	expect_int_eq(s.copy[0].alloc_count, 1);        /* still an alloc sample */
	expect_int_eq(s.copy[1].inuse_bytes, 200);

	profile_record_alloc(p, a, 2, 100, 0);          /* failed malloc */
	expect_int_eq(profile_total_alloc_count(p), 2);
	expect_int_eq(profile_record_free(p, 0xabc0), 1);
	expect_int_eq(profile_nlive(p), 0);

	profile_add_drops(p, 5);
	profile_add_drops(p, 2);
	expect_int_eq(profile_drops(p), 7);
	profile_free(p);
	profile_free(NULL);
}

static void test_empty_and_deep_stacks(void)
{
	uint64_t deep[PROFILE_MAX_FRAMES + 10];
	struct profile *p = profile_new(4096);
	struct sum s;

	for (size_t i = 0; i < PROFILE_MAX_FRAMES + 10; i++)
		deep[i] = 0x1000 + i;
	profile_record_alloc(p, NULL, 0, 8, 0x100);
	profile_record_alloc(p, deep, PROFILE_MAX_FRAMES + 10, 8, 0x200);
	profile_record_alloc(p, deep, PROFILE_MAX_FRAMES + 5, 8, 0x300);
	s = sum_of(p);
	expect_int_eq(s.nbuckets, 2);
	expect_int_eq(s.copy[0].npcs, 0);
	expect_int_eq(s.copy[1].npcs, PROFILE_MAX_FRAMES);
	expect_int_eq(s.copy[1].alloc_count, 2);
	expect_u64_eq(s.copy[1].pcs[PROFILE_MAX_FRAMES - 2], 0x1000 + PROFILE_MAX_FRAMES - 2);
	expect_u64_eq(s.copy[1].pcs[PROFILE_MAX_FRAMES - 1], PROFILE_PC_TRUNCATED);
	profile_free(p);
}

static int stop_cb(const struct profile_bucket *b, void *arg)
{
	int *n = arg;

	(void)b;
	return ++*n == 2 ? 42 : 0;
}

static void test_foreach_stops(void)
{
	struct profile *p = profile_new(1);
	int n = 0;

	for (uint64_t i = 1; i <= 5; i++)
		profile_record_alloc(p, &i, 1, 16, i * 16);
	expect_int_eq(profile_foreach(p, stop_cb, &n), 42);
	expect_int_eq(n, 2);
	profile_free(p);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The next pointer after *at whose live-table hash, masked, is want. */
static uint64_t ptr_hashing_to(uint64_t *at, uint64_t mask, uint64_t want)
{
	while ((mix64(*at += 16) & mask) != want)
		;
	return *at;
}

/*
 * A run that wraps around the end of the first table (1024 slots): one
 * pointer at the last slot that moves to the upper half when the table
 * doubles, then three more with that home that stay in the lower half
 * (slots 0-2). When the last slot's entry moves away they must still be
 * found from their home.
 */
static void test_live_grow_wrap(void)
{
	struct profile *p = profile_new(1);
	uint64_t at = 0x10000, pc = 0x401000, ptrs[800];
	size_t n = 0, bad = 0;

	ptrs[n++] = ptr_hashing_to(&at, 2047, 2047);
	for (int k = 0; k < 3; k++)
		ptrs[n++] = ptr_hashing_to(&at, 2047, 1023);
	while (n < 800)	/* past 3/4 of 1024: the table doubles */
		ptrs[n++] = at += 16;
	for (size_t i = 0; i < n; i++)
		profile_record_alloc(p, &pc, 1, 16, ptrs[i]);
	for (size_t i = 0; i < n; i++)
		bad += profile_record_free(p, ptrs[i]) != 1;
	expect_int_eq(bad, 0);
	expect_int_eq(profile_nlive(p), 0);
	profile_free(p);
}

/*
 * Random pointers through every doubling of the live table (its in-place
 * rehash: runs that wrap around the end, entries that move to the upper
 * half), with frees between: after each step every pointer still live is
 * found once, and every freed one is not.
 */
static void test_live_grow_random(void)
{
	const size_t n = 1500000;
	struct profile *p = profile_new(1);
	uint64_t *ptrs = malloc(n * sizeof(*ptrs));
	uint64_t seed = 777, pc = 0x401000;
	size_t bad = 0, live = 0;

	profile_set_caps(p, 0, 0, 0, n);
	profile_set_live_keep(p, 0);	/* halved as soon as under a quarter full */
	for (size_t i = 0; i < n; i++) {
		ptrs[i] = (xorshift(&seed) & ((1ULL << 56) - 1)) | 8;
		profile_record_alloc(p, &pc, 1, 16 + i % 64, ptrs[i]);
		live++;
		if (i % 3 == 2) {	/* free one made a while ago */
			bad += profile_record_free(p, ptrs[i / 2]) != 1;
			ptrs[i / 2] = 0;
			live--;
		}
		/* now and then (at powers of two) look at every entry */
		if ((i & (i - 1)) == 0 && i >= 4096) {
			for (size_t k = 0; k <= i; k++)
				if (ptrs[k] && profile_record_free(p, ptrs[k]) == 1)
					profile_record_alloc(p, &pc, 1, 16 + k % 64, ptrs[k]);
				else
					bad += ptrs[k] != 0;
		}
	}
	expect_int_eq(bad, 0);
	expect_int_eq(profile_nlive(p), live);
	expect_int_eq(profile_live_again(p), 0);
	for (size_t i = 0; i < n; i++)
		if (ptrs[i])
			bad += profile_record_free(p, ptrs[i]) != 1;
	expect_int_eq(bad, 0);
	expect_int_eq(profile_nlive(p), 0);
	expect_int_eq(profile_live_bytes(p), 1024 * 12);	/* shrunk back as they went */
	profile_free(p);
	free(ptrs);
}

static int all_gone(uint64_t ptr, void *arg)
{
	(void)ptr;
	(void)arg;
	return 1;
}

/*
 * A sampled profile's live set fills and empties with every sweep: the
 * table keeps its size for the keep time after it last doubled, then a
 * sweep (or a free) halves it down to what it holds. Every pointer stays
 * found meanwhile.
 */
static void test_live_keep(void)
{
	struct profile *p = profile_new(524288);
	uint64_t pc = 0x401000, big;

	profile_set_live_keep(p, 300000000);	/* 300 ms */
	for (uint64_t i = 1; i <= 5000; i++)
		profile_record_alloc(p, &pc, 1, 32, i << 4);
	big = profile_live_bytes(p);
	expect_true(big >= 8192 * 12);
	expect_int_eq(profile_sweep_live(p, all_gone, NULL), 5000);
	expect_int_eq(profile_nlive(p), 0);
	expect_u64_eq(profile_live_bytes(p), big);	/* kept: just grown */
	for (uint64_t i = 1; i <= 100; i++)
		profile_record_alloc(p, &pc, 1, 32, i << 4);
	for (uint64_t i = 1; i <= 50; i++)
		expect_int_eq(profile_record_free(p, i << 4), 1);
	expect_u64_eq(profile_live_bytes(p), big);
	usleep(350000);
	expect_int_eq(profile_sweep_live(p, all_gone, NULL), 50);
	expect_int_eq(profile_live_bytes(p), 1024 * 12);	/* down to the first size */
	for (uint64_t i = 1; i <= 3000; i++)
		profile_record_alloc(p, &pc, 1, 32, i << 4);
	usleep(350000);
	for (uint64_t i = 1; i <= 3000; i++)	/* frees alone halve it too */
		expect_int_eq(profile_record_free(p, i << 4), 1);
	expect_true(profile_live_bytes(p) < 4096 * 12);
	profile_free(p);
}

/* Millions of live pointers, freed in random order, with many stacks. */
static void test_live_table_scale(void)
{
	const size_t n = 2000000;
	struct profile *p = profile_new(524288);
	uint64_t *ptrs = malloc(n * sizeof(*ptrs));
	uint64_t seed = 12345, pc[2];

	profile_set_caps(p, 0, 0, 0, n);	/* beyond PROFILE_MAX_LIVE: the table itself */
	struct sum s;
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		ptrs[i] = 0x7f0000000000ULL + i * 16;   /* dense, like a heap */
		pc[0] = 0x400000 + (i % 1000) * 8;
		pc[1] = 0x500000;
		profile_record_alloc(p, pc, 2, 32 + (i % 3) * 16, ptrs[i]);
	}
	expect_int_eq(profile_nlive(p), n);
	expect_int_eq(profile_nstacks(p), 1000);
	expect_int_eq(profile_nbuckets(p), 3000);
	/* shuffle, free the first half */
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = xorshift(&seed) % (i + 1);
		uint64_t t = ptrs[i];

		ptrs[i] = ptrs[j];
		ptrs[j] = t;
	}
	for (size_t i = 0; i < n / 2; i++)
		bad += profile_record_free(p, ptrs[i]) != 1;
	expect_int_eq(bad, 0);
	expect_int_eq(profile_nlive(p), n / 2);
	for (size_t i = 0; i < n / 2; i++)
		bad += profile_record_free(p, ptrs[i]) != 0;
	expect_int_eq(bad, 0);
	s = sum_of(p);
	expect_int_eq(s.alloc_count, n);
	expect_int_eq(s.inuse_count, n / 2);
	for (size_t i = n / 2; i < n; i++)
		bad += profile_record_free(p, ptrs[i]) != 1;
	expect_int_eq(bad, 0);
	expect_int_eq(profile_nlive(p), 0);
	s = sum_of(p);
	expect_int_eq(s.inuse_count, 0);
	expect_int_eq(s.inuse_bytes, 0);
	free(ptrs);
	profile_free(p);
}

/* A bucket's figures, in creation order, for comparing two profiles. */
struct rows {
	size_t n;
	uint64_t v[4096][5];
};

static int rows_cb(const struct profile_bucket *b, void *arg)
{
	struct rows *r = arg;

	if (r->n < 4096) {
		r->v[r->n][0] = b->size ^ b->pcs[0] << 16;
		r->v[r->n][1] = b->alloc_count;
		r->v[r->n][2] = b->alloc_bytes;
		r->v[r->n][3] = b->inuse_count;
		r->v[r->n][4] = b->inuse_bytes;
	}
	r->n++;
	return 0;
}

/* Batches (with their look-ahead) record exactly what single calls do,
 * through table growth, missed frees, reuse of addresses and ptr 0. */
static void test_batch_matches_single(void)
{
	static struct rows ra, rb;
	struct profile *a = profile_new(1), *b = profile_new(1);
	struct profile_op ops[100];
	uint64_t seed = 12345, pcs[3];
	size_t n = 0;

	for (int i = 0; i < 200000; i++) {
		uint64_t r;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		r = seed;
		pcs[0] = 0x1000 + (r & 7);
		pcs[1] = 0x2000;
		pcs[2] = 0x3000 + (r >> 3 & 1);
		if (r >> 8 & 1) {
			uint64_t size = 1 + (r >> 16) % 600, ptr = (r >> 32) % 3000 * 16;

			profile_record_alloc(a, pcs, 3, size, ptr);
			ops[n++] = (struct profile_op){ PROFILE_OP_ALLOC,
				profile_stack_id(b, pcs, 3), size, ptr, 0 };
		} else {
			uint64_t ptr = (r >> 32) % 3000 * 16;

			profile_record_free(a, ptr);
			ops[n++] = (struct profile_op){ PROFILE_OP_FREE, 0, 0, ptr, 0 };
		}
		if (n == 100 || (r >> 40) % 37 == 0) {
			profile_record_batch(b, ops, n);
			n = 0;
		}
	}
	profile_record_batch(b, ops, n);
	profile_foreach(a, rows_cb, &ra);
	profile_foreach(b, rows_cb, &rb);
	expect_true(ra.n > 1000);
	expect_int_eq(ra.n, rb.n);
	expect_true(!memcmp(ra.v, rb.v, sizeof(ra.v)));
	expect_int_eq(profile_nlive(a), profile_nlive(b));
	expect_u64_eq(profile_total_alloc_bytes(a), profile_total_alloc_bytes(b));
	profile_free(a);
	profile_free(b);
}

static int odd_gone(uint64_t ptr, void *arg)
{
	(*(int *)arg)++;
	return (ptr >> 4) & 1;
}

/* The sweep frees exactly the pointers gone() names, buckets included. */
static void test_sweep_live(void)
{
	struct profile *p = profile_new(1);
	uint64_t pcs[1] = { 0x1234 };
	struct sum sm = { 0 };
	int calls = 0;

	for (uint64_t i = 1; i <= 5000; i++)
		profile_record_alloc(p, pcs, 1, 32, i << 4);
	expect_int_eq(profile_sweep_live(p, odd_gone, &calls), 2500);
	expect_int_eq(calls, 5000);
	expect_int_eq(profile_nlive(p), 2500);
	profile_foreach(p, sum_cb, &sm);
	expect_u64_eq(sm.inuse_count, 2500);
	expect_u64_eq(sm.inuse_bytes, 2500 * 32);
	expect_u64_eq(sm.alloc_count, 5000);
	expect_int_eq(profile_record_free(p, 2 << 4), 1);	/* even: still live */
	expect_int_eq(profile_record_free(p, 1 << 4), 0);	/* odd: swept */

	/* kept allocations are left to their free ops */
	{
		struct profile_op op = { PROFILE_OP_ALLOC_KEPT, profile_stack_id(p, pcs, 1), 32,
					 1 << 4, 0 };

		profile_record_batch(p, &op, 1);
		calls = 0;
		expect_int_eq(profile_sweep_live(p, odd_gone, &calls), 0);
		expect_int_eq(calls, 2499);
		expect_int_eq(profile_record_free(p, 1 << 4), 1);
	}
	profile_free(p);
}

static void test_scale(void)
{
	int64_t c, b;

	profile_scale(3, 3072, 524288, &c, &b);          /* docs/profile-format.md §2 */
	expect_int_eq(c, 1537);
	expect_int_eq(b, 1574400);
	profile_scale(1, 1024, 524288, &c, &b);
	expect_int_eq(c, 512);
	expect_int_eq(b, 524800);
	profile_scale(5, 4608, 1, &c, &b);
	expect_int_eq(c, 5);
	expect_int_eq(b, 4608);
	profile_scale(5, 4608, 0, &c, &b);
	expect_int_eq(c, 5);
	expect_int_eq(b, 4608);
	profile_scale(0, 0, 524288, &c, &b);
	expect_int_eq(c, 0);
	expect_int_eq(b, 0);
	profile_scale(4, 0, 1, &c, &b);                  /* malloc(0): pprof gives 0,0 */
	expect_int_eq(c, 0);
	expect_int_eq(b, 0);
	profile_scale(2, 16 << 20, 524288, &c, &b);      /* big blocks: ~unscaled */
	expect_int_eq(c, 2);
	expect_int_eq(b, (16 << 20) + 1);
}

/* count allocations of 16 bytes, each from a new stack: pc[1..npcs) and a
 * leaf of its own. */
static void alloc_new_stacks(struct profile *p, uint64_t *pc, size_t npcs, unsigned count)
{
	for (uint64_t i = 0; i < count; i++) {
		pc[0] = 0x400000 + i * 8;
		profile_record_alloc(p, pc, npcs, 16, 0x10000 + i * 16);
	}
}

/* Made-up events cannot grow the tables past their caps: new stacks go
 * to the empty stack, new buckets to its power-of-two sizes, new live
 * pointers count as allocated only; the caps reached are told. */
static void test_caps(void)
{
	struct profile *p = profile_new(1);
	uint64_t pc[4] = { 0, 0x500000, 0x600000, 0x700000 };
	uint32_t over;
	struct sum s;

	profile_set_caps(p, 4, 0, 8, 16);
	alloc_new_stacks(p, pc, 1, 10);
	expect_int_eq(profile_nstacks(p), 5);	/* 4 and the empty one */
	expect_int_eq(profile_caps_hit(p), PROFILE_CAP_STACKS);
	pc[0] = 0x480000;
	over = profile_stack_id(p, pc, 1);
	pc[0] = 0x490000;
	expect_int_eq(profile_stack_id(p, pc, 1), over);
	expect_int_eq(profile_stack_id(p, NULL, 0), over);
	/* 5 buckets so far; 3 more sizes of a known stack fill the cap, then
	 * sizes 100..199 of it go to (empty stack, 64) and (empty stack, 128) */
	pc[0] = 0x400000;
	for (uint64_t sz = 100; sz < 200; sz++)
		profile_record_alloc(p, pc, 1, sz, 0x900000 + sz * 16);
	expect_int_eq(profile_nbuckets(p), 10);
	expect_true(profile_caps_hit(p) & PROFILE_CAP_BUCKETS);
	/* 110 allocations, 16 of them live */
	expect_int_eq(profile_nlive(p), 16);
	expect_true(profile_caps_hit(p) & PROFILE_CAP_LIVE);
	s = sum_of(p);
	expect_int_eq(s.alloc_count, 110);
	expect_int_eq(s.inuse_count, 16);
	/* a free of a pointer turned away is unknown */
	expect_int_eq(profile_record_free(p, 0x900000 + 199 * 16), 0);
	profile_free(p);

	/* the frames cap: 3 stacks of 4 frames do not fit in 10 */
	p = profile_new(1);
	profile_set_caps(p, 0, 10, 0, 0);
	alloc_new_stacks(p, pc, 4, 3);
	expect_int_eq(profile_nstacks(p), 3);	/* 2 and the empty one */
	expect_int_eq(profile_caps_hit(p), PROFILE_CAP_STACKS);
	profile_free(p);
}

/* Figures the target made up do not overflow the unsampled ones. */
static void test_scale_saturates(void)
{
	int64_t c, b;

	profile_scale(1, UINT64_MAX, 524288, &c, &b);
	expect_int_eq(c, 1);
	expect_true(b == INT64_MAX);
	profile_scale(UINT64_MAX, 1, 524288, &c, &b);
	expect_true(c == INT64_MAX);
	profile_scale(UINT64_MAX, UINT64_MAX, 1, &c, &b);
	expect_true(c == INT64_MAX && b == INT64_MAX);
}

/* profile_map_pcs callback: frames in [0x7000, 0x8000) move to 0xf000... */
static uint64_t move_gone(void *arg, uint64_t pc)
{
	(void)arg;
	return pc >= 0x7000 && pc < 0x8000 ? pc - 0x7000 + 0xf000 : pc;
}

/* Frames of code that is gone get stand-ins: ids stay, the old pcs are a
 * new stack again (the new code's), and lookups find the moved ones. */
static void test_map_pcs(void)
{
	struct profile *p = profile_new(1);
	uint64_t a[] = { 0x7010, 0x1000 }, b[] = { 0x2010, 0x1000 }, moved[] = { 0xf010, 0x1000 };
	uint32_t ida = profile_stack_id(p, a, 2), idb = profile_stack_id(p, b, 2);

	expect_int_eq(profile_map_pcs(p, move_gone, NULL), 1);
	expect_int_eq(profile_nstacks(p), 2);
	expect_int_eq(profile_stack_id(p, moved, 2), ida);
	expect_int_eq(profile_stack_id(p, b, 2), idb);
	/* the old pcs now name the new code's stack */
	expect_true(profile_stack_id(p, a, 2) != ida);
	expect_int_eq(profile_nstacks(p), 3);
	profile_free(p);
}

/* Samples taken at a raised interval (op.shift) go to buckets of their
 * own rate; the shift stays within PROFILE_MAX_RATE and is 0 in exact mode. */
static void test_shift_buckets(void)
{
	struct profile *p = profile_new(4096), *big = profile_new(1ULL << 39), *ex = profile_new(1);
	uint64_t pcs[2] = { 0x401000, 0x402000 };
	uint32_t id = profile_stack_id(p, pcs, 2);
	struct profile_op ops[] = {
		{ PROFILE_OP_ALLOC, id, 1000, 0x1000, 0 },
		{ PROFILE_OP_ALLOC, id, 1000, 0x2000, 0 },
		{ PROFILE_OP_ALLOC, id, 1000, 0x3000, 0 },
		{ PROFILE_OP_ALLOC, id, 1000, 0x4000, 2 },
		{ PROFILE_OP_ALLOC, id, 1000, 0x5000, 2 },
		{ PROFILE_OP_FREE, 0, 0, 0x4000, 0 },
	};
	struct profile_bucket at;
	struct sum s;
	double k;

	profile_record_batch(p, ops, 6);
	s = sum_of(p);
	expect_int_eq(s.nbuckets, 2);
	expect_u64_eq(s.copy[0].rate, 4096);
	expect_u64_eq(s.copy[0].alloc_count, 3);
	expect_u64_eq(s.copy[0].inuse_count, 3);
	expect_u64_eq(s.copy[1].rate, 16384);
	expect_u64_eq(s.copy[1].alloc_count, 2);
	expect_u64_eq(s.copy[1].inuse_count, 1);
	/* as if taken at 4096: each sample stands for k of those */
	k = (1 / (1 - exp(-1000.0 / 16384))) / (1 / (1 - exp(-1000.0 / 4096)));
	at = profile_bucket_at(&s.copy[1], 4096);
	expect_u64_eq(at.rate, 4096);
	expect_u64_eq(at.alloc_count, (uint64_t)llround(2 * k));
	expect_u64_eq(at.alloc_bytes, at.alloc_count * 1000);
	expect_u64_eq(at.inuse_count, (uint64_t)llround(k));
	at = profile_bucket_at(&s.copy[0], 4096);
	expect_u64_eq(at.alloc_count, 3);

	id = profile_stack_id(big, pcs, 2);
	ops[0] = (struct profile_op){ PROFILE_OP_ALLOC, id, 64, 0x1000, 5 };
	profile_record_batch(big, ops, 1);
	s = sum_of(big);
	expect_u64_eq(s.copy[0].rate, PROFILE_MAX_RATE);

	id = profile_stack_id(ex, pcs, 2);
	ops[0] = (struct profile_op){ PROFILE_OP_ALLOC, id, 64, 0x1000, 3 };
	profile_record_batch(ex, ops, 1);
	s = sum_of(ex);
	expect_u64_eq(s.copy[0].rate, 1);
	profile_free(p);
	profile_free(big);
	profile_free(ex);
}

static int scaled_cb(const struct profile_bucket *b, void *arg)
{
	double *v = arg;
	int64_t c, bytes;

	profile_scale(b->alloc_count, b->alloc_bytes, b->rate, &c, &bytes);
	v[0] += (double)c;
	v[1] += (double)bytes;
	return 0;
}

/* A stream sampled at 4 KiB, then at 64 KiB, then at 8 KiB (as heapattach
 * raises and lowers its interval): the estimates, each sample scaled at
 * its own interval, stay within 2% of the truth; scaled at one interval
 * they would be off by far more. */
static void test_shift_unbiased(void)
{
	static const unsigned shifts[] = { 0, 4, 1 };
	struct profile *p = profile_new(4096);
	uint64_t pcs[1] = { 0x401000 }, x = 88172645463325252ULL, ptr = 0x10000;
	uint32_t id = profile_stack_id(p, pcs, 1);
	double truth[2] = { 0, 0 }, est[2] = { 0, 0 };
	struct sampler sm;

	for (size_t k = 0; k < 3; k++) {
		sampler_init(&sm, 4096ULL << shifts[k], 7 + k);
		for (int i = 0; i < 2000000; i++) {
			uint64_t size;
			struct profile_op op;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size = 16 + x % 16384;
			truth[0] += 1;
			truth[1] += (double)size;
			if (!sampler_should_sample(&sm, size))
				continue;
			op = (struct profile_op){ PROFILE_OP_ALLOC, id, size, ptr += 16, shifts[k] };
			profile_record_batch(p, &op, 1);
		}
	}
	profile_foreach(p, scaled_cb, est);
	expect_true(fabs(est[0] / truth[0] - 1) < 0.02);
	expect_true(fabs(est[1] / truth[1] - 1) < 0.02);
	profile_free(p);
}

/* The periods of a raised interval, as the writers' comments say them. */
static void test_raise_comments(void)
{
	struct profile *p = profile_new(4096);
	uint64_t t = clock_ns(CLOCK_MONOTONIC);
	char line[320];

	expect_int_eq(profile_raise_comment(p, 0, t, line, sizeof(line)), 0);
	profile_set_shift(p, 2, t + 1000000000);
	profile_set_shift(p, 3, t + 1500000000);
	expect_int_eq(profile_raise_comment(p, 0, t + 2000000000, line, sizeof(line)), 1);
	expect_true(strstr(line, "still raised when written") != NULL);
	profile_set_shift(p, 1, t + 2500000000);
	profile_set_shift(p, 0, t + 3000000000);
	expect_int_eq(profile_raise_comment(p, 0, t + 4000000000, line, sizeof(line)), 1);
	expect_true(strstr(line, "raised from 4 KiB to at most 32 KiB for 2.0 s") != NULL);
	expect_true(strstr(line, "still") == NULL);
	expect_int_eq(profile_raise_comment(p, 1, t, line, sizeof(line)), 0);
	for (int i = 0; i < PROFILE_MAX_RAISES + 1; i++) {
		profile_set_shift(p, 1 + (i == PROFILE_MAX_RAISES), t + 4000000000ULL + i * 2000000000ULL);
		profile_set_shift(p, 0, t + 5000000000ULL + i * 2000000000ULL);
	}
	expect_int_eq(profile_nraises(p), PROFILE_MAX_RAISES + 2);
	expect_int_eq(profile_raise_comment(p, PROFILE_MAX_RAISES - 1, t, line, sizeof(line)), 1);
	expect_int_eq(profile_raise_comment(p, PROFILE_MAX_RAISES, t, line, sizeof(line)), 1);
	expect_true(strstr(line, "could not keep up 2 more times") != NULL);
	expect_true(strstr(line, "to at most 16 KiB for 2.0 s in all") != NULL);
	expect_int_eq(profile_raise_comment(p, PROFILE_MAX_RAISES + 1, t, line, sizeof(line)), 0);
	profile_free(p);
}

/* Figures accounted in the target: added to their buckets and the totals,
 * set anew after a reset, unknown stacks ignored, sums saturated, caps kept. */
static void test_xacct(void)
{
	const uint64_t a[] = { 0x401124, 0x401457 };
	const uint64_t b[] = { 0x401200 };
	struct profile *p = profile_new(1);
	uint32_t sa, sb;
	struct sum s;

	profile_record_alloc(p, a, 2, 64, 0x1000);	/* an event: 1 alloc, live */
	sa = profile_stack_id(p, a, 2);
	sb = profile_stack_id(p, b, 1);
	profile_xacct_alloc(p, sa, 64, 10);
	profile_xacct_alloc(p, sa, 64, 5);		/* another lane's */
	profile_xacct_alloc(p, sb, 32, 7);		/* a bucket events never made */
	profile_xacct_alloc(p, sb, 48, 0);		/* nothing */
	profile_xacct_inuse(p, sa, 64);
	profile_xacct_inuse(p, sa, 64);
	profile_xacct_inuse(p, sb, 32);
	profile_xacct_alloc(p, 999, 64, 1000);		/* no such stack */
	profile_xacct_inuse(p, 999, 64);
	expect_int_eq(profile_xacct_allocs(p), 22);
	expect_int_eq(profile_total_alloc_count(p), 23);
	expect_int_eq(profile_total_alloc_bytes(p), 64 + 15 * 64 + 7 * 32);
	expect_int_eq(profile_nlive(p), 4);
	expect_int_eq(profile_nstacks(p), 2);
	s = sum_of(p);
	expect_int_eq(s.nbuckets, 2);
	expect_int_eq(s.copy[0].alloc_count, 16);
	expect_int_eq(s.copy[0].alloc_bytes, 16 * 64);
	expect_int_eq(s.copy[0].inuse_count, 3);
	expect_int_eq(s.copy[0].inuse_bytes, 3 * 64);
	expect_int_eq(s.copy[1].size, 32);
	expect_int_eq(s.copy[1].alloc_count, 7);
	expect_int_eq(s.copy[1].inuse_count, 1);
	expect_int_eq(s.copy[1].inuse_bytes, 32);

	/* read anew: only the recorded figures are left, then the new ones */
	profile_xacct_reset(p);
	expect_int_eq(profile_total_alloc_count(p), 1);
	expect_int_eq(profile_nlive(p), 1);
	s = sum_of(p);
	expect_int_eq(s.nbuckets, 2);	/* the accounted-only bucket stays, empty */
	expect_int_eq(s.copy[1].alloc_count, 0);
	expect_int_eq(s.copy[1].inuse_count, 0);
	expect_int_eq(s.alloc_count, 1);
	expect_int_eq(s.inuse_count, 1);
	profile_xacct_inuse(p, sb, 32);		/* in use, its count not read yet */
	s = sum_of(p);
	expect_int_eq(s.nbuckets, 2);
	expect_int_eq(s.inuse_count, 2);
	profile_xacct_alloc(p, sb, 48, 0);	/* nothing: no bucket to visit */
	expect_int_eq(sum_of(p).nbuckets, 2);

	/* the target's figures can be anything: sums saturate */
	profile_xacct_alloc(p, sb, (1ULL << 40) - 1, UINT64_MAX / 2);
	profile_xacct_alloc(p, sb, (1ULL << 40) - 1, UINT64_MAX / 2 + 10);
	expect_u64_eq(profile_total_alloc_count(p), UINT64_MAX);
	expect_u64_eq(profile_total_alloc_bytes(p), UINT64_MAX);
	s = sum_of(p);
	expect_u64_eq(s.copy[2].alloc_count, UINT64_MAX);
	expect_u64_eq(s.copy[2].alloc_bytes, UINT64_MAX);
	profile_free(p);

	/* many new buckets at once: the table grows under the additions */
	p = profile_new(1);
	sa = profile_stack_id(p, a, 2);
	for (uint64_t sz = 1; sz <= 1000; sz++) {
		profile_xacct_alloc(p, sa, sz, 2);
		profile_xacct_inuse(p, sa, sz);
	}
	s = sum_of(p);
	expect_int_eq(s.nbuckets, 1000);
	expect_int_eq(s.alloc_count, 2000);
	expect_int_eq(s.alloc_bytes, 1000 * 1001);
	expect_int_eq(s.inuse_count, 1000);
	expect_int_eq(s.inuse_bytes, 1000 * 1001 / 2);
	profile_free(p);

	/* the bucket cap: new sizes go to the empty stack's rounded bucket */
	p = profile_new(1);
	profile_set_caps(p, 0, 0, 4, 0);
	sa = profile_stack_id(p, a, 2);
	for (uint64_t sz = 100; sz < 200; sz++)
		profile_xacct_alloc(p, sa, sz, 1);
	expect_true(profile_nbuckets(p) <= 4 + 65);
	expect_true(profile_caps_hit(p) & PROFILE_CAP_BUCKETS);
	expect_int_eq(profile_total_alloc_count(p), 100);
	s = sum_of(p);
	expect_int_eq(s.alloc_count, 100);
	profile_free(p);
}

HARNESS_MAIN("profile",
	T(test_xacct),
	T(test_shift_buckets),
	T(test_shift_unbiased),
	T(test_raise_comments),
	T(test_map_pcs),
	T(test_caps),
	T(test_scale_saturates),
	T(test_dedup_and_buckets),
	T(test_missed_free_and_null),
	T(test_empty_and_deep_stacks),
	T(test_foreach_stops),
	T(test_live_table_scale),
	T(test_live_grow_wrap),
	T(test_live_grow_random), T(test_live_keep),
	T(test_batch_matches_single),
	T(test_sweep_live),
	T(test_scale))
