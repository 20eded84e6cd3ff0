/* Unit tests for the heap graph (heapgraph.c): made-up heaps in our own memory, who reaches what, who owns what. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "snapshot/heapgraph.h"

/* The "target": our own memory, but a span touching [bad_lo, bad_hi) fails. */
static uint64_t bad_lo, bad_hi;

static int read_own(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	(void)arg;
	for (size_t i = 0; i < n; i++)
		if (s[i].addr < bad_hi && s[i].addr + s[i].len > bad_lo)
			return -EFAULT;
	for (size_t i = 0; i < n; i++) {
		memcpy(buf, (const void *)(uintptr_t)s[i].addr, s[i].len);
		buf += s[i].len;
	}
	return 0;
}

#define NB 8
#define BS 64                           /* bytes a block */
static uint64_t heap[NB * BS / 8];      /* block i: heap[i * 8 .. i * 8 + 8) */

static uint64_t blk(int i)
{
	return (uint64_t)(uintptr_t)&heap[i * (BS / 8)];
}

/* Block from points to block to (+ off bytes inside it) in its word w. */
static void link_(int from, int w, int to, int off)
{
	heap[from * (BS / 8) + w] = blk(to) + (uint64_t)off;
}

static void setup(struct heapgraph *g)
{
	expect_int_eq(heapgraph_init(g, NB, read_own, NULL), 0);
	for (int i = 0; i < NB; i++)
		heapgraph_set(g, (size_t)i, blk(i), BS);
	expect_int_eq(heapgraph_seal(g), NB);
}

static void reach_and_leak(void)
{
	struct heapgraph g;
	uint64_t root[2];

	memset(heap, 0, sizeof(heap));
	bad_lo = bad_hi = 0;
	link_(0, 3, 1, 0);      /* 0 -> 1 */
	link_(1, 0, 2, 40);     /* 1 -> inside 2 */
	link_(2, 7, 0, 0);      /* 2 -> 0: a cycle */
	link_(5, 0, 6, 0);      /* 5 -> 6, nothing reaches 5: both leaked */
	link_(6, 0, 5, 8);      /* and a cycle */
	heap[3 * 8] = 12345;    /* 3: a number, not a pointer */
	setup(&g);
	root[0] = blk(0) + 8;   /* interior */
	root[1] = 42;
	heapgraph_root_words(&g, 7, root, 2);
	for (int i = 0; i < 3; i++)
		expect_int_eq(g.owner[i], 7);
	for (int i = 3; i < NB; i++)
		expect_int_eq(g.owner[i], HG_NONE);
	{
		size_t b;
		uint32_t r = 0;

		expect_int_eq(heapgraph_parent(&g, 0, &b, &r), 0);
		expect_int_eq(r, 7);
		expect_int_eq(heapgraph_parent(&g, 2, &b, &r), 1);
		expect_int_eq(b, 1);
		expect_int_eq(heapgraph_parent(&g, 5, &b, &r), -1);
	}
	expect_int_eq(heapgraph_find(&g, blk(3) + BS - 1), 3);
	expect_int_eq(heapgraph_find(&g, blk(NB - 1) + BS), -1);
	expect_int_eq(heapgraph_find(&g, blk(0) - 1), -1);
	heapgraph_free(&g);
}

/* R1 -> 0 -> 1 -> 2, then R2 -> 1: 1 and 2 shared, 0 R1's alone. */
static void shared_after(void)
{
	struct heapgraph g;
	uint64_t r1 = blk(0), r2 = blk(1);

	memset(heap, 0, sizeof(heap));
	bad_lo = bad_hi = 0;
	link_(0, 0, 1, 0);
	link_(1, 0, 2, 0);
	link_(4, 1, 3, 0);      /* R2 -> 4 -> 3 */
	setup(&g);
	heapgraph_root_words(&g, 1, &r1, 1);
	expect_int_eq(g.owner[2], 1);
	heapgraph_root_words(&g, 2, &r2, 1);
	expect_int_eq(g.owner[0], 1);
	expect_int_eq(g.owner[1], HG_SHARED);
	expect_int_eq(g.owner[2], HG_SHARED);
	r2 = blk(4);
	heapgraph_root_words(&g, 2, &r2, 1);
	expect_int_eq(g.owner[4], 2);
	expect_int_eq(g.owner[3], 2);
	/* reached again by its own root: no change */
	heapgraph_root_words(&g, 2, &r2, 1);
	expect_int_eq(g.owner[3], 2);
	heapgraph_free(&g);
}

