/* Unit tests for jemalloc's own samples (jeprof.c): a sampled extent's stack through its tctx and gctx, jemalloc's frames dropped, what is no sample gives none; its rate told by its counters (jerate.c). */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../fuzz/fakemem.h"
#include "snapshot/jeblocks_priv.h"

#define HEAP   0x7f0000000000ULL        /* jemalloc's extents and metadata */
#define CODE   0x7f0100000000ULL
#define JECODE 0x7f0140000000ULL
#define BLOCKS (HEAP + 0x80000)         /* the extents' blocks, 64 KiB apart */

static struct fakemem fm;

static void setup(void)
{
	if (fm.maps.n)
		return;
	fake_map(&fm, HEAP, 1u << 20, PROC_MAP_R | PROC_MAP_W, NULL);
	fake_map(&fm, CODE, 64u << 10, PROC_MAP_R | PROC_MAP_X, "/usr/bin/prog");
	fake_map(&fm, JECODE, 64u << 10, PROC_MAP_R | PROC_MAP_X,
		 "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
}

static void put(uint64_t addr, const uint64_t *w, size_t n)
{
	memcpy(fm.mem[0] + (addr - HEAP), w, 8 * n);
}

/* A tctx at tctx naming the gctx at gctx, whose bt (at its word bt, vec
 * pointing right after it; if self, else elsewhere) holds pcs[0..n), its
 * length len. */
static void lay(uint64_t tctx, uint64_t gctx, unsigned bt, int self, const uint64_t *pcs,
		unsigned n, unsigned len)
{
	uint64_t t[13] = { [12] = gctx }, b[2] = { gctx + 8 * (bt + 2) + (self ? 0 : 8), len };

	put(tctx, t, 13);
	put(gctx + 8 * bt, b, 2);
	put(gctx + 8 * (bt + 2), pcs, n);
}

/* Extent i: a block of class szind (non-slab, or a slab), its edata_t's words 9..11. */
static struct jeextent ext(unsigned i, unsigned szind, unsigned slab, uint64_t w9, uint64_t w10,
			   uint64_t w11)
{
	return (struct jeextent){ .base = BLOCKS + (i << 16), .addr = BLOCKS + (i << 16),
				  .size = 1u << 16, .szind = szind, .slab = slab,
				  .prof = { w9, w10, w11 } };
}

/* Each of the extents x[0..n) sampled, or not. */
static void samples(void)
{
	const uint64_t pcs[] = { JECODE + 0x10, JECODE + 0x20, CODE + 0x100, CODE + 0x200,
				 0x1234, CODE + 0x300 };
	const uint64_t one[] = { CODE + 0x400 }, jeonly[] = { JECODE + 0x10 };
	const uint64_t T1 = HEAP + 0x1000, G1 = HEAP + 0x2000, T2 = HEAP + 0x3000, G2 = HEAP + 0x4000;
	const uint64_t T3 = HEAP + 0x5000, G3 = HEAP + 0x6000, T4 = HEAP + 0x7000, G4 = HEAP + 0x8000;
	const uint64_t T5 = HEAP + 0x9000, G5 = HEAP + 0xa000;
	struct jeextent x[] = {
		ext(0, 40, 0, 20000, T1, 0),            /* large: its stack cut at 0x1234 */
		ext(1, 3, 0, 32, T1, 0),                /* promoted small one: the same stack */
		ext(2, 40, 0, 100, 1, 0),               /* tctx 1: not sampled */
		ext(3, 40, 0, 0xb8a9ce37, 100, T2),     /* nstime_t's magic (a debug build) */
		ext(4, 40, 0, 100, T3, 0),              /* its gctx's vec elsewhere */
		ext(5, 40, 0, 100, T1 + 4, 0),          /* tctx misaligned */
		ext(6, 40, 0, 100, T4, 0),              /* bt longer than PROF_BT_MAX */
		ext(7, 3, 1, 100, T1, 0),               /* a slab: no prof info */
		ext(8, 40, 0, 100, T5, 0),              /* jemalloc's frames only */
		ext(9, 40, 0, 40000, T1, 0),            /* its request larger than the block */
	};
	size_t n = sizeof(x) / sizeof(x[0]);
	struct jeblocks_stats st = { 0 };
	struct jewalk w = { .read = fake_read, .read_arg = &fm, .ex = x, .nex = n, .st = &st };
	struct allocsites as = { 0 };
	struct heapgraph g;
	const struct allocsite *s;

	setup();
	fake_load(&fm, NULL, 0);	/* no patches: the mappings as set up, zeros */
	w.maps = &fm.maps;
	lay(T1, G1, 13, 1, pcs, 6, 6);
	lay(T2, G2, 14, 1, one, 1, 1);
	lay(T3, G3, 13, 0, one, 1, 1);
	lay(T4, G4, 13, 1, one, 1, 129);
	lay(T5, G5, 13, 1, jeonly, 1, 1);
	expect_int_eq(heapgraph_init(&g, n, fake_read, &fm), 0);
	for (size_t i = 0; i < n; i++)
		heapgraph_set(&g, i, x[i].addr, jeblocks_class_size(x[i].szind));
	heapgraph_seal(&g);
	jeblocks_samples(&w, &g, &as);
	expect_str_eq(as.by, "jemalloc");
	expect_u64_eq(st.sampled, 3);
	expect_int_eq(as.n, 3);
	for (unsigned i = 0; i < 2; i++) {
		s = allocsites_find(&as, x[i].addr);
		expect_true(s != NULL);
		expect_int_eq(s->depth, 2);
		expect_u64_eq(as.pcs[s->at], CODE + 0x100);
		expect_u64_eq(as.pcs[s->at + 1], CODE + 0x200);
	}
	s = allocsites_find(&as, x[3].addr);
	expect_true(s != NULL);
	expect_int_eq(s->depth, 1);
	expect_u64_eq(as.pcs[s->at], CODE + 0x400);
	heapgraph_free(&g);
	allocsites_free(&as);
}

/* A tctx's counts (words 4, 6, 7: objects, bytes, unbiased bytes). */
static void counts(uint64_t *tw, uint64_t objs, uint64_t bytes, uint64_t unbiased)
{
	memset(tw, 0, 13 * sizeof(*tw));
	tw[4] = objs;
	tw[6] = bytes;
	tw[7] = unbiased;
}

/* The rate the tctxs' unbiased bytes tell (jemalloc's own figures at 2^10:
 * 112 -> 1081, 4096 -> 4172; 40960 -> 40960 at any rate up to 2^11). */
static void rate(void)
{
	struct jerate *r = calloc(1, sizeof(*r));
	uint64_t tw[13];

	counts(tw, 3, 112 + 112 + 4096, 1081 + 1081 + 4172);
	jerate_add(r, 0x1000, tw, 112);
	jerate_add(r, 0x1000, tw, 4096);
	expect_u64_eq(jerate_period(r), 0);	/* a block of it not seen */
	jerate_add(r, 0x1000, tw, 112);
	expect_u64_eq(jerate_period(r), 1024);
	counts(tw, 1, 40960, 40960);
	jerate_add(r, 0x2000, tw, 40960);	/* fits 2^10 too */
	expect_u64_eq(jerate_period(r), 1024);
	counts(tw, 1, 112, 2105);		/* 2^11: no rate fits both */
	jerate_add(r, 0x3000, tw, 112);
	expect_u64_eq(jerate_period(r), 0);
	memset(r, 0, sizeof(*r));
	counts(tw, 1, 40960, 40960);		/* 2^0 .. 2^11 fit: unknown */
	jerate_add(r, 0x2000, tw, 40960);
	expect_u64_eq(jerate_period(r), 0);
	free(r);
}

HARNESS_MAIN("jeprof", T(samples), T(rate))
