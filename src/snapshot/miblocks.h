/* mimalloc's blocks in use, listed from a copy of the target that does not run: its segments found by their headers, each page's blocks minus those on its free lists. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MIBLOCKS_H
#define HEAPATTACH_MIBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/proc.h"
#include "snapshot/heapgraph.h"
#include "snapshot/roots.h"

struct target;

/* The one mimalloc whose layout heapattach knows: 2.0.9 (mi_version() 209,
 * Debian 12's libmimalloc2.0), a release build (no MI_DEBUG, MI_SECURE 0). */
#define MIBLOCKS_VERSION 209

/* Reads len bytes of the target (its copy) at addr into buf: 0 or -errno. */
typedef int (*miblocks_read_fn)(void *arg, uint64_t addr, void *buf, size_t len);

/* What the listing found, for -v. */
struct miblocks_stats {
	unsigned segments;              /* segments walked */
	unsigned rejected;              /* aligned headers that looked like one but did not hold */
	uint64_t pages;                 /* pages with blocks */
	uint64_t listed_free;           /* blocks on the pages' free, local and thread lists */
	uint64_t delayed_free;          /* blocks on the heaps' delayed free lists */
	uint64_t torn;                  /* pages skipped: their lists did not hold */
	uint64_t miscounted;            /* pages whose used count disagrees with their lists */
	unsigned heaps;                 /* heaps whose delayed list was walked */
};

/* The segments found, in address order: [addr, addr + len), mimalloc's
 * memory whole (its headers, its pages, their blocks free and in use). */
struct miblocks_segs {
	struct hg_span *v;
	size_t n, cap;
};

/*
 * mimalloc's version, read from the code of mi_version (mov $V, %eax;
 * ret) in the first object of maps that defines it (t for the objects):
 * 0 and *version, -ENOENT (no mi_version) or -ENOTSUP (other code).
 */
int miblocks_version(struct target *t, const struct proc_maps *maps, unsigned *version);

/*
 * Fill g (heapgraph_init'd by this call, read through gread) with the
 * blocks in use of every mimalloc segment found in maps' private
 * anonymous writable memory (the segments into segs), read through read: each block at its start
 * with its usable size (mi_usable_size of an unaligned allocation). A
 * block on its page's free, local_free or thread_free list, or on its
 * heap's delayed free list, is free; a page whose lists do not hold is
 * skipped (counted torn). Every word read is untrusted: walks are bounded
 * by the blocks they could visit. 0; -ENOENT (no segment) or -EPROTO
 * (most pages torn: another build of mimalloc?) with the reason in why.
 */
int miblocks_list(const struct proc_maps *maps, miblocks_read_fn read, void *arg,
		  struct heapgraph *g, hg_read_fn gread, void *garg, struct miblocks_segs *segs,
		  struct miblocks_stats *st, char *why, size_t whylen);
void miblocks_segs_free(struct miblocks_segs *segs);

/* Cut segs out of the roots r (in their order): the memory of a segment
 * between its blocks in use is mimalloc's (free blocks holding what they
 * held, page headers), not the program's. */
void miblocks_unroot(struct snaproots *r, const struct miblocks_segs *segs);

#endif
