/* The tool's guard over the agent: a liveness word the kernel clears when heapattach dies, and the agent's faults taken back. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fast/toolguard.h"
#include "regs.h"
#include "shm.h"
#include "tramp_fast.h"

int toolguard_arm(struct toolguard *g, volatile uint32_t *word)
{
	long tid = syscall(SYS_gettid);

	g->word = word;
	g->old_head = NULL;
	g->old_len = 0;
	if (syscall(SYS_get_robust_list, 0, &g->old_head, &g->old_len))
		g->old_head = NULL;
	g->head.next = &g->entry;
	g->head.futex_offset = (long)((const char *)word - (const char *)&g->entry);
	g->head.pending = NULL;
	g->entry.next = &g->head;
	__atomic_store_n(word, (uint32_t)tid & SHM_TOOL_TID, __ATOMIC_RELEASE);
	if (syscall(SYS_set_robust_list, &g->head, sizeof(g->head))) {
		int err = -errno;

		__atomic_store_n(word, SHM_TOOL_DIED, __ATOMIC_RELEASE);
		g->word = NULL;
		return err;
	}
	return 0;
}

void toolguard_disarm(struct toolguard *g)
{
	if (!g->word)
		return;
	__atomic_store_n(g->word, SHM_TOOL_DIED, __ATOMIC_RELEASE);
	if (g->old_head)
		syscall(SYS_set_robust_list, g->old_head, g->old_len);
	g->word = NULL;
}

int toolguard_fault(const struct tramp_fast_env *env, pid_t tid)
{
	arch_regs_t regs;
	struct iovec iov = { .iov_base = &regs, .iov_len = sizeof(regs) };
	siginfo_t si;
	uint64_t fix;

	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) < 0)
		return -errno;
	/* a fault's signal has a positive si_code; kill(2), tgkill(2) and
	 * sigqueue(3) give 0 or less: those are the target's own business */
	if ((si.si_signo != SIGSEGV && si.si_signo != SIGBUS) || si.si_code <= 0)
		return 0;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	fix = tramp_fast_fault_fix(env, REG_IP(&regs));
	if (!fix)
		return 0;
	REG_IP(&regs) = fix;
	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	return 1;
}
