/* What the files of tcmalloc's listing share: gperftools 2.10's facts, the spans of one pagemap walk, helpers. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TCBLOCKS_PRIV_H
#define HEAPATTACH_TCBLOCKS_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "model/proc.h"
#include "snapshot/allocsites.h"
#include "snapshot/heapgraph.h"
#include "snapshot/tcblocks.h"

/* Facts of gperftools 2.10 on x86-64 (common.h, pagemap.h, span.h,
 * central_freelist.h, thread_cache.h). */
#define TC_PAGE_SHIFT 13
#define TC_PAGE (1ULL << TC_PAGE_SHIFT)
#define TC_LEAF_BITS 18                         /* PageMap2<35>: (35 + 1) / 2 */
#define TC_ROOT_LEN (1ULL << 17)                /* root entries */
#define TC_ARRAY (8ULL << TC_LEAF_BITS)         /* bytes of a leaf */
#define TC_ROOT_BYTES (8 * TC_ROOT_LEN)
#define TC_CLASSES_MAX 128                      /* kClassSizesMax */
#define TC_MAX_SIZE (256u << 10)                /* kMaxSize: the last class */
#define TC_SPAN 48                              /* sizeof(Span) */
#define SP_START 0                              /* its fields (words) */
#define SP_LENGTH 1
#define SP_OBJECTS 4
#define SP_BITS 5       /* refcount 0..15, sizeclass 16..23, location 24..25 */
#define SP_REFCOUNT(b) ((b) & 0xffff)
#define SP_CLASS(b) (((b) >> 16) & 0xff)
#define SP_LOCATION(b) (((b) >> 24) & 3)
#define SP_SAMPLE(b) (((b) >> 26) & 1)         /* sampled: objects is its StackTrace */
/* common.h: StackTrace { uintptr_t size, depth; void *stack[kMaxStackDepth]; } */
#define TC_STACK_MAX 31                         /* kMaxStackDepth */
#define ST_SIZE 0                               /* its words */
#define ST_DEPTH 1
#define ST_STACK 2
#define TC_TRACE_WORDS (ST_STACK + TC_STACK_MAX)
#define TC_CENTRAL 1216                         /* sizeof(CentralFreeListPadded) */
#define CF_CLASS 8                              /* size_class_ */
#define CF_SLOTS 128                            /* tc_slots_[64]: {head, tail} */
#define CF_USED 1152                            /* used_slots_ (int32) */
#define CF_NSLOTS 64
#define TC_FREELIST 32                          /* ThreadCache::FreeList: list_, length_ at 8, size_ at 24 */
#define TC_CACHE_NEXT 0x1030                    /* ThreadCache::next_ */
#define TC_CACHE_BYTES (TC_CACHE_NEXT + 16)     /* what is read of one */
/* SizeMap: class_to_size_ (int32[128], at 4 mod 8 in 2.10), class_to_pages_
 * (size_t[128], aligned), num_size_classes: offsets from class_to_size_ at a */
#define SM_PAGES(a) ((((a) + 4 * TC_CLASSES_MAX + 7) & ~7ULL) - (a))
#define SM_NUM(a) (SM_PAGES(a) + 8 * TC_CLASSES_MAX)
#define SM_BYTES (4 + 12 * TC_CLASSES_MAX + 8)

/* Bounds on what the target makes us read and keep. */
#define TC_MAX_LEAVES 256                       /* 512 GiB of address space */
#define TC_MAX_OBJS 65536                       /* objects of a span (refcount is 16 bits) */
#define TC_MAX_LIST (1u << 20)                  /* objects of one free list */
#define TC_MAX_CACHES 4096                      /* thread caches */

/* A span in use (or free: meta). */
struct tcspan {
	uint64_t at, base, len;         /* the Span's address; its pages' bytes */
	uint64_t objects;               /* its free list (sampled: its StackTrace) */
	unsigned cls, refcount, location, sample;
};

/* Everything one walk holds. */
struct tcwalk {
	hg_read_fn read;
	void *read_arg;
	const struct proc_maps *maps;
	const struct tcblocks_at *at;
	uint32_t size[TC_CLASSES_MAX];  /* class_to_size_ */
	uint64_t pages[TC_CLASSES_MAX]; /* class_to_pages_ */
	unsigned ncls;
	uint64_t *buf;                  /* TC_ARRAY: a leaf, or the root */
	struct tcspan *sp;              /* spans found, by address */
	size_t nsp, capsp;
	struct tcblocks_stats *st;
	char *why;
	size_t len;
};

/* Read [addr, addr + n) through w->read into buf: 0 or -errno. */
int tcblocks_rd(const struct tcwalk *w, uint64_t addr, void *buf, size_t n);
/* Whether [addr, addr + n) is private writable memory no file backs
 * (anonymous, or [heap]: tcmalloc takes memory with sbrk first). */
int tcblocks_anon_rw(const struct proc_maps *maps, uint64_t addr, uint64_t n);
/* Whether m is of a library named libtcmalloc*. */
int tcblocks_lib(const struct proc_map *m);
/* The size classes at w->at->sizes into w: 0 or -errno (said in w->why). */
int tcblocks_sizes(struct tcwalk *w);
/* The spans of the pagemap at w->at->root into w->sp, in address order,
 * each checked: 0 or -errno (said in w->why). w->buf must be TC_ARRAY bytes. */
int tcblocks_spans(struct tcwalk *w);
/* The stacks tcmalloc recorded for its sampled spans in use into as (NULL:
 * none wanted), each such block of g cut to the size asked for (its span
 * is more), and its sample parameter (w->at->flag) as as->period. */
void tcblocks_samples(struct tcwalk *w, struct heapgraph *g, struct allocsites *as);
/* Free what a walk holds but w->buf. */
void tcblocks_walk_free(struct tcwalk *w);

#endif
