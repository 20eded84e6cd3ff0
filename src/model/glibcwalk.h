/* glibc's malloc figures (those of mallinfo2) read from the target's memory: its arenas walked with bounds. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_GLIBCWALK_H
#define HEAPATTACH_GLIBCWALK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Offsets in glibc's struct malloc_state (malloc/malloc.c), x86-64. Two
 * shapes since 2.27: with the fast bins (have_fastchunks, fastbinsY[10];
 * 2.27 to 2.42, 2200 bytes) and without them (2.43 on, 2112 bytes).
 */
struct glibc_layout {
	const char *name;
	uint32_t size;          /* sizeof(struct malloc_state) */
	uint32_t nfastbins;     /* 0: no fast bins */
	uint32_t fastbins;      /* fastbinsY */
	uint32_t top;
	uint32_t bins;          /* bins[254]: 127 (fd, bk) pairs */
	uint32_t next;          /* the circular list of arenas */
	uint32_t system_mem;
};

extern const struct glibc_layout glibc_layout_fast;     /* 2.27 to 2.42 */
extern const struct glibc_layout glibc_layout_nofast;   /* 2.43 on */

/* Where glibc's malloc state is in the target (glibcfind.h fills it). */
struct glibc_state {
	uint64_t main_arena;            /* &main_arena */
	uint64_t n_mmaps;               /* &mp_.n_mmaps (an int); 0: unknown */
	uint64_t mmapped_mem;           /* &mp_.mmapped_mem; 0: unknown */
	const struct glibc_layout *lay;
};

/*
 * What mallinfo2 reports, summed over the arenas the walk reached, in
 * bytes: arena (system_mem), fordblks (top, fast and regular bins),
 * fsmblks (the fast bins' part), hblks and hblkhd (mp_'s n_mmaps and
 * mmapped_mem; UINT64_MAX when unknown).
 */
struct glibc_figures {
	uint64_t arena, fordblks, fsmblks, hblks, hblkhd;
	uint32_t arenas;        /* arenas walked */
	uint64_t chunks;        /* free chunks visited */
	int torn;               /* a list did not hold together (it changed under the
				 * walk): what it held past that point is missing */
	int cut;                /* the chunk budget ran out: the same */
};

/* Copy len bytes of the target at addr into buf: 0 or -errno; -ECANCELED
 * ends the walk there (a time limit: the figures are then cut). */
typedef int (*glibc_read_fn)(void *arg, uint64_t addr, void *buf, size_t len);

#define GLIBC_MAX_ARENAS 4096           /* glibc's own cap is 8 per CPU */
#define GLIBC_WALK_CHUNKS (1u << 20)    /* free chunks visited at most, by default */

/*
 * Whether the struct at a (read through rd) is an arena of layout lay that
 * malloc has set up: every bin either empty (pointing at itself) or
 * holding two aligned pointers, at least one empty, a top and a next.
 * 0; -ENODATA for one malloc has not set up yet (all its bins zero);
 * -EINVAL for anything else, -errno when it cannot be read.
 */
int glibc_arena_check(const struct glibc_layout *lay, uint64_t a, glibc_read_fn rd, void *arg);

/*
 * Walk every arena from main_arena along `next` (at most GLIBC_MAX_ARENAS)
 * the way mallinfo2 does (the top chunk, each fast bin, each regular bin
 * from its last chunk back), without a lock: at most max_chunks free
 * chunks are visited in all. Every pointer followed must be aligned and
 * every chunk's size plausible; a list that breaks that ends there (torn).
 * 0 with *out filled (perhaps torn or cut), -ENODATA when malloc has not
 * set up its main arena, -EINVAL when g is not one, -errno when it
 * cannot be read.
 */
int glibc_walk(const struct glibc_state *g, glibc_read_fn rd, void *arg, uint64_t max_chunks,
	       struct glibc_figures *out);
/* The same, each fast bin chunk (its address) to fast: free, though the
 * heap's chain says it is in use. */
int glibc_walk_fast(const struct glibc_state *g, glibc_read_fn rd, void *arg, uint64_t max_chunks,
		    struct glibc_figures *out, void (*fast)(void *arg, uint64_t chunk), void *fast_arg);

#endif
