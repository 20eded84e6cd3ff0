/* arch_xacct_tp_check: a thread whose first TLS word is its thread pointer, and threads whose is not. */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <asm/prctl.h>

#include "harness.h"
#include "xacct_arch.h"

static uint64_t fake_tcb[8] __attribute__((aligned(64)));

/* Raw syscalls only: after ARCH_SET_FS nothing of libc may run. */
static long raw3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c)
			     : "rcx", "r11", "memory");
	return ret;
}

static void end_child(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/*
 * A child whose fs base is fs (0: left as libc set it), stopped by
 * PTRACE_INTERRUPT under our PTRACE_SEIZE: its pid, or -1.
 */
static pid_t stopped_child(uint64_t fs)
{
	int status, fd[2];
	char c = 0;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (fs)
			raw3(SYS_arch_prctl, ARCH_SET_FS, (long)fs, 0);
		raw3(SYS_write, fd[1], (long)&c, 1);	/* its fs is set */
		for (;;)
			raw3(SYS_pause, 0, 0, 0);
	}
	close(fd[1]);
	if (pid > 0 && read(fd[0], &c, 1) != 1) {
		end_child(pid);
		pid = -1;
	}
	close(fd[0]);
	if (pid < 0)
		return -1;
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0 || ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0 ||
	    waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		end_child(pid);
		return -1;
	}
	return pid;
}

/* libc's own threads follow the ABI: the word at fs base is fs base. */
static void test_tp_libc(void)
{
	pid_t pid = stopped_child(0);

	expect_true(pid > 0);
	if (pid <= 0)
		return;
	expect_int_eq(arch_xacct_tp_check(pid, pid), 1);
	end_child(pid);
}

/* A thread pointer whose first word is something else, one that points at
 * nothing readable, and none at all: not to be trusted. */
static void test_tp_not_self(void)
{
	pid_t pid;

	fake_tcb[0] = 0x1234;
	pid = stopped_child((uint64_t)(uintptr_t)fake_tcb);
	expect_true(pid > 0);
	if (pid > 0) {
		expect_int_eq(arch_xacct_tp_check(pid, pid), 0);
		end_child(pid);
	}
	pid = stopped_child(0x10000);	/* below mmap_min_addr: never mapped */
	expect_true(pid > 0);
	if (pid > 0) {
		expect_int_eq(arch_xacct_tp_check(pid, pid), 0);
		end_child(pid);
	}
	/* the same word made self-pointing passes: the check reads the child */
	fake_tcb[0] = (uint64_t)(uintptr_t)fake_tcb;
	pid = stopped_child((uint64_t)(uintptr_t)fake_tcb);
	expect_true(pid > 0);
	if (pid > 0) {
		expect_int_eq(arch_xacct_tp_check(pid, pid), 1);
		end_child(pid);
	}
}

/* A thread that is not stopped (nor ours): -errno, not a verdict. */
static void test_tp_not_stopped(void)
{
	expect_true(arch_xacct_tp_check(getpid(), getpid()) < 0);
}

HARNESS_MAIN("xacct_tp", T(test_tp_libc), T(test_tp_not_self), T(test_tp_not_stopped))
