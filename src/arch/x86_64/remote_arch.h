/* x86-64 register conventions for running one syscall in a stopped thread. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REMOTE_ARCH_H
#define HEAPATTACH_REMOTE_ARCH_H

#include <stdint.h>
#include <sys/syscall.h>
#include <sys/user.h>

/* The register set that PTRACE_GETREGSET(NT_PRSTATUS) transfers. */
typedef struct user_regs_struct remote_regs_t;

/*
 * Instructions a remote syscall borrows from the target's own code (see
 * gadgets.h): "syscall; ret", and an rt_sigreturn ("mov $15, %rax;
 * syscall", glibc's and musl's __restore_rt, or the same with %eax).
 */
#define REMOTE_ARCH_SYSCALL_RET		{ 0x0f, 0x05, 0xc3 }
#define REMOTE_ARCH_SIGRETURN_RAX	{ 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 }
#define REMOTE_ARCH_SIGRETURN_EAX	{ 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 }
/* Length of the syscall instruction: rip at syscall exit is its address + this. */
#define REMOTE_ARCH_SYSCALL_LEN 2
/* Bytes below the stack pointer that the ABI lets a leaf function use. */
#define REMOTE_ARCH_RED_ZONE 128
/* Bytes below the red zone kept for the wrappers' data (a memfd name). */
#define REMOTE_ARCH_SCRATCH 256

#define REMOTE_EFLAGS_TF 0x100
#define REMOTE_EFLAGS_DF 0x400

/* Kernel-internal syscall results that ask for a restart (linux/errno.h). */
#define REMOTE_ERESTARTSYS		512
#define REMOTE_ERESTARTNOINTR		513
#define REMOTE_ERESTARTNOHAND		514
#define REMOTE_ERESTART_RESTARTBLOCK	516

static inline uint64_t remote_arch_ip(const remote_regs_t *r)
{
	return r->rip;
}

static inline void remote_arch_set_ip(remote_regs_t *r, uint64_t ip)
{
	r->rip = ip;
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
 * Turn r into the state for "syscall nr(a[0..5])" at the syscall
 * instruction at ip, with the stack pointer at sp. orig_rax = -1 tells the
 * kernel the thread is not inside a syscall, so it applies no restart
 * fixup when it resumes the thread there.
 */
static inline void remote_arch_setup_syscall(remote_regs_t *r, uint64_t ip, uint64_t sp,
					     long nr, const long a[6])
{
	r->rax = (uint64_t)nr;
	r->rdi = (uint64_t)a[0];
	r->rsi = (uint64_t)a[1];
	r->rdx = (uint64_t)a[2];
	r->r10 = (uint64_t)a[3];
	r->r8 = (uint64_t)a[4];
	r->r9 = (uint64_t)a[5];
	r->rip = ip;
	r->rsp = sp;
	r->orig_rax = (uint64_t)-1;
	r->eflags &= ~(uint64_t)(REMOTE_EFLAGS_TF | REMOTE_EFLAGS_DF);
}

/*
 * Turn r into the state for a call of the function at fn(a[0..5]) with the
 * stack pointer at sp, where the return address is (a function is entered
 * with sp 8 bytes off a 16-byte boundary). rax = 0: no vector registers
 * hold arguments of a variadic call.
 */
static inline void remote_arch_setup_call(remote_regs_t *r, uint64_t fn, uint64_t sp,
					  const long a[6])
{
	r->rdi = (uint64_t)a[0];
	r->rsi = (uint64_t)a[1];
	r->rdx = (uint64_t)a[2];
	r->rcx = (uint64_t)a[3];
	r->r8 = (uint64_t)a[4];
	r->r9 = (uint64_t)a[5];
	r->rax = 0;
	r->rip = fn;
	r->rsp = sp;
	r->orig_rax = (uint64_t)-1;
	r->eflags &= ~(uint64_t)(REMOTE_EFLAGS_TF | REMOTE_EFLAGS_DF);
}

/* The syscall a thread in a syscall-stop with registers r makes. */
static inline long remote_arch_syscall_nr(const remote_regs_t *r)
{
	return (long)r->orig_rax;
}

/*
 * Whether a thread stopped in state r is inside a syscall that the kernel
 * would restart through restart_syscall (-ERESTART_RESTARTBLOCK) and that
 * was already restarted once that way: its first syscall number is lost
 * (orig_rax says restart_syscall).
 */
static inline int remote_arch_restart_unknown(const remote_regs_t *r)
{
	return (long)r->orig_rax == SYS_restart_syscall &&
	       (long)r->rax == -REMOTE_ERESTART_RESTARTBLOCK;
}

/*
 * Whether a thread stopped in state r is inside a syscall that the kernel
 * would restart through its restart block (-ERESTART_RESTARTBLOCK), which
 * an rt_sigreturn replaces (with one that fails: -EINTR).
 */
static inline int remote_arch_restart_block(const remote_regs_t *r)
{
	return (long)r->orig_rax >= 0 && (long)r->rax == -REMOTE_ERESTART_RESTARTBLOCK;
}

/*
 * Whether a thread stopped in state r was blocked in syscall nr (or in its
 * restart through restart_syscall), which it goes on with when resumed.
 */
static inline int remote_arch_blocked_in(const remote_regs_t *r, long nr)
{
	if ((long)r->orig_rax != nr && (long)r->orig_rax != SYS_restart_syscall)
		return 0;
	switch ((long)r->rax) {
	case -REMOTE_ERESTARTSYS:
	case -REMOTE_ERESTARTNOINTR:
	case -REMOTE_ERESTARTNOHAND:
	case -REMOTE_ERESTART_RESTARTBLOCK:
		return 1;
	}
	return 0;
}

/*
 * The user-mode state a thread stopped in state r resumes with when the
 * kernel lets it go without running a handler: for a syscall that asks for
 * a restart, rip back on the syscall instruction and rax = orig_rax, as the
 * kernel does. For -ERESTART_RESTARTBLOCK the kernel would call
 * restart_syscall with the thread's restart block; that block does not
 * survive an rt_sigreturn, so the first syscall is issued again from the
 * start instead (same arguments: a relative timeout starts over). Only if
 * that first syscall is unknown (remote_arch_restart_unknown) does the
 * thread get restart_syscall, which then returns -EINTR.
 */
static inline void remote_arch_resume_regs(remote_regs_t *r)
{
	if ((long)r->orig_rax < 0)
		return;
	switch ((long)r->rax) {
	case -REMOTE_ERESTARTSYS:
	case -REMOTE_ERESTARTNOINTR:
	case -REMOTE_ERESTARTNOHAND:
	case -REMOTE_ERESTART_RESTARTBLOCK:
		r->rax = r->orig_rax;
		r->rip -= REMOTE_ARCH_SYSCALL_LEN;
		break;
	}
	r->orig_rax = (uint64_t)-1;
}

#endif
