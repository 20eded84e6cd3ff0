/* Unit tests for the snapshot's safety checks: the memory cgroup's room for a copy, the least time of a stopped read, a vfork in flight. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "snapshot/copysafe.h"

#define MIB (1ULL << 20)

static void test_memcg_fits(void)
{
	struct memcg_info cg = { .version = 2, .tight = "/sys/fs/cgroup/svc", .limit = 1024 * MIB,
				 .avail = 120 * MIB };
	char why[256] = "";

	expect_int_eq(copysafe_memcg_fits(&cg, 100 * MIB, why, sizeof(why)), 1);
	expect_int_eq(copysafe_memcg_fits(&cg, 120 * MIB, why, sizeof(why)), 1);
	expect_str_eq(why, "");
	expect_int_eq(copysafe_memcg_fits(&cg, 900 * MIB, why, sizeof(why)), 0);
	expect_str_eq(why, "its memory cgroup /sys/fs/cgroup/svc has 120 MiB free, a copy could "
		      "need 900 MiB");
	cg.avail = MEMCG_NONE;	/* no limit */
	expect_int_eq(copysafe_memcg_fits(&cg, 900 * MIB, why, sizeof(why)), 1);
	cg.version = 0;		/* none found */
	cg.avail = 0;
	expect_int_eq(copysafe_memcg_fits(&cg, 900 * MIB, why, sizeof(why)), 1);
}

static void test_read_ns(void)
{
	expect_u64_eq(copysafe_read_ns(0), 0);
	expect_u64_eq(copysafe_read_ns(COPYSAFE_READ_BYTES_PER_S), 1000000000ULL);
	expect_u64_eq(copysafe_read_ns(COPYSAFE_READ_BYTES_PER_S / 2), 500000000ULL);
}

/* Our own cost: some anonymous memory, a page table share of it. */
static void test_copy_cost(void)
{
	uint64_t cost = 0, anon = 0;

	expect_int_eq(copysafe_copy_cost(getpid(), &cost, &anon), 0);
	expect_true(anon > 0);
	expect_u64_eq(cost, anon + anon / 512);
	expect_true(copysafe_copy_cost(0x3fffffff, &cost, &anon) < 0);
}

/* A vforked child in our memory is seen until it exits; a forked one never. */
static void test_vfork(void)
{
	int fds[2], go[2], status;
	pid_t tid = 0, child = 0, c;
	char ch;

	expect_int_eq(copysafe_vfork(getpid(), &tid, &child), 0);
	c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	expect_int_eq(copysafe_vfork(getpid(), &tid, &child), 0);	/* its own memory */
	kill(c, SIGKILL);
	waitpid(c, &status, 0);
	if (pipe(fds) || pipe(go))
		return;
	c = fork();
	if (c == 0) {	/* the watcher: sees our vfork child, then lets it go */
		pid_t parent = getppid(), t = 0, k = 0;
		int seen = 0;

		close(fds[0]);
		close(go[0]);
		for (int i = 0; i < 2000 && !seen; i++) {
			seen = copysafe_vfork(parent, &t, &k) == 1 && t == parent;
			if (!seen)
				usleep(1000);
		}
		ch = seen ? 'y' : 'n';
		if (write(fds[1], &ch, 1) != 1 || write(go[1], &ch, 1) != 1)	/* ends the vfork */
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	close(go[1]);
	if (vfork() == 0) {	/* blocks us until the watcher says */
		if (read(go[0], &ch, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	while (wait(&status) > 0 || errno == EINTR)
		;
	expect_int_eq((int)read(fds[0], &ch, 1), 1);
	expect_int_eq(ch, 'y');
	close(fds[0]);
	expect_int_eq(copysafe_vfork(getpid(), &tid, &child), 0);
}

HARNESS_MAIN("copysafe",
	T(test_memcg_fits), T(test_read_ns), T(test_copy_cost), T(test_vfork))
