/* Heap profile model: the bucket table, one row per (stack, requested size, interval) with its counts. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "base/xmalloc.h"
#include "profile/profile.h"
#include "profile/profile_priv.h"

/* A bucket index of cap slots, all EMPTY_SLOT. */
uint64_t *profile_new_slots(size_t cap)
{
	uint64_t *v = xmalloc(cap * sizeof(*v));

	memset(v, 0xff, cap * sizeof(*v));
	return v;
}

/* ---- bucket table ---- */

/*
 * A bucket index slot holds the upper half of the key's hash next to the
 * bucket id, so a probe touches a bucket only when the tags agree: the
 * buckets are the big, cold array.
 */
static uint64_t bucket_slot(uint64_t h, uint32_t id)
{
	return (h & 0xffffffff00000000ULL) | id;
}

static void bucket_index_grow(struct profile *p)
{
	size_t cap = p->bucket_idx_cap * 2, mask = cap - 1;
	uint64_t *v = profile_new_slots(cap);

	for (size_t id = 0; id < p->nbuckets; id++) {
		struct bucket *b = &p->buckets[id];
		uint64_t h = hash_bucket_key(b->stack, b->size, b->shift);
		size_t i = h & mask;

		while (v[i] != EMPTY_SLOT)
			i = (i + 1) & mask;
		v[i] = bucket_slot(h, id);
	}
	free(p->bucket_idx);
	p->bucket_idx = v;
	p->bucket_idx_cap = cap;
}

/* Index of the bucket (stack, size, shift), created empty if new; h is its
 * hash_bucket_key. Beyond the cap a new one is the empty stack's bucket of
 * size rounded down to a power of two (and the same shift). */
uint32_t profile_bucket_intern(struct profile *p, uint32_t stack, uint64_t size, unsigned shift,
			       uint64_t h)
{
	size_t mask = p->bucket_idx_cap - 1, i = h & mask;
	struct bucket *b;

	for (; p->bucket_idx[i] != EMPTY_SLOT; i = (i + 1) & mask) {
		uint64_t e = p->bucket_idx[i];

		if ((e ^ h) >> 32)
			continue;
		b = &p->buckets[(uint32_t)e];
		if (b->stack == stack && b->size == size && b->shift == shift)
			return (uint32_t)e;
	}
	if (p->nbuckets >= p->max_buckets) {
		uint32_t over = profile_overflow_stack(p);
		uint64_t rounded = size ? 1ULL << (63 - __builtin_clzll(size)) : 0;

		p->caps_hit |= PROFILE_CAP_BUCKETS;
		if (stack != over || size != rounded) {
			size_t max = p->max_buckets;
			uint32_t id;

			p->max_buckets = SIZE_MAX;	/* at most 65 of them a shift */
			id = profile_bucket_intern(p, over, rounded, shift,
					   hash_bucket_key(over, rounded, shift));
			p->max_buckets = max;
			return id;
		}
	}
	if (p->nbuckets == p->buckets_cap) {
		p->buckets_cap *= 2;
		p->buckets = xrealloc(p->buckets, p->buckets_cap * sizeof(*p->buckets));
	}
	b = &p->buckets[p->nbuckets];
	memset(b, 0, sizeof(*b));
	b->stack = stack;
	b->size = size;
	b->shift = (uint8_t)shift;
	p->bucket_idx[i] = bucket_slot(h, p->nbuckets);
	if (++p->nbuckets * 10 > p->bucket_idx_cap * 7)
		bucket_index_grow(p);
	return p->nbuckets - 1;
}
