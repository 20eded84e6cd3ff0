/* Exact mode's in-target accounting (SHM_F_XACCT): the lanes' counts and xlive table, read back. */
/* SPDX-License-Identifier: MIT */
/*
 * The agent counts an allocation of a numbered stack in its lane's
 * xcounts and enters the block in xlive, and sends no event for it nor
 * for its free: the profile's figures for it are read here, anew each
 * time (profile_xacct_*). Everything there is the target's to write, at
 * any moment: each word is read once, a key must name a stack we gave out
 * and a size the agent can key, a count must be one the agent could have
 * reached since the area was set up (link_plausible), a block is taken only
 * if its pointer read the same before and after its key. What fails is
 * counted and left out (said once with -v); none of it can make us
 * believe more than COUNT_PER_NS allocations a nanosecond per entry, nor
 * more blocks than the table has slots. The regions are never prefaulted
 * and only the pages the agent has touched are read (mincore), so that
 * reading does not fault in the whole table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/satmath.h"
#include "base/xmalloc.h"
#include "fast/link_priv.h"
#include "model/proc.h"
#include "ptrace/tracee.h"
#include "xacct_arch.h"

uint64_t agent_link_xacct_slots(uint64_t budget)
{
	if (!budget)
		return 0;
	if (getenv("HEAPATTACH_NO_XACCT")) {
		pr_debug("in-target accounting off (HEAPATTACH_NO_XACCT)");
		return 0;
	}
	return budget;
}

void xacct_init(struct agent_link *l)
{
	uint64_t x = l->p.xlive_slots;

	if (l->exact && x && !(x & (x - 1)) && x <= SHM_XLIVE_MAX)
		l->xa.slots = x;
	/* the agent tells its threads apart by their fs base: rdfsbase, or %fs:0 */
	l->xa.tp = l->xa.slots && !arch_xacct_allowed(proc_auxv_get(l->p.pid, ARCH_XACCT_AUXV));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Thread tid's id for the agent's lanes (its fs base, into *id; with
 * SHM_F_XTP the word there, which must be the same): NULL, or why the
 * agent could not use it; *gone when that is because the thread exited. */
static const char *thread_id(const struct agent_link *l, pid_t pid, pid_t tid, uint64_t *id,
			     int *gone)
{
	int rc = arch_xacct_tp_check(pid, tid, id);

	*gone = rc < 0 && !tracee_thread_alive(pid, tid);
	if (rc < 0)
		return "registers cannot be read";
	if (!rc && l->xa.tp)
		return "first TLS word is not its thread pointer";
	return NULL;
}

int agent_link_xacct_threads(struct agent_link *l, struct tracee *tr)
{
	uint64_t *tps;
	size_t n = 0;
	const char *why = NULL, *whose = "a thread's ";
	int gone;

	if (!l->xa.slots)
		return 0;
	tps = xcalloc(tr->n + 1, sizeof(*tps));
	for (size_t i = 0; i < tr->n && !why; i++) {
		struct thread *th = &tr->t[i];

		if (th->vfork_child)	/* runs on its parent's thread pointer, the parent waiting */
			continue;
		why = thread_id(l, tr->pid, th->tid, &th->tp, &gone);
		if (gone) {
			why = NULL;	/* gone meanwhile */
			th->tp = 0;
			continue;
		}
		if (!why && th->tp)
			tps[n++] = th->tp;	/* none (rdfsbase, fs base 0): no lane */
	}
	qsort(tps, n, sizeof(*tps), cmp_u64);
	for (size_t i = 1; i < n && !why; i++)
		if (tps[i] == tps[i - 1]) {
			why = "two threads share a thread pointer";
			whose = "";
		}
	if (!why && !n) {
		why = "no thread's thread pointer could be read";
		whose = "";
	}
	free(tps);
	if (why) {
		pr_debug("in-target accounting off: %s%s", whose, why);
		l->xa.slots = 0;
		return 0;
	}
	if (l->xa.tp)
		pr_debug("in-target accounting: threads told apart by %%fs:0 (no rdfsbase here)");
	return 1;
}

static const struct shm_xlane *xlanes(const struct agent_link *l)
{
	return (const struct shm_xlane *)((const uint8_t *)l->shm + SHM_OFF_XLANES(l->p.ring_size));
}

/* The sum of one field (at offset off) over the lanes, saturated; with
 * bad, 0 if a lane's is not a count the agent could have reached (*bad
 * set). */
