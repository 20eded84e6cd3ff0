/* Unit tests for the safe point of a call into the allocator: the verdict on a thread's frames (safecall.c). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>

#include "harness.h"
#include "ptrace/safecall.h"

static struct safecall_code code(void)
{
	struct safecall_code c = { .n = 0 };

	expect_int_eq(safecall_code_add(&c, 0x7000, 0x8000, "inside jemalloc"), 0);
	expect_int_eq(safecall_code_add(&c, 0x9000, 0x9100, "in fork"), 0);
	return c;
}

static int ours(void *arg, uint64_t ip)
{
	(void)arg;
	return ip >= 0x50000 && ip < 0x60000;
}

/* A walk to the outermost frame outside every range: safe. */
static void test_safe(void)
{
	struct safecall_code c = code();
	uint64_t pcs[] = { 0x1234, 0x2000, 0x8000 + 5, 0x3000 };

	expect_true(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, ours, NULL) == NULL);
	/* a return address right after a range is its call's: inside */
	pcs[2] = 0x8000;
	expect_str_eq(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, ours, NULL), "inside jemalloc");
	/* but the exact ip of the stopped thread is where it is */
	pcs[2] = 0x2000;
	pcs[0] = 0x8000;
	expect_true(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, ours, NULL) == NULL);
	pcs[0] = 0x7000;
	expect_str_eq(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, ours, NULL), "inside jemalloc");
}

/* Any of the four reasons makes the point unsafe. */
static void test_unsafe(void)
{
	struct safecall_code c = code();
	uint64_t pcs[] = { 0x1234, 0x2000, 0x9050, 0x3000 };

	expect_str_eq(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, ours, NULL), "in fork");
	pcs[2] = 0x2100;
	expect_str_eq(safecall_judge(pcs, 4, SAFECALL_WALK_END | SAFECALL_WALK_SIGNAL, 0, &c, ours, NULL),
		      "in a signal handler");
	expect_str_eq(safecall_judge(pcs, 4, 0, 0, &c, ours, NULL), "on a stack not walked to its end");
	pcs[1] = 0x50010;
	expect_str_eq(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, ours, NULL),
		      "in heapattach's trampolines");
	expect_true(safecall_judge(pcs, 4, SAFECALL_WALK_END, 0, &c, NULL, NULL) == NULL);
}

/*
 * A thread of the allocator's own code blocked in a condition wait it
 * called directly (jemalloc's background thread) is parked: safe. Not so
 * when not blocked in the wait, when the wait was called by other code,
 * or when the code is not the allocator's own (fork).
 */
static void test_parked(void)
{
	struct safecall_code c = { .n = 0 };
	/* futex helper, pthread_cond_timedwait, jemalloc x3, start_thread */
	uint64_t pcs[] = { 0x1100, 0x2010 + 1, 0x7100 + 1, 0x7200 + 1, 0x7300 + 1, 0x3000 };

	expect_int_eq(safecall_code_add_own(&c, 0x7000, 0x8000, "inside jemalloc"), 0);
	expect_int_eq(safecall_code_add(&c, 0x9000, 0x9100, "in fork"), 0);
	expect_int_eq(safecall_code_add_wait(&c, 0x2000, 0x2100), 0);
	expect_true(safecall_judge(pcs, 6, SAFECALL_WALK_END, 1, &c, ours, NULL) == NULL);
	expect_str_eq(safecall_judge(pcs, 6, SAFECALL_WALK_END, 0, &c, ours, NULL),
		      "inside jemalloc");
	/* the wait inlined: the stopped ip itself is in it */
	expect_true(safecall_judge(pcs + 1, 5, SAFECALL_WALK_END, 1, &c, ours, NULL) == NULL);
	/* jemalloc called something else that waits */
	pcs[1] = 0x2200 + 1;
	expect_str_eq(safecall_judge(pcs, 6, SAFECALL_WALK_END, 1, &c, ours, NULL),
		      "inside jemalloc");
	/* a wait called by other code, which jemalloc called */
	pcs[1] = 0x2010 + 1;
	pcs[2] = 0x4000 + 1;
	expect_str_eq(safecall_judge(pcs, 6, SAFECALL_WALK_END, 1, &c, ours, NULL),
		      "inside jemalloc");
	/* parked, but in fork further out */
	pcs[2] = 0x7100 + 1;
	pcs[4] = 0x9010 + 1;
	expect_str_eq(safecall_judge(pcs, 6, SAFECALL_WALK_END, 1, &c, ours, NULL), "in fork");
	/* fork's code is not the allocator's own: never parked */
	pcs[2] = 0x9010 + 1;
	pcs[4] = 0x7300 + 1;
	expect_str_eq(safecall_judge(pcs, 6, SAFECALL_WALK_END, 1, &c, ours, NULL), "in fork");
	for (int i = 1; i < SAFECALL_MAX_WAITS; i++)
		expect_int_eq(safecall_code_add_wait(&c, 0x100, 0x200), 0);
	expect_int_eq(safecall_code_add_wait(&c, 0x100, 0x200), -ENOSPC);
}

static void test_full(void)
{
	struct safecall_code c = { .n = 0 };

	for (int i = 0; i < SAFECALL_MAX_RANGES; i++)
		expect_int_eq(safecall_code_add(&c, (uint64_t)i, (uint64_t)i + 1, "x"), 0);
	expect_int_eq(safecall_code_add(&c, 100, 101, "x"), -ENOSPC);
}

HARNESS_MAIN("safecall", T(test_safe), T(test_unsafe), T(test_parked), T(test_full))
