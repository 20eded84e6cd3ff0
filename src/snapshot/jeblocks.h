/* jemalloc 5.3's blocks in use, listed from a copy of the target that does not run: its extents map, slabs' bitmaps, large extents, minus its thread caches. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_JEBLOCKS_H
#define HEAPATTACH_JEBLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/proc.h"
#include "snapshot/allocsites.h"
#include "snapshot/heapgraph.h"
#include "snapshot/roots.h"

/*
 * jemalloc 5.x (include/jemalloc/internal/rtree.h, emap.h, edata.h at
 * 5.3.0) maps each page of its extents to the extent's edata_t in a radix
 * tree, the emap's rtree: on x86-64 (48-bit addresses, 4 KiB pages) two
 * levels of 18 bits, its root an array of 2^18 leaf pointers inside the
 * global arena_emap_global (.bss of libjemalloc), each leaf 2^18 words:
 * edata_t's address in bits 7..47, the slab bit (0), is_head (1), the
 * extent's state (2..4), its size class index in bits 48..63. The
 * library is stripped: the root is found by its shape (every leaf's
 * elements lead back to it) and taken only when every leaf, element and
 * edata_t holds together.
 */

/* What the listing found, for the summary. */
struct jeblocks_stats {
	uint64_t root;                  /* address of the rtree's root array */
	uint64_t leaves, pages;         /* leaves, and pages mapped in them */
	uint64_t slabs, large;          /* active extents */
	uint64_t torn;                  /* extents skipped: state or metadata disagree */
	unsigned threads, tcaches;      /* threads searched, thread caches found */
	uint64_t tcache_free;           /* regions in them: free */
	uint64_t tcache_arrays;         /* the caches' own arrays: not the program's blocks */
	uint64_t sampled;               /* blocks whose stack jemalloc took (prof:true) */
};

/* The memory jemalloc manages that is no block: its extents (the free
 * regions of slabs, free extents), edata_t's pages, the tree's leaves;
 * sorted, apart. */
struct jeblocks_meta {
	struct hg_span *v;
	size_t n;
};

/*
 * The address of the emap's root array of the jemalloc in pid (maps its
 * mappings), searched in the writable data of an object named *jemalloc*
 * (else of every object: jemalloc linked in statically). 0 and *root, or
 * -errno with the reason in why.
 */
int jeblocks_find(pid_t pid, const struct proc_maps *maps, uint64_t *root, char *why,
		  size_t len);

/*
 * Fill g (heapgraph_init'd by this call) with jemalloc's blocks in use,
 * from the tree at root: each region of an active slab its bitmap says
 * allocated (checked against the slab's count of free regions), each
 * active large extent one block of its size class's usable size. The
 * regions in the thread caches of threads th (found in each thread's
 * static TLS below its fs_base, every entry checked) are free, and so
 * are the caches' own arrays. What jemalloc manages into meta. The
 * stacks jemalloc took itself of its sampled blocks in use (prof:true)
 * into as (by "jemalloc"; period its rate if its counters tell it, else
 * 0). 0, or -errno with the reason in why.
 */
int jeblocks_list(const struct proc_maps *maps, uint64_t root,
		  const struct snapthread *th, size_t nth, struct heapgraph *g, hg_read_fn gread,
		  void *garg, struct jeblocks_meta *meta, struct allocsites *as,
		  struct jeblocks_stats *st, char *why, size_t len);

/* Cut meta out of the roots r: jemalloc's metadata points at every extent
 * (it would keep every slab's first region and large block alive), and
 * free regions, free extents and the thread caches' arrays hold stale
 * pointers. */
void jeblocks_cut_roots(const struct jeblocks_meta *meta, struct snaproots *r);
void jeblocks_meta_free(struct jeblocks_meta *meta);

/* The usable size of jemalloc's size class szind (LG_QUANTUM 4, LG_PAGE
 * 12, 4 classes a doubling), 0 past the last. */
uint64_t jeblocks_class_size(unsigned szind);

#endif
