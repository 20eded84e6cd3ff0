/* x86-64 register accessors over struct user_regs_struct for generic code. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_REGS_H
#define HEAPATTACH_ARCH_REGS_H

#include <errno.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>

typedef struct user_regs_struct arch_regs_t;

/* All macros are lvalues: REG_IP(r) = addr; works. */
#define REG_IP(r)	((r)->rip)
#define REG_SP(r)	((r)->rsp)
#define REG_ARG0(r)	((r)->rdi)
#define REG_ARG1(r)	((r)->rsi)
#define REG_ARG2(r)	((r)->rdx)
#define REG_ARG3(r)	((r)->rcx)
#define REG_RET(r)	((r)->rax)

/*
 * Remote syscalls: number in rax, arguments in rdi, rsi, rdx, r10, r8, r9,
 * result in rax.  Set REG_SC_ORIG(r) = -1 before resuming a thread stopped
 * inside a syscall so the kernel does not apply its restart logic.
 */
#define REG_SC_NR(r)	((r)->rax)
#define REG_SC_ORIG(r)	((r)->orig_rax)
#define REG_SC_ARG0(r)	((r)->rdi)
#define REG_SC_ARG1(r)	((r)->rsi)
#define REG_SC_ARG2(r)	((r)->rdx)
#define REG_SC_ARG3(r)	((r)->r10)
#define REG_SC_ARG4(r)	((r)->r8)
#define REG_SC_ARG5(r)	((r)->r9)
#define REG_SC_RET(r)	((r)->rax)

/* The general registers of the stopped thread tid: 0 or -errno. */
static inline int arch_regs_get(pid_t tid, arch_regs_t *r)
{
	return ptrace(PTRACE_GETREGS, tid, 0, r) < 0 ? -errno : 0;
}

/* Set them: 0 or -errno. */
static inline int arch_regs_set(pid_t tid, const arch_regs_t *r)
{
	return ptrace(PTRACE_SETREGS, tid, 0, r) < 0 ? -errno : 0;
}

#endif
