/* Heap profile model: deduplicated stacks, (stack, size) buckets, live pointers. */
/* SPDX-License-Identifier: MIT */

/*
 * The profile is three tables.
 *
 * The stack table holds every distinct call stack once: its frames live in one
 * growing array of uint64_t (pcs), and a stack is (offset, length, hash). An
 * open-addressing index (linear probing, power-of-two size) maps a stack's
 * frames to its id, so recording the millionth allocation from the same place
 * costs one hash of at most PROFILE_MAX_FRAMES words and one compare.
 *
 * The bucket table holds one row per (stack id, requested size): counts and
 * bytes allocated since creation, and counts and bytes still live. Keying by
 * size as well as by stack keeps every bucket's average size exact, which the
 * unsampling formula needs (docs/profile-format.md §2). Rows are addressed by a
 * 32-bit index that never changes, through a second open-addressing index.
 *
 * The live table maps each sampled pointer that has not been freed to its
 * bucket index. It is open addressing with linear probing and backward-shift
 * deletion (no tombstones), so it stays fast after millions of alloc/free
 * pairs; pointer 0 marks an empty slot. The indexes double when they are 70%
 * full, so record_alloc and record_free are O(1) amortized. In exact mode
 * the live table holds every block of the heap (tens of millions), so it is
 * compact: 12-byte slots, 1/4 to 3/4 full (16 to 48 bytes a live pointer),
 * in its own mapping, which doubles in place (mremap, then one sequential
 * pass: live_grow), so that growing never holds two copies (32 bytes a
 * live pointer at that moment) and takes one pass over memory, not a
 * random insert per entry. It halves in place too (live_shrink) when less
 * than 1/4 full, so its size follows the live set (the sampled set, in
 * sampled mode) down as well as up.
 *
 * Events come from the target, which can make up as many distinct stacks,
 * sizes and pointers as it likes: each table has a cap (profile.h), and a
 * set of the distinct return addresses bounds what a writer must look up.
 * What a cap turns away is merged into the empty stack, and the caps
 * reached are reported (profile_caps_hit).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "base/clock.h"
#include "base/hash.h"
#include "base/satmath.h"
#include "base/xmalloc.h"
#include "profile/profile.h"

#define EMPTY_IDX UINT32_MAX
#define EMPTY_SLOT UINT64_MAX

struct stack {
	uint64_t hash;
	size_t off;             /* into profile.pcs */
	uint32_t n;
};

/* In-use figures are not kept here: profile_foreach counts the live table
 * (a free then touches no bucket, a cache miss saved per event). The
 * accounted ones (profile_xacct_*) are set anew at each reading of the
 * target's own figures. */
struct bucket {
	uint32_t stack;
	uint8_t shift;          /* taken at the interval rate << shift (profile_op) */
	uint8_t xseen;          /* it had accounted figures once: visited for good */
	uint64_t size;
	uint64_t alloc_count, alloc_bytes;
	uint64_t xalloc_count, xinuse_count;	/* accounted in the target */
};

struct live {
	uint64_t ptr;           /* 0: empty slot */
	uint32_t bucket;        /* bucket index, | LIVE_KEPT */
} __attribute__((packed));
#define LIVE_KEPT 0x80000000u	/* PROFILE_OP_ALLOC_KEPT: not swept */
#define LIVE_MIN_SLOTS 1024	/* the live table's first size (a multiple of 1024: whole pages) */
#define LIVE_KEEP_NS 5000000000ULL	/* a live table is not shrunk within this of its growth */
#define LIVE_CLOCK_EVERY 1024	/* frees between looks at the clock, while it could shrink */

struct profile {
	uint64_t rate;
	unsigned shift;         /* the interval in force is rate << shift */
	uint64_t created_ns;    /* CLOCK_MONOTONIC */
	struct profile_raise raises[PROFILE_MAX_RAISES];
	size_t nraises;         /* periods begun, kept or not */
	uint64_t raise_start;   /* the open period's start (created_ns based); valid while shift */
	uint64_t extra_ns, extra_max;	/* periods not kept: their time (closed ones) and top rate */
	size_t max_stacks, max_pcs, max_buckets, max_live;	/* caps */
	unsigned caps_hit;      /* PROFILE_CAP_* */
	uint32_t overflow;      /* the empty stack's id, or EMPTY_IDX before its first use */
	uint64_t drops;
	uint64_t total_alloc_bytes, total_alloc_count;
	uint64_t xalloc_count, xalloc_bytes, xinuse_count;	/* accounted: totals */
	uint64_t live_again;     /* allocations at an address already live */

	uint64_t *pcs;          /* frames of all stacks, back to back */
	size_t npcs, pcs_cap;
	struct stack *stacks;
	size_t nstacks, stacks_cap;
	uint32_t *stack_idx;    /* slot -> stack id or EMPTY_IDX */
	size_t stack_idx_cap;   /* power of two */

	struct bucket *buckets;
	size_t nbuckets, buckets_cap;
	uint64_t *bucket_idx;   /* slot -> hash tag << 32 | bucket id, or EMPTY_SLOT */
	size_t bucket_idx_cap;

