/* Allocation stacks an allocator recorded itself for some of its blocks (its own sampling), by block address. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ALLOCSITES_H
#define HEAPATTACH_ALLOCSITES_H

#include <stddef.h>
#include <stdint.h>

/*
 * jemalloc with prof:true and tcmalloc with TCMALLOC_SAMPLE_PARAMETER keep
 * a stack for one allocation in so many bytes allocated. A walker that
 * finds one for an in-use block adds it here (every PC the target's word:
 * untrusted, bounded); snapout.c puts it under the block's type in the
 * profile (root -> owners -> type -> where it was allocated) and tallies
 * the sampled blocks by the function that allocated them.
 */
struct allocsite {
	uint64_t addr;                  /* the block's start */
	uint32_t at, depth;             /* its PCs: pcs[at .. at + depth), leaf first */
};

struct allocsites {
	struct allocsite *v;
	size_t n, cap;
	uint64_t *pcs;
	size_t npcs, pcap;
	uint64_t period;                /* mean bytes allocated between samples (0: unknown) */
	const char *by;                 /* whose samples: "tcmalloc", "jemalloc" */
	int sorted;
};

#define ALLOCSITES_MAX (1u << 20)       /* stacks kept at most */
#define ALLOCSITE_DEPTH 32              /* frames of a stack kept at most */

/* Block addr was allocated at pcs[0..depth) (leaf first; a zero PC ends
 * it, frames past ALLOCSITE_DEPTH are dropped): 0, -EINVAL (no frame), or
 * -ENOSPC (ALLOCSITES_MAX reached). */
int allocsites_add(struct allocsites *s, uint64_t addr, const uint64_t *pcs, size_t depth);
/* The stack of the block at addr (s->pcs + at, depth frames), or NULL. */
const struct allocsite *allocsites_find(struct allocsites *s, uint64_t addr);
void allocsites_free(struct allocsites *s);

#endif
