/* Unit tests for pymalloc's blocks (pyblocks.c): made-up pools in our own memory, found, walked, refused, merged, cut out of the roots. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "ownread.h"
#include "snapshot/pyblocks.h"

#define POOL 16384
#define NPOOLS 4


struct hdr {
	uint32_t count, pad;
	uint64_t freeblock, nextpool, prevpool;
	uint32_t arenaindex, szidx, nextoffset, maxnextoffset;
};

static uint8_t *arena;                  /* NPOOLS pools, POOL aligned */

/* Pool i of blocks of (szidx + 1) * 16 bytes, carved of them, count in use,
 * its free list the blocks free[0..nfree) in that order. */
static void pool(int i, uint32_t szidx, uint32_t carved, uint32_t count, const int *free,
		 int nfree)
{
	uint8_t *p = arena + (size_t)i * POOL;
	uint32_t size = (szidx + 1) * 16;
	struct hdr h = { .count = count, .nextpool = (uint64_t)(uintptr_t)p,
			 .prevpool = (uint64_t)(uintptr_t)p, .arenaindex = 3, .szidx = szidx,
			 .nextoffset = 48 + carved * size, .maxnextoffset = POOL - size };

	h.freeblock = nfree ? (uint64_t)(uintptr_t)(p + 48 + (size_t)free[0] * size) : 0;
	memcpy(p, &h, sizeof(h));
	for (int k = 0; k < nfree; k++) {
		uint64_t next = k + 1 < nfree ?
				(uint64_t)(uintptr_t)(p + 48 + (size_t)free[k + 1] * size) : 0;

		memcpy(p + 48 + (size_t)free[k] * size, &next, 8);
	}
}

static uint64_t at(int i, uint64_t off)
{
	return (uint64_t)(uintptr_t)(arena + (size_t)i * POOL) + off;
}

/* Four pools: 0 in use (blocks 0, 2, 4 of 5 in use), 1 empty, 2 a free
 * list with a loop, 3 never used (zeros). */
