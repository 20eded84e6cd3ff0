/* Heap profile model: the figures the target accounted itself (exact mode's in-target accounting), per bucket. */
/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include "base/satmath.h"
#include "profile/profile.h"
#include "profile/profile_priv.h"

void profile_xacct_reset(struct profile *p)
{
	for (size_t i = 0; i < p->nbuckets; i++) {
		p->buckets[i].xalloc_count = 0;
		p->buckets[i].xinuse_count = 0;
	}
	p->xalloc_count = p->xalloc_bytes = p->xinuse_count = 0;
}

/* The bucket (stack, size) of accounted figures (shift 0: exact mode),
 * interned as a recorded allocation's is (caps apply); NULL for a stack
 * the profile does not hold. */
static struct bucket *xacct_bucket(struct profile *p, uint32_t stack, uint64_t size)
{
	uint32_t bi;

	if (stack >= p->nstacks)
		return NULL;
	bi = profile_bucket_intern(p, stack, size, 0, hash_bucket_key(stack, size, 0));
	return &p->buckets[bi];	/* after the call: it may move the buckets */
}

void profile_xacct_alloc(struct profile *p, uint32_t stack, uint64_t size, uint64_t count)
{
	struct bucket *b = count ? xacct_bucket(p, stack, size) : NULL;

	if (!b)
		return;
	b->xseen = 1;
	b->xalloc_count = sat_add(b->xalloc_count, count);
	p->xalloc_count = sat_add(p->xalloc_count, count);
	p->xalloc_bytes = sat_add(p->xalloc_bytes, sat_mul(count, size));
}

void profile_xacct_inuse(struct profile *p, uint32_t stack, uint64_t size)
{
	struct bucket *b = xacct_bucket(p, stack, size);

	if (!b)
		return;
	b->xseen = 1;
	b->xinuse_count = sat_add(b->xinuse_count, 1);
	p->xinuse_count = sat_add(p->xinuse_count, 1);
}

uint64_t profile_xacct_allocs(const struct profile *p)
{
	return p->xalloc_count;
}

