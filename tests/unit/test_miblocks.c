/* Unit tests for mimalloc's blocks in use (miblocks.c), listed from a segment built in memory: what is on a page's lists or its heap's delayed list is free, lists that do not hold are refused, segments are cut out of the roots. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "snapshot/miblocks.h"

/* The fake target: a segment's header (its first slice) at SEG, one small
 * page of 48-byte blocks at slice 1, a heap at HEAP. */
#define SEG 0x40000000ull
#define SLICE 0x10000ull
#define PAGE_AT (SEG + SLICE + 384)
#define BS 48
#define CAP 10
#define HEAP 0x7000000ull
#define KEY 0x5a5a5a5a12345678ull
#define TID 0x7f0000001000ull

static uint8_t hdr[SLICE], area[SLICE], heap[4096];

static void put64(uint8_t *p, size_t off, uint64_t v) { memcpy(p + off, &v, 8); }
static void put32(uint8_t *p, size_t off, uint32_t v) { memcpy(p + off, &v, 4); }
static void put16(uint8_t *p, size_t off, uint16_t v) { memcpy(p + off, &v, 2); }
static uint64_t blk(unsigned k) { return PAGE_AT + (uint64_t)k * BS; }
static uint8_t *slice(unsigned i) { return hdr + 264 + 80 * i; }

/* A link from block k to the address next (0: the list's end). */
static void link_blk(unsigned k, uint64_t next)
{
	put64(area, (size_t)(blk(k) - PAGE_AT), next);
}

/* A normal segment: the header's span (1 slice), the page (1 slice), the
 * rest a free span; the page's lists: free 2 -> 5, local 7, thread 9. */
static void build(void)
{
	memset(hdr, 0, sizeof(hdr));
	memset(area, 0, sizeof(area));
	memset(heap, 0, sizeof(heap));
	put64(hdr, 208, 1);                     /* used */
	put64(hdr, 216, SEG ^ KEY);             /* cookie */
	put64(hdr, 224, 512);                   /* segment_slices */
	put64(hdr, 232, 1);                     /* segment_info_slices */
	put32(hdr, 240, 0);                     /* kind */
	put64(hdr, 248, 512);                   /* slice_entries */
	put64(hdr, 256, TID);
	put32(slice(0), 0, 1);
	put32(slice(0), 28, SLICE);
	put32(slice(1), 0, 1);
	put16(slice(1), 10, CAP);
	put16(slice(1), 12, CAP + 5);
	put32(slice(1), 24, CAP - 3);           /* used: all but free and local */
	put32(slice(1), 28, BS);
	put64(slice(1), 16, blk(2));
	link_blk(2, blk(5));
	put64(slice(1), 32, blk(7));
	put64(slice(1), 40, blk(9) | 1);        /* thread_free, a delayed flag */
	put64(slice(1), 48, HEAP);
	put32(slice(2), 0, 510);                /* a free span to the end */
	put64(heap, 2848 - 2840, TID);
}

static int in(uint64_t addr, size_t len, uint64_t lo, size_t n)
{
	return addr >= lo && addr + len <= lo + n;
}

static int read_fake(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	if (in(addr, len, SEG, sizeof(hdr)))
		memcpy(buf, hdr + (addr - SEG), len);
	else if (in(addr, len, PAGE_AT, sizeof(area)))
		memcpy(buf, area + (addr - PAGE_AT), len);
	else if (in(addr, len, HEAP + 2840, sizeof(heap)))
		memcpy(buf, heap + (addr - HEAP - 2840), len);
	else if (in(addr, len, SEG + (32ull << 20), 1ull << 30))
		memset(buf, 0, len);            /* the rest of the mapping: no header */
	else
		return -EFAULT;
	return 0;
}

static struct proc_map map = { .start = SEG, .end = SEG + (64ull << 20),
			       .prot = PROC_MAP_R | PROC_MAP_W };
static struct proc_maps maps = { &map, 1 };

/* List the fake target: rc, the blocks into g (freed by the caller). */
static int list(struct heapgraph *g, struct miblocks_segs *segs, struct miblocks_stats *st)
{
	char why[160] = "";

	return miblocks_list(&maps, read_fake, NULL, g, NULL, NULL, segs, st, why, sizeof(why));
}

/* Blocks 0..CAP-1 but those on the lists (2, 5, 7, 9) and the delayed list. */
static void expect_blocks(const struct heapgraph *g, uint32_t freed)
{
	size_t n = 0;

	for (unsigned k = 0; k < CAP; k++) {
		if (freed >> k & 1)
			continue;
		expect_true(n < g->n);
		if (n < g->n) {
			expect_u64_eq(g->addr[n], blk(k));
			expect_u64_eq(g->size[n], BS);
		}
		n++;
	}
	expect_int_eq(g->n, n);
}

