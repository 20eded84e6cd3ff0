/* Thread ids: arch_xacct_tp_check on good and bad thread pointers, and agent_link_xacct_threads' verdict. */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <asm/prctl.h>

#include "fast/agentlink.h"
#include "harness.h"
#include "profile/runstats.h"
#include "ptrace/tracee.h"
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

/* arch_xacct_tp_check of a stopped child whose fs base is fs (0: libc's). */
static int check_child(uint64_t fs, uint64_t *tp)
{
	pid_t pid = stopped_child(fs);
	int rc;

	expect_true(pid > 0);
	if (pid <= 0)
		return -1;
	rc = arch_xacct_tp_check(pid, pid, tp);
	end_child(pid);
	return rc;
}

/* libc's own threads follow the ABI: the word at fs base is fs base. */
static void test_tp_libc(void)
{
	uint64_t tp = 0;

	expect_int_eq(check_child(0, &tp), 1);
	expect_true(tp != 0);
}

/* A thread pointer whose first word is something else, one that points at
 * nothing mapped, and none at all: not to be trusted. */
static void test_tp_not_self(void)
{
	uint64_t tp = 0, fake = (uint64_t)(uintptr_t)fake_tcb;
	void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	fake_tcb[0] = 0x1234;
	expect_int_eq(check_child(fake, &tp), 0);
	expect_u64_eq(tp, fake);
	expect_true(gone != MAP_FAILED);
	if (gone != MAP_FAILED) {
		munmap(gone, 4096);	/* unmapped in the child too (forked after) */
		expect_int_eq(check_child((uint64_t)(uintptr_t)gone, &tp), 0);
	}
	/* the same word made self-pointing passes: the check reads the child */
	fake_tcb[0] = fake;
	expect_int_eq(check_child(fake, &tp), 1);
}

/* A thread that is not stopped (nor ours): -errno, not a verdict. */
static void test_tp_not_stopped(void)
{
	uint64_t tp;

	expect_true(arch_xacct_tp_check(getpid(), getpid(), &tp) < 0);
}

/*
 * agent_link_xacct_threads on a tracee of stopped children: it keeps
 * accounting for a thread of libc's, and turns it off for two threads
 * that share a thread pointer (rdfsbase would read one fs base for both)
 * and for a thread that is alive but whose registers cannot be read;
 * where rdfsbase is not allowed, also for a thread pointer that is not
 * self-pointing.
 */
static int verdict(pid_t *tids, size_t n)
{
	struct thread th[2];
	struct tracee tr = { .pid = tids[0], .t = th, .n = n, .cap = 2 };
	struct run_stats st;
	struct agent_link_params lp = { .pid = tids[0], .rate = 1, .xlive_slots = 4096,
					.stats = &st };
	struct agent_link *l;
	int rc;

	memset(th, 0, sizeof(th));
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < n; i++) {
		th[i].tid = tids[i];
		th[i].state = TS_STOPPED;
	}
	l = agent_link_new(&lp);
	rc = agent_link_xacct_threads(l, &tr);
	agent_link_free(l);
	return rc;
}

static void test_threads_verdict(void)
{
	int rdfs = arch_xacct_allowed(getauxval(ARCH_XACCT_AUXV));
	pid_t good, pair[2], other;

	/* before the forks: the tracee's memory is good's, where this word
	 * (at other's thread pointer) is not self-pointing either */
	fake_tcb[0] = 0x1234;
	good = stopped_child(0);
	expect_true(good > 0);
	if (good <= 0)
		return;
	expect_int_eq(verdict(&good, 1), 1);
	pair[0] = pair[1] = good;		/* the same thread pointer twice */
	expect_int_eq(verdict(pair, 2), 0);
	other = stopped_child((uint64_t)(uintptr_t)fake_tcb);
	expect_true(other > 0);
	if (other > 0) {
		expect_int_eq(verdict(&other, 1), rdfs);
		pair[1] = other;		/* one good, one not */
		expect_int_eq(verdict(pair, 2), rdfs);
		end_child(other);
	}
	end_child(good);
	other = getpid();			/* alive, not stopped: no registers */
	expect_int_eq(verdict(&other, 1), 0);
}

HARNESS_MAIN("xacct_tp", T(test_tp_libc), T(test_tp_not_self), T(test_tp_not_stopped),
	     T(test_threads_verdict))