static uint64_t xlanes_sum(const struct agent_link *l, size_t off, int *bad)
{
	uint64_t sum = 0;

	for (unsigned r = 0; r < SHM_NLANES; r++) {
		const volatile uint64_t *f = (const volatile uint64_t *)
					     ((const uint8_t *)&xlanes(l)[r] + off);
		uint64_t v = *f;

		if (bad && !link_plausible(l, v)) {
			*bad = 1;
			return 0;
		}
		sum = sat_add(sum, v);
	}
	return sum;
}

/* --interval: what the lanes allocated since the last look, into the
 * stats' bytes (a total that went back, the target's doing, is taken as
 * the new start). The bytes are not bounded by plausible: one call may
 * ask for any size; a hostile total only brings the next dump sooner. */
void xacct_bytes(struct agent_link *l)
{
	uint64_t sum = xlanes_sum(l, offsetof(struct shm_xlane, alloc_bytes), NULL);

	if (sum > l->xa.bytes_seen)
		l->p.stats->bytes += sum - l->xa.bytes_seen;
	l->xa.bytes_seen = sum;
}

#define XPAGE 4096

/* The pages of our view that xp's region spans: their count, *first the
 * first one's address. */
static size_t xpages_span(struct agent_link *l, const struct xpages *xp, uintptr_t *first)
{
	uintptr_t lo = (uintptr_t)(data_of(l) + xp->off);

	*first = lo & ~(uintptr_t)(XPAGE - 1);
	return ((lo + xp->n * 16 + XPAGE - 1) / XPAGE * XPAGE - *first) / XPAGE;
}

/* Mark the pages of xp's region that are in memory now (they stay marked:
 * a page swapped out since still holds entries); all of them if mincore
 * cannot tell. */
static void xpages_update(struct agent_link *l, struct xpages *xp)
{
	uintptr_t a;
	size_t np = xpages_span(l, xp, &a);
	unsigned char *vec = xmalloc(np);

	if (!xp->seen)
		xp->seen = xcalloc(np, 1);
	if (mincore((void *)a, np * XPAGE, vec))
		memset(vec, 1, np);
	for (size_t i = 0; i < np; i++)
		xp->seen[i] |= vec[i] & 1;
	free(vec);
}

/* Call fn(l, entry) for the entries from..to-1 of xp's region in the
 * pages marked (the others were never touched: all zero). */
static void xpages_each(struct agent_link *l, const struct xpages *xp, uint64_t from,
			uint64_t to, void (*fn)(struct agent_link *l, const volatile uint64_t *e))
{
	uintptr_t lo = (uintptr_t)(data_of(l) + xp->off), a;
	size_t np = xpages_span(l, xp, &a);

	if (to > xp->n)
		to = xp->n;
	if (from >= to)
		return;
	/* only the pages that hold entries from..to-1 */
	for (size_t i = (lo + from * 16 - a) / XPAGE; i < np; i++) {
		uintptr_t p = a + i * XPAGE;
		uint64_t first = p > lo ? (p - lo) / 16 : 0, end = (p + XPAGE - lo) / 16;

		if (first >= to)
			break;
		if (!xp->seen[i])
			continue;
		for (uint64_t k = first < from ? from : first; k < end && k < to; k++)
			fn(l, (const volatile uint64_t *)(lo + k * 16));
	}
}

/* Whether the agent touched the page of our view holding a (in xp's region). */
static int xpage_seen(struct agent_link *l, const struct xpages *xp, uintptr_t a)
{
	uintptr_t first;
	size_t np = xpages_span(l, xp, &first);

	return a >= first && (a - first) / XPAGE < np && xp->seen[(a - first) / XPAGE];
}

/* A key of the agent's: its stack id one we gave out, its size one it keys. */
static int xkey_ok(const struct agent_link *l, uint64_t key)
{
	uint64_t size = shm_xkey_size(key);

	return (key & 0xffffff) && shm_xkey_id(key) <= SHM_XID_MAX &&
	       shm_xkey_id(key) < profile_nstacks(l->p.prof) && size <= SHM_XSIZE_MAX &&
	       size < SHM_ADDR_LIMIT;
}

/* count allocations of (stack id, size) into the profile if the agent
 * could have reached it, else left out (and counted). */
static void xcount_take(struct agent_link *l, uint32_t id, uint64_t size, uint64_t count)
{
	if (!link_plausible(l, count))
		l->xa.bad_counts++;
	else
		profile_xacct_alloc(l->p.prof, id, size, count);
}

