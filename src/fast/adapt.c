/* The sampling interval's controller (sampled mode): what a window of figures says to do, as a pure function. */
/* SPDX-License-Identifier: MIT */
#include "fast/adapt.h"

/*
 * How many doublings of the interval bring the demand of a window within
 * ADAPT_LOAD of what we consumed in it, if its allocation events shrink
 * with the interval and the rest (frees reported from overflowed live
 * buckets) do not: at least 1 (4 bits at most), or 0 if no interval can.
 * demand and got are in bytes of records, got per busy second as the
 * window's: a window we were busy in a fraction busy of consumed got.
 */
static unsigned steps_needed(double demand, double got, double busy, double allocs)
{
	double cap = got / (busy > 0.1 ? busy : 0.1) * ADAPT_LOAD, rest = demand * (1 - allocs);
	unsigned k = 1;

	if (rest >= cap)
		return 0;
	while (k < 4 && demand * allocs / (double)(1u << k) + rest > cap)
		k++;
	return k;
}

/* A new window from w's figures. */
static void window(struct adapt_state *st, const struct adapt_window *w)
{
	st->win_ns = w->now;
	st->win_napped = w->napped;
	st->win_heads = w->heads;
	st->win_tails = w->tails;
	st->win_drops = w->drops;
	st->win_allocs = w->allocs;
	st->win_frees = w->frees;
}

/* Use shift from w->now on. */
static void set(struct adapt_state *st, const struct adapt_window *w, unsigned shift)
{
	st->shift = shift;
	st->shift_ns = w->now;
}

/*
 * The window was overloaded if a ring is past a quarter and events were
 * dropped, or we were busy (not napping) 90% of it and read less than 10%
 * more than was written meanwhile (a backlog that does not drain), or a
 * ring is past an eighth and more was written than we could read even busy
 * all the time (by 20%, from what we read busy half of it or more); drops
 * with every ring below a quarter again were a burst that has passed (the
 * first stack copies after the attach, before the frame rules are learnt),
 * which no raise would have saved. Then, once we read records written
 * after the last raise (those before show nothing of it), or at once if
 * events were still dropped with a ring past half full since it, the
 * interval is raised by the doublings that bring the window's demand
 * (bytes written, and those dropped at the average record's size) within
 * ADAPT_LOAD of what we consumed. It was calm if nothing was dropped, no
 * ring was past an eighth and we would still nap half the time at half
 * the interval; after calm_need of calm windows in a row the interval goes
 * down by as many halvings as would leave us napping half the time (all
 * of them when the target has gone quiet). A step down undone soon after
 * makes the next one wait twice as long, so a load that sits between the
 * two does not swing the interval.
 */
void adapt_judge(struct adapt_state *st, const struct adapt_window *w, struct adapt_verdict *v)
{
	uint64_t allocs = w->allocs - st->win_allocs;
	uint64_t events = allocs + w->frees - st->win_frees, span, napped;
	double busy, share, got, demand;
	int dropped, overloaded, calm;
	unsigned next, k;

	*v = (struct adapt_verdict){ .shift = st->shift };
	if (!st->win_ns || w->drops < st->win_drops || w->heads < st->win_heads) {
		window(st, w);	/* the first, or counts the target rewound */
		return;
	}
	span = w->now - st->win_ns;
	/* a ring past half full is judged at once (at least ADAPT_WIN_NS / 8 of it) */
	if (span < (w->most >= w->size / 2 ? ADAPT_WIN_NS / 8 : ADAPT_WIN_NS))
		return;
	napped = w->napped - st->win_napped;
	busy = napped < span ? 1 - (double)napped / (double)span : 0;
	dropped = w->drops > st->win_drops;
	share = events ? (double)allocs / (double)events : 1;
	got = (double)(w->tails - st->win_tails);
	demand = (double)(w->heads - st->win_heads) +
		 (double)(w->drops - st->win_drops) * (events ? got / (double)events : 64);
	overloaded = (w->most >= w->size / 4 && (dropped || (busy >= 0.9 && demand > 0.9 * got))) ||
		     (w->most >= w->size / 8 && busy >= 0.5 && demand * busy > 1.2 * got);
	/* the steps down after which we would still nap half the time */
	for (k = 0; k < st->shift && busy * (1 + share * ((double)(2u << k) - 1)) < 0.5; k++)
		;
	calm = !dropped && w->most < w->size / 8 && k;
	v->busy = busy;
	if (dropped) {
		v->say |= ADAPT_SAY_DROPS;
		v->dropped = w->drops - st->win_drops;
		v->span_ns = span;
	}
	if (!st->calm_need)
		st->calm_need = ADAPT_CALM_NS;
	if (overloaded) {
		st->calm_ns = 0;
		/* still reading what came before the last raise: only drops
		 * with a ring past half full say it was not enough (the
		 * window began at or after it) */
		if (w->tails < st->settle_tails && !(dropped && w->most >= w->size / 2))
			goto out;
		k = steps_needed(demand, got, busy, share);
		if (!k && !st->futile_noted) {
			st->futile_noted = 1;
			v->say |= ADAPT_SAY_FUTILE;
		}
		next = st->shift + k < w->top ? st->shift + k : w->top;
		if (next > st->shift) {
			if (st->lowered_ns && w->now - st->lowered_ns < ADAPT_BACKOFF_NS)
				st->calm_need = st->calm_need * 2 < ADAPT_CALM_MAX_NS ?
						st->calm_need * 2 : ADAPT_CALM_MAX_NS;
			else
				st->calm_need = ADAPT_CALM_NS;
			set(st, w, next);
			st->settle_tails = w->heads;
		}
	} else if (calm) {
		if (!st->calm_ns)
			st->calm_ns = st->win_ns;
		if (w->now - st->calm_ns >= st->calm_need && w->now - st->shift_ns >= st->calm_need) {
			set(st, w, st->shift - k);
			st->lowered_ns = w->now;
			st->calm_ns = w->now;
		}
	} else {
		st->calm_ns = 0;
	}
out:
	v->shift = st->shift;
	window(st, w);
}
