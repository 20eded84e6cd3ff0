/* gperftools 2.10's tcmalloc: its blocks in use, listed from a copy of the target that does not run: its pagemap's spans, minus every free list. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TCBLOCKS_H
#define HEAPATTACH_TCBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/proc.h"
#include "snapshot/allocsites.h"
#include "snapshot/heapgraph.h"

struct target;

/*
 * gperftools 2.10 on x86-64 (page_heap.h, pagemap.h, span.h, common.h,
 * central_freelist.h, thread_cache.h): 8 KiB pages; the PageHeap's
 * pagemap_ is a TCMalloc_PageMap2<35>, a root of 2^17 leaf pointers
 * inside Static::pageheap_ (.bss of libtcmalloc), each leaf 2^18 Span
 * pointers, one a page. Every page of a span in use is mapped; a span
 * with a size class holds objects of that class, the free ones on its
 * objects list, in its central free list's transfer slots and in the
 * thread caches (ThreadCache::thread_heaps_, an exported symbol). The
 * library is stripped of its hidden statics: the pagemap, the size
 * classes (SizeMap) and the central free lists are found by their shape
 * and taken only when all of them hold together.
 */

/* Where tcmalloc's state is in the target. */
struct tcblocks_at {
	uint64_t root;          /* the pagemap's root array */
	uint64_t sizes;         /* SizeMap::class_to_size_ (int32[128]) */
	uint64_t central;       /* Static::central_cache_[0] */
	uint64_t heaps;         /* ThreadCache::thread_heaps_ (a pointer) */
	uint64_t flag;          /* FLAGS_tcmalloc_sample_parameter (int64), or 0 */
};

/* What the listing found, for the summary. */
struct tcblocks_stats {
	uint64_t leaves, spans;         /* leaves read, spans in use */
	uint64_t small, large;          /* of them: with a size class, one block */
	uint64_t torn;                  /* spans skipped: their free list or count disagree */
	unsigned classes;               /* size classes */
	unsigned tcaches;               /* thread caches walked */
	uint64_t tcache_free;           /* objects in them: free */
	uint64_t central_free;          /* objects in the central transfer slots: free */
	uint64_t sampled, unread;       /* sampled spans in use: with their stack, without */
};

/* tcmalloc's free spans: no blocks, stale words (sorted, apart): no roots
 * (snaproots_cut). */
struct tcblocks_meta {
	struct hg_span *v;
	size_t n;
};

/*
 * tcmalloc's state in the target t (maps its mappings), read through read
 * (arg): thread_heaps_ and the sample parameter's flag by their symbols
 * (of one object), the rest by its shape in the
 * writable data of an object named libtcmalloc* (else of every object:
 * tcmalloc linked in statically). 0 and *at, or -errno with the reason in
 * why.
 */
int tcblocks_find(struct target *t, const struct proc_maps *maps, hg_read_fn read, void *arg,
		  struct tcblocks_at *at, char *why, size_t len);
/* tcblocks_find with thread_heaps_'s address given: what tests call. */
int tcblocks_find_at(const struct proc_maps *maps, hg_read_fn read, void *arg, uint64_t heaps,
		     struct tcblocks_at *at, char *why, size_t len);

/*
 * Fill g (heapgraph_init'd by this call) with tcmalloc's blocks in use
 * (at: tcblocks_find's): each span in use with a size class its objects
 * not on its free list, each other span in use one block of its pages;
 * then the objects of the thread caches and transfer slots are dropped
 * (free). Free spans into meta. The stacks tcmalloc recorded for its
 * sampled blocks (TCMALLOC_SAMPLE_PARAMETER set, full library only) into
 * as, unless NULL: its frames of libtcmalloc* dropped. 0, or -errno with
 * the reason in why.
 */
int tcblocks_list(const struct proc_maps *maps, const struct tcblocks_at *at,
		  struct heapgraph *g, hg_read_fn read, void *arg, struct tcblocks_meta *meta,
		  struct allocsites *as, struct tcblocks_stats *st, char *why, size_t len);

void tcblocks_meta_free(struct tcblocks_meta *meta);

#endif