static void setup(struct proc_map *m, struct proc_maps *maps, struct heapgraph *g)
{
	static const int free0[] = { 1, 3 }, free2[] = { 0, 1, 0 };
	static uint8_t *mem;

	if (!mem) {
		mem = mmap(NULL, (NPOOLS + 1) * POOL, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		arena = (uint8_t *)(((uintptr_t)mem + POOL - 1) & ~(uintptr_t)(POOL - 1));
	}
	memset(arena, 0, NPOOLS * POOL);
	pool(0, 1, 5, 3, free0, 2);
	pool(1, 4, 6, 0, NULL, 0);
	pool(2, 0, 4, 2, free2, 3);
	*m = (struct proc_map){ .start = at(0, 0), .end = at(NPOOLS, 0),
				.prot = PROC_MAP_R | PROC_MAP_W };
	*maps = (struct proc_maps){ m, 1 };
	expect_int_eq(heapgraph_init(g, 0, read_own, NULL), 0);
	heapgraph_seal(g);
}

static void found(void)
{
	struct proc_map m;
	struct proc_maps maps;
	struct heapgraph g;
	struct pyblocks pb;

	setup(&m, &maps, &g);
	expect_int_eq(pyblocks_find(11, &maps, &g, read_own, NULL, &pb), 0);
	expect_int_eq(pb.pool_size, POOL);
	expect_int_eq(pb.n, 3);
	if (pb.n == 3) {
		expect_u64_eq(pb.v[0].addr, at(0, 48));
		expect_u64_eq(pb.v[1].addr, at(0, 48 + 64));
		expect_u64_eq(pb.v[2].addr, at(0, 48 + 128));
		expect_int_eq(pb.v[2].len, 32);
	}
	expect_int_eq(pb.npools, 2);	/* 0 and the empty 1; 2 refused */
	expect_int_eq(pb.refused, 1);
	expect_int_eq(pb.free_blocks, 2);
	pyblocks_free(&pb);
	/* 3.8's 4 KiB pools first: none, then 16 KiB ones */
	expect_int_eq(pyblocks_find(8, &maps, &g, read_own, NULL, &pb), 0);
	expect_int_eq(pb.pool_size, POOL);
	expect_int_eq(pb.n, 3);
	pyblocks_free(&pb);
	heapgraph_free(&g);
}

/* A header that does not hold: each field out of its range, no pool. */
static void bad_headers(void)
{
	static const uint32_t off[] = { 36, 40, 44, 0 };	/* szidx, nextoffset, max, count */
	static const uint32_t val[] = { 32, 48 + 5 * 32 + 8, POOL - 16, 6 };
	struct proc_map m;
	struct proc_maps maps;
	struct heapgraph g;
	struct pyblocks pb;

	for (size_t k = 0; k < sizeof(off) / sizeof(off[0]); k++) {
		setup(&m, &maps, &g);
		memcpy(arena + off[k], &val[k], 4);
		pyblocks_find(11, &maps, &g, read_own, NULL, &pb);
		expect_int_eq(pb.n, 0);
		pyblocks_free(&pb);
		heapgraph_free(&g);
	}
	/* a free link out of the pool */
	setup(&m, &maps, &g);
	memcpy(arena + 48 + 32, &(uint64_t){ at(1, 48) }, 8);
	pyblocks_find(11, &maps, &g, read_own, NULL, &pb);
	expect_int_eq(pb.n, 0);
	expect_int_eq(pb.refused, 2);
	pyblocks_free(&pb);
	heapgraph_free(&g);
}

/* Merged with glibc's blocks, in order; a pool over a glibc block is none;
 * the pools cut out of a root. */
static void merge_and_roots(void)
{
	static uint64_t other[4];
	struct proc_map m;
	struct proc_maps maps;
	struct heapgraph g;
	struct pyblocks pb;
	struct snaproots r = { 0 };

	setup(&m, &maps, &g);
	heapgraph_free(&g);
	expect_int_eq(heapgraph_init(&g, 1, read_own, NULL), 0);
	heapgraph_set(&g, 0, (uint64_t)(uintptr_t)other, sizeof(other));
	heapgraph_seal(&g);
	expect_int_eq(pyblocks_find(11, &maps, &g, read_own, NULL, &pb), 0);
	expect_int_eq(pyblocks_merge(&g, &pb), 0);
	expect_int_eq(g.n, 4);
	for (size_t i = 1; i < g.n; i++)
		expect_true(g.addr[i - 1] < g.addr[i]);
	expect_true(heapgraph_find(&g, at(0, 48 + 64 + 8)) >= 0);
	expect_true(heapgraph_find(&g, at(0, 48 + 32)) < 0);	/* free */
	r.v = calloc(2, sizeof(*r.v));
	r.n = r.cap = 2;
	r.v[0] = (struct snaproot){ at(0, 0), at(NPOOLS, 0), 5 };
	r.v[1] = (struct snaproot){ 0x1000, 0x2000, 6 };
	pyblocks_trim_roots(&pb, &r);
	expect_int_eq(r.n, 2);
	expect_u64_eq(r.v[0].lo, at(2, 0));
	expect_u64_eq(r.v[0].hi, at(NPOOLS, 0));
	expect_int_eq(r.v[0].name, 5);
	expect_u64_eq(r.v[1].lo, 0x1000);
	snaproots_free(&r);
	pyblocks_free(&pb);
	heapgraph_free(&g);
	/* a glibc block inside pool 0: not a pool */
	setup(&m, &maps, &g);
	heapgraph_free(&g);
	expect_int_eq(heapgraph_init(&g, 1, read_own, NULL), 0);
	heapgraph_set(&g, 0, at(0, 4096), 64);
	heapgraph_seal(&g);
	pyblocks_find(11, &maps, &g, read_own, NULL, &pb);
	expect_int_eq(pb.n, 0);
	expect_int_eq(pb.npools, 1);
	pyblocks_free(&pb);
	heapgraph_free(&g);
}

HARNESS_MAIN("pyblocks", T(found), T(bad_headers), T(merge_and_roots))