/* Second-rank roots (heapgraph_weak): S -> 0 -> 1; weak W1 -> 1 -> ...,
 * W1 -> 3 -> 4, W2 -> 4: 0 and 1 stay S's, 3 W1's, 4 shared by the weak. */
static void weak_roots(void)
{
	struct heapgraph g;
	uint64_t s = blk(0), w1[2] = { blk(1), blk(3) }, w2 = blk(4);

	memset(heap, 0, sizeof(heap));
	bad_lo = bad_hi = 0;
	link_(0, 0, 1, 0);
	link_(3, 0, 4, 0);
	setup(&g);
	heapgraph_root_words(&g, 1, &s, 1);
	heapgraph_weak(&g, 1);
	heapgraph_root_words(&g, 2, w1, 2);
	heapgraph_root_words(&g, 3, &w2, 1);
	heapgraph_weak(&g, 0);
	expect_int_eq(g.owner[0], 1);
	expect_int_eq(g.owner[1], 1);
	expect_int_eq(g.owner[3], 2);
	expect_int_eq(g.owner[4], HG_SHARED);
	for (int i = 0; i < NB; i++)
		expect_int_eq(g.type[i], 0);	/* the marks cleared */
	heapgraph_free(&g);
}

/* A root range read through the reader; a block that cannot be read is
 * reached but not scanned. */
static void ranges_and_faults(void)
{
	struct heapgraph g;
	uint64_t roots[4] = { 0, blk(2), 0, blk(4) };

	memset(heap, 0, sizeof(heap));
	link_(2, 1, 3, 0);
	link_(4, 0, 5, 0);
	bad_lo = blk(4);
	bad_hi = blk(4) + 1;    /* block 4 unreadable */
	setup(&g);
	expect_int_eq(heapgraph_root_range(&g, 0, (uint64_t)(uintptr_t)roots,
					   (uint64_t)(uintptr_t)(roots + 4)), 0);
	expect_int_eq(g.owner[2], 0);
	expect_int_eq(g.owner[3], 0);
	expect_int_eq(g.owner[4], 0);
	expect_int_eq(g.owner[5], HG_NONE);     /* behind an unreadable block */
	expect_u64_eq(g.unread, BS);
	/* a root that cannot be read at all */
	bad_lo = (uint64_t)(uintptr_t)roots;
	bad_hi = bad_lo + sizeof(roots);
	expect_int_eq(heapgraph_root_range(&g, 1, bad_lo, bad_hi), -EFAULT);
	heapgraph_free(&g);
}

/* Out of order, overlapping, empty and wrapping blocks are dropped. */
static void seal_drops(void)
{
	struct heapgraph g;

	expect_int_eq(heapgraph_init(&g, 6, read_own, NULL), 0);
	heapgraph_set(&g, 0, 1000, 100);
	heapgraph_set(&g, 1, 1050, 100);        /* overlaps */
	heapgraph_set(&g, 2, 1100, 0);          /* empty */
	heapgraph_set(&g, 3, 1100, 50);
	heapgraph_set(&g, 4, 900, 10);          /* out of order */
	heapgraph_set(&g, 5, UINT64_MAX - 8, 64); /* wraps */
	expect_int_eq(heapgraph_seal(&g), 2);
	expect_u64_eq(g.addr[1], 1100);
	expect_int_eq(heapgraph_find(&g, 1149), 1);
	expect_int_eq(heapgraph_find(&g, 1150), -1);
	heapgraph_free(&g);
}

/* A block larger than a batch, its only pointer in its last word; and a
 * long chain (each block scanned once, the worklist bounded). */