static void lists(void)
{
	struct heapgraph g;
	struct miblocks_segs segs;
	struct miblocks_stats st;

	build();
	expect_int_eq(list(&g, &segs, &st), 0);
	expect_blocks(&g, 1u << 2 | 1u << 5 | 1u << 7 | 1u << 9);
	expect_int_eq(st.segments, 1);
	expect_int_eq(st.pages, 1);
	expect_int_eq(st.listed_free, 4);
	expect_int_eq(st.miscounted, 0);
	expect_int_eq(segs.n, 1);
	expect_u64_eq(segs.v[0].addr, SEG);
	expect_u64_eq(segs.v[0].len, 32ull << 20);
	heapgraph_free(&g);
	miblocks_segs_free(&segs);
}

/* Block 3 on the heap's delayed list: free; not when the heap says
 * another thread (its list is then not walked). */
static void delayed(void)
{
	struct heapgraph g;
	struct miblocks_segs segs;
	struct miblocks_stats st;

	build();
	put64(heap, 0, blk(3));
	expect_int_eq(list(&g, &segs, &st), 0);
	expect_blocks(&g, 1u << 2 | 1u << 3 | 1u << 5 | 1u << 7 | 1u << 9);
	expect_int_eq(st.delayed_free, 1);
	heapgraph_free(&g);
	miblocks_segs_free(&segs);
	put64(heap, 8, TID + 0x1000);
	expect_int_eq(list(&g, &segs, &st), 0);
	expect_blocks(&g, 1u << 2 | 1u << 5 | 1u << 7 | 1u << 9);
	heapgraph_free(&g);
	miblocks_segs_free(&segs);
}

/* A list with a cycle, one off a block's start, one out of the page: the
 * page is torn, and a heap of torn pages refused. */
static void torn(void)
{
	const uint64_t bad[] = { blk(2), blk(3) + 8, blk(CAP), SEG };
	struct heapgraph g;
	struct miblocks_segs segs;
	struct miblocks_stats st;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		build();
		link_blk(5, bad[i]);
		link_blk(2, blk(5));
		expect_int_eq(list(&g, &segs, &st), -EPROTO);
		expect_int_eq(st.torn, 1);
		heapgraph_free(&g);
		miblocks_segs_free(&segs);
	}
}

/* Headers that do not hold: no segment. */
static void no_segment(void)
{
	struct heapgraph g;
	struct miblocks_segs segs;
	struct miblocks_stats st;

	build();
	put64(hdr, 224, 513);                   /* a normal segment of 513 slices */
	expect_int_eq(list(&g, &segs, &st), -ENOENT);
	expect_int_eq(g.n, 0);
	heapgraph_free(&g);
	build();
	put32(slice(1), 0, 0);                  /* a span of no slice */
	expect_int_eq(list(&g, &segs, &st), -ENOENT);
	heapgraph_free(&g);
	build();
	put32(slice(2), 0, 511);                /* spans past the end */
	expect_int_eq(list(&g, &segs, &st), -ENOENT);
	heapgraph_free(&g);
	miblocks_segs_free(&segs);
}

/* Roots lose what segments cover, in their order, names kept. */
static void unroot(void)
{
	struct hg_span sv[] = { { 0x1000, 0x1000 }, { 0x5000, 0x1000 } };
	struct miblocks_segs segs = { sv, 2, 2 };
	struct snaproots r = { 0 };

	r.cap = 4;
	r.v = malloc(r.cap * sizeof(*r.v));
	r.v[r.n++] = (struct snaproot){ 0x0800, 0x7000, 1 };    /* split in three */
	r.v[r.n++] = (struct snaproot){ 0x1100, 0x1200, 2 };    /* inside: gone */
	r.v[r.n++] = (struct snaproot){ 0x9000, 0xa000, 3 };    /* outside: kept */
	miblocks_unroot(&r, &segs);
	expect_int_eq(r.n, 4);
	expect_u64_eq(r.v[0].lo, 0x0800);
	expect_u64_eq(r.v[0].hi, 0x1000);
	expect_u64_eq(r.v[1].lo, 0x2000);
	expect_u64_eq(r.v[1].hi, 0x5000);
	expect_u64_eq(r.v[2].lo, 0x6000);
	expect_u64_eq(r.v[2].hi, 0x7000);
	expect_int_eq(r.v[2].name, 1);
	expect_u64_eq(r.v[3].lo, 0x9000);
	expect_int_eq(r.v[3].name, 3);
	snaproots_free(&r);
}

HARNESS_MAIN("miblocks", T(lists), T(delayed), T(torn), T(no_segment), T(unroot))
