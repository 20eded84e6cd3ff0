/* Unit tests for sigframe.c, gadgets_scan and the resume state: a frame built here is sigreturned into. */
/* SPDX-License-Identifier: MIT */
#include <cpuid.h>
#include <signal.h>
#include <stdalign.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ptrace/gadgets.h"
#include "remote_arch.h"
#include "sigframe.h"

/* ---- the resume state ---- */

static void test_resume_regs(void)
{
	remote_regs_t r;

	memset(&r, 0, sizeof(r));
	r.orig_rax = (uint64_t)-1;	/* stopped in user code */
	r.rax = 42;
	r.rip = 0x1000;
	remote_arch_resume_regs(&r);
	expect_u64_eq(r.rax, 42);
	expect_u64_eq(r.rip, 0x1000);

	r.orig_rax = SYS_read;		/* interrupted read: issued again */
	r.rax = (uint64_t)-REMOTE_ERESTARTSYS;
	remote_arch_resume_regs(&r);
	expect_u64_eq(r.rax, SYS_read);
	expect_u64_eq(r.rip, 0x1000 - 2);
	expect_u64_eq(r.orig_rax, (uint64_t)-1);

	r.orig_rax = SYS_clock_nanosleep;	/* restart block: the first syscall again */
	r.rax = (uint64_t)-REMOTE_ERESTART_RESTARTBLOCK;
	r.rip = 0x1000;
	expect_int_eq(remote_arch_restart_unknown(&r), 0);
	remote_arch_resume_regs(&r);
	expect_u64_eq(r.rax, SYS_clock_nanosleep);
	expect_u64_eq(r.rip, 0x1000 - 2);

	r.orig_rax = SYS_restart_syscall;	/* already restarted once */
	r.rax = (uint64_t)-REMOTE_ERESTART_RESTARTBLOCK;
	expect_int_eq(remote_arch_restart_unknown(&r), 1);

	r.orig_rax = SYS_write;		/* a syscall that completed: kept */
	r.rax = 7;
	r.rip = 0x1000;
	remote_arch_resume_regs(&r);
	expect_u64_eq(r.rax, 7);
	expect_u64_eq(r.rip, 0x1000);
}

/* ---- gadgets ---- */

static void test_gadgets_scan(void)
{
	uint8_t code[256];
	struct gadgets g;

	memset(code, 0x90, sizeof(code));
	memset(&g, 0, sizeof(g));
	expect_int_eq(gadgets_scan(code, sizeof(code), 0x4000, &g), 0);
	memcpy(code + 17, "\x0f\x05\xc3", 3);
	expect_int_eq(gadgets_scan(code, sizeof(code), 0x4000, &g), 0);
	expect_u64_eq(g.syscall_ret, 0x4000 + 17);
	expect_u64_eq(g.sigreturn, 0);
	memcpy(code + 100, "\xb8\x0f\x00\x00\x00\x0f\x05", 7);
	expect_int_eq(gadgets_scan(code, sizeof(code), 0x4000, &g), 1);
	expect_u64_eq(g.sigreturn, 0x4000 + 100);
	/* the 64-bit form is preferred; members already found stay */
	memset(&g, 0, sizeof(g));
	g.syscall_ret = 0x99;
	memcpy(code + 200, "\x48\xc7\xc0\x0f\x00\x00\x00\x0f\x05", 9);
	expect_int_eq(gadgets_scan(code, sizeof(code), 0, &g), 1);
	expect_u64_eq(g.syscall_ret, 0x99);
	expect_u64_eq(g.sigreturn, 200);
}

/* ---- frames ---- */

static void test_xstate_size(void)
{
	alignas(64) uint8_t img[4096];
	uint64_t bv = 3;	/* x87 and SSE: the legacy area and the header */

	memset(img, 0, sizeof(img));
	memcpy(img + 512, &bv, sizeof(bv));
	expect_int_eq(sigframe_xstate_size(img, sizeof(img)), 576);
	expect_int_eq(sigframe_xstate_size(img, 575), 0);
	if (__builtin_cpu_supports("avx")) {
		unsigned a = 0, b = 0, c, d;

		bv = 7;		/* and the upper halves of ymm */
		memcpy(img + 512, &bv, sizeof(bv));
		__get_cpuid_count(0xd, 2, &a, &b, &c, &d);
		expect_int_eq(sigframe_xstate_size(img, sizeof(img)), a + b);
		expect_int_eq(sigframe_xstate_size(img, a + b - 1), 0);
	}
}

static void test_build_errors(void)
{
	uint8_t buf[SIGFRAME_MAX], fpu[512];
	remote_regs_t r;
	uint64_t at;
	size_t len;

	memset(&r, 0, sizeof(r));
	memset(fpu, 0, sizeof(fpu));
	expect_int_eq(sigframe_build(buf, sizeof(buf), 0x7fff0000, &r, 0, fpu, 100, 0, 1,
				     &at, &len), -EINVAL);
	expect_int_eq(sigframe_build(buf, 100, 0x7fff0000, &r, 0, fpu, sizeof(fpu), 0, 1,
				     &at, &len), -EINVAL);
	expect_int_eq(sigframe_build(buf, sizeof(buf), 0x7fff0000, &r, 0, fpu, sizeof(fpu), 0,
				     0x1234, &at, &len), 0);
	expect_true(at + len <= 0x7fff0000);
	expect_int_eq(at % 16, 0);
	expect_u64_eq(((struct sigframe *)buf)->pretcode, 0x1234);
}

