/* Unit tests for the unwinder: walk the test's own stack through the remote API. */
/* SPDX-License-Identifier: MIT */
#include <sys/user.h>
#include <unistd.h>

#include "harness.h"
#include "stacks/unwind.h"
#include "testtarget.h"

/*
 * The unwinder reads this process through process_vm_readv like any target.
 * The frames above the captured sp do not change while unwind_stack() runs
 * below them, so a self-unwind is a faithful test without ptrace.
 * This file is built -O2 without frame pointers: the walk must use CFI.
 */

#define NOIPA __attribute__((noinline, noipa))
#define NO_TAIL() asm volatile("" ::: "memory")

static uint64_t ra[3];		/* return addresses of u0, u1, u2 */
static struct unwind_regs cap;	/* state right after capture() returned */
static uint64_t pcs[64];
static int got;

struct run {
	size_t max;
	size_t copy_len;	/* unwind_stack_copy over this much of the stack */
	uint64_t stop_lo, stop_hi;
	int flush;
};

static struct unwinder *uw;

/* Record the "after return" state of our caller: ip = where we return to,
 * sp = caller's rsp after the return, rbp as the caller will see it. */
static NOIPA void capture(struct unwind_regs *r)
{
	uint64_t *fp = __builtin_frame_address(0);

	r->ip = (uint64_t)__builtin_return_address(0);
	r->sp = (uint64_t)fp + 16;
	r->bp = fp[0];
	r->bx = r->r12 = r->r13 = r->r14 = r->r15 = 0;
	r->flags = 0;
}

static NOIPA void u2(const struct run *run)
{
	ra[2] = (uint64_t)__builtin_return_address(0);
	capture(&cap);
	if (run->flush)
		unwinder_flush(uw);
	if (run->copy_len)
		got = unwind_stack_copy(uw, &cap, (const void *)cap.sp, run->copy_len, pcs,
					run->max);
	else
		got = unwind_stack(uw, getpid(), &cap, pcs, run->max, run->stop_lo,
				   run->stop_hi);
	NO_TAIL();
}

static NOIPA void u1(const struct run *run)
{
	ra[1] = (uint64_t)__builtin_return_address(0);
	u2(run);
	NO_TAIL();
}

static NOIPA void u0(const struct run *run)
{
	ra[0] = (uint64_t)__builtin_return_address(0);
	u1(run);
	NO_TAIL();
}

static void setup(void)
{
	if (!uw)
		uw = testtarget_unwinder(getpid());
	memset(pcs, 0, sizeof(pcs));
}

static void test_chain(void)
{
	struct run run = { .max = 64 };

	setup();
	expect_true(uw != NULL);
	u0(&run);
	expect_true(got >= 5);	/* capture's caller .. main and beyond */
	expect_u64_eq(pcs[0], cap.ip);
	expect_u64_eq(pcs[1], ra[2]);
	expect_u64_eq(pcs[2], ra[1]);
	expect_u64_eq(pcs[3], ra[0]);
}

static void test_cached_second_walk(void)
{
	struct run run = { .max = 64 };
	struct unwind_stats a = { 0 }, b;
	int first = 0;
	setup();
	static volatile int iters = 3;	/* keep the loop: one call site */

	for (int i = 0; i < iters; i++) {
		first = got;
		unwinder_get_stats(uw, &a);
		u0(&run);
	}
	unwinder_get_stats(uw, &b);
	expect_int_eq(got, first);
	expect_u64_eq(pcs[3], ra[0]);
	/* every ip is in libunwind's register-state cache now */
	expect_u64_eq(b.find_proc_info, a.find_proc_info);
	expect_u64_eq(b.unwinds, a.unwinds + 1);
}

static void test_flush(void)
{
	struct run run = { .max = 64, .flush = 1 };

	setup();
	u0(&run);
	expect_true(got >= 5);
	expect_u64_eq(pcs[3], ra[0]);
}