/* One struct shm_xcount: key, then count, each read once. */
static void xcount_one(struct agent_link *l, const volatile uint64_t *e)
{
	uint64_t key = e[0], count;

	if (!key)
		return;
	count = e[1];
	if (!count)
		return;	/* claimed, not counted yet */
	if (!xkey_ok(l, key))
		l->xa.bad_keys++;
	else
		xcount_take(l, shm_xkey_id(key), shm_xkey_size(key), count);
}

/* Lane xcounts t's count pages (shm.h): a directory word must name a
 * stack we gave out (id + 1), a count be plausible; each read once. */
static void xcount_pages_of(struct agent_link *l, const uint8_t *t)
{
	const volatile uint64_t *dir = (const volatile uint64_t *)(t + SHM_XPAGES_OFF);

	if (!xpage_seen(l, &l->xa.count_pages, (uintptr_t)dir))
		return;
	for (unsigned p = 0; p < SHM_XPAGES; p++) {
		const volatile uint64_t *c = (const volatile uint64_t *)
					     ((const uint8_t *)dir + SHM_XPAGE_AT(p));
		uint64_t d = dir[p];
		uintptr_t pg = 0;
		int seen = 0;

		if (!d)
			continue;
		if (d > 0xffffff || !xkey_ok(l, d)) {	/* d: the key of (id, size 0) */
			l->xa.bad_keys++;
			continue;
		}
		for (uint64_t size = 0; size < SHM_XPAGE_SIZES; size++) {
			uintptr_t a = (uintptr_t)(c + size) & ~(uintptr_t)(XPAGE - 1);
			uint64_t v;

			if (a != pg) {	/* the counts need not start a page */
				pg = a;
				seen = xpage_seen(l, &l->xa.count_pages, a);
			}
			if (!seen)
				continue;
			v = c[size];
			if (v)
				xcount_take(l, shm_xkey_id(d), size, v);
		}
	}
}

/* An accounted block that checked out: counted, and listed if large. */
static void xlive_keep(struct agent_link *l, uint64_t ptr, uint64_t key)
{
	uint64_t size = shm_xkey_size(key);

	profile_xacct_inuse(l->p.prof, shm_xkey_id(key), size);
	if (size < AGENT_LINK_BIG)
		return;
	if (l->xa.nbig == l->xa.big_cap) {
		l->xa.big_cap = l->xa.big_cap ? 2 * l->xa.big_cap : 64;
		l->xa.big = xrealloc(l->xa.big, l->xa.big_cap * sizeof(*l->xa.big));
	}
	l->xa.big[l->xa.nbig].ptr = ptr;
	l->xa.big[l->xa.nbig++].size = size;
}

/* One struct shm_xlive: ptr, key, ptr again (0 never used, 1 freed, 2
 * being filled). */
static void xlive_one(struct agent_link *l, const volatile uint64_t *e)
{
	uint64_t ptr = e[0], key;

	if (ptr <= 2)
		return;
	shm_barrier();
	key = e[1];
	shm_barrier();
	if (e[0] != ptr)
		l->xa.torn++;	/* freed or taken again meanwhile: the next read has it */
	else if (ptr >= SHM_ADDR_LIMIT)
		l->xa.bad_ptrs++;
	else if (!xkey_ok(l, key))
		l->xa.bad_keys++;
	else
		xlive_keep(l, ptr, key);
}

/* Close the lanes for good (SHM_F_XSHARED): the agent claims and counts in
 * none from now on. In our copy of the header first: the header is
 * compared with it after every drain. */
static void xacct_close_lanes(struct agent_link *l)
{
	l->xa.shared = 1;
	((struct shm_hdr *)l->want)->flags |= SHM_F_XSHARED;
	__atomic_or_fetch(&l->shm->flags, SHM_F_XSHARED, __ATOMIC_SEQ_CST);
}

int agent_link_xacct_thread(struct agent_link *l, struct tracee *tr, struct thread *th)
{
	const char *why;
	int gone;

	if (!l->xa.slots || l->xa.shared || !ready(l))
		return l->xa.slots && !l->xa.shared;
	why = thread_id(l, tr->pid, th->tid, &th->tp, &gone);
	if (gone) {
		th->tp = 0;
		return 1;	/* gone before it ran */
	}
	if (why) {
		xacct_close_lanes(l);
		link_note(l, "thread %d's %s: in-target accounting counts per thread no more; every "
		     "later allocation is an event (slower, still exact)", th->tid, why);
		return 0;
	}
	for (size_t i = 0; i < tr->n; i++) {
		const struct thread *o = &tr->t[i];

		if (o == th || o->vfork_child || o->exiting || !o->tp || o->tp != th->tp)
			continue;
		xacct_close_lanes(l);
		link_note(l, "threads %d and %d share a thread pointer (a clone without CLONE_SETTLS?): "
		     "in-target accounting counts per thread no more; every later allocation is "
		     "an event (slower, still exact)", o->tid, th->tid);
		return 0;
	}
	return 1;
}

