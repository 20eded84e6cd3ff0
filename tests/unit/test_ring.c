/* Unit tests for ring.c's merge: time order across rings, rings blocked by a writer mid-record. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <time.h>

#include "harness.h"
#include "ring.h"
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
	ring_reader_init(rd, hdr());
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

static void test_teardown(void)
{
	free(shm);
	shm = NULL;
}

HARNESS_MAIN("ring", T(test_order), T(test_blocked), T(test_teardown))
