/* --census: glibc's heaps walked once before the attach, chunk by chunk: what was there before heapattach came. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_CENSUS_H
#define HEAPATTACH_CENSUS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/proc.h"

/* Chunk sizes: up to 32, 64, ..., 1 MiB (powers of two), then larger. */
#define CENSUS_CLASSES 17

struct census_class {
	uint64_t used_n, used_b;        /* chunks in use (tcache and fastbin chunks too) */
	uint64_t free_n, free_b;        /* free chunks (the arenas' tops not included) */
};

struct census {
	struct census_class cls[CENSUS_CLASSES];
	uint64_t top_b;                 /* the arenas' top chunks: free, at the end of each heap */
	unsigned heaps, walked;         /* glibc heaps found, and walked to their end */
	int mm_known;                   /* the blocks glibc mmapped for themselves (no
					 * heap's chunks) were looked for (mmchunks.h): */
	uint64_t mm_n, mm_b, mm_res;    /* found, their mapped and their resident bytes */
	uint64_t ns;                    /* how long the walk took */
};

/* Upper bound of class i in bytes (the last: UINT64_MAX). */
uint64_t census_class_max(unsigned i);

/* Reads len bytes of the target at addr into buf: 0 or -errno. */
typedef int (*census_read_fn)(void *arg, uint64_t addr, void *buf, size_t len);

/*
 * Walk every glibc heap in maps ([heap], and the 64 MiB-aligned heaps of
 * the other arenas) through read, while the target runs: a heap whose
 * chunk chain does not lead exactly to its end (it changed under the
 * walk, or it is no glibc heap) is not counted. Everything read is the
 * target's: sizes are checked against the heap's bounds at every step.
 * 0, or -ENOENT when no heap was walked.
 */
int census_walk(const struct proc_maps *maps, census_read_fn read, void *arg, struct census *out);

/*
 * The same walk, without a time limit (a copy of the target that does not
 * run): every chunk of every heap but the tops, in address order within a
 * heap, to visit (NULL: none): its address, its size, and whether the
 * chain says it is in use (thread-cache and fastbin chunks look in use).
 * offs (NULL, or one per mapping of maps, UINT64_MAX where unknown):
 * where each heap's chain starts, found by a first call (which may visit
 * nothing: one walk of each heap) so that a second walks each heap once.
 * With settle (may be NULL), a heap whose start is unknown is walked
 * once, from each candidate start, with visit: settle(varg, 1) after a
 * chain that reaches its heap's end (its visits stand, and the heap is
 * done), settle(varg, 0) after one that breaks (forget its visits).
 * 0, or -ENOENT when no heap was walked; *walked the heaps walked, *nused
 * their chunks in use.
 */
int census_chunks(const struct proc_maps *maps, census_read_fn read, void *arg,
		  void (*visit)(void *arg, uint64_t chunk, uint64_t size, int used),
		  void (*settle)(void *arg, int kept), void *varg, uint64_t *offs, unsigned *walked,
		  uint64_t *nused);

/* The census as text lines: first "heapattach-census: key=value ...", then
 * a table for people, then the mmapped blocks (or that they are not
 * counted). */
void census_print(const struct census *c, void (*line)(void *arg, const char *text), void *arg);

#endif
