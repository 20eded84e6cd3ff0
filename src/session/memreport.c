/* The run's view of the target's memory: smaps and allocator figures gathered while attached, for the breakdown in every dump. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "implant/implant.h"
#include "model/census.h"
#include "profile/profile.h"
#include "ptrace/events.h"
#include "model/target.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/statscall.h"
#include "session/memreport.h"
#include "stacks/unwind.h"

/*
 * No code of the target's runs for these figures but at a safe point:
 * glibc's are read from its memory (no lock, no call), jemalloc's and
 * tcmalloc's are asked by a call the tool makes itself once every thread
 * is stopped outside the allocator (statscall.h). Both happen at a
 * snapshot (a dump, the detach), and glibc's also once a second for --top.
 */

#define GLIBC_BUDGET_NS   500000000ULL  /* a walk of glibc's arenas: at most 500 ms */
#define TOP_EVERY_NS      1000000000ULL /* --top: glibc's figures once a second, */
#define TOP_BUDGET_NS     100000000ULL  /* a walk of at most 100 ms */
#define SAFE_TRIES        5             /* stops a snapshot tries for a safe point */
#define SAFE_GAP_NS       20000000ULL   /* and how far apart */
#define STALE_NS          2000000000ULL /* older figures are said to be */
#define MMCHUNKS_BUDGET_NS 200000000ULL /* glibc's mmapped blocks: at most 200 ms */

void memreport_init(struct memreport *m, const struct memreport_src *src)
{
	m->src = *src;
}

void memreport_prepare(struct memreport *m)
{
	const struct memreport_src *s = &m->src;
	struct allocstats_fn *fn = &m->fn;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	if (!s->t || allocstats_find(s->t, s->pid, s->hooks, fn)) {
		snprintf(m->why, sizeof(m->why), "%s", fn->why);
		return;
	}
	/* symbols, perhaps a debug file: while the target runs untouched */
	if (fn->kind == ALLOCSTATS_GLIBC && allocstats_glibc_find(s->t, fn) == -ENOENT)
		fn->kind = 0;
	snprintf(m->why, sizeof(m->why), "%s", fn->kind ? "not asked yet" : fn->why);
	pr_debug("allocator statistics: %s found in %.1f ms", fn->allocator ? fn->allocator :
		 "no allocator", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
}

void memreport_arm(struct memreport *m)
{
	const struct memreport_src *s = &m->src;
	struct allocstats_fn *fn = &m->fn;

	if ((fn->kind == ALLOCSTATS_MALLCTL || fn->kind == ALLOCSTATS_PROPERTY) &&
	    (!s->agent || s->sc->no_alloc_stats)) {
		snprintf(fn->why, sizeof(fn->why), "%s's function is called in fast mode only, "
			 "and only where the target's seccomp filter allows its locks' futex calls",
			 fn->allocator);
		snprintf(m->why, sizeof(m->why), "%s", fn->why);
		fn->kind = 0;
	}
	if (fn->kind == ALLOCSTATS_GLIBC)
		pr_debug("allocator statistics: glibc, its arenas read from its memory (%s)",
			 fn->glibc_ready ? fn->glibc_how : "not set up yet");
	else if (fn->kind)
		pr_debug("allocator statistics: %s, through its function at %#llx at a safe point",
			 fn->allocator, (unsigned long long)fn->addr);
	else
		pr_debug("allocator statistics: none: %s", m->why);
}

static int in_ours(void *arg, uint64_t ip)
{
	return arg && implant_in_region(arg, ip);
}

_Static_assert(SAFECALL_WALK_END == UNWIND_WALK_END && SAFECALL_WALK_SIGNAL == UNWIND_WALK_SIGNAL,
	       "a walk's flags mean the same to safecall");

/* safecall_walk_fn: a thread's frames through the session's unwinder. */
static int walk_thread(void *arg, pid_t tid, const arch_regs_t *r, uint64_t *pcs, size_t max,
		       unsigned *flags)
{
	struct unwind_regs ur;

	unwind_regs_from_live(r, &ur);
	return unwind_stack_judged(arg, tid, &ur, pcs, max, flags);
}

/* jemalloc's or tcmalloc's figures at a safe point, up to SAFE_TRIES stops. */
static int ask_calls(struct memreport *m, struct allocstats *as)
{
	const struct memreport_src *s = &m->src;
	struct safecall_env env = {
		.pid = s->pid, .tr = s->tr, .walk = walk_thread, .walk_arg = s->unw, .sc = s->sc,
		.on_event = events_dispatch, .event_arg = s->ev,
		.in_ours = in_ours, .ours_arg = s->im,
	};
	int ret = -EBUSY;

	for (int i = 0; i < SAFE_TRIES && ret == -EBUSY && !s->ev->gone; i++) {
		struct timespec gap = { 0, (long)SAFE_GAP_NS };

		if (i)
			nanosleep(&gap, NULL);
		ret = statscall_ask(&env, &m->fn, as, m->why, sizeof(m->why));
	}
	if (ret == -EBUSY)
		pr_debug("allocator statistics: no safe point in %d stops: %s", SAFE_TRIES, m->why);
	else if (ret == -ETIMEDOUT || ret == -EFAULT || ret == -EPERM)
		m->calls_off = 1;	/* it hung, faulted or is not the allocator's own */
	return ret;
}

/* The allocator's figures now, into m->as when had; glibc's walk takes at
 * most budget_ns. */
static void refresh(struct memreport *m, uint64_t budget_ns)
{
	const struct memreport_src *s = &m->src;
	struct allocstats as;
	int ret;

	if (!m->fn.kind || m->calls_off || s->ev->gone || s->ev->exec_seen)
		return;
	m->tried_ns = clock_ns(CLOCK_MONOTONIC);
	if (m->fn.kind == ALLOCSTATS_GLIBC) {
		ret = allocstats_glibc(s->t, &m->fn, budget_ns, &as);
		if (ret)
			snprintf(m->why, sizeof(m->why), "%s", m->fn.why);
	} else {
		ret = ask_calls(m, &as);
	}
	if (ret)
		return;
	m->as = as;
	m->have_as = 1;
	m->as_ns = clock_ns(CLOCK_MONOTONIC);
}

void memreport_poll(struct memreport *m, int top)
{
	if (top && m->fn.kind == ALLOCSTATS_GLIBC &&
	    clock_ns(CLOCK_MONOTONIC) - m->tried_ns >= TOP_EVERY_NS)
		refresh(m, TOP_BUDGET_NS);
}


struct ranges {
	struct mmchunks_range *v;
	size_t n, cap;
};

static void add_range(uint64_t ptr, uint64_t size, void *arg)
{
	struct ranges *r = arg;

	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n++] = (struct mmchunks_range){ ptr, ptr + size };
}

