/* Heap profile model: the live table, each sampled pointer not yet freed and its bucket; it grows and shrinks in place. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "base/clock.h"
#include "base/xmalloc.h"
#include "profile/profile.h"
#include "profile/profile_priv.h"

/* A live table of cap slots, all empty (a mapping of its own: profile_live_grow). */
struct live *profile_live_map(size_t cap)
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
void profile_live_grow(struct profile *p)
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
void profile_live_shrink(struct profile *p)
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
void profile_live_delete_slot(struct profile *p, size_t i)
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

void profile_set_live_keep(struct profile *p, uint64_t keep_ns)
{
	p->live_keep_ns = keep_ns;
}

size_t profile_live_cap(const struct profile *p)
{
	return p->max_live;
}

/* Whether the live table may be halved now (profile_live_shrink): under a quarter
 * full and past its keep time. rarely: the clock is read only once every
 * LIVE_CLOCK_EVERY such calls (a free's look; no keep time needs none). */
int profile_live_may_shrink(struct profile *p, int rarely)
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
int profile_live_forget(struct profile *p, uint64_t ptr)
{
	size_t i = live_find(p, ptr);

	if (!p->live[i].ptr)
		return 0;
	profile_live_delete_slot(p, i);
	return 1;
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
		profile_live_forget(p, dead[k]);
	while (profile_live_may_shrink(p, 0))	/* once, at the end */
		profile_live_shrink(p);
	free(dead);
	return n;
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