	struct live *live;
	size_t nlive, live_cap; /* live_cap: power of two */
	uint64_t live_grown_ns; /* when it last doubled */
	uint64_t live_keep_ns;  /* not halved within this of that */
	unsigned live_looks;    /* frees since the clock was last read for a shrink */

	uint64_t *locs;         /* the distinct return addresses of all stacks (0: empty) */
	size_t nlocs, locs_cap; /* locs_cap: power of two, at most half full */
	int loc_zero;           /* 0 is one of them */
};

/* Distinct return addresses at most: what a writer looks up and names. */
#define PROFILE_MAX_LOCS (1u << 17)

/* ---- hashing ---- */

/* One multiply per frame (this runs for every recorded allocation), one
 * full mix at the end. */
static uint64_t hash_pcs(const uint64_t *pcs, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0x100000001b3ULL + (h >> 29);
	return mix64(h);
}

static uint64_t hash_bucket_key(uint32_t stack, uint64_t size, unsigned shift)
{
	return mix64(((uint64_t)stack << 1 | 1) ^ mix64(size) ^ (uint64_t)shift << 56);
}

static uint32_t *new_index(size_t cap)
{
	uint32_t *v = xmalloc(cap * sizeof(*v));

	memset(v, 0xff, cap * sizeof(*v));
	return v;
}

/* A bucket index of cap slots, all EMPTY_SLOT. */
static uint64_t *new_slots(size_t cap)
{
	uint64_t *v = xmalloc(cap * sizeof(*v));

	memset(v, 0xff, cap * sizeof(*v));
	return v;
}

/* ---- stack table ---- */

/* Make the stack index anew with cap slots. */
static void stack_index_build(struct profile *p, size_t cap)
{
	size_t mask = cap - 1;
	uint32_t *v = new_index(cap);

	for (size_t id = 0; id < p->nstacks; id++) {
		size_t i = p->stacks[id].hash & mask;

		while (v[i] != EMPTY_IDX)
			i = (i + 1) & mask;
		v[i] = id;
	}
	free(p->stack_idx);
	p->stack_idx = v;
	p->stack_idx_cap = cap;
}

static void stack_index_grow(struct profile *p)
{
	stack_index_build(p, p->stack_idx_cap * 2);
}

/* ---- distinct return addresses ---- */

/* The slot of pc (not 0) in the set, or the empty slot where it would go. */
static size_t loc_find(const struct profile *p, uint64_t pc)
{
	size_t mask = p->locs_cap - 1, i = mix64(pc) & mask;

	while (p->locs[i] && p->locs[i] != pc)
		i = (i + 1) & mask;
	return i;
}

static int loc_known(const struct profile *p, uint64_t pc)
{
	return pc ? p->locs[loc_find(p, pc)] != 0 : p->loc_zero;
}

static void loc_add(struct profile *p, uint64_t pc)
{
	size_t i;

	if (!pc) {
		p->nlocs += !p->loc_zero;
		p->loc_zero = 1;
		return;
	}
	i = loc_find(p, pc);
	if (p->locs[i])
		return;
	p->locs[i] = pc;
	if (++p->nlocs * 2 > p->locs_cap) {
		uint64_t *old = p->locs;
		size_t old_cap = p->locs_cap;

		p->locs_cap *= 2;
		p->locs = xcalloc(p->locs_cap, sizeof(*p->locs));
		for (size_t k = 0; k < old_cap; k++)
			if (old[k])
				p->locs[loc_find(p, old[k])] = old[k];
		free(old);
	}
}

/* Whether a new stack pcs[0..n) stays within the caps on stacks, frames
 * and distinct return addresses. */
static int stack_fits(const struct profile *p, const uint64_t *pcs, size_t n)
{
	size_t fresh = 0;

	if (p->nstacks >= p->max_stacks || p->npcs + n > p->max_pcs)
		return 0;
	for (size_t i = 0; i < n; i++)
		fresh += !loc_known(p, pcs[i]);
	return p->nlocs + fresh <= PROFILE_MAX_LOCS;
}

static uint32_t stack_intern(struct profile *p, const uint64_t *pcs, size_t n);

/* The empty stack, where what the caps turn away goes. */
static uint32_t overflow_stack(struct profile *p)
{
	if (p->overflow == EMPTY_IDX) {
		size_t max = p->max_stacks;

		p->max_stacks = SIZE_MAX;	/* this one goes in */
		p->overflow = stack_intern(p, NULL, 0);
		p->max_stacks = max;
	}
	return p->overflow;
}

/* Id of the stack pcs[0..n), added to the table if new (the empty stack's
 * if the caps leave no room for it). */
