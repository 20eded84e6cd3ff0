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
 * pass: profile_live_grow), so that growing never holds two copies (32 bytes a
 * live pointer at that moment) and takes one pass over memory, not a
 * random insert per entry. It halves in place too (profile_live_shrink) when less
 * than 1/4 full, so its size follows the live set (the sampled set, in
 * sampled mode) down as well as up.
 *
 * Events come from the target, which can make up as many distinct stacks,
 * sizes and pointers as it likes: each table has a cap (profile.h), and a
 * set of the distinct return addresses bounds what a writer must look up.
 * What a cap turns away is merged into the empty stack, and the caps
 * reached are reported (profile_caps_hit).
 */
#include <stdlib.h>
#include <sys/mman.h>
#include "base/clock.h"
#include "base/satmath.h"
#include "base/xmalloc.h"
#include "profile/profile.h"
#include "profile/profile_priv.h"

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
	p->stack_idx = profile_new_index(p->stack_idx_cap);
	p->buckets_cap = 64;
	p->buckets = xmalloc(p->buckets_cap * sizeof(*p->buckets));
	p->bucket_idx_cap = 128;
	p->bucket_idx = profile_new_slots(p->bucket_idx_cap);
	p->live_cap = LIVE_MIN_SLOTS;
	p->live = profile_live_map(p->live_cap);
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

unsigned profile_caps_hit(const struct profile *p)
{
	return p->caps_hit;
}

uint64_t profile_rate(const struct profile *p)
{
	return p->rate;
}

void profile_add_drops(struct profile *p, uint64_t n)
{
	p->drops += n;
}

uint64_t profile_drops(const struct profile *p)
{
	return p->drops;
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

size_t profile_nbuckets(const struct profile *p)
{
	return p->nbuckets;
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

