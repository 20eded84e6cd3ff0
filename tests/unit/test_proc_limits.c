/* Unit tests for proc_limits.c: the limits, status and maps parsers, and a read of ourselves. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"
#include "model/proc_limits.h"

/* A limits file of a target under prlimit --as (soft 130.4 MiB, hard 256 MiB). */
static void test_limits(void)
{
	struct proc_limits pl;
	char *buf = NULL;
	size_t len;

	proc_limits_init(&pl);
	expect_int_eq(proc_read_file("fixtures/limits/as-limited.txt", &buf, &len), 0);
	expect_int_eq(proc_limits_parse(buf, &pl), 0);
	expect_u64_eq(pl.as, 136753152);	/* the soft one */
	expect_u64_eq(pl.stack, 8388608);
	expect_u64_eq(pl.memlock, 65536);
	free(buf);
	proc_limits_init(&pl);
	expect_int_eq(proc_limits_parse("Max address space         unlimited            "
					"unlimited            bytes\n", &pl), -EINVAL);
	expect_u64_eq(pl.as, PROC_LIMIT_NONE);	/* said unlimited */
	expect_u64_eq(pl.stack, PROC_LIMIT_NONE);	/* missing */
	expect_int_eq(proc_limits_parse("Max stack size   lots   lots\n", &pl), -EINVAL);
	expect_u64_eq(pl.stack, PROC_LIMIT_NONE);
}

static void test_status(void)
{
	struct proc_limits pl;

	proc_limits_init(&pl);
	expect_int_eq(proc_limits_parse_status("Name:\tx\nVmPeak:\t  9000 kB\nVmSize:\t    3892 kB\n"
					       "VmLck:\t       8 kB\nCapEff:\t0000000000004000\n",
					       &pl), 0);
	expect_u64_eq(pl.vm_size, 3892 * 1024);
	expect_u64_eq(pl.vm_locked, 8 * 1024);
	expect_int_eq(pl.ipc_lock, 1);
	expect_int_eq(proc_limits_parse_status("VmSize:\t 1 kB\nVmLck:\t 0 kB\n"
					       "CapEff:\t000001fffeffbfff\n", &pl), 0);
	expect_int_eq(pl.ipc_lock, 0);
	expect_u64_eq(pl.vm_locked, 0);
	/* a kernel thread's (no Vm lines) */
	proc_limits_init(&pl);
	expect_int_eq(proc_limits_parse_status("Name:\tkthreadd\nCapEff:\t0\n", &pl), -EINVAL);
	expect_u64_eq(pl.vm_size, PROC_LIMIT_NONE);
}

/* The kernel counts every mapping but the [vsyscall] gate page. */
static void test_maps(void)
{
	struct proc_limits pl;
	struct proc_maps m;

	expect_int_eq(proc_maps_load("fixtures/maps/basic.txt", &m), 0);
	proc_limits_count_maps(&m, &pl);
	expect_u64_eq(pl.maps, 18);
	expect_u64_eq(pl.stack_size, 0x7ffff1c0e000 - 0x7ffff1bed000);
	proc_maps_free(&m);
}

/* Our own, read through /proc, against getrlimit. */
static void test_read_self(void)
{
	struct proc_limits pl;
	struct rlimit rl;

	expect_int_eq(proc_limits_read(getpid(), &pl), 0);
	getrlimit(RLIMIT_AS, &rl);
	expect_u64_eq(pl.as, rl.rlim_cur == RLIM_INFINITY ? PROC_LIMIT_NONE : rl.rlim_cur);
	getrlimit(RLIMIT_STACK, &rl);
	expect_u64_eq(pl.stack, rl.rlim_cur == RLIM_INFINITY ? PROC_LIMIT_NONE : rl.rlim_cur);
	expect_true(pl.vm_size > 0 && pl.vm_size != PROC_LIMIT_NONE);
	expect_true(pl.maps > 5 && pl.maps != PROC_LIMIT_NONE);
	expect_true(pl.stack_size > 0 && pl.stack_size != PROC_LIMIT_NONE);
	expect_true(pl.max_map_count > 0 && pl.max_map_count != PROC_LIMIT_NONE);
	expect_int_eq(proc_limits_read(999999999, &pl), -ENOENT);
	expect_u64_eq(pl.as, PROC_LIMIT_NONE);
}

HARNESS_MAIN("proc_limits", T(test_limits), T(test_status), T(test_maps), T(test_read_self))
