/* Unit tests for glibc's blocks in use (glibcblocks.c), listed from this process's own heap: what it keeps is listed, what it freed into the thread cache and fast bins is not. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "harness.h"
#include "own_libc.h"
#include "model/glibcfind.h"
#include "model/target.h"
#include "snapshot/glibcblocks.h"

static int read_none(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	(void)addr;
	(void)buf;
	(void)len;
	return -EFAULT;
}

/* Maps without a heap (and a pid with no mapping to search): -ENOENT, and
 * the graph is left empty, safe to free. */
static void no_heap(void)
{
	struct proc_map m = { .start = 0x10000, .end = 0x11000, .prot = PROC_MAP_R };
	struct proc_maps maps = { &m, 1 };
	struct glibcblocks_stats st;
	struct heapgraph g;

	expect_int_eq(glibcblocks_list(-1, &maps, read_none, NULL, NULL, &g, NULL, NULL, &st),
		      -ENOENT);
	expect_int_eq(g.n, 0);
	heapgraph_free(&g);
}

#if defined(__SANITIZE_ADDRESS__)
/* Under AddressSanitizer malloc is the sanitizer's: no glibc heap to list. */
HARNESS_MAIN("glibcblocks", T(no_heap))
#else
static int read_self(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	(void)arg;
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int readv_self(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	for (size_t i = 0; i < n; i++) {
		if (read_self(arg, s[i].addr, buf, s[i].len))
			return -EFAULT;
		buf += s[i].len;
	}
	return 0;
}

/* Listed: a block at exactly p with usable bytes. */
static int listed_at(const struct heapgraph *g, uint64_t p, uint64_t usable)
{
	long b = heapgraph_find(g, p);

	return b >= 0 && g->addr[b] == p && heapgraph_size(g, (size_t)b) == usable;
}

static int listed(const struct heapgraph *g, void *p, uint64_t usable)
{
	return listed_at(g, (uint64_t)(uintptr_t)p, usable);
}

/* This process as a target, and its glibc's state into gs: NULL (failed,
 * said) when either is not found. */
static struct target *own_state(struct glibc_state *gs)
{
	struct target *t = target_new(getpid(), getpid());
	const struct proc_map *m = t ? libc_map(t) : NULL;
	const char *how;
	char why[160] = "no libc mapping";

	if (m && !glibc_find(t, m, gs, &how, why, sizeof(why)))
		return t;
	fprintf(stderr, "no glibc state: %s\n", why);
	expect_true(0);
	target_free(t);
	return NULL;
}

#define NKEEP 200
#define NFAST 20

static void own_heap(void)
{
	void *keep[NKEEP], *small[NFAST];
	struct glibc_state gs;
	struct target *t = own_state(&gs);
	struct glibcblocks_stats st;
	struct heapgraph g;
	const struct proc_maps *maps;
	int freed = 0;

	if (!t)
		return;
	for (int i = 0; i < NKEEP; i++)
		keep[i] = malloc(40);           /* 48-byte chunks (or a 64-byte one taken whole) */
	for (int i = 0; i < NFAST; i++)
		small[i] = malloc(24);          /* 32-byte chunks, 24 usable */
	for (int i = 0; i < 5; i++) {           /* into the thread cache */
		free(keep[i * 3]);
		keep[i * 3] = NULL;
	}
	for (int i = 0; i < 15; i++) {          /* 7 into the cache, the rest a fast bin */
		free(small[i]);
		small[i] = NULL;
	}
	target_maps_reload(t);	/* the heap as it grew */
	maps = target_maps(t);
	expect_int_eq(glibcblocks_list(getpid(), maps, read_self, NULL, &gs, &g, readv_self, NULL, &st), 0);
	for (int i = 0; i < NKEEP; i++)
		if (keep[i] && !listed(&g, keep[i], malloc_usable_size(keep[i]))) {
			fprintf(stderr, "kept block %d at %p not listed\n", i, keep[i]);
			expect_true(0);
			break;
		}
	for (int i = 0; i < NFAST; i++)
		if (small[i] && !listed(&g, small[i], malloc_usable_size(small[i]))) {
			fprintf(stderr, "kept small block %d at %p not listed\n", i, small[i]);
			expect_true(0);
			break;
		}
	/* what was freed is no block's start (it may be inside none at all) */
	for (int i = 0; i < NKEEP; i += 3)
		freed += i / 3 < 5;
	expect_int_eq(freed, 5);
	expect_true(st.tcaches >= 1);
	expect_true(st.tcache_free >= 12);
	expect_true(st.fast_known);
	expect_true(st.fast_free >= 8);
	expect_true(st.heaps >= 1);
	heapgraph_free(&g);
	for (int i = 0; i < NKEEP; i++)
		free(keep[i]);
	for (int i = 0; i < NFAST; i++)
		free(small[i]);
	target_free(t);
}

/* The freed blocks themselves: listed before their free, not after. */
static void freed_not_listed(void)
{
	struct glibc_state gs;
	struct target *t = own_state(&gs);
	struct glibcblocks_stats st;
	struct heapgraph g;
	void *p[3], *big;
	uint64_t p1;

	if (!t)
		return;
	big = malloc(32 << 20);   /* above the top's room: mmapped */
	for (int i = 0; i < 3; i++)
		p[i] = malloc(200);             /* 208-byte chunks: a cache class, no fast bin */
	target_maps_reload(t);
	expect_int_eq(glibcblocks_list(getpid(), target_maps(t), read_self, NULL, &gs, &g, readv_self, NULL,
				       &st), 0);
	for (int i = 0; i < 3; i++)
		expect_true(listed(&g, p[i], malloc_usable_size(p[i])));
	expect_true(listed(&g, big, malloc_usable_size(big)));
	expect_true(st.mmapped >= 1 && st.mm_known);
	heapgraph_free(&g);
	p1 = (uint64_t)(uintptr_t)p[1];
	free(p[1]);
	target_maps_reload(t);
	expect_int_eq(glibcblocks_list(getpid(), target_maps(t), read_self, NULL, &gs, &g, readv_self, NULL,
				       &st), 0);
	expect_true(listed(&g, p[0], malloc_usable_size(p[0])));
	expect_true(heapgraph_find(&g, p1) < 0);
	expect_true(listed(&g, p[2], malloc_usable_size(p[2])));
	heapgraph_free(&g);
	free(p[0]);
	free(p[2]);
	free(big);
	target_free(t);
}

/*
 * [heap] in two mappings (as an madvise for huge pages leaves it), cut
 * inside a chunk: still one heap, every block listed (each part walked
 * as a heap of its own lost all of the first, whose chain ends past it).
 */
static void split_heap(void)
{
	struct proc_map *v = NULL;
	struct proc_maps two = { 0 };
	struct glibc_state gs;
	struct target *t = own_state(&gs);
	struct glibcblocks_stats st;
	struct heapgraph g;
	const struct proc_maps *maps;
	void *keep[NKEEP];
	uint64_t cut = 0;
	int lost = 0;

	if (!t)
		return;
	for (int i = 0; i < NKEEP; i++)
		keep[i] = malloc(200);          /* 208-byte chunks: no page holds a whole number */
	target_maps_reload(t);
	maps = target_maps(t);
	v = calloc(maps->n + 1, sizeof(*v));
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *h = &maps->v[i];

		v[two.n++] = *h;
		if (h->path && !strcmp(h->path, "[heap]") && !cut) {
			/* the page boundary past the middle block: inside some chunk */
			cut = ((uint64_t)(uintptr_t)keep[NKEEP / 2] + 4095) & ~4095ULL;
			expect_true(cut > h->start && cut < h->end);
			v[two.n - 1].end = cut;
			v[two.n] = *h;
			v[two.n++].start = cut;
		}
	}
	two.v = v;
	expect_true(cut != 0);
	expect_int_eq(glibcblocks_list(getpid(), &two, read_self, NULL, &gs, &g, readv_self, NULL,
				       &st), 0);
	for (int i = 0; i < NKEEP; i++)
		lost += !listed(&g, keep[i], malloc_usable_size(keep[i]));
	expect_int_eq(lost, 0);
	heapgraph_free(&g);
	for (int i = 0; i < NKEEP; i++)
		free(keep[i]);
	free(v);
	target_free(t);
}

/* The listing reads this process's heap while it runs, and allocates: its
 * own arrays mmapped (not in the heap it walks), and room at the top so
 * that the heap's end stays where the maps say. */
static void quiet_heap(void)
{
	mallopt(M_MMAP_THRESHOLD, 4096);
	mallopt(M_TOP_PAD, 16 << 20);
	free(malloc(1000));
}

HARNESS_MAIN("glibcblocks", T(no_heap), T(quiet_heap), T(own_heap), T(freed_not_listed),
	     T(split_heap))
#endif
