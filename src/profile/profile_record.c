/* Heap profile model: recording allocation and free events into the buckets and the live table. */
/* SPDX-License-Identifier: MIT */
#include "profile/profile.h"
#include "profile/profile_priv.h"

/* An allocation of size bytes at ptr (not 0) from stack id `stack`, taken
 * at the interval rate << shift; h as for profile_bucket_intern; kind: an
 * allocation op's (KEPT: profile_sweep_live leaves it alone; GONE: freed
 * already, not live). */
static void record_alloc(struct profile *p, uint32_t stack, uint64_t size, unsigned shift,
			 uint64_t ptr, uint64_t h, uint32_t kind)
{
	uint32_t bi = profile_bucket_intern(p, stack, size, shift, h);
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
		profile_live_delete_slot(p, i);
		i = live_find(p, ptr);
	} else if (p->nlive >= p->max_live) {
		p->caps_hit |= PROFILE_CAP_LIVE;	/* counted as allocated, not as live */
		return;
	}
	p->live[i].ptr = ptr;
	p->live[i].bucket = bi | (kind == PROFILE_OP_ALLOC_KEPT ? LIVE_KEPT : 0);
	if (++p->nlive * 4 > p->live_cap * 3)
		profile_live_grow(p);
}

/* A free of ptr (not 0): 1 if it was live. */
static int record_free(struct profile *p, uint64_t ptr)
{
	if (!profile_live_forget(p, ptr))
		return 0;
	if (profile_live_may_shrink(p, 1))
		profile_live_shrink(p);
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

