/* Heap profile model: the tables its files share (profile.c and profile_*.c). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PROFILE_PRIV_H
#define HEAPATTACH_PROFILE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "profile/profile.h"

#define EMPTY_IDX UINT32_MAX
#define EMPTY_SLOT UINT64_MAX

struct stack {
	uint64_t hash;
	size_t off;             /* into profile.pcs */
	uint32_t n;
};

/* In-use figures are not kept here: profile_foreach counts the live table
 * (a free then touches no bucket, a cache miss saved per event). The
 * accounted ones (profile_xacct_*) are set anew at each reading of the
 * target's own figures. */
struct bucket {
	uint32_t stack;
	uint8_t shift;          /* taken at the interval rate << shift (profile_op) */
	uint8_t xseen;          /* it had accounted figures once: visited for good */
	uint64_t size;
	uint64_t alloc_count, alloc_bytes;
	uint64_t xalloc_count, xinuse_count;	/* accounted in the target */
};

struct live {
	uint64_t ptr;           /* 0: empty slot */
	uint32_t bucket;        /* bucket index, | LIVE_KEPT */
} __attribute__((packed));
#define LIVE_KEPT 0x80000000u	/* PROFILE_OP_ALLOC_KEPT: not swept */
#define LIVE_MIN_SLOTS 1024	/* the live table's first size (a multiple of 1024: whole pages) */
#define LIVE_KEEP_NS 5000000000ULL	/* a live table is not shrunk within this of its growth */
#define LIVE_CLOCK_EVERY 1024	/* frees between looks at the clock, while it could shrink */

struct profile {
	uint64_t rate;
	unsigned shift;         /* the interval in force is rate << shift */
	uint64_t created_ns;    /* CLOCK_MONOTONIC */
	struct profile_raise raises[PROFILE_MAX_RAISES];
	size_t nraises;         /* periods begun, kept or not */
	uint64_t raise_start;   /* the open period's start (created_ns based); valid while shift */
	uint64_t extra_ns, extra_max;	/* periods not kept: their time (closed ones) and top rate */
	size_t max_stacks, max_pcs, max_buckets, max_live;	/* caps */
	unsigned caps_hit;      /* PROFILE_CAP_* */
	uint32_t overflow;      /* the empty stack's id, or EMPTY_IDX before its first use */
	uint64_t drops;
	uint64_t total_alloc_bytes, total_alloc_count;
	uint64_t xalloc_count, xalloc_bytes, xinuse_count;	/* accounted: totals */
	uint64_t live_again;     /* allocations at an address already live */

	uint64_t *pcs;          /* frames of all stacks, back to back */
	size_t npcs, pcs_cap;
	struct stack *stacks;
	size_t nstacks, stacks_cap;
	uint32_t *stack_idx;    /* slot -> stack id or EMPTY_IDX */
	size_t stack_idx_cap;   /* power of two */

	struct bucket *buckets;
	size_t nbuckets, buckets_cap;
	uint64_t *bucket_idx;   /* slot -> hash tag << 32 | bucket id, or EMPTY_SLOT */
	size_t bucket_idx_cap;

	struct live *live;
	size_t nlive, live_cap; /* live_cap: power of two */
	uint64_t live_grown_ns; /* when it last doubled */
	uint64_t live_keep_ns;  /* not halved within this of that */
	unsigned live_looks;    /* frees since the clock was last read for a shrink */

	uint64_t *locs;         /* the distinct return addresses of all stacks (0: empty) */
	size_t nlocs, locs_cap; /* locs_cap: power of two, at most half full */
	int loc_zero;           /* 0 is one of them */
};

/* Distinct return addresses at most: what a writer looks up and names. */
#define PROFILE_MAX_LOCS (1u << 17)

/* ---- hashing ---- */

/* One multiply per frame (this runs for every recorded allocation), one
 * full mix at the end. */
static inline uint64_t hash_pcs(const uint64_t *pcs, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0x100000001b3ULL + (h >> 29);
	return mix64(h);
}

static inline uint64_t hash_bucket_key(uint32_t stack, uint64_t size, unsigned shift)
{
	return mix64(((uint64_t)stack << 1 | 1) ^ mix64(size) ^ (uint64_t)shift << 56);
}

/* ---- live table ---- */

static inline size_t live_slot(const struct profile *p, uint64_t ptr)
{
	return mix64(ptr) & (p->live_cap - 1);
}

/* Slot holding ptr, or the empty slot where it would go. */
static inline size_t live_find(const struct profile *p, uint64_t ptr)
{
	size_t mask = p->live_cap - 1, i = live_slot(p, ptr);

	while (p->live[i].ptr && p->live[i].ptr != ptr)
		i = (i + 1) & mask;
	return i;
}

/* Shared between the files; each is described where it is defined. */

/* profile_stacks.c */
uint32_t *profile_new_index(size_t cap);
uint32_t profile_overflow_stack(struct profile *p);

/* profile_buckets.c */
uint64_t *profile_new_slots(size_t cap);
uint32_t profile_bucket_intern(struct profile *p, uint32_t stack, uint64_t size, unsigned shift,
			       uint64_t h);

/* profile_live.c */
struct live *profile_live_map(size_t cap);
void profile_live_grow(struct profile *p);
void profile_live_shrink(struct profile *p);
void profile_live_delete_slot(struct profile *p, size_t i);
int profile_live_may_shrink(struct profile *p, int rarely);
int profile_live_forget(struct profile *p, uint64_t ptr);

#endif
