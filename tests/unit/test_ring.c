/* Unit tests for ring.c's merge: time order across rings, rings blocked by a writer mid-record. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "harness.h"
#include "fast/ring.h"
#include "shm.h"

#define RSIZE 4096

static uint8_t *shm;		/* a DATA view with 4 KiB rings */
static uint64_t got[16];
static int ngot;

static struct shm_hdr *hdr(void)
{
	return (struct shm_hdr *)shm;
}

static uint64_t *head(unsigned r)
{
	return (uint64_t *)(shm + SHM_OFF_HEADS + r * 64);
}

/* Reserve a free record in ring r stamped tsc, as ring_reserve does; commit it if asked. */
static struct shm_ev_free *put(unsigned r, uint64_t tsc, uint64_t ptr, int commit)
{
	struct shm_ev_free *e = (struct shm_ev_free *)(shm + SHM_OFF_RING + r * RSIZE +
						       (*head(r) & (RSIZE - 1)));

	*head(r) += sizeof(*e);
	e->tsc = tsc;
	e->ptr = ptr;
	if (commit) {
		e->kind = SHM_EV_FREE;
		e->len = sizeof(*e);
	}
	return e;
}

static void commit(struct shm_ev_free *e)
{
	e->kind = SHM_EV_FREE;
	e->len = sizeof(*e);
}

static int take(void *arg, const void *rec, uint32_t len)
{
	(void)arg;
	(void)len;
	if (ngot < 16)
		got[ngot++] = ((const struct shm_ev_free *)rec)->ptr;
	return 0;
}

static void setup(struct ring_reader *rd)
{
	free(shm);
	shm = calloc(1, SHM_OFF_RING + SHM_NRINGS * RSIZE);
	hdr()->ring_size = RSIZE;
	ring_reader_init(rd, hdr(), RSIZE, SHM_MAX_DEPTH, SHM_PY_MAX_FRAMES);
	ngot = 0;
}

/* Records of several rings come out in stamp order. */
static void test_order(void)
{
	struct ring_reader rd;

	setup(&rd);
	put(0, 10, 1, 1);
	put(3, 20, 2, 1);
	put(0, 30, 3, 1);
	put(3, 40, 4, 1);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 4);
	for (int i = 0; i < 4; i++)
		expect_u64_eq(got[i], (uint64_t)i + 1);
}

/*
 * Ring 0 is shared: W reserved first (stamp 100) and is not committed, P
 * (stamp 200) is committed behind it; ring 1 holds R (stamp 300), which
 * may depend on P. Only what was stamped before W goes; the rest follows
 * W's commit, in order.
 */
static void test_blocked(void)
{
	struct ring_reader rd;
	struct shm_ev_free *w;

	setup(&rd);
	put(1, 50, 9, 1);
	w = put(0, 100, 1, 0);
	put(0, 200, 2, 1);
	put(1, 300, 3, 1);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 1);
	expect_u64_eq(got[0], 9);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 0);
	commit(w);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 3);
	expect_u64_eq(got[1], 1);
	expect_u64_eq(got[2], 2);
	expect_u64_eq(got[3], 3);

	/* the stamp not stored yet: nothing goes */
	setup(&rd);
	w = put(0, 0, 1, 0);
	put(1, 300, 3, 1);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 0);

	/* blocked for longer than STUCK_NS (100 ms): the others go on */
	struct timespec nap = { 0, 150 * 1000000L };

	nanosleep(&nap, NULL);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 1);
	expect_u64_eq(got[0], 3);

	/* no writers left: no wait at all */
	setup(&rd);
	w = put(0, 100, 1, 0);
	put(1, 300, 3, 1);
	ring_reader_final(&rd);
	expect_int_eq(ring_drain(&rd, 100, take, NULL), 1);
	(void)w;
}

/*
 * A record's length is bounded by the run's depth: at 128 frames the
 * longest the agent writes is shm_ev_max_len(128) (9320 bytes); 8 more
 * is a record no agent writes, which 1024 frames would allow.
 */
