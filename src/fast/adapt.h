/* The sampling interval's controller (sampled mode): what a window of figures says to do, as a pure function. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ADAPT_H
#define HEAPATTACH_ADAPT_H

#include <stdint.h>

/*
 * The interval in force is the rate << shift. After each drain the link
 * hands adapt_judge the figures of now (a window): it judges the window
 * once it is ADAPT_WIN_NS long (an eighth of it with a ring past half
 * full) and says the shift to use; the link applies it (interval.c,
 * set_shift). No clock is read, nothing is said: tests drive it with
 * made-up windows (tests/unit/test_adapt.c).
 */
#define ADAPT_WIN_NS 100000000ULL	/* a window judged at once: 100 ms */
#define ADAPT_CALM_NS 1000000000ULL	/* calm wanted before a step down: 1 s... */
#define ADAPT_CALM_MAX_NS 8000000000ULL	/* ...doubled, up to 8 s, when the last step down
					 * had to be undone within ADAPT_BACKOFF_NS */
#define ADAPT_BACKOFF_NS 3000000000ULL
#define ADAPT_LOAD 0.7			/* the share of what we can read a raise aims at */

/* What the controller keeps between windows (zeroed at the start). */
struct adapt_state {
	unsigned shift;                 /* in force */
	uint64_t win_ns;                /* the window being judged: its start (0: none yet), */
	uint64_t win_napped, win_drops; /* and the figures then */
	uint64_t win_heads, win_tails, win_allocs, win_frees;
	uint64_t settle_tails;          /* ring bytes written at the last raise */
	uint64_t shift_ns, lowered_ns;  /* when the interval last changed, was last lowered */
	uint64_t calm_ns;               /* start of the calm windows in a row (0: none) */
	uint64_t calm_need;             /* calm wanted before a step down (0: ADAPT_CALM_NS) */
	int futile_noted;               /* no interval helps: said (ADAPT_SAY_FUTILE) */
};

/* The figures now, each a running total but most, size and top. */
struct adapt_window {
	uint64_t now;                   /* CLOCK_MONOTONIC ns */
	uint64_t drops;                 /* events the agent dropped */
	uint64_t heads, tails;          /* ring bytes written, and read by us */
	uint64_t napped;                /* ns we spent napping (idle) */
	uint64_t allocs, frees;         /* events read */
	uint64_t most, size;            /* the fullest ring's unread bytes; a ring's size */
	unsigned top;                   /* the largest shift allowed */
};

/* What a judgement found, for the link to say (debug). */
#define ADAPT_SAY_DROPS  1u             /* events were dropped in the window */
#define ADAPT_SAY_FUTILE 2u             /* behind on frees: no interval helps (said once) */
struct adapt_verdict {
	unsigned shift;                 /* the shift to use from now (st->shift before) */
	unsigned say;                   /* ADAPT_SAY_* */
	uint64_t dropped, span_ns;      /* for ADAPT_SAY_DROPS: how many, over what */
	double busy;                    /* the share of the window we were busy */
};

/*
 * Judge window w against st (see adapt.c for the rule), updating st (a
 * new window begins when one was judged, or at the first call, or when
 * the counts went backwards: the target rewound them). v->shift is the
 * shift to use; st->shift and st->shift_ns already say it.
 */
void adapt_judge(struct adapt_state *st, const struct adapt_window *w, struct adapt_verdict *v);

#endif