static void big_and_chain(void)
{
	size_t big = 3 * HG_BATCH_BYTES + 64, n = 20000;
	uint64_t *b = calloc(1, big), *chain = calloc(n, 16);
	struct heapgraph g;
	uint64_t r = (uint64_t)(uintptr_t)b;
	int lo_first = (uintptr_t)b < (uintptr_t)chain;

	expect_true(b && chain);
	bad_lo = bad_hi = 0;
	for (size_t i = 0; i + 1 < n; i++)
		chain[2 * i + 1] = (uint64_t)(uintptr_t)&chain[2 * (i + 1)];
	b[big / 8 - 1] = (uint64_t)(uintptr_t)chain;
	expect_int_eq(heapgraph_init(&g, n + 1, read_own, NULL), 0);
	if (lo_first)
		heapgraph_set(&g, 0, (uint64_t)(uintptr_t)b, big);
	for (size_t i = 0; i < n; i++)
		heapgraph_set(&g, i + lo_first, (uint64_t)(uintptr_t)&chain[2 * i], 16);
	if (!lo_first)
		heapgraph_set(&g, n, (uint64_t)(uintptr_t)b, big);
	expect_int_eq(heapgraph_seal(&g), n + 1);
	heapgraph_root_words(&g, 3, &r, 1);
	for (size_t i = 0; i <= n; i++)
		if (g.owner[i] != 3) {
			expect_int_eq(g.owner[i], 3);
			break;
		}
	expect_u64_eq(g.words, 1 + big / 8 + 2 * n);
	heapgraph_free(&g);
	free(b);
	free(chain);
}

/* The block holding p by a walk over all of them: the directory's answer. */
static long find_slow(const struct heapgraph *g, uint64_t p)
{
	for (size_t i = 0; i < g->n; i++)
		if (p >= g->addr[i] && p - g->addr[i] < heapgraph_size(g, i))
			return (long)i;
	return -1;
}

/* The directory (heapgraph_find) against a walk over every block, on a
 * made-up address space: runs of blocks of mixed sizes, gaps below and
 * above a segment's, one huge block among small ones. No reads. */
static void directory(void)
{
	struct heapgraph g;
	uint64_t at = 0x10000, seed = 12345;
	size_t n = 3000;

	expect_int_eq(heapgraph_init(&g, n, read_own, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		uint64_t size;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		size = 16 + (seed >> 33) % 200;
		if (i == 1500)
			size = 5ULL << 30;                      /* a huge one: over 4 GiB */
		if (i % 500 == 499)
			at += HG_SEG_GAP + (seed >> 40) % 4096; /* a new segment */
		else if (i % 7 == 3)
			at += 16 + (seed >> 44) % 8192;         /* a gap inside one */
		heapgraph_set(&g, i, at, size);
		at += size + 16;
	}
	expect_int_eq(heapgraph_seal(&g), n);
	expect_true(g.nseg >= 6);
	for (size_t i = 0; i < n; i++) {
		uint64_t probe[5] = { g.addr[i], g.addr[i] + heapgraph_size(&g, i) - 1, g.addr[i] + heapgraph_size(&g, i),
				      g.addr[i] - 1, g.addr[i] + heapgraph_size(&g, i) / 2 };

		for (int k = 0; k < 5; k++)
			if (heapgraph_find(&g, probe[k]) != find_slow(&g, probe[k])) {
				fprintf(stderr, "block %zu probe %d: %ld, not %ld\n", i, k,
					heapgraph_find(&g, probe[k]), find_slow(&g, probe[k]));
				expect_true(0);
				i = n;
				break;
			}
	}
	expect_int_eq(heapgraph_find(&g, 0), -1);
	expect_int_eq(heapgraph_find(&g, UINT64_MAX), -1);
	heapgraph_free(&g);
}

HARNESS_MAIN("heapgraph", T(reach_and_leak), T(shared_after), T(weak_roots), T(ranges_and_faults),
	     T(seal_drops), T(big_and_chain), T(directory))