static uint32_t stack_intern(struct profile *p, const uint64_t *pcs, size_t n)
{
	uint64_t h = hash_pcs(pcs, n);
	size_t mask = p->stack_idx_cap - 1, i = h & mask;
	struct stack *s;

	for (; p->stack_idx[i] != EMPTY_IDX; i = (i + 1) & mask) {
		s = &p->stacks[p->stack_idx[i]];
		if (s->hash == h && s->n == n &&
		    (!n || !memcmp(p->pcs + s->off, pcs, n * sizeof(*pcs))))
			return p->stack_idx[i];
	}
	if (!stack_fits(p, pcs, n)) {
		p->caps_hit |= PROFILE_CAP_STACKS;
		return overflow_stack(p);
	}
	for (size_t k = 0; k < n; k++)
		loc_add(p, pcs[k]);
	if (p->nstacks == p->stacks_cap) {
		p->stacks_cap *= 2;
		p->stacks = xrealloc(p->stacks, p->stacks_cap * sizeof(*p->stacks));
	}
	while (p->npcs + n > p->pcs_cap) {
		p->pcs_cap *= 2;
		p->pcs = xrealloc(p->pcs, p->pcs_cap * sizeof(*p->pcs));
	}
	s = &p->stacks[p->nstacks];
	s->hash = h;
	s->off = p->npcs;
	s->n = n;
	if (n)
		memcpy(p->pcs + p->npcs, pcs, n * sizeof(*pcs));
	p->npcs += n;
	p->stack_idx[i] = p->nstacks;
	if (++p->nstacks * 10 > p->stack_idx_cap * 7)
		stack_index_grow(p);
	return p->nstacks - 1;
}

/* ---- bucket table ---- */

/*
 * A bucket index slot holds the upper half of the key's hash next to the
 * bucket id, so a probe touches a bucket only when the tags agree: the
 * buckets are the big, cold array.
 */
static uint64_t bucket_slot(uint64_t h, uint32_t id)
{
	return (h & 0xffffffff00000000ULL) | id;
}

static void bucket_index_grow(struct profile *p)
{
	size_t cap = p->bucket_idx_cap * 2, mask = cap - 1;
	uint64_t *v = new_slots(cap);

	for (size_t id = 0; id < p->nbuckets; id++) {
		struct bucket *b = &p->buckets[id];
		uint64_t h = hash_bucket_key(b->stack, b->size, b->shift);
		size_t i = h & mask;

		while (v[i] != EMPTY_SLOT)
			i = (i + 1) & mask;
		v[i] = bucket_slot(h, id);
	}
	free(p->bucket_idx);
	p->bucket_idx = v;
	p->bucket_idx_cap = cap;
}

/* Index of the bucket (stack, size, shift), created empty if new; h is its
 * hash_bucket_key. Beyond the cap a new one is the empty stack's bucket of
 * size rounded down to a power of two (and the same shift). */
static uint32_t bucket_intern(struct profile *p, uint32_t stack, uint64_t size, unsigned shift,
			      uint64_t h)
{
	size_t mask = p->bucket_idx_cap - 1, i = h & mask;
	struct bucket *b;

	for (; p->bucket_idx[i] != EMPTY_SLOT; i = (i + 1) & mask) {
		uint64_t e = p->bucket_idx[i];

		if ((e ^ h) >> 32)
			continue;
		b = &p->buckets[(uint32_t)e];
		if (b->stack == stack && b->size == size && b->shift == shift)
			return (uint32_t)e;
	}
	if (p->nbuckets >= p->max_buckets) {
		uint32_t over = overflow_stack(p);
		uint64_t rounded = size ? 1ULL << (63 - __builtin_clzll(size)) : 0;

		p->caps_hit |= PROFILE_CAP_BUCKETS;
		if (stack != over || size != rounded) {
			size_t max = p->max_buckets;
			uint32_t id;

			p->max_buckets = SIZE_MAX;	/* at most 65 of them a shift */
			id = bucket_intern(p, over, rounded, shift,
					   hash_bucket_key(over, rounded, shift));
			p->max_buckets = max;
			return id;
		}
	}
	if (p->nbuckets == p->buckets_cap) {
		p->buckets_cap *= 2;
		p->buckets = xrealloc(p->buckets, p->buckets_cap * sizeof(*p->buckets));
	}
	b = &p->buckets[p->nbuckets];
	memset(b, 0, sizeof(*b));
	b->stack = stack;
	b->size = size;
	b->shift = (uint8_t)shift;
	p->bucket_idx[i] = bucket_slot(h, p->nbuckets);
	if (++p->nbuckets * 10 > p->bucket_idx_cap * 7)
		bucket_index_grow(p);
	return p->nbuckets - 1;
}

/* ---- live table ---- */

static size_t live_slot(const struct profile *p, uint64_t ptr)
{
	return mix64(ptr) & (p->live_cap - 1);
}

/* Slot holding ptr, or the empty slot where it would go. */
static size_t live_find(const struct profile *p, uint64_t ptr)
{
	size_t mask = p->live_cap - 1, i = live_slot(p, ptr);

	while (p->live[i].ptr && p->live[i].ptr != ptr)
		i = (i + 1) & mask;
	return i;
}

