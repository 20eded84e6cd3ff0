/* glibc malloc's blocks in use, listed from a copy of the target that does not run: heap chunks minus those in the thread caches and fast bins. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_GLIBCBLOCKS_H
#define HEAPATTACH_GLIBCBLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/glibcwalk.h"
#include "model/proc.h"
#include "snapshot/heapgraph.h"

/* What the listing found, for the summary. */
struct glibcblocks_stats {
	unsigned heaps;                 /* heaps walked */
	uint64_t chunks;                /* chunks the chains say are in use */
	uint64_t tcaches;               /* thread caches found */
	uint64_t tcache_free;           /* chunks in them: free */
	uint64_t fast_free;             /* chunks in the fast bins: free */
	int fast_known;                 /* the fast bins were walked (glibc's state known) */
	uint64_t mmapped;               /* blocks mmapped for themselves */
	int mm_known;                   /* every mapping was searched for them */
};

/*
 * Fill g (heapgraph_init'd by this call) with the blocks in use of every
 * glibc heap of maps, read through read: each block at its user address
 * (chunk + 16) with its usable size (chunk size - 8). A chunk in a thread
 * cache (found by its tcache_perthread_struct, every list checked against
 * the chunks and their size class, with or without safe-linking) or in a
 * fast bin (walked from glibc's arenas when gs is known; else counted in
 * use, and said) is free. glibc's blocks mmapped for themselves (found in
 * pid's mappings by their headers, mmchunks.h) are blocks too. 0, or
 * -ENOENT (no heap walked, no mmapped block).
 */
int glibcblocks_list(pid_t pid, const struct proc_maps *maps, glibc_read_fn read, void *arg,
		     const struct glibc_state *gs, struct heapgraph *g, hg_read_fn gread,
		     void *garg, struct glibcblocks_stats *st);

#endif
