/* x86-64 register conventions for running one syscall in a stopped thread. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REMOTE_ARCH_H
#define HEAPATTACH_REMOTE_ARCH_H

#include <stdint.h>
#include <sys/user.h>

/* The register set that PTRACE_GETREGSET(NT_PRSTATUS) transfers. */
typedef struct user_regs_struct remote_regs_t;

/* "syscall; int3", padded with int3 to one 8-byte word. */
#define REMOTE_ARCH_STUB { 0x0f, 0x05, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc }
#define REMOTE_ARCH_STUB_LEN 8
/* Length of the syscall instruction: rip at syscall exit is stub + this. */
#define REMOTE_ARCH_SYSCALL_LEN 2
/* The instruction pointer once the int3 after the syscall has trapped. */
#define REMOTE_ARCH_TRAP_OFF 3
/* Bytes below the stack pointer that the ABI lets a leaf function use. */
#define REMOTE_ARCH_RED_ZONE 128

#define REMOTE_EFLAGS_TF 0x100
#define REMOTE_EFLAGS_DF 0x400

static inline uint64_t remote_arch_ip(const remote_regs_t *r)
{
	return r->rip;
}

static inline uint64_t remote_arch_sp(const remote_regs_t *r)
{
	return r->rsp;
}

static inline long remote_arch_ret(const remote_regs_t *r)
{
	return (long)r->rax;
}

/*
 * Turn r into the state for "syscall nr(a[0..5])" at stub. orig_rax = -1
 * tells the kernel the thread is not inside a syscall, so it applies no
 * restart fixup when it resumes the thread at the stub.
 */
static inline void remote_arch_setup_syscall(remote_regs_t *r, uint64_t stub,
					     long nr, const long a[6])
{
	r->rax = (uint64_t)nr;
	r->rdi = (uint64_t)a[0];
	r->rsi = (uint64_t)a[1];
	r->rdx = (uint64_t)a[2];
	r->r10 = (uint64_t)a[3];
	r->r8 = (uint64_t)a[4];
	r->r9 = (uint64_t)a[5];
	r->rip = stub;
	r->orig_rax = (uint64_t)-1;
	r->eflags &= ~(uint64_t)(REMOTE_EFLAGS_TF | REMOTE_EFLAGS_DF);
}

#endif