/* A live table of cap slots, all empty (a mapping of its own: live_grow). */
static struct live *live_map(size_t cap)
{
	void *v = mmap(NULL, cap * sizeof(struct live), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (v == MAP_FAILED)
		xmalloc_oom(cap * sizeof(struct live));
	return v;
}

/* The first free slot at or after slot j, not past the end: SIZE_MAX if
 * the run of full slots reaches the end. */
static size_t live_free_from(const struct profile *p, size_t j)
{
	while (j < p->live_cap && p->live[j].ptr)
		j++;
	return j < p->live_cap ? j : SIZE_MAX;
}

/*
 * Double the table in place. mremap adds an empty upper half (without
 * copying the lower one); then one pass in slot order takes each entry out
 * and puts it back at the first free slot from its new home: the home it
 * had (the lower half, at or before where it was) or that plus the old size
 * (the upper half, which only this pass fills, in order). Every entry so
 * placed sees only full slots between its home and itself, and no slot
 * before it is emptied later, so each stays reachable. Two kinds are put
 * aside and inserted afresh at the end: the run of entries at slot 0 (it
 * may hold entries that wrapped around from the end, whose home lies
 * behind them) and an upper-half entry whose run would wrap past the end.
 */
static void live_grow(struct profile *p)
{
	size_t old = p->live_cap, mask = old * 2 - 1, naside = 0, cap_aside = 0, i, j;
	struct live *v, *aside = NULL, e;
	int run = 1;            /* i is in the run of full slots at slot 0 */

	v = mremap(p->live, old * sizeof(*v), old * 2 * sizeof(*v), MREMAP_MAYMOVE);
	if (v == MAP_FAILED)
		xmalloc_oom(old * 2 * sizeof(*v));
	p->live = v;
	p->live_cap = old * 2;
	p->live_grown_ns = clock_ns(CLOCK_MONOTONIC);
	for (i = 0; i < old; i++) {
		if (!v[i].ptr) {
			run = 0;
			continue;
		}
		e = v[i];
		v[i].ptr = 0;
		j = run ? SIZE_MAX : live_free_from(p, mix64(e.ptr) & mask);
		if (j == SIZE_MAX) {
			if (naside == cap_aside) {
				cap_aside = cap_aside ? cap_aside * 2 : 64;
				aside = xrealloc(aside, cap_aside * sizeof(*aside));
			}
			aside[naside++] = e;
			continue;
		}
		v[j] = e;
	}
	for (i = 0; i < naside; i++)
		v[live_find(p, aside[i].ptr)] = aside[i];
	free(aside);
}

/*
 * Halve the table once it is less than 1/4 full (then 1/2 full), so that
 * it follows the live set down as well as up, but not within the keep
 * time of its last doubling (profile_set_live_keep): a sampled profile's
 * live set fills and empties with every sweep (profile_sweep_live, five a
 * second), and each halving unmaps pages (a TLB shootdown that interrupts
 * every CPU the tool's threads ran on) that the next doubling faults in
 * again. Without a second copy: the entries are packed into the upper
 * half (its own first, then the lower half's: fewer than a quarter of the
 * slots), the lower half is emptied and they are inserted into it, and
 * the upper half is unmapped.
 */
static void live_shrink(struct profile *p)
{
	size_t half = p->live_cap / 2, n = half, i;
	struct live *v = p->live;

	for (i = half; i < p->live_cap; i++)	/* n <= i: nothing unread is overwritten */
		if (v[i].ptr)
			v[n++] = v[i];
	for (i = 0; i < half; i++)
		if (v[i].ptr)
			v[n++] = v[i];
	memset(v, 0, half * sizeof(*v));
	p->live_cap = half;
	for (i = half; i < n; i++)
		v[live_find(p, v[i].ptr)] = v[i];
	munmap(v + half, half * sizeof(*v));	/* whole pages: half is a multiple of 1024 */
}

/*
 * Empty slot i and shift later members of its probe run back, so that every
 * entry stays reachable from its home slot without tombstones.
 */
static void live_delete_slot(struct profile *p, size_t i)
{
	size_t mask = p->live_cap - 1, j = i, home;

	for (;;) {
		j = (j + 1) & mask;
		if (!p->live[j].ptr)
			break;
		home = live_slot(p, p->live[j].ptr);
		/* Move j into the hole i unless its home lies in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			p->live[i] = p->live[j];
			i = j;
		}
	}
	p->live[i].ptr = 0;
	p->nlive--;
}

/* ---- public API ---- */

struct profile *profile_new(uint64_t rate)
{
	struct profile *p = xcalloc(1, sizeof(*p));

	p->rate = rate;
	p->created_ns = clock_ns(CLOCK_MONOTONIC);
	p->max_stacks = PROFILE_MAX_STACKS;
	p->max_pcs = PROFILE_MAX_PCS;
	p->max_buckets = PROFILE_MAX_BUCKETS;
	p->max_live = PROFILE_MAX_LIVE;
	p->overflow = EMPTY_IDX;
	p->locs_cap = 1024;
	p->locs = xcalloc(p->locs_cap, sizeof(*p->locs));
	p->pcs_cap = 1024;
	p->pcs = xmalloc(p->pcs_cap * sizeof(*p->pcs));
	p->stacks_cap = 64;
	p->stacks = xmalloc(p->stacks_cap * sizeof(*p->stacks));
	p->stack_idx_cap = 128;
	p->stack_idx = new_index(p->stack_idx_cap);
	p->buckets_cap = 64;
	p->buckets = xmalloc(p->buckets_cap * sizeof(*p->buckets));
	p->bucket_idx_cap = 128;
	p->bucket_idx = new_slots(p->bucket_idx_cap);
	p->live_cap = LIVE_MIN_SLOTS;
	p->live = live_map(p->live_cap);
	p->live_keep_ns = LIVE_KEEP_NS;
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->pcs);
	free(p->stacks);
	free(p->stack_idx);
	free(p->buckets);
	free(p->bucket_idx);
	munmap(p->live, p->live_cap * sizeof(*p->live));
	free(p->locs);
	free(p);
}

void profile_set_caps(struct profile *p, size_t stacks, size_t pcs, size_t buckets, size_t live)
{
	if (stacks)
		p->max_stacks = stacks;
	if (pcs)
		p->max_pcs = pcs;
	if (buckets)
		p->max_buckets = buckets;
	if (live)
		p->max_live = live;
}

void profile_set_live_keep(struct profile *p, uint64_t keep_ns)
{
	p->live_keep_ns = keep_ns;
}

size_t profile_live_cap(const struct profile *p)
{
	return p->max_live;
}

unsigned profile_caps_hit(const struct profile *p)
{
	return p->caps_hit;
}

uint64_t profile_rate(const struct profile *p)
{
	return p->rate;
}

uint32_t profile_stack_id(struct profile *p, const uint64_t *pcs, size_t npcs)
{
	uint64_t cut[PROFILE_MAX_FRAMES];

	if (npcs <= PROFILE_MAX_FRAMES)
		return stack_intern(p, pcs, npcs);
	memcpy(cut, pcs, (PROFILE_MAX_FRAMES - 1) * sizeof(*cut));
	cut[PROFILE_MAX_FRAMES - 1] = PROFILE_PC_TRUNCATED;
	return stack_intern(p, cut, PROFILE_MAX_FRAMES);
}

/* An allocation of size bytes at ptr (not 0) from stack id `stack`, taken
 * at the interval rate << shift; h as for bucket_intern; kind: an
 * allocation op's (KEPT: profile_sweep_live leaves it alone; GONE: freed
 * already, not live). */
static void record_alloc(struct profile *p, uint32_t stack, uint64_t size, unsigned shift,
			 uint64_t ptr, uint64_t h, uint32_t kind)
{
	uint32_t bi = bucket_intern(p, stack, size, shift, h);
	struct bucket *b = &p->buckets[bi];
	size_t i;

	b->alloc_count++;
	b->alloc_bytes += size;
	p->total_alloc_count++;
	p->total_alloc_bytes += size;
	if (kind == PROFILE_OP_ALLOC_GONE)
		return;

	i = live_find(p, ptr);
	if (p->live[i].ptr) {
		/* A free we missed: retire the old record first. */
		p->live_again++;
		live_delete_slot(p, i);
		i = live_find(p, ptr);
	} else if (p->nlive >= p->max_live) {
		p->caps_hit |= PROFILE_CAP_LIVE;	/* counted as allocated, not as live */
		return;
	}
	p->live[i].ptr = ptr;
	p->live[i].bucket = bi | (kind == PROFILE_OP_ALLOC_KEPT ? LIVE_KEPT : 0);
	if (++p->nlive * 4 > p->live_cap * 3)
		live_grow(p);
}

/* Whether the live table may be halved now (live_shrink): under a quarter
 * full and past its keep time. rarely: the clock is read only once every
 * LIVE_CLOCK_EVERY such calls (a free's look; no keep time needs none). */
static int live_may_shrink(struct profile *p, int rarely)
{
	if (p->nlive * 4 >= p->live_cap || p->live_cap <= LIVE_MIN_SLOTS)
		return 0;
	if (!p->live_keep_ns)
		return 1;
	if (rarely && p->live_looks++ % LIVE_CLOCK_EVERY)
		return 0;
	return clock_ns(CLOCK_MONOTONIC) - p->live_grown_ns >= p->live_keep_ns;
}

/* Take ptr (not 0) out of the live table: 1 if it was live. */
static int live_forget(struct profile *p, uint64_t ptr)
{
	size_t i = live_find(p, ptr);

	if (!p->live[i].ptr)
		return 0;
	live_delete_slot(p, i);
	return 1;
}

/* A free of ptr (not 0): 1 if it was live. */
static int record_free(struct profile *p, uint64_t ptr)
{
	if (!live_forget(p, ptr))
		return 0;
	if (live_may_shrink(p, 1))
		live_shrink(p);
	return 1;
}

/*
 * Each allocation touches a bucket and a live slot at random, and at millions
 * of events a second those misses are most of the cost: walk the batch
 * twice ahead of the updates, first to bring in the index and live slots,
 * then the buckets the allocations lead to (a free touches none), so that
 * the misses overlap. hk[k] is the bucket key hash of ops[k] (allocations).
 */
static void prefetch_batch(const struct profile *p, const struct profile_op *ops,
			   const uint64_t *hk, size_t n)
{
	size_t bmask = p->bucket_idx_cap - 1;

	for (size_t k = 0; k < n; k++) {
		if (ops[k].kind != PROFILE_OP_FREE)
			__builtin_prefetch(&p->bucket_idx[hk[k] & bmask]);
		if (ops[k].kind != PROFILE_OP_ALLOC_GONE)
			__builtin_prefetch(&p->live[live_slot(p, ops[k].ptr)]);
	}
	for (size_t k = 0; k < n; k++) {
		if (ops[k].kind == PROFILE_OP_FREE)
			continue;	/* a free touches no bucket */
		for (size_t i = hk[k] & bmask; p->bucket_idx[i] != EMPTY_SLOT; i = (i + 1) & bmask)
			if (!((p->bucket_idx[i] ^ hk[k]) >> 32)) {
				__builtin_prefetch(&p->buckets[(uint32_t)p->bucket_idx[i]], 1);
				break;
			}
	}
}

#define BATCH_CHUNK 64

/* An op's shift, within PROFILE_MAX_SHIFT and the rate's room (0 in exact mode). */
static unsigned op_shift(const struct profile *p, const struct profile_op *o)
{
	unsigned s = o->shift < PROFILE_MAX_SHIFT ? o->shift : PROFILE_MAX_SHIFT;

	if (p->rate <= 1)
		return 0;
	while (s && p->rate > (PROFILE_MAX_RATE >> s))
		s--;
	return s;
}

void profile_record_batch(struct profile *p, const struct profile_op *ops, size_t n)
{
	uint64_t hk[BATCH_CHUNK];

	for (size_t at = 0; at < n; at += BATCH_CHUNK) {
		const struct profile_op *o = ops + at;
		size_t m = n - at < BATCH_CHUNK ? n - at : BATCH_CHUNK;

		for (size_t k = 0; k < m; k++)
			hk[k] = o[k].kind != PROFILE_OP_FREE ?
				hash_bucket_key(o[k].stack, o[k].size, op_shift(p, &o[k])) : 0;
		if (m > 1)
			prefetch_batch(p, o, hk, m);
		for (size_t k = 0; k < m; k++) {
			if (!o[k].ptr)
				continue;
			if (o[k].kind != PROFILE_OP_FREE)
				record_alloc(p, o[k].stack, o[k].size, op_shift(p, &o[k]),
					     o[k].ptr, hk[k], o[k].kind);
			else
				record_free(p, o[k].ptr);
		}
	}
}

/*
 * Stacks deeper than PROFILE_MAX_FRAMES keep their innermost frames and the
 * truncation mark. ptr 0 (a failed allocation) allocated nothing and is ignored.
 */
void profile_record_alloc(struct profile *p, const uint64_t *pcs, size_t npcs,
			  uint64_t size, uint64_t ptr)
{
	uint32_t stack;

	if (!ptr)
		return;
	stack = profile_stack_id(p, pcs, npcs);
	record_alloc(p, stack, size, 0, ptr, hash_bucket_key(stack, size, 0), PROFILE_OP_ALLOC);
}

int profile_record_free(struct profile *p, uint64_t ptr)
{
	return ptr ? record_free(p, ptr) : 0;
}

size_t profile_sweep_live(struct profile *p, int (*gone)(uint64_t ptr, void *arg), void *arg)
{
	uint64_t *dead = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < p->live_cap; i++) {
		uint64_t ptr = p->live[i].ptr;

		if (!ptr || (p->live[i].bucket & LIVE_KEPT) || !gone(ptr, arg))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			dead = xrealloc(dead, cap * sizeof(*dead));
		}
		dead[n++] = ptr;
	}
	for (size_t k = 0; k < n; k++)	/* deleting shifts entries: not during the scan */
		live_forget(p, dead[k]);
	while (live_may_shrink(p, 0))	/* once, at the end */
		live_shrink(p);
	free(dead);
	return n;
}

