/* The blocks of a heap as a graph: which roots reach each block, which none (leaked), and what each root alone keeps alive. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_HEAPGRAPH_H
#define HEAPATTACH_HEAPGRAPH_H

#include <stddef.h>
#include <stdint.h>

/*
 * A conservative scan, as LeakSanitizer's, of a copy of the target that
 * does not run: every aligned word of a root (a thread's stack from its
 * stack pointer up, its registers, the writable data of each object) and
 * of every block reached is a pointer if it falls inside an in-use block,
 * at its start or inside it (interior pointers count: C++ multiple
 * inheritance, arrays walked by a pointer). Blocks no root reaches are
 * leaked.
 *
 * Ownership, the rule: each root is a node under one super-root, and a
 * block is owned by root R when every path from the roots to it passes
 * through R: R dominates it (a dominator tree's child of the super-root).
 * A block reachable from two roots is shared. A root's retained bytes are
 * its owned blocks' bytes: what freeing that root alone would free, as a
 * Java heap analyser's retained size of a GC root. Computed by one
 * propagation: a block's owner goes from none to a root to shared, never
 * back, so each block is scanned at most twice.
 *
 * Reading: the worklist is taken in batches, sorted by address, and
 * blocks at most HG_GAP bytes apart are read as one span (a heap's run of
 * blocks is one read, not one a block). A word is looked up in a
 * directory: the blocks cut into segments (runs with no gap over
 * HG_SEG_GAP), each with one entry every 2^shift bytes (about one for
 * four blocks): the first block to look at; most words cost one
 * comparison (outside [lo, hi)) or a few.
 *
 * Memory: 24 bytes a block (start 8, size 4 (a block of 4 GiB or more
 * has its size in a side table), owner, parent, type 4 each), 4 a block
 * at most for the worklist (its array serves snapout.c once the scan is
 * done) and about 1 for the directory, in pages of their own (outside
 * our heap, given back whole; each array in a reservation of its own,
 * grown where it is while listing, its pages faulted in by runs, in huge
 * pages where whole ones fit: a fresh page's fault is most of a block's
 * cost on a VM), and 2.3 MiB whatever the heap (the read buffer, a batch's keys and
 * places); edges are never stored (a block's words are read again when
 * it is scanned again).
 *
 * Everything read is the target's word: a block's contents may point
 * anywhere, sizes are the walker's (checked: sorted, no overlap).
 */

#define HG_NONE   UINT32_MAX            /* owner: no root reaches it (leaked) */
#define HG_SHARED (UINT32_MAX - 1)      /* owner: two roots or more reach it */
#define HG_QUEUED 0x80000000u           /* type: in the worklist */
#define HG_WEAKLY 0x40000000u           /* type: owned by a weak root (types are below) */
/* Blocks and root ids together stay below HG_SHARED (parent holds either). */
#define HG_MAX (UINT32_MAX - 2)

/* A span of the target to read. */
struct hg_span {
	uint64_t addr;
	size_t len;
};

/* Reads spans[0..n) of the target (its copy), one after the other, into
 * buf: 0 or -errno. Read in batches of up to HG_BATCH spans and
 * HG_BATCH_BYTES bytes, in ascending order of address. */
typedef int (*hg_read_fn)(void *arg, const struct hg_span *spans, size_t n, uint8_t *buf);
#define HG_BATCH 512
#define HG_BATCH_BYTES (1u << 20)
#define HG_GAP 4096                     /* blocks closer than this: one span */
#define HG_BATCH_BLOCKS 65536           /* blocks taken off the worklist at a time */
#define HG_SEG_GAP (1u << 20)           /* a gap that starts a new segment */
#define HG_BIG UINT32_MAX               /* size: look it up (heapgraph_size) */

/* A block of 4 GiB or more: its size, by its start. */
struct hg_big {
	uint64_t addr, size;
};

/* A segment of the directory: blocks [first, first + n) in [base, end). */
struct hg_seg {
	uint64_t base, end;
	uint32_t first, n;
	uint32_t dir;                   /* its entries in dir[] */
	uint32_t shift;                 /* an entry every 2^shift bytes */
};

