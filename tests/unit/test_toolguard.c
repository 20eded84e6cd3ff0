/* Unit tests for the guard over the agent: the liveness word the kernel marks at death, and faults taken back. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "shm.h"
#include "fast/toolguard.h"
#include "tramp_fast.h"

static void *arm_and_exit(void *arg)
{
	static struct toolguard g;	/* the kernel reads it as the thread exits */

	*(int *)((char *)arg + 64) = toolguard_arm(&g, arg);
	return NULL;
}

/* A thread that armed the word and ended: the kernel marked it dead. */
static void test_thread_exit(void)
{
	uint32_t *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_t t;

	expect_true(w != MAP_FAILED);
	expect_int_eq(pthread_create(&t, NULL, arm_and_exit, w), 0);
	pthread_join(t, NULL);
	expect_int_eq(w[16], 0);
	expect_true(*w & SHM_TOOL_DIED);
	expect_int_eq(*w & SHM_TOOL_TID, 0);
	expect_true(!shm_tool_here(*w));
	munmap(w, 4096);
}

/* A process that armed a shared word and was SIGKILLed: marked dead too. */
static void test_killed(void)
{
	volatile uint32_t *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				    -1, 0);
	int pipefd[2], status;
	pid_t pid;
	char c;

	expect_true(w != MAP_FAILED && !pipe(pipefd));
	pid = fork();
	if (!pid) {
		struct toolguard g;

		if (toolguard_arm(&g, w))
			_exit(1);
		(void)!write(pipefd[1], "x", 1);
		pause();
		_exit(0);
	}
	expect_int_eq(read(pipefd[0], &c, 1), 1);
	expect_true(shm_tool_here(*w));
	expect_int_eq(*w & SHM_TOOL_TID, pid);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	expect_true(!shm_tool_here(*w));
	expect_true(*w & SHM_TOOL_DIED);
	close(pipefd[0]);
	close(pipefd[1]);
	munmap((void *)w, 4096);
}

/* Disarmed: the word says gone, and this thread's list is glibc's again. */
static void test_disarm(void)
{
	uint32_t w = 0;
	struct toolguard g;
	void *head, *before;
	size_t len;

	expect_int_eq(syscall(SYS_get_robust_list, 0, &before, &len), 0);
	expect_int_eq(toolguard_arm(&g, &w), 0);
	expect_true(shm_tool_here(w));
	expect_int_eq(syscall(SYS_get_robust_list, 0, &head, &len), 0);
	expect_true(head == &g.head);
	toolguard_disarm(&g);
	expect_int_eq(w, SHM_TOOL_DIED);
	expect_int_eq(syscall(SYS_get_robust_list, 0, &head, &len), 0);
	expect_true(head == before);
}

/*
 * The agent's guarded load in a traced child, on a PROT_NONE page: the
 * tracer moves it to the fixup (the load returns -1, no signal reaches the
 * child); a SIGSEGV the child sends itself is passed on untouched.
 */
static void test_fault_taken_back(void)
{
	size_t n = tramp_fast_agent_size();
	uint8_t *code = mmap(NULL, (n + 4095) & ~4095UL, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct tramp_fast_env env = { 0 };
	int status, taken = 0, passed = 0;
	pid_t pid;

	expect_true(code != MAP_FAILED && none != MAP_FAILED);
	expect_int_eq(tramp_fast_agent_install(code, n, (uintptr_t)code, &env), 0);
	expect_int_eq(mprotect(code, (n + 4095) & ~4095UL, PROT_READ | PROT_EXEC), 0);
	expect_u64_eq(tramp_fast_fault_fix(&env, env.fault_at[0]), env.fault_fix[0]);
	expect_u64_eq(tramp_fast_fault_fix(&env, env.fault_at[1]), env.fault_fix[1]);
	expect_u64_eq(tramp_fast_fault_fix(&env, env.fault_at[0] + 1), 0);
	pid = fork();
	if (!pid) {
		int (*ld)(uint64_t, uint64_t *) = (int (*)(uint64_t, uint64_t *))env.fault_at[0];
		uint64_t v = 1, ok = 42;

		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		if (ld((uintptr_t)none + 8, &v) != -1 || v != 1)
			_exit(2);
		if (ld((uintptr_t)&ok, &v) != 0 || v != 42)
			_exit(3);
		signal(SIGSEGV, SIG_DFL);	/* a sanitizer's handler would catch it */
		raise(SIGSEGV);		/* not a fault: passed on, kills us */
		_exit(4);
	}
	while (waitpid(pid, &status, 0) == pid && WIFSTOPPED(status)) {
		int sig = WSTOPSIG(status);

		if (sig == SIGSEGV) {
			int rc = toolguard_fault(&env, pid);

			if (rc > 0) {
				taken++;
				sig = 0;
			} else {
				expect_int_eq(rc, 0);
				passed++;
			}
		} else if (sig == SIGSTOP) {
			sig = 0;
		}
		ptrace(PTRACE_CONT, pid, 0, sig);
	}
	expect_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	expect_int_eq(taken, 1);
	expect_int_eq(passed, 1);
	munmap(code, (n + 4095) & ~4095UL);
	munmap(none, 4096);
}

HARNESS_MAIN("toolguard", T(test_thread_exit),
	T(test_killed),
	T(test_disarm),
	T(test_fault_taken_back))
