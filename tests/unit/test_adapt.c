/* Unit tests for the sampling interval's controller (adapt.c): made-up windows, the shift it says. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "fast/adapt.h"
#include "harness.h"

#define MS 1000000ULL
#define RING (1ULL << 20)

/* A run of windows: running totals moved by each step. */
struct run {
	struct adapt_state st;
	struct adapt_window w;
	struct adapt_verdict v;
};

static void begin(struct run *r)
{
	*r = (struct run){ .w = { .now = 1000 * MS, .size = RING, .top = 10 } };
	adapt_judge(&r->st, &r->w, &r->v);     /* the first: a window begins */
	expect_int_eq(r->v.shift, 0);
	expect_u64_eq(r->st.win_ns, 1000 * MS);
}

/* ms of time in which the target wrote written bytes of records, we read
 * got and napped nap ms, it made allocs allocations and frees frees, and
 * dropped drops; most bytes unread in the fullest ring at the end. */
static unsigned step(struct run *r, uint64_t ms, uint64_t written, uint64_t got, uint64_t nap,
		     uint64_t allocs, uint64_t frees, uint64_t drops, uint64_t most)
{
	r->w.now += ms * MS;
	r->w.heads += written;
	r->w.tails += got;
	r->w.napped += nap * MS;
	r->w.allocs += allocs;
	r->w.frees += frees;
	r->w.drops += drops;
	r->w.most = most;
	adapt_judge(&r->st, &r->w, &r->v);
	expect_int_eq(r->v.shift, r->st.shift);
	return r->v.shift;
}

/* Overloaded: drops with a ring past a quarter raise the interval by the
 * doublings that bring the demand within ADAPT_LOAD of what we read (at
 * most 4 at once, at most top); nothing is judged before a window is over. */
static void test_raise(void)
{
	struct run r;

	begin(&r);
	expect_int_eq(step(&r, 50, 10 << 20, 1 << 20, 0, 1000, 0, 100, RING / 2 - 1), 0);
	expect_u64_eq(r.st.win_ns, 1000 * MS);          /* not over: not judged */
	expect_int_eq(step(&r, 50, 0, 0, 0, 0, 0, 0, RING / 2), 4);
	expect_true(r.v.say & ADAPT_SAY_DROPS);
	expect_u64_eq(r.v.dropped, 100);
	expect_u64_eq(r.st.settle_tails, r.w.heads);
	expect_u64_eq(r.st.calm_need, ADAPT_CALM_NS);
	/* 1.5x what we read, busy all the time: one doubling does */
	begin(&r);
	expect_int_eq(step(&r, 100, 1500000, 1000000, 0, 1000, 0, 1, RING / 4), 2);
	/* capped at top */
	begin(&r);
	r.w.top = 3;
	expect_int_eq(step(&r, 100, 100 << 20, 1 << 20, 0, 1000, 0, 50, RING), 3);
}

/* A ring past half full is judged after an eighth of a window. */
static void test_half_full(void)
{
	struct run r;

	begin(&r);
	expect_true(step(&r, (ADAPT_WIN_NS / 8 + MS - 1) / MS, 10 << 20, 1 << 20, 0, 1000, 0, 10, RING / 2) > 0);
	begin(&r);
	expect_int_eq(step(&r, (ADAPT_WIN_NS / 8 + MS - 1) / MS, 10 << 20, 1 << 20, 0, 1000, 0, 10, RING / 4), 0);
}

/* While we still read records from before the last raise, only drops
 * with a ring past half full raise it again. */
static void test_settle(void)
{
	struct run r;
	unsigned s;

	begin(&r);
	s = step(&r, 100, 10 << 20, 1 << 20, 0, 1000, 0, 100, RING / 2);
	expect_true(s > 0);
	/* busy, a backlog, no drops: the raise is not seen yet */
	expect_int_eq(step(&r, 100, 2 << 20, 1 << 20, 0, 1000, 0, 0, RING / 3), s);
	/* drops with a ring past half: not enough after all */
	expect_true(step(&r, 100, 2 << 20, 1 << 20, 0, 1000, 0, 10, RING / 2) > s);
}

/* Calm windows for ADAPT_CALM_NS step the interval down by as many
 * halvings as leave us napping half the time (all, when idle); a raise
 * soon after a step down doubles the calm wanted next time. */
static void test_calm(void)
{
	struct run r;

	begin(&r);
	expect_int_eq(step(&r, 100, 10 << 20, 1 << 20, 0, 1000, 0, 100, RING / 2), 4);
	for (int i = 0; i < 9; i++)
		expect_int_eq(step(&r, 100, 1000, 1000, 100, 10, 0, 0, 0), 4);
	expect_int_eq(step(&r, 100, 1000, 1000, 100, 10, 0, 0, 0), 0);
	expect_u64_eq(r.st.lowered_ns, r.w.now);
	/* overloaded again within ADAPT_BACKOFF_NS: calm wanted doubles */
	expect_true(step(&r, 100, 10 << 20, 1 << 20, 0, 1000, 0, 100, RING / 2) > 0);
	expect_u64_eq(r.st.calm_need, 2 * ADAPT_CALM_NS);
	/* a window neither calm nor overloaded breaks the calm run */
	for (int i = 0; i < 15; i++)
		step(&r, 100, 1000, 1000, 100, 10, 0, 0, 0);
	expect_true(r.st.shift > 0);
	step(&r, 100, 1000, 1000, 100, 10, 0, 0, RING / 8);
	expect_u64_eq(r.st.calm_ns, 0);
	/* busy at the raised interval: halving would leave us busy; no step */
	begin(&r);
	expect_int_eq(step(&r, 100, 10 << 20, 1 << 20, 0, 1000, 0, 100, RING / 2), 4);
	for (int i = 0; i < 20; i++)
		expect_int_eq(step(&r, 100, 1000, 1000, 60, 1000, 0, 0, 0), 4);
}

/* Demand made of frees (overflowed live buckets report them): no
 * interval helps, said once; counts that go back start a new window. */
static void test_futile_rewound(void)
{
	struct run r;

	begin(&r);
	expect_int_eq(step(&r, 100, 10 << 20, 1 << 20, 0, 0, 1000, 100, RING / 2), 0);
	expect_true(r.v.say & ADAPT_SAY_FUTILE);
	expect_int_eq(step(&r, 100, 10 << 20, 1 << 20, 0, 0, 1000, 100, RING / 2), 0);
	expect_true(!(r.v.say & ADAPT_SAY_FUTILE));
	/* the target rewound its drop count: a new window, nothing judged */
	r.w.drops = 0;
	expect_int_eq(step(&r, 100, 10 << 20, 1 << 20, 0, 1000, 0, 0, RING), 0);
	expect_u64_eq(r.st.win_ns, r.w.now);
	expect_u64_eq(r.st.win_drops, 0);
}

HARNESS_MAIN("adapt", T(test_raise), T(test_half_full), T(test_settle), T(test_calm),
	     T(test_futile_rewound))