size_t profile_map_pcs(struct profile *p, uint64_t (*fn)(void *arg, uint64_t pc), void *arg)
{
	size_t changed = 0;

	for (size_t id = 0; id < p->nstacks; id++) {
		struct stack *s = &p->stacks[id];
		uint64_t *pcs = p->pcs + s->off;
		int any = 0;

		for (uint32_t i = 0; i < s->n; i++) {
			uint64_t v = fn(arg, pcs[i]);

			if (v != pcs[i]) {
				pcs[i] = v;
				loc_add(p, v);
				any = 1;
			}
		}
		if (any) {
			s->hash = hash_pcs(pcs, s->n);
			changed++;
		}
	}
	if (changed)
		stack_index_build(p, p->stack_idx_cap);
	return changed;
}

void profile_set_shift(struct profile *p, unsigned shift, uint64_t now_ns)
{
	uint64_t at = now_ns > p->created_ns ? now_ns - p->created_ns : 0;
	struct profile_raise *r = NULL;

	if (p->rate <= 1 || shift == p->shift)
		return;
	if (!p->shift) {
		p->raise_start = at;
		if (p->nraises < PROFILE_MAX_RAISES)
			p->raises[p->nraises] = (struct profile_raise){ 0, at, 0 };
		p->nraises++;
	}
	if (p->nraises <= PROFILE_MAX_RAISES)
		r = &p->raises[p->nraises - 1];
	if (shift) {
		uint64_t v = p->rate << shift;

		if (r && v > r->max_rate)
			r->max_rate = v;
		if (!r && v > p->extra_max)
			p->extra_max = v;
	} else if (r) {
		r->end_ns = at > p->raise_start ? at : p->raise_start + 1;
	} else {
		p->extra_ns += at - p->raise_start;
	}
	p->shift = shift;
}