struct heapgraph {
	size_t n, cap;                  /* blocks, and room for (heapgraph_init) */
	uint64_t *addr;                 /* block starts, ascending */
	uint32_t *size;                 /* usable bytes of each, HG_BIG: 4 GiB or more
					 * (heapgraph_size says how many) */
	uint32_t *owner;                /* a root id, HG_SHARED or HG_NONE */
	uint32_t *parent;               /* what first reached it: block i (< n), or root
					 * id r as n + r (heapgraph_parent); HG_NONE: none */
	uint32_t *type;                 /* the caller's: what each block holds (0: unknown;
					 * below HG_WEAKLY) */
	int weak;                       /* the roots scanned now are weak (heapgraph_weak) */
	/* private */
	unsigned reserved;              /* bit i: array i reserved for HG_MAX + 1 entries */
	uint32_t *work;
	size_t nwork;
	struct hg_seg *seg;             /* the directory (heapgraph_seal) */
	uint32_t *dir;
	size_t nseg, ndir;
	uint64_t *batch, *sorted;       /* HG_BATCH_BLOCKS: (block << 32 | owner) */
	uint32_t *boff;                 /* each batched block's place in buf */
	struct hg_big *big;             /* blocks of HG_BIG, unordered (each 4 GiB of the
					 * target's memory: few) */
	size_t nbig;
	hg_read_fn read;
	void *read_arg;
	uint8_t *buf;                   /* HG_BATCH_BYTES */
	uint64_t lo, hi;                /* the lowest block start, the highest block end */
	uint64_t words, reads, unread;  /* words scanned, batches read, bytes not readable */
};

/* A graph of n blocks (filled with heapgraph_set) read through read. 0 or -E2BIG. */
int heapgraph_init(struct heapgraph *g, size_t n, hg_read_fn read, void *arg);
/* Room for cap blocks (more than g->cap), the blocks set kept: 0 or -E2BIG. */
int heapgraph_grow(struct heapgraph *g, size_t cap);
void heapgraph_free(struct heapgraph *g);
/* Record the size of the block at addr, of 4 GiB or more. */
void heapgraph_set_big(struct heapgraph *g, uint64_t addr, uint64_t size);
/* The size of the block at addr recorded so (HG_BIG if none). */
uint64_t heapgraph_big_size(const struct heapgraph *g, uint64_t addr);
/* Block i (in ascending order of addr). */
static inline void heapgraph_set(struct heapgraph *g, size_t i, uint64_t addr, uint64_t size)
{
	g->addr[i] = addr;
	g->size[i] = size < HG_BIG ? (uint32_t)size : HG_BIG;
	if (size >= HG_BIG)
		heapgraph_set_big(g, addr, size);
}
/* Fault in the room of blocks [from, to) before they are set (a walker
 * that sets them one by one): one call rather than a fault a page. */
void heapgraph_prefault(struct heapgraph *g, size_t from, size_t to);
/* The usable bytes of block i. */
static inline uint64_t heapgraph_size(const struct heapgraph *g, size_t i)
{
	return g->size[i] != HG_BIG ? g->size[i] : heapgraph_big_size(g, g->addr[i]);
}
/* After the last heapgraph_set: blocks out of order or overlapping are
 * dropped (the walker read a heap that changed, or lies). How many remain. */
size_t heapgraph_seal(struct heapgraph *g);
/* The first block starting at or after lo (g->n if none). */
size_t heapgraph_first_from(const struct heapgraph *g, uint64_t lo);
/* The block holding address p (start or interior), or -1. */
long heapgraph_find(const struct heapgraph *g, uint64_t p);
/* Scan root id's memory [lo, hi) (read through read), then everything it
 * reaches. 0, or -errno when none of it could be read. id + n <= HG_MAX. */
int heapgraph_root_range(struct heapgraph *g, uint32_t id, uint64_t lo, uint64_t hi);
/* The same for words the caller has (a thread's registers). */
void heapgraph_root_words(struct heapgraph *g, uint32_t id, const uint64_t *w, size_t n);
/*
 * Roots of a second rank: after heapgraph_weak(g, 1), the roots scanned
 * are weak: a weak root takes only blocks no root scanned before reached
 * (and what they reach); blocks two weak roots reach are shared. Their
 * words never turn a block an earlier root owns into a shared one.
 * heapgraph_weak(g, 0) ends it (the blocks' marks cleared). In a Python
 * target every root but its module globals is weak (pyroots.h).
 */
void heapgraph_weak(struct heapgraph *g, int on);
/* What first reached block i: 1 and *block, 0 and *root (a root), or -1 (none). */
int heapgraph_parent(const struct heapgraph *g, size_t i, size_t *block, uint32_t *root);

#endif
