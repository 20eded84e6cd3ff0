/* Unit tests for jemalloc's listing (jeblocks.c): its size classes, and its memory cut out of the roots. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "snapshot/jeblocks.h"

/* jemalloc 5.3's classes on x86-64 (its size_classes table): tiny, quantum-spaced, then 4 a doubling. */
static void class_sizes(void)
{
	static const struct { unsigned i; uint64_t size; } want[] = {
		{ 0, 8 }, { 1, 16 }, { 2, 32 }, { 3, 48 }, { 4, 64 }, { 5, 80 }, { 8, 128 },
		{ 9, 160 }, { 12, 256 }, { 13, 320 }, { 20, 1024 }, { 26, 3072 }, { 27, 3584 }, { 35, 14336 },
		{ 36, 16384 }, { 37, 20480 }, { 40, 32768 }, { 44, 65536 }, { 231, 7ULL << 60 },
		{ 232, 0 },
	};

	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		expect_u64_eq(jeblocks_class_size(want[k].i), want[k].size);
	for (unsigned i = 1; i < 232; i++)	/* ascending */
		if (jeblocks_class_size(i) <= jeblocks_class_size(i - 1)) {
			expect_int_eq(i, 0);
			break;
		}
}

/* Roots lose what jemalloc manages, keep the rest, under their names. */
static void cut_roots(void)
{
	struct hg_span own[] = { { 0x2000, 0x1000 }, { 0x4000, 0x2000 }, { 0x8800, 0x18000 } };
	struct jeblocks_meta meta = { own, 3 };
	struct snaproots r = { 0 };
	static const struct snaproot want[] = {
		{ 0x1000, 0x2000, 1 }, { 0x3000, 0x4000, 1 }, { 0x6000, 0x8800, 1 },
		{ 0x20800, 0x21000, 2 }, { 0x30000, 0x31000, 3 },
	};

	r.cap = 4;
	r.v = malloc(r.cap * sizeof(*r.v));
	r.v[r.n++] = (struct snaproot){ 0x1000, 0x9000, 1 };
	r.v[r.n++] = (struct snaproot){ 0x20000, 0x21000, 2 };
	r.v[r.n++] = (struct snaproot){ 0x30000, 0x31000, 3 };
	r.v[r.n++] = (struct snaproot){ 0x9000, 0x10000, 4 };	/* all jemalloc's */
	jeblocks_cut_roots(&meta, &r);
	expect_int_eq(r.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < r.n && i < sizeof(want) / sizeof(want[0]); i++) {
		expect_u64_eq(r.v[i].lo, want[i].lo);
		expect_u64_eq(r.v[i].hi, want[i].hi);
		expect_int_eq(r.v[i].name, want[i].name);
	}
	snaproots_free(&r);
}

HARNESS_MAIN("jeblocks", T(class_sizes), T(cut_roots))