size_t profile_nraises(const struct profile *p)
{
	return p->nraises;
}

const char *profile_interval_text(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (u + 1 < sizeof(unit) / sizeof(unit[0]) && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v, unit[u]);
	return buf;
}

int profile_raise_comment(const struct profile *p, size_t i, uint64_t now_ns, char *buf,
			  size_t len)
{
	uint64_t now = now_ns > p->created_ns ? now_ns - p->created_ns : 0;
	char from[32], to[32];

	profile_interval_text(p->rate, from, sizeof(from));
	if (i < PROFILE_MAX_RAISES) {
		const struct profile_raise *r = &p->raises[i];
		uint64_t end = r->end_ns ? r->end_ns : now;

		if (i >= p->nraises)
			return 0;
		snprintf(buf, len, "heapattach could not keep up: sampling interval raised from %s "
			 "to at most %s for %.1f s (from %.1f s to %.1f s after heapattach started%s); "
			 "each sample is scaled by the interval it was taken at", from,
			 profile_interval_text(r->max_rate, to, sizeof(to)),
			 (end > r->start_ns ? end - r->start_ns : 0) / 1e9, r->start_ns / 1e9,
			 end / 1e9, r->end_ns ? "" : ", still raised when written");
		return 1;
	}
	if (i > PROFILE_MAX_RAISES || p->nraises <= PROFILE_MAX_RAISES)
		return 0;
	snprintf(buf, len, "heapattach could not keep up %zu more times: sampling interval raised "
		 "from %s to at most %s for %.1f s in all", p->nraises - PROFILE_MAX_RAISES, from,
		 profile_interval_text(p->extra_max, to, sizeof(to)),
		 (p->extra_ns + (p->shift && now > p->raise_start ? now - p->raise_start : 0)) / 1e9);
	return 1;
}