/* jemalloc, tcmalloc: how much of the large blocks the profile holds live,
 * and those exact mode accounts in the target, is not resident (their
 * resident figure counts those pages whole). */
static void big_blocks(struct memreport *m)
{
	const struct memreport_src *s = &m->src;
	struct ranges r = { 0 };

	m->have_big = 0;
	if (!s->prof || !m->have_as || m->as.resident == UINT64_MAX)
		return;
	profile_foreach_live(s->prof, MEMREPORT_BIG, add_range, &r);
	if (s->more_big)
		s->more_big(s->more_big_arg, add_range, &r);
	m->have_big = mmchunks_pages(s->ev->reader, r.v, r.n, MMCHUNKS_BUDGET_NS, &m->big) == 0;
	pr_debug("large blocks the profile holds live: %zu listed, %llu looked at, %llu bytes of "
		 "pages, %llu resident%s", r.n, (unsigned long long)m->big.count,
		 (unsigned long long)m->big.mapped, (unsigned long long)m->big.resident,
		 m->big.cut ? " (cut short)" : "");
	free(r.v);
}

void memreport_snapshot(struct memreport *m)
{
	const struct events *ev = m->src.ev;
	struct rss_smaps sm;

	if (ev->gone || ev->exec_seen)
		return;
	refresh(m, GLIBC_BUDGET_NS);
	if (rss_smaps_read(ev->reader, &sm) == 0) {
		m->sm = sm;
		m->have_sm = 1;
	}
	m->have_mmc = m->fn.kind == ALLOCSTATS_GLIBC && m->have_as &&
		      mmchunks_measure(ev->reader, MMCHUNKS_BUDGET_NS, &m->mmc) == 0;
	if (m->fn.kind != ALLOCSTATS_GLIBC)
		big_blocks(m);
}

void memreport_compute(struct memreport *m, struct breakdown *b)
{
	static struct allocstats as;	/* the breakdown points at its how */
	struct breakdown_in in = {
		.sm = m->have_sm ? &m->sm : NULL,
		.as = m->have_as ? &as : NULL,
		.as_why = m->why,
		.prof = m->src.prof,
		.mmc = m->have_mmc ? &m->mmc : NULL,
		.big = m->have_big ? &m->big : NULL,
	};

	as = m->as;
	if (m->have_as && m->tried_ns > m->as_ns + STALE_NS) {
		size_t len = strlen(as.how);

		snprintf(as.how + len, sizeof(as.how) - len, "; from %.0f s before (since: %.60s)",
			 (m->tried_ns - m->as_ns) / 1e9, m->why);
	}
	breakdown_compute(&in, b);
}

static int census_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct memreport_src *s = arg;

	return target_read(s->t, addr, buf, len);
}

static void keep_census(void *arg, const char *text)
{
	struct memreport *m = arg;

	m->census = xrealloc(m->census, (m->ncensus + 1) * sizeof(*m->census));
	m->census[m->ncensus++] = xstrdup(text);
	fprintf(stderr, "heapattach: %s\n", text);
}

void memreport_census(struct memreport *m)
{
	const struct memreport_src *s = &m->src;
	struct census c;
	struct mmchunks mm;

	if (census_walk(s->maps, census_read, (void *)s, &c)) {
		keep_census(m, "census: no glibc heap could be walked (another allocator, "
				    "or the heaps changed during the walk)");
		return;
	}
	c.mm_known = mmchunks_measure(s->pid, MMCHUNKS_BUDGET_NS, &mm) == 0 && !mm.cut;
	c.mm_n = mm.count;
	c.mm_b = mm.mapped;
	c.mm_res = mm.resident;
	census_print(&c, keep_census, m);
}

void memreport_free(struct memreport *m)
{
	for (size_t i = 0; i < m->ncensus; i++)
		free(m->census[i]);
	free(m->census);
	m->census = NULL;
	m->ncensus = 0;
}
