/* Unit tests for the allocator's own allocation stacks: kept by block, bounded, found by address. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include "harness.h"
#include "snapshot/allocsites.h"

/* Stacks added out of order are found by their block; others are not. */
static void finds_by_block(void)
{
	struct allocsites s = { 0 };
	uint64_t a[] = { 0x401000, 0x402000, 0 }, b[] = { 0x501000 };
	const struct allocsite *x;

	for (uint64_t i = 0; i < 1000; i++)
		expect_int_eq(allocsites_add(&s, 0x7f0000 + (999 - i) * 64, i % 2 ? a : b,
					     i % 2 ? 3 : 1), 0);
	x = allocsites_find(&s, 0x7f0000 + 998 * 64);	/* i = 1: a, its zero ends it */
	expect_true(x != NULL);
	expect_int_eq(x->depth, 2);
	expect_u64_eq(s.pcs[x->at + 1], 0x402000);
	x = allocsites_find(&s, 0x7f0000 + 999 * 64);	/* i = 0: b */
	expect_true(x != NULL);
	expect_int_eq(x->depth, 1);
	expect_u64_eq(s.pcs[x->at], 0x501000);
	expect_true(allocsites_find(&s, 0x7f0000 + 8) == NULL);
	expect_true(allocsites_find(&s, 0x7f0000 + 1000 * 64) == NULL);
	allocsites_free(&s);
	expect_true(allocsites_find(&s, 0x7f0000) == NULL);
}

/* A stack with no frame is refused; a deep one is cut at ALLOCSITE_DEPTH. */
static void bounded(void)
{
	struct allocsites s = { 0 };
	uint64_t deep[ALLOCSITE_DEPTH + 9], none[] = { 0, 7 };

	for (size_t i = 0; i < ALLOCSITE_DEPTH + 9; i++)
		deep[i] = 0x400000 + i;
	expect_int_eq(allocsites_add(&s, 0x1000, none, 2), -EINVAL);
	expect_int_eq(allocsites_add(&s, 0x1000, deep, ALLOCSITE_DEPTH + 9), 0);
	expect_int_eq(allocsites_find(&s, 0x1000)->depth, ALLOCSITE_DEPTH);
	allocsites_free(&s);
}

HARNESS_MAIN("allocsites",
	T(finds_by_block),
	T(bounded))