void profile_add_drops(struct profile *p, uint64_t n)
{
	p->drops += n;
}

uint64_t profile_drops(const struct profile *p)
{
	return p->drops;
}

void profile_xacct_reset(struct profile *p)
{
	for (size_t i = 0; i < p->nbuckets; i++) {
		p->buckets[i].xalloc_count = 0;
		p->buckets[i].xinuse_count = 0;
	}
	p->xalloc_count = p->xalloc_bytes = p->xinuse_count = 0;
}

/* The bucket (stack, size) of accounted figures (shift 0: exact mode),
 * interned as a recorded allocation's is (caps apply); NULL for a stack
 * the profile does not hold. */
static struct bucket *xacct_bucket(struct profile *p, uint32_t stack, uint64_t size)
{
	uint32_t bi;

	if (stack >= p->nstacks)
		return NULL;
	bi = bucket_intern(p, stack, size, 0, hash_bucket_key(stack, size, 0));
	return &p->buckets[bi];	/* after the call: it may move the buckets */
}

void profile_xacct_alloc(struct profile *p, uint32_t stack, uint64_t size, uint64_t count)
{
	struct bucket *b = count ? xacct_bucket(p, stack, size) : NULL;

	if (!b)
		return;
	b->xseen = 1;
	b->xalloc_count = sat_add(b->xalloc_count, count);
	p->xalloc_count = sat_add(p->xalloc_count, count);
	p->xalloc_bytes = sat_add(p->xalloc_bytes, sat_mul(count, size));
}

void profile_xacct_inuse(struct profile *p, uint32_t stack, uint64_t size)
{
	struct bucket *b = xacct_bucket(p, stack, size);

	if (!b)
		return;
	b->xseen = 1;
	b->xinuse_count = sat_add(b->xinuse_count, 1);
	p->xinuse_count = sat_add(p->xinuse_count, 1);
}

uint64_t profile_xacct_allocs(const struct profile *p)
{
	return p->xalloc_count;
}

uint64_t profile_total_alloc_bytes(const struct profile *p)
{
	return sat_add(p->total_alloc_bytes, p->xalloc_bytes);
}