/*
 * The whole way a dead tool's thread goes, in a child: rsp at a frame
 * built for a state that resumes at `landed`, rax = getpid, jump to a
 * "syscall; ret"; the ret goes to "mov $15, %rax; syscall". landed stores
 * what it found and the child checks it.
 */
extern const char t_gadget[], t_restore[], t_landed[];
__asm__(".text\n"
	"t_gadget:\n"
	"	syscall\n"
	"	ret\n"
	"t_restore:\n"
	"	mov $15, %rax\n"
	"	syscall\n"
	"t_landed:\n"
	"	mov %rsp, t_out+0(%rip)\n"
	"	mov %r12, t_out+8(%rip)\n"
	"	mov %r15, t_out+16(%rip)\n"
	"	mov %rbx, t_out+24(%rip)\n"
	"	movq %xmm0, %rax\n"
	"	mov %rax, t_out+32(%rip)\n"
	"	mov %rdi, t_out+40(%rip)\n"
	"	and $-16, %rsp\n"
	"	call t_check\n"
	"	ud2\n");

/* What landed saw: rsp, r12, r15, rbx, xmm0[0..63], rdi, ymm0[128..191]. */
uint64_t t_out[7];
static uint8_t *t_stack;
static int t_avx;

#define PAT(n) (0x5a5a000000000000ull | (n))

void t_check(void);
__attribute__((used)) void t_check(void)
{
	sigset_t m;
	int bad = 0;

	if (t_avx)
		__asm__ volatile("vextractf128 $1, %%ymm0, %%xmm1\n\tmovq %%xmm1, %0"
				 : "=r"(t_out[6]) : : "xmm1");
	sigprocmask(SIG_BLOCK, NULL, &m);
	bad |= t_out[0] != (uint64_t)(uintptr_t)(t_stack + 4096 - 8);
	bad |= (t_out[1] != PAT(12)) << 1;
	bad |= (t_out[2] != PAT(15)) << 2;
	bad |= (t_out[3] != PAT(3)) << 3;
	bad |= (t_out[4] != PAT(100)) << 4;
	bad |= (t_out[5] != PAT(7)) << 5;
	bad |= (t_avx && t_out[6] != PAT(200)) << 6;
	bad |= (!sigismember(&m, SIGUSR1) || sigismember(&m, SIGUSR2)) << 7;
	_exit(bad);
}

/* The standard-format xsave image of this thread's state (xsave, XCR0). */
static size_t own_xsave(uint8_t *img, size_t cap)
{
	unsigned a, b, c, d, lo, hi;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b > cap)
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	memset(img, 0, b);
	__asm__ volatile("xsave (%0)" : : "r"(img), "a"(lo), "d"(hi) : "memory");
	return b;
}

static void test_sigreturn_roundtrip(void)
{
	static alignas(64) uint8_t img[SIGFRAME_FPU_MAX];
	static uint8_t frame[SIGFRAME_MAX];
	remote_regs_t r;
	uint64_t at, bv, pat;
	size_t len, n;
	int status;
	pid_t pid;

	n = own_xsave(img, sizeof(img));
	expect_true(n >= 576);
	if (n < 576)
		return;
	t_avx = __builtin_cpu_supports("avx");
	pid = fork();
	if (pid == 0) {
		uint8_t *stack = malloc(64 * 1024);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		t_stack = stack;
		memset(&r, 0, sizeof(r));
		__asm__ volatile("mov %%cs, %0" : "=r"(r.cs));
		__asm__ volatile("mov %%ss, %0" : "=r"(r.ss));
		r.rip = (uintptr_t)t_landed;
		r.rsp = (uintptr_t)(stack + 4096 - 8);
		r.eflags = 0x202;
		r.r12 = PAT(12);
		r.r15 = PAT(15);
		r.rbx = PAT(3);
		r.rdi = PAT(7);
		/* xmm0 and, with AVX, the upper half of ymm0, marked in use */
		pat = PAT(100);
		memcpy(img + 160, &pat, 8);
		memcpy(&bv, img + 512, 8);
		bv |= 2;
		if (t_avx) {
			unsigned a, b = 0, c, d;

			__get_cpuid_count(0xd, 2, &a, &b, &c, &d);
			pat = PAT(200);
			memcpy(img + b, &pat, 8);
			bv |= 4;
		}
		memcpy(img + 512, &bv, 8);
		if (sigframe_build(frame, sizeof(frame), (uintptr_t)(stack + 60 * 1024), &r,
				   1ull << (SIGUSR1 - 1), img, n, 1, (uintptr_t)t_restore,
				   &at, &len))
			_exit(100);
		memcpy((void *)(uintptr_t)at, frame, len);
		__asm__ volatile("mov %0, %%rsp\n\t"
				 "mov $39, %%eax\n\t"
				 "jmp t_gadget\n" : : "r"(at) : "memory");
		_exit(101);
	}
	expect_true(pid > 0);
	if (pid <= 0)
		return;
	expect_int_eq(waitpid(pid, &status, 0), pid);
	expect_true(WIFEXITED(status));
	expect_int_eq(WEXITSTATUS(status), 0);
}

HARNESS_MAIN("sigframe",
	T(test_resume_regs), T(test_gadgets_scan), T(test_xstate_size),
	T(test_build_errors), T(test_sigreturn_roundtrip))
