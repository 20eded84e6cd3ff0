/* CPython's pymalloc blocks in use, listed from a copy of the target: its pools found in anonymous memory by their headers. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYBLOCKS_H
#define HEAPATTACH_PYBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/proc.h"
#include "snapshot/heapgraph.h"
#include "snapshot/roots.h"

/*
 * pymalloc (CPython's Objects/obmalloc.c) serves requests of up to 512
 * bytes from pools of one size class each, carved from arenas it mmaps
 * itself: 256 KiB arenas of 4 KiB pools up to 3.9, 1 MiB of 16 KiB from
 * 3.10 (the radix tree). A pool starts at a multiple of its size with
 *
 *   struct pool_header { union { block *; uint count; } ref; block *freeblock;
 *                        pool_header *nextpool, *prevpool;
 *                        uint arenaindex, szidx, nextoffset, maxnextoffset; };
 *
 * (48 bytes, POOL_OVERHEAD); its blocks are (szidx + 1) * 16 bytes, those
 * at [48, nextoffset) carved, and of those the ones on the freeblock list
 * free. Arenas are found by their pools: every pool-aligned address of
 * the private writable anonymous mappings whose header holds together
 * (szidx < 32, maxnextoffset == pool size - block size, nextoffset on a
 * block boundary at most the pool's end, count at most the blocks
 * carved) and whose free list, walked within the pool (each link inside
 * the carved blocks, on a block boundary, never twice), leaves exactly
 * count blocks. Everything read is the target's word: each pool costs a
 * header read and a word per free block (the lists of up to 512 pools
 * walked side by side, one read a round).
 */

struct pyblocks {
	struct hg_span *v;              /* blocks in use, ascending */
	size_t n, cap;
	struct hg_span *pools;          /* every pool found (in use or empty), ascending */
	size_t npools, pcap;
	uint64_t pool_size;             /* 4 or 16 KiB: the one that found pools */
	uint64_t slots;                 /* pool-aligned headers read */
	uint64_t free_blocks;           /* carved blocks on free lists */
	uint64_t refused;               /* pools with a header that held, not their free list */
};

/*
 * The pymalloc blocks in use of a CPython 3.minor whose mappings are
 * maps, read through read (arg), into pb: pools overlapping a block of
 * glibc's g are not taken. 0 (pb->n may be 0), or -ENOENT (no pool).
 */
int pyblocks_find(int minor, const struct proc_maps *maps, const struct heapgraph *g,
		  hg_read_fn read, void *arg, struct pyblocks *pb);
/* g (sealed) with pb's blocks merged in, sealed again: a new graph in
 * place of g. 0 or -E2BIG (g left as it was). */
int pyblocks_merge(struct heapgraph *g, const struct pyblocks *pb);
/* The roots of r less pb's pools: a pool's header, free blocks and
 * virgin space are pymalloc's, never roots (their stale words would
 * keep freed objects' targets alive). */
void pyblocks_trim_roots(const struct pyblocks *pb, struct snaproots *r);
void pyblocks_free(struct pyblocks *pb);

#endif