static void test_max(void)
{
	struct run run = { .max = 2 };

	setup();
	u0(&run);
	expect_int_eq(got, 2);
	expect_u64_eq(pcs[1], ra[2]);
	expect_u64_eq(pcs[2], 0);
	expect_true(unwind_truncated(uw));
	run.max = 1;
	u0(&run);
	expect_int_eq(got, 1);
	expect_u64_eq(pcs[0], cap.ip);
	expect_true(unwind_truncated(uw));
	/* a walk that reached the root is not cut */
	run.max = 64;
	u0(&run);
	expect_true(got >= 5 && got < 64);
	expect_true(!unwind_truncated(uw));
}

/* A stack copy that ends before the caller's return address: cut there. */
static void test_copy_end(void)
{
	struct run run = { .max = 64, .copy_len = 8 };

	setup();
	u0(&run);
	expect_int_eq(got, 1);
	expect_u64_eq(pcs[0], cap.ip);
	expect_true(unwind_truncated(uw));
}

static void test_stop_range(void)
{
	struct run run = { .max = 64 };

	setup();
	u0(&run);	/* learn ra[] */
	run.stop_lo = ra[1];
	run.stop_hi = ra[1] + 1;
	u0(&run);
	expect_int_eq(got, -UNWIND_ENESTED);
	run.stop_lo = cap.ip - 1;
	run.stop_hi = cap.ip + 1;
	u0(&run);
	expect_int_eq(got, -UNWIND_ENESTED);
	/* a range below every frame does not trigger */
	run.stop_lo = 1;
	run.stop_hi = 2;
	u0(&run);
	expect_true(got >= 5);
}

static void test_einval(void)
{
	struct unwind_regs r = { 0 };

	setup();
	expect_int_eq(unwind_stack(uw, getpid(), &r, pcs, 0, 0, 0), -EINVAL);
	expect_int_eq(unwind_stack(uw, getpid(), NULL, pcs, 4, 0, 0), -EINVAL);
	expect_int_eq(unwind_stack(NULL, getpid(), &r, pcs, 4, 0, 0), -EINVAL);
}

static void test_unreadable_stack(void)
{
	struct unwind_regs r = { .ip = 0x1000, .sp = 0x10 };

	setup();
	expect_int_eq(unwind_stack(uw, getpid(), &r, pcs, 8, 0, 0), -EFAULT);
}

static void test_regs_from_user(void)
{
	volatile uint64_t slot[2] = { 0x123456789aULL, 0 };
	struct user_regs_struct ur = { 0 };
	struct unwind_regs r;

	ur.rsp = (uint64_t)&slot[0];
	ur.rip = 0xdead;
	ur.rbp = 1;
	ur.rbx = 2;
	ur.r12 = 3;
	ur.r13 = 4;
	ur.r14 = 5;
	ur.r15 = 6;
	expect_int_eq(unwind_regs_from_user(getpid(), &ur, &r), 0);
	expect_u64_eq(r.ip, 0x123456789aULL);
	expect_u64_eq(r.sp, (uint64_t)&slot[1]);
	expect_u64_eq(r.bp, 1);
	expect_u64_eq(r.bx, 2);
	expect_u64_eq(r.r15, 6);
	expect_int_eq(r.flags, 0);
	unwind_regs_from_live(&ur, &r);
	expect_u64_eq(r.ip, 0xdead);
	expect_u64_eq(r.sp, (uint64_t)&slot[0]);
	expect_int_eq(r.flags, UNWIND_IP_EXACT);
	ur.rsp = 8;
	expect_true(unwind_regs_from_user(getpid(), &ur, &r) < 0);
}

static void test_free(void)
{
	testtarget_unwinder_free(uw);
	uw = NULL;
	unwinder_free(NULL);
}

HARNESS_MAIN("unwind", T(test_chain), T(test_cached_second_walk), T(test_flush),
	     T(test_max), T(test_copy_end), T(test_stop_range), T(test_einval), T(test_unreadable_stack),
	     T(test_regs_from_user), T(test_free))
