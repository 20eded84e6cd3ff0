/* Build x86-64 rt_sigreturn frames for a saved thread state (kernel ABI, see sigframe.h). */
/* SPDX-License-Identifier: MIT */
#include <cpuid.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <elf.h>

#include "sigframe.h"

_Static_assert(sizeof(struct sigframe_mcontext) == 256, "struct sigcontext");
_Static_assert(offsetof(struct sigframe_ucontext, uc_mcontext) == 40, "uc_mcontext");
_Static_assert(offsetof(struct sigframe_ucontext, uc_sigmask) == 296, "uc_sigmask");
_Static_assert(sizeof(struct sigframe) == 440, "struct rt_sigframe");

#define XSTATE_BV_OFF	512
#define XCOMP_BV_OFF	520

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

size_t sigframe_xstate_size(const uint8_t *img, size_t len)
{
	size_t size = SIGFRAME_FXSAVE_SIZE + SIGFRAME_XSAVE_HDR_SIZE;
	uint64_t bv;

	if (len < size)
		return 0;
	bv = get64(img + XSTATE_BV_OFF);
	for (unsigned i = 2; i < 64; i++) {
		unsigned eax, ebx, ecx, edx;

		if (!(bv & (1ULL << i)))
			continue;
		/* Leaf 0xD, sub-leaf i: size in eax, standard-format offset in ebx. */
		if (!__get_cpuid_count(0xd, i, &eax, &ebx, &ecx, &edx) || !eax)
			return 0;
		if ((size_t)ebx + eax > size)
			size = (size_t)ebx + eax;
	}
	return size <= len ? size : 0;
}

int sigframe_read_fpu(pid_t tid, uint8_t *buf, size_t cap, size_t *len, int *xsave)
{
	struct iovec iov = { .iov_base = buf, .iov_len = cap };

	*xsave = 1;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) < 0) {
		if (errno != EINVAL && errno != ENODEV)
			return -errno;
		*xsave = 0;
		iov.iov_len = cap;
		if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov) < 0)
			return -errno;
	}
	*len = iov.iov_len;
	return 0;
}

void sigframe_fpu_init(uint8_t *fxsave)
{
	memset(fxsave, 0, SIGFRAME_FXSAVE_SIZE);
	fxsave[0] = 0x7f;	/* fcw 0x037f: every x87 exception masked */
	fxsave[1] = 0x03;
	put32(fxsave + 24, 0x1f80);	/* mxcsr: every SSE exception masked */
	put32(fxsave + 28, 0xffff);	/* mxcsr_mask */
}

/* The registers of r into a sigcontext. */
static void fill_mcontext(struct sigframe_mcontext *m, const remote_regs_t *r)
{
	m->r8 = r->r8;
	m->r9 = r->r9;
	m->r10 = r->r10;
	m->r11 = r->r11;
	m->r12 = r->r12;
	m->r13 = r->r13;
	m->r14 = r->r14;
	m->r15 = r->r15;
	m->rdi = r->rdi;
	m->rsi = r->rsi;
	m->rbp = r->rbp;
	m->rbx = r->rbx;
	m->rdx = r->rdx;
	m->rax = r->rax;
	m->rcx = r->rcx;
	m->rsp = r->rsp;
	m->rip = r->rip;
	m->eflags = r->eflags;
	m->cs = (uint16_t)r->cs;
	m->ss = (uint16_t)r->ss;
}

int sigframe_build(uint8_t *buf, size_t cap, uint64_t top, const remote_regs_t *r,
		   uint64_t mask, const uint8_t *fpu, size_t fpu_len, int xsave,
		   uint64_t restorer, uint64_t *at, size_t *len)
{
	struct sigframe f;
	size_t xsize = xsave ? sigframe_xstate_size(fpu, fpu_len) : SIGFRAME_FXSAVE_SIZE;
	uint64_t x_at, f_at;
	uint8_t *x;

	if (!xsize || fpu_len < xsize || top < SIGFRAME_MAX)
		return -EINVAL;
	x_at = (top - xsize - 4) & ~(uint64_t)(SIGFRAME_FP_ALIGN - 1);
	f_at = (x_at - sizeof(f)) & ~(uint64_t)15;
	*len = (size_t)(x_at + xsize + 4 - f_at);
	if (*len > cap)
		return -EINVAL;
	*at = f_at;
	memset(buf, 0, *len);

	memset(&f, 0, sizeof(f));
	f.pretcode = restorer;
	f.uc.uc_flags = SIGFRAME_UC_SIGCONTEXT_SS | SIGFRAME_UC_STRICT_RESTORE_SS |
			(xsave ? SIGFRAME_UC_FP_XSTATE : 0);
	fill_mcontext(&f.uc.uc_mcontext, r);
	f.uc.uc_mcontext.fpstate = x_at;
	f.uc.uc_sigmask = mask;
	memcpy(buf, &f, sizeof(f));

	x = buf + (x_at - f_at);
	memcpy(x, fpu, xsize);
	memset(x + SIGFRAME_SW_BYTES_OFF, 0, SIGFRAME_FXSAVE_SIZE - SIGFRAME_SW_BYTES_OFF);
	if (xsave) {
		/* struct _fpx_sw_bytes: magic1, extended_size, xfeatures, xstate_size */
		put32(x + SIGFRAME_SW_BYTES_OFF, SIGFRAME_FP_MAGIC1);
		put32(x + SIGFRAME_SW_BYTES_OFF + 4, (uint32_t)xsize + 4);
		put64(x + SIGFRAME_SW_BYTES_OFF + 8, get64(x + XSTATE_BV_OFF));
		put32(x + SIGFRAME_SW_BYTES_OFF + 16, (uint32_t)xsize);
		/* standard format: no compaction, reserved header bytes zero */
		memset(x + XCOMP_BV_OFF, 0, SIGFRAME_XSAVE_HDR_SIZE - 8);
		put32(x + xsize, SIGFRAME_FP_MAGIC2);
	}
	return 0;
}