void agent_link_xacct_sync(struct agent_link *l)
{
	uint64_t bad, t0;

	if (!ready(l) || l->hostile || !l->xa.slots || l->xa.final_read)
		return;
	t0 = clock_ns(CLOCK_MONOTONIC);
	if (l->final)
		l->xa.final_read = 1;	/* the writers are gone: this reading is the last */
	if (!l->xa.count_pages.n) {
		l->xa.count_pages = (struct xpages){ SHM_OFF_XCOUNTS(l->p.ring_size),
						   (uint64_t)SHM_NLANES * SHM_XCOUNTS, NULL };
		l->xa.live_pages = (struct xpages){ SHM_OFF_XLIVE(l->p.ring_size), l->xa.slots, NULL };
	}
	xpages_update(l, &l->xa.count_pages);
	xpages_update(l, &l->xa.live_pages);
	profile_xacct_reset(l->p.prof);
	for (unsigned r = 0; r < SHM_NLANES; r++) {
		uint64_t at = (uint64_t)r * SHM_XCOUNTS;

		xpages_each(l, &l->xa.count_pages, at, at + SHM_XHASHED, xcount_one);
		xcount_pages_of(l, data_of(l) + l->xa.count_pages.off + at * 16);
	}
	l->xa.nbig = 0;
	xpages_each(l, &l->xa.live_pages, 0, l->xa.slots, xlive_one);
	l->xa.syncs++;
	t0 = clock_ns(CLOCK_MONOTONIC) - t0;
	if (t0 > l->xa.sync_max_ns)
		l->xa.sync_max_ns = t0;
	bad = l->xa.bad_keys + l->xa.bad_counts + l->xa.bad_ptrs;
	if (bad && !l->xa.bad_noted) {
		l->xa.bad_noted = 1;
		pr_debug("in-target accounting: %llu entries left out (%llu keys of no stack or "
			 "size of ours, %llu implausible counts, %llu pointers out of range)",
			 (unsigned long long)bad, (unsigned long long)l->xa.bad_keys,
			 (unsigned long long)l->xa.bad_counts, (unsigned long long)l->xa.bad_ptrs);
	}
}

void agent_link_xacct_big(const struct agent_link *l,
			  void (*cb)(uint64_t ptr, uint64_t size, void *arg), void *arg)
{
	for (size_t i = 0; i < l->xa.nbig; i++)
		cb(l->xa.big[i].ptr, l->xa.big[i].size, arg);
}

int agent_link_xacct_live(struct agent_link *l, uint64_t *bytes)
{
	uint64_t a, f;

	if (!ready(l) || l->hostile || !l->xa.slots)
		return -ENODATA;
	a = xlanes_sum(l, offsetof(struct shm_xlane, alloc_bytes), NULL);
	f = sat_add(xlanes_sum(l, offsetof(struct shm_xlane, free_bytes), NULL),
		    __atomic_load_n(&l->shm->xforeign_bytes, __ATOMIC_RELAXED));
	*bytes = a > f ? a - f : 0;
	return 0;
}

/* The lanes' allocation and free totals into the stats (-v); a count
 * the agent cannot have reached leaves them as they were. */
void xacct_stats(struct agent_link *l)
{
	int bad = 0;
	uint64_t a = xlanes_sum(l, offsetof(struct shm_xlane, alloc_count), &bad);
	uint64_t f = xlanes_sum(l, offsetof(struct shm_xlane, free_count), &bad);
	uint64_t fo = __atomic_load_n(&l->shm->xforeign_count, __ATOMIC_RELAXED);

	if (bad || !link_plausible(l, fo))
		return;
	l->p.stats->xacct_allocs = a;
	l->p.stats->xacct_frees = sat_add(f, fo);
}

void xacct_free(struct agent_link *l)
{
	if (l->xa.slots)
		pr_debug("in-target accounting: %llu allocations and %llu frees accounted in the "
			 "target (no events); read %llu times (the longest %.1f ms), %llu blocks "
			 "read while they changed", (unsigned long long)l->p.stats->xacct_allocs,
			 (unsigned long long)l->p.stats->xacct_frees, (unsigned long long)l->xa.syncs,
			 l->xa.sync_max_ns / 1e6, (unsigned long long)l->xa.torn);
	free(l->xa.count_pages.seen);
	free(l->xa.live_pages.seen);
	free(l->xa.big);
}
