/* x86-64 rt_sigreturn frames: what puts a thread back as it was if the tool dies mid-syscall. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_SIGFRAME_H
#define HEAPATTACH_ARCH_SIGFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "remote_arch.h"

/*
 * The kernel's 64-bit signal frame (arch/x86/include/asm/sigframe.h,
 * uapi asm/sigcontext.h, asm-generic/ucontext.h). rt_sigreturn reads it at
 * rsp - 8, that is just after a `ret` consumed pretcode: it restores every
 * general register, rip, rsp, eflags, cs/ss from uc_mcontext, the signal
 * mask from uc_sigmask (all of it: the kernel's sigset is 8 bytes), the
 * FPU/SSE/AVX state from *fpstate (NULL would reset it to its initial
 * state), applies uc_stack as a sigaltstack (all zero: a no-op), sets
 * orig_rax = -1 and points the restart block at do_no_restart_syscall.
 */
struct sigframe_mcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;		/* address of the xsave image, 64-aligned */
	uint64_t reserved1[8];
};

struct sigframe_stack {
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t pad;
	uint64_t ss_size;
};

struct sigframe_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct sigframe_stack uc_stack;
	struct sigframe_mcontext uc_mcontext;
	uint64_t uc_sigmask;
};

struct sigframe {
	uint64_t pretcode;		/* where the `ret` went: the rt_sigreturn */
	struct sigframe_ucontext uc;
	uint8_t info[128];		/* siginfo: rt_sigreturn ignores it */
};

#define SIGFRAME_UC_FP_XSTATE		0x1
#define SIGFRAME_UC_SIGCONTEXT_SS	0x2
#define SIGFRAME_UC_STRICT_RESTORE_SS	0x4

/* The xsave image (uapi asm/sigcontext.h: struct _fpx_sw_bytes, magics). */
#define SIGFRAME_FXSAVE_SIZE	512	/* legacy area; sw bytes at 464 */
#define SIGFRAME_XSAVE_HDR_SIZE	64	/* xsave header at 512 */
#define SIGFRAME_SW_BYTES_OFF	464
#define SIGFRAME_FP_MAGIC1	0x46505853U
#define SIGFRAME_FP_MAGIC2	0x46505845U
#define SIGFRAME_FP_ALIGN	64
/* Largest FPU image we copy (AMX tiles included: about 11 KiB). */
#define SIGFRAME_FPU_MAX	16384
/* Room a whole frame needs at most, alignment included. */
#define SIGFRAME_MAX		(sizeof(struct sigframe) + 2 * SIGFRAME_FP_ALIGN + \
				 SIGFRAME_FPU_MAX + 4)

/*
 * The FPU state of the stopped thread tid into buf (cap bytes): an xsave
 * image (PTRACE_GETREGSET NT_X86_XSTATE, *xsave = 1) or, from a kernel
 * without it, the fxsave area (NT_PRFPREG, *xsave = 0); its size in *len.
 * 0 or -errno.
 */
int sigframe_read_fpu(pid_t tid, uint8_t *buf, size_t cap, size_t *len, int *xsave);

/*
 * Bytes of a standard-format xsave image (as PTRACE_GETREGSET NT_X86_XSTATE
 * gives it) that hold the components its header marks as in use (CPUID
 * leaf 0xD gives their offsets), at least the legacy area and the header;
 * 0 if the image is shorter than that or than what the header claims.
 */
size_t sigframe_xstate_size(const uint8_t *img, size_t len);

/* An fxsave area (SIGFRAME_FXSAVE_SIZE bytes) at the FPU's initial state,
 * for a frame that keeps nothing of a thread's own (sigframe_build, xsave 0). */
void sigframe_fpu_init(uint8_t *fxsave);

/*
 * Lay a frame out in buf so that, written to the target at *at, an
 * rt_sigreturn with rsp == *at + 8 (a `ret` into `restorer` from rsp ==
 * *at) gives the thread exactly the registers r, the signal mask `mask` and
 * the FPU state of the image fpu (fpu_len bytes): an xsave image from
 * NT_X86_XSTATE if xsave, else the 512-byte fxsave area of NT_PRFPREG.
 * The frame ends at or below top; *len bytes from *at. 0, or -EINVAL if
 * buf (cap bytes) or the image is too small.
 */
int sigframe_build(uint8_t *buf, size_t cap, uint64_t top, const remote_regs_t *r,
		   uint64_t mask, const uint8_t *fpu, size_t fpu_len, int xsave,
		   uint64_t restorer, uint64_t *at, size_t *len);

#endif