static void test_record_len(void)
{
	enum { BIG = 32768 };
	static const struct {
		uint32_t depth, npy, len;
		int ok;
	} cases[] = {
		{ 128, 0, 40 + 128 * 8 + sizeof(struct frame_regs) + SHM_STACK_COPY, 1 },
		{ 128, 0, 40 + 128 * 8 + sizeof(struct frame_regs) + SHM_STACK_COPY + 8, 0 },
		{ 128, 1, 40 + 128 * 8 + sizeof(struct frame_regs) + SHM_STACK_COPY + 8, 1 },
		{ 1024, 0, 40 + 128 * 8 + sizeof(struct frame_regs) + SHM_STACK_COPY + 8, 1 },
		{ 1024, 255, SHM_EV_MAX_LEN, 1 },
		{ 1024, 255, SHM_EV_MAX_LEN + 8, 0 },
		{ 5000, 999, SHM_EV_MAX_LEN + 8, 0 },	/* no depth beyond SHM_MAX_DEPTH */
	};
	uint8_t *area = calloc(1, SHM_OFF_RING + SHM_NRINGS * BIG);
	struct ring_reader *rd = malloc(sizeof(*rd));

	expect_int_eq(shm_ev_max_len(128, 0), 9320);
	expect_int_eq(shm_ev_max_len(1024, SHM_PY_MAX_FRAMES), SHM_EV_MAX_LEN);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct shm_ev_alloc *e = (struct shm_ev_alloc *)(area + SHM_OFF_RING);

		memset(area, 0, SHM_OFF_RING + BIG);
		ring_reader_init(rd, (struct shm_hdr *)area, BIG, cases[i].depth, cases[i].npy);
		*(uint64_t *)(area + SHM_OFF_HEADS) = cases[i].len;
		e->kind = SHM_EV_ALLOC;
		e->tsc = 5;
		e->len = cases[i].len;
		ngot = 0;
		expect_int_eq(ring_drain(rd, 10, take, NULL), cases[i].ok);
		expect_int_eq(rd->corrupt != NULL, !cases[i].ok);
	}
	free(rd);
	free(area);
}

static void test_teardown(void)
{
	free(shm);
	shm = NULL;
}

/* ---- a hostile area: the target writes every byte of it ---- */

/* The DATA view between two inaccessible pages: a read or write outside it
 * kills the test. Freed by hostile_free. */