uint64_t profile_live_again(const struct profile *p)
{
	return p->live_again;
}

uint64_t profile_total_alloc_count(const struct profile *p)
{
	return sat_add(p->total_alloc_count, p->xalloc_count);
}

size_t profile_nlive(const struct profile *p)
{
	return (size_t)sat_add(p->nlive, p->xinuse_count);
}

void profile_foreach_live(const struct profile *p, uint64_t min_size,
			  void (*cb)(uint64_t ptr, uint64_t size, void *arg), void *arg)
{
	for (size_t i = 0; i < p->live_cap; i++) {
		const struct live *l = &p->live[i];
		uint64_t size;

		if (!l->ptr)
			continue;
		size = p->buckets[l->bucket & ~LIVE_KEPT].size;
		if (size >= min_size)
			cb(l->ptr, size, arg);
	}
}

size_t profile_live_bytes(const struct profile *p)
{
	return p->live_cap * sizeof(*p->live);
}

size_t profile_nbuckets(const struct profile *p)
{
	return p->nbuckets;
}

size_t profile_nstacks(const struct profile *p)
{
	return p->nstacks;
}

const uint64_t *profile_stack_pcs(const struct profile *p, uint32_t id, size_t *n)
{
	if (id >= p->nstacks) {
		*n = 0;
		return NULL;
	}
	*n = p->stacks[id].n;
	return p->pcs + p->stacks[id].off;
}

/*
 * Buckets are visited in creation order, each from the first time it has
 * a figure on (so the n-th stays the n-th: peak.c's snapshot relies on it),
 * even if its accounted figures are all 0 again. A cut stack's buckets are
 * shown with the frames of its completion (stackfill.c). b->pcs points into the
 * profile and is valid only during the callback; cb must not record into p.
 */
int profile_foreach(const struct profile *p,
		    int (*cb)(const struct profile_bucket *b, void *arg), void *arg)
{
	uint64_t *inuse = xcalloc(p->nbuckets ? p->nbuckets : 1, sizeof(*inuse));
	uint32_t *shown = profile_completions(p);
	int ret = 0;

	for (size_t i = 0; i < p->live_cap; i++)
		if (p->live[i].ptr)
			inuse[p->live[i].bucket & ~LIVE_KEPT]++;
	for (size_t i = 0; i < p->nbuckets && !ret; i++) {
		const struct bucket *b = &p->buckets[i];
		const struct stack *s = &p->stacks[shown ? shown[b->stack] : b->stack];
		uint64_t nuse = sat_add(inuse[i], b->xinuse_count);
		struct profile_bucket pb = {
			.pcs = p->pcs + s->off,
			.npcs = s->n,
			.size = b->size,
			.rate = p->rate << b->shift,
			.alloc_count = sat_add(b->alloc_count, b->xalloc_count),
			.alloc_bytes = sat_add(b->alloc_bytes, sat_mul(b->xalloc_count, b->size)),
			.inuse_count = nuse,
			.inuse_bytes = sat_mul(nuse, b->size),
		};

		if (b->alloc_count || b->xseen)
			ret = cb(&pb, arg);
	}
	free(shown);
	free(inuse);
	return ret;
}

/* v * scale + round (0: truncated, 0.5: to the nearest) as an int64,
 * INT64_MAX if it does not fit (the target's figures can be anything). */
static int64_t scaled(uint64_t v, double scale, double round)
{
	double x = (double)v * scale + round;

	return x < 9.2e18 ? (int64_t)x : INT64_MAX;
}

/* The objects one sample of avg bytes stands for at an interval of rate. */
static double unsample(double avg, uint64_t rate)
{
	return 1 / (1 - exp(-avg / (double)rate));
}

struct profile_bucket profile_bucket_at(const struct profile_bucket *b, uint64_t rate)
{
	struct profile_bucket r = *b;
	double k;

	r.rate = rate;
	if (b->rate == rate || rate <= 1 || b->rate <= 1 || !b->size)
		return r;
	/* every sample of a bucket has its size: the scales are per object */
	k = unsample(b->size, b->rate) / unsample(b->size, rate);
	r.alloc_count = (uint64_t)scaled(b->alloc_count, k, 0.5);
	r.inuse_count = (uint64_t)scaled(b->inuse_count, k, 0.5);
	r.alloc_bytes = r.alloc_count * b->size;
	r.inuse_bytes = r.inuse_count * b->size;
	return r;
}

void profile_scale(uint64_t count, uint64_t bytes, uint64_t rate,
		   int64_t *out_count, int64_t *out_bytes)
{
	double avg, scale;

	if (count == 0 || bytes == 0) {
		*out_count = 0;
		*out_bytes = 0;
		return;
	}
	if (rate <= 1) {
		*out_count = count > INT64_MAX ? INT64_MAX : (int64_t)count;
		*out_bytes = bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes;
		return;
	}
	avg = (double)bytes / (double)count;
	scale = unsample(avg, rate);
	*out_count = scaled(count, scale, 0);
	*out_bytes = scaled(bytes, scale, 0);
}
