/* What the files of jemalloc's listing share: jemalloc 5.3's facts, one walk of its extents map, helpers. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_JEBLOCKS_PRIV_H
#define HEAPATTACH_JEBLOCKS_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/proc.h"
#include "snapshot/allocsites.h"
#include "snapshot/heapgraph.h"
#include "snapshot/jeblocks.h"

/* Facts of jemalloc 5.3.0 on x86-64 (rtree.h, edata.h, bitmap.h, sc.h). */
#define JE_PAGE 4096ULL
#define JE_LEVEL_BITS 18                        /* each of the tree's two levels */
#define JE_ARRAY (8ULL << JE_LEVEL_BITS)        /* bytes of the root and of a leaf */
#define JE_LEAF_ALIGN 64                        /* leaves come from base_alloc(CACHELINE) */
#define JE_EDATA 128                            /* sizeof(edata_t), its alignment */
#define JE_NSIZES 232                           /* size classes */
#define JE_NBINS 36                             /* of them small (slabs): below 16 KiB */
#define JE_LARGE_MIN 16384ULL                   /* SC_LARGE_MINCLASS: a sampled small one's extent */
#define JE_MAXREGS 512                          /* regions of a slab at most */
/* edata_t's e_bits: slab 12, state 17..19, szind 20..27, nfree 28..37 */
#define EB_SLAB(b)   (((b) >> 12) & 1)
#define EB_STATE(b)  (((b) >> 17) & 7)
#define EB_SZIND(b)  (((b) >> 20) & 0xff)
#define EB_NFREE(b)  (((b) >> 28) & 0x3ff)
/* an rtree leaf element: edata 7..47, slab 0, state 2..4, szind 48..63 */
#define LE_EDATA(e)  ((uint64_t)((int64_t)((e) << 16) >> 16) & ~(uint64_t)(JE_EDATA - 1))
#define LE_SLAB(e)   ((e) & 1)
#define LE_STATE(e)  (((e) >> 2) & 7)
#define LE_SZIND(e)  ((e) >> 48)
#define STATE_ACTIVE 0
#define STATE_MAX 5

/* Bounds on what the target makes us read and keep. */


/* An element of the tree: a page and what its leaf says of it. */
struct jeelem {
	uint64_t key, bits;
};

/* An edata_t as read: its address and words. */
struct jeedata {
	uint64_t at;
	uint64_t w[JE_EDATA / 8];
};

/* An active extent. */
struct jeextent {
	uint64_t base, addr, size;
	uint64_t bitmap[JE_MAXREGS / 64];
	uint64_t prof[3];               /* a large one's edata_t words 9..11: e_prof_info's request size, tctx */
	unsigned slab, szind, nfree;
};

#define JE_MAX_LEAVES 1024              /* leaves read at most: 1 TiB of address space */

/* Everything one walk of the tree holds. */
struct jewalk {
	hg_read_fn read;                /* the target's memory (its copy) */
	void *read_arg;
	const struct proc_maps *maps;
	uint8_t *buf;                   /* JE_ARRAY: a leaf */
	struct jeelem *el;
	size_t nel;
	struct jeedata *ed;
	size_t ned;
	struct jeextent *ex;
	size_t nex;
	struct hg_span leaf[JE_MAX_LEAVES];     /* the tree's leaves: key (root entry << 30), at */
	size_t nleaf;
	unsigned base_steps;            /* 2 MiB boundaries looked at for base blocks, this walk */
	struct hg_span *own;            /* what jemalloc manages (struct jeblocks_meta) */
	size_t nown, capown;
	struct jeblocks_stats *st;
	char *why;
	size_t len;
};

/* Indices of blocks to drop. */
struct jedrops {
	uint32_t *v;
	size_t n, cap;
};

/* Say fmt into why (len bytes). */
void jeblocks_say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Read [addr, addr + n) (n <= HG_BATCH_BYTES) through w->read into buf: 0 or -errno. */
int jeblocks_rd(const struct jewalk *w, uint64_t addr, void *buf, size_t n);
/* hg_read_fn of the process whose pid is at arg, spans of any length. */
int jeblocks_read_pid(void *arg, const struct hg_span *s, size_t n, uint8_t *buf);
/* jeblocks_find through read (arg, spans of any length): what the fuzzer calls. */
int jeblocks_find_read(hg_read_fn read, void *arg, const struct proc_maps *maps, uint64_t *root,
		       char *why, size_t len);
/* Whether m is of a library named libjemalloc*. */
int jeblocks_libjemalloc(const struct proc_map *m);
/* Whether [addr, addr + n) is private writable anonymous memory, as jemalloc's metadata is. */
int jeblocks_anon_rw(const struct proc_maps *maps, uint64_t addr, uint64_t n);
/* The active extents of the tree at root into w->ex, sorted, checked; what
 * jemalloc manages into w->own. 0 or -errno (said in w->why). */
int jeblocks_walk(struct jewalk *w, uint64_t root);
/* [addr, addr + len) is jemalloc's (into w->own). */
void jeblocks_own(struct jewalk *w, uint64_t addr, uint64_t len);
/* Free what a walk holds but w->buf; ready for another. */
void jeblocks_walk_free(struct jewalk *w);
/* The thread caches of threads th among the blocks of g (walked by w): their
 * regions and arrays into d; the tree's lookup caches in their TSD into w->own. */
void jeblocks_tcaches(struct jewalk *w, const struct heapgraph *g, const struct snapthread *th,
		      size_t nth, struct jedrops *d);

/* What tells jemalloc's sampling rate (jerate.c): per prof_tctx_t (JERATE_TCTXS
 * at most), its counts of the sampled blocks in use, and the sampled blocks
 * seen in use that name it, their unbiased bytes at each rate 2^lg. */
#define JERATE_TCTXS 64
#define JERATE_LGS 64                   /* lg_prof_sample 0..63 */
#define JERATE_ADDS 65536               /* blocks counted at most (each costs JERATE_LGS
					 * exp(): a target sampling everything has millions) */
struct jerate_tctx {
	uint64_t at, objs, bytes, unbiased;
	uint64_t seen_objs, seen_bytes, sum[JERATE_LGS];
};
struct jerate {
	struct jerate_tctx t[JERATE_TCTXS];
	size_t n, adds;
};

/* A sampled block of usize bytes in use names the tctx at tctx, its words tw (13). */
void jerate_add(struct jerate *r, uint64_t tctx, const uint64_t *tw, uint64_t usize);
/* The mean bytes between samples (2^lg_prof_sample) if the tctxs added tell it, else 0. */
uint64_t jerate_period(const struct jerate *r);
/* The stacks jemalloc took of the sampled extents among the blocks of g
 * (walked by w) into as (jeprof.c). */
void jeblocks_samples(const struct jewalk *w, const struct heapgraph *g, struct allocsites *as);

#endif