static uint8_t *hostile_area(size_t *len)
{
	size_t n = (SHM_OFF_RING + SHM_NRINGS * RSIZE + 4095) & ~(size_t)4095;
	uint8_t *p = mmap(NULL, n + 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	mprotect(p + 4096, n, PROT_READ | PROT_WRITE);
	*len = n;
	return p + 4096;
}

static void hostile_free(uint8_t *area, size_t len)
{
	munmap(area - 4096, len + 2 * 4096);
}

/* A hostile area (hostile_area) and rd reading it; NULL if none. */
static uint8_t *hostile_reader(struct ring_reader *rd, size_t *len)
{
	uint8_t *area = hostile_area(len);

	expect_true(area != NULL);
	if (area)
		ring_reader_init(rd, (struct shm_hdr *)area, RSIZE, SHM_MAX_DEPTH, SHM_PY_MAX_FRAMES);
	ngot = 0;
	return area;
}

/* The heads of a hostile area: ring r's is [r * 8]. */
static uint64_t *heads_of(uint8_t *area)
{
	return (uint64_t *)(area + SHM_OFF_HEADS);
}

static uint8_t *taken_from;	/* where the last record handed over lies */

static int take_where(void *arg, const void *rec, uint32_t len)
{
	taken_from = (uint8_t *)rec;
	return take(arg, rec, len);
}

/* A record of len bytes and kind at offset off of ring r (committed). */
static void raw(uint8_t *area, unsigned r, uint64_t off, uint32_t len, uint16_t kind)
{
	struct shm_ev_free *e = (struct shm_ev_free *)(area + SHM_OFF_RING + r * RSIZE + off);

	e->kind = kind;
	e->tsc = 1;
	e->ptr = 0x1234;
	e->len = len;
}

/* The ring size in the header is the target's to write: the reader keeps
 * its own, and records are handed over as private copies. */
static void test_hostile_ring_size(void)
{
	struct ring_reader rd;
	size_t len;
	uint8_t *area = hostile_reader(&rd, &len);

	if (!area)
		return;
	((struct shm_hdr *)area)->ring_size = 1ULL << 40;
	raw(area, 15, 0, 24, SHM_EV_FREE);
	heads_of(area)[15 * 8] = 24;
	expect_int_eq(ring_drain(&rd, 100, take_where, NULL), 1);
	expect_true(rd.corrupt == NULL);
	expect_u64_eq(got[0], 0x1234);
	expect_true(taken_from < area || taken_from >= area + len);
	expect_int_eq(*(uint32_t *)(area + SHM_OFF_RING + 15 * RSIZE), 0);	/* consumed */
	hostile_free(area, len);
}

/*
 * Heads behind the tail or more than a ring ahead of it, lengths no agent
 * writes: corrupt, nothing handed over from there on, nothing zeroed, and
 * the pending figure stays within a ring.
 */
static void test_hostile_input(void)
{
	static const struct {
		uint64_t off;	/* of the record (32-byte records before it) */
		uint32_t len;
		uint16_t kind;
		uint64_t head;	/* 0: just past the record's header */
	} bad[] = {
		{ 0, 24, SHM_EV_FREE, RSIZE + 8 },	/* a head beyond a ring */
		{ 0, 24, SHM_EV_FREE, ~0ULL },
		{ 0, 24, SHM_EV_FREE, 1ULL << 40 },
		{ 0, 24, SHM_EV_FREE, ~0ULL - 7 },	/* behind the tail */
		{ 0, 12, SHM_EV_FREE, 0 },		/* not a multiple of 8 */
		{ 0, 8, SHM_EV_FREE, 0 },		/* shorter than a header */
		{ 0, RSIZE + 8, SHM_EV_FREE, 0 },	/* beyond the ring */
		{ RSIZE - 64, 128, SHM_EV_ALLOC, 0 },	/* straddles the end */
		{ 0, 0xfffffff8, SHM_EV_ALLOC, 0 },	/* huge */
		{ 64, 64, SHM_EV_PAD, 0 },		/* a pad short of the end */
		{ 64, RSIZE, SHM_EV_PAD, 0 },		/* a pad beyond it */
		{ 0, RSIZE, SHM_EV_PAD, 0 },		/* a pad of a whole ring */
	};
	unsigned r = SHM_NRINGS - 1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ring_reader rd;
		size_t len;
		uint8_t *area = hostile_reader(&rd, &len);

		if (!area)
			return;
		for (uint64_t o = 0; o < bad[i].off; o += 32)
			raw(area, r, o, 32, SHM_EV_FREE);
		raw(area, r, bad[i].off, bad[i].len, bad[i].kind);
		heads_of(area)[r * 8] = bad[i].head ? bad[i].head : bad[i].off + 8;
		expect_int_eq(ring_drain(&rd, 1000, take, NULL), bad[i].head ? 0 : bad[i].off / 32);
		expect_true(rd.corrupt != NULL);
		expect_true(ring_pending_max(&rd) <= RSIZE);
		expect_int_eq(*(uint32_t *)(area + SHM_OFF_RING + r * RSIZE + bad[i].off),
			      bad[i].len);
		expect_int_eq(ring_drain(&rd, 1000, take, NULL), 0);
		hostile_free(area, len);
	}
}

/* A pad to the end and the record after it at the ring's start: fine. */
static void test_pad_wraps(void)
{
	struct ring_reader rd;
	size_t len;
	uint8_t *area = hostile_reader(&rd, &len);
	uint64_t *heads;

	if (!area)
		return;
	heads = heads_of(area);
	for (uint64_t o = 0; o < RSIZE - 16; o += 24)
		raw(area, 0, o, 24, SHM_EV_FREE);
	heads[0] = (RSIZE - 16) / 24 * 24;
	ring_drain(&rd, 1000, take, NULL);
	raw(area, 0, heads[0], (uint32_t)(RSIZE - heads[0]), SHM_EV_PAD);
	raw(area, 0, 0, 24, SHM_EV_FREE);
	heads[0] = RSIZE + 24;
	expect_int_eq(ring_drain(&rd, 1000, take, NULL), 1);
	expect_true(rd.corrupt == NULL);
	hostile_free(area, len);
}

HARNESS_MAIN("ring", T(test_order), T(test_blocked), T(test_record_len), T(test_teardown),
	     T(test_hostile_ring_size), T(test_hostile_input), T(test_pad_wraps))
