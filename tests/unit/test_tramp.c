/* Unit tests for tramp.c: exact layouts, and trampolines executed, untraced and trapped by seccomp. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "harness.h"
#include "near_page.h"
#include "bkpt.h"
#include "regs.h"
#include "tramp.h"

#define FROM	0x7f0000400000ull
#define TAT	(FROM + 0x100000)

/* push r12; push rbp; push rbx; mov rbx,rdi */
static const uint8_t malloc_like[] = { 0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb };

static int32_t rel32_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* ---- layouts ---- */

static void test_reloc_offsets(void)
{
	expect_int_eq(tramp_reloc_offset(TRAMP_ALLOC), 27);
	expect_int_eq(tramp_reloc_offset(TRAMP_REALLOC), 42);
	expect_int_eq(tramp_reloc_offset(TRAMP_FREE), 20);
	expect_int_eq(tramp_reloc_offset((enum tramp_class)42), -EINVAL);
}

/* The trap sequence of bkpt.h: push rax, rcx, r11; getpid; pop them. */
#define TRAP 0x50, 0x51, 0x41, 0x53, 0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0x41, 0x5b, 0x59, 0x58

static void test_alloc_layout(void)
{
	static const uint8_t head[] = { 0x57, 0x56, 0x52, 0xe8, 0x13, 0, 0, 0,
					0x5a, 0x5e, 0x5f, TRAP, 0xc3 };
	uint8_t buf[TRAMP_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;

	expect_int_eq(sizeof(head), 27);
	expect_int_eq(reloc_prologue(malloc_like, sizeof(malloc_like), FROM, TAT + 27, &r), 0);
	expect_int_eq(tramp_emit(TRAMP_ALLOC, TAT, &r, buf, sizeof(buf), &lay), 0);
	expect_true(!memcmp(buf, head, sizeof(head)));
	expect_int_eq(lay.entry_trap, -1);
	expect_int_eq(lay.exit_trap, 20);
	expect_int_eq(lay.reloc_off, 27);
	expect_int_eq(lay.size, 27 + r.code_len);
	expect_true(!memcmp(buf + 27, r.code, r.code_len));
	expect_int_eq(tramp_trap_kind(&lay, TAT, TAT + 22), TRAMP_TRAP_EXIT);
	expect_int_eq(tramp_trap_kind(&lay, TAT, TAT + 1), -ENOENT);
	expect_int_eq(tramp_trap_kind(&lay, TAT, TAT + 20), -ENOENT);
}

static void test_realloc_layout(void)
{
	static const uint8_t head[] = { TRAP, 0x57, 0x56, 0x52, 0xe8, 0x13, 0, 0, 0,
					0x5a, 0x5e, 0x5f, TRAP, 0xc3 };
	uint8_t buf[TRAMP_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;

	expect_int_eq(reloc_prologue(malloc_like, sizeof(malloc_like), FROM, TAT + 42, &r), 0);
	expect_int_eq(tramp_emit(TRAMP_REALLOC, TAT, &r, buf, sizeof(buf), &lay), 0);
	expect_true(!memcmp(buf, head, sizeof(head)));
	expect_int_eq(lay.entry_trap, 9);
	expect_int_eq(lay.exit_trap, 35);
	expect_int_eq(lay.reloc_off, 42);
	expect_int_eq(lay.size, 42 + r.code_len);
	expect_int_eq(tramp_trap_kind(&lay, TAT, TAT + 11), TRAMP_TRAP_ENTRY);
	expect_int_eq(tramp_trap_kind(&lay, TAT, TAT + 37), TRAMP_TRAP_EXIT);
}

static void test_free_layout(void)
{
	static const uint8_t head[] = { TRAP, 0xe9, 0, 0, 0, 0 };
	uint8_t buf[TRAMP_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;

	expect_int_eq(reloc_prologue(malloc_like, sizeof(malloc_like), FROM, TAT + 20, &r), 0);
	expect_int_eq(tramp_emit(TRAMP_FREE, TAT, &r, buf, sizeof(buf), &lay), 0);
	expect_true(!memcmp(buf, head, sizeof(head)));
	expect_int_eq(lay.entry_trap, 9);
	expect_int_eq(lay.exit_trap, -1);
	expect_int_eq(lay.reloc_off, 20);
	expect_int_eq(tramp_trap_kind(&lay, TAT, TAT + 11), TRAMP_TRAP_ENTRY);
	/* the jmp back at the end still targets the original code */
	expect_u64_eq(TAT + lay.size + rel32_at(buf + lay.size - 4), FROM + 7);
}

static void test_emit_errors(void)
{
	uint8_t buf[TRAMP_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;

	expect_int_eq(reloc_prologue(malloc_like, sizeof(malloc_like), FROM, TAT + 27, &r), 0);
	expect_int_eq(tramp_emit(TRAMP_FREE, TAT, &r, buf, sizeof(buf), &lay), -EINVAL);
	expect_int_eq(tramp_emit(TRAMP_ALLOC, TAT + 1, &r, buf, sizeof(buf), &lay), -EINVAL);
	expect_int_eq(tramp_emit(TRAMP_ALLOC, TAT, &r, buf, 30, &lay), -ENOSPC);
}

static void test_bkpt_helpers(void)
{
	static const uint8_t seq[] = BKPT_SEQ_BYTES;
	struct user_regs_struct r;
	const uint64_t saved[BKPT_SAVED] = { 11, 22, 33 };

	expect_int_eq(sizeof(seq), BKPT_SEQ_LEN);
	expect_int_eq(seq[BKPT_SYSCALL_OFF], 0x0f);
	expect_int_eq(seq[BKPT_SYSCALL_OFF + 1], 0x05);
	expect_int_eq(BKPT_SYSCALL_NR, SYS_getpid);
	expect_true(memchr(seq, 0xcc, sizeof(seq)) == NULL);	/* no int3 */
	expect_u64_eq(bkpt_ip_after(0x1000), 0x1002);
	expect_u64_eq(bkpt_addr_from_ip(0x1002), 0x1000);
	memset(&r, 0, sizeof(r));
	r.rsp = 0x7000;
	tramp_trap_regs(&r, saved);
	expect_u64_eq(r.r11, 11);
	expect_u64_eq(r.rcx, 22);
	expect_u64_eq(r.rax, 33);
	expect_u64_eq(r.rsp, 0x7018);
}

static void test_regs_macros(void)
{
	struct user_regs_struct regs;

	memset(&regs, 0, sizeof(regs));
	REG_IP(&regs) = 1;
	REG_SP(&regs) = 2;
	REG_ARG0(&regs) = 3;
	REG_ARG1(&regs) = 4;
	REG_ARG2(&regs) = 5;
	REG_ARG3(&regs) = 6;
	REG_RET(&regs) = 7;
	expect_u64_eq(regs.rip, 1);
	expect_u64_eq(regs.rsp, 2);
	expect_u64_eq(regs.rdi, 3);
	expect_u64_eq(regs.rsi, 4);
	expect_u64_eq(regs.rdx, 5);
	expect_u64_eq(regs.rcx, 6);
	expect_u64_eq(regs.rax, 7);
	REG_SC_ARG3(&regs) = 8;
	expect_u64_eq(regs.r10, 8);
}

/* ---- executing trampolines in this process ---- */

/*
 * tcall(fn, a0, a1, a2, &entry_rsp): call fn(a0, a1, a2) with rsp == 8
 * (mod 16) at fn's entry and rbx = TCALL_RBX; store fn's entry rsp.
 * fn returns to tcall_ret.
 */
#define TCALL_RBX 0x1122334455667788ull
uint64_t tcall(const void *fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t *entry_rsp);
extern const char tcall_ret[];
__asm__(".text\n"
	".globl tcall\n"
	".type tcall, @function\n"
	"tcall:\n"
	"	push %rbx\n"
	"	movabs $0x1122334455667788, %rbx\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	lea -8(%rsp), %r9\n"
	"	mov %r9, (%r8)\n"
	"	call *%rax\n"
	".globl tcall_ret\n"
	"tcall_ret:\n"
	"	pop %rbx\n"
	"	ret\n"
	".size tcall, .-tcall\n");

struct trap {
	uint64_t rip, rsp, rax, rdi, rsi, rdx, rbx, top;
};

static struct trap traps[8];
static volatile int ntraps;

/* SIGSYS of the seccomp filter at a trap's getpid: the registers as
 * collect_trap sees them once tramp_trap_regs undid the pushes. */
static void on_trap(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	greg_t *g = uc->uc_mcontext.gregs;
	struct user_regs_struct r;
	struct trap *t;

	(void)sig;
	(void)si;
	if (ntraps >= 8)
		return;
	t = &traps[ntraps++];
	memset(&r, 0, sizeof(r));
	r.rsp = g[REG_RSP];
	r.rdi = g[REG_RDI];
	r.rsi = g[REG_RSI];
	r.rdx = g[REG_RDX];
	r.rbx = g[REG_RBX];
	tramp_trap_regs(&r, (const uint64_t *)(uintptr_t)r.rsp);
	t->rip = g[REG_RIP];
	t->rsp = r.rsp;
	t->rax = r.rax;
	t->rdi = r.rdi;
	t->rsi = r.rsi;
	t->rdx = r.rdx;
	t->rbx = r.rbx;
	t->top = *(uint64_t *)t->rsp;
}

/*
 * Build a trampoline of class cls for libc's name (or for the code at
 * `fake` when name is NULL) at page+off.  Returns its address or NULL.
 */
static uint8_t *build(enum tramp_class cls, const char *name, const uint8_t *fake,
		      size_t fake_len, uint8_t *page, size_t off, struct tramp_layout *lay)
{
	uint8_t buf[TRAMP_MAX_SIZE];
	struct reloc_result r;
	const uint8_t *f = fake;
	size_t size = fake_len;
	uint8_t *at = page + off;

	if (name && libc_func(name, &f, &size))
		return NULL;
	if (reloc_prologue(f, size, (uintptr_t)f, (uintptr_t)at + tramp_reloc_offset(cls), &r)) {
		fprintf(stderr, "%s%s\n", name ? name : "fake", r.why);
		return NULL;
	}
	if (tramp_emit(cls, (uintptr_t)at, &r, buf, sizeof(buf), lay))
		return NULL;
	memcpy(at, buf, lay->size);
	return at;
}

static uint8_t *page;
/* libc's own allocator: the code under test is libc's, even under ASan. */
static void *(*lmalloc)(size_t);
static void (*lfree)(void *);

static int filtered;	/* the seccomp filter is in: traps raise SIGSYS */

static void setup_traps(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSYS, &sa, NULL);
	ntraps = 0;
}

/* Without a tracer a trap is a getpid: realloc through its trampoline,
 * two traps on the way, works with no handler at all. */
static void test_exec_untraced(void)
{
	struct tramp_layout lay;
	uint64_t rsp = 0, ret;
	uint8_t *t;
	char *p;

	if (!page)
		return;
	p = lmalloc(16);
	t = build(TRAMP_REALLOC, "realloc", NULL, 0, page, 3072, &lay);
	expect_true(t != NULL);
	if (!t)
		return;
	strcpy(p, "untraced");
	ret = tcall(t, (uintptr_t)p, 300, 0, &rsp);
	expect_true(ret != 0);
	expect_str_eq((char *)ret, "untraced");
	lfree((void *)ret);
}

/*
 * From here on the traps stop: a seccomp filter answers getpid from the
 * test page with SIGSYS (SECCOMP_RET_TRAP), standing in for the tracer's
 * syscall-stop; on_trap records the registers.
 */
static void test_exec_filter(void)
{
	uint64_t lo = (uintptr_t)page;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(lo >> 32), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo, 0, 1),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo + 4096, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (!page || ((uint32_t)lo + 4096) < (uint32_t)lo)
		return;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		printf("note: no seccomp filter, trap execution tests skipped\n");
		return;
	}
	filtered = 1;
	expect_int_eq(getpid() > 0, 1);	/* other getpid calls are not trapped */
}

static void test_exec_alloc_malloc(void)
{
	struct tramp_layout lay;
	uint64_t rsp = 0, ret;
	uint8_t *t;

	if (!filtered)
		return;
	t = build(TRAMP_ALLOC, "malloc", NULL, 0, page, 0, &lay);
	expect_true(t != NULL);
	if (!t)
		return;
	setup_traps();
	ret = tcall(t, 123, 0x77, 0x99, &rsp);
	expect_true(ret != 0);
	expect_int_eq(rsp % 16, 8);
	expect_int_eq(ntraps, 1);
	expect_u64_eq(traps[0].rip, bkpt_ip_after((uintptr_t)t + lay.exit_trap));
	expect_int_eq(tramp_trap_kind(&lay, (uintptr_t)t, traps[0].rip), TRAMP_TRAP_EXIT);
	expect_u64_eq(traps[0].rax, ret);
	expect_u64_eq(traps[0].rdi, 123);
	expect_u64_eq(traps[0].rsi, 0x77);
	expect_u64_eq(traps[0].rdx, 0x99);
	expect_u64_eq(traps[0].rsp, rsp);
	expect_u64_eq(traps[0].top, (uintptr_t)tcall_ret);
	expect_u64_eq(traps[0].rbx, TCALL_RBX);
	memset((void *)ret, 0, 123);
	lfree((void *)ret);
}

static void test_exec_alloc_posix_memalign(void)
{
	struct tramp_layout lay;
	uint64_t rsp = 0, ret;
	void *p = NULL;
	uint8_t *t;

	if (!filtered)
		return;
	t = build(TRAMP_ALLOC, "posix_memalign", NULL, 0, page, 256, &lay);
	expect_true(t != NULL);
	if (!t)
		return;
	setup_traps();
	ret = tcall(t, (uintptr_t)&p, 128, 1000, &rsp);
	expect_u64_eq(ret, 0);
	expect_true(p && (uintptr_t)p % 128 == 0);
	expect_int_eq(ntraps, 1);
	expect_u64_eq(traps[0].rdi, (uintptr_t)&p);
	expect_u64_eq(traps[0].rsi, 128);
	expect_u64_eq(traps[0].rdx, 1000);
	expect_u64_eq(traps[0].rsp, rsp);
	lfree(p);
}

static void test_exec_realloc(void)
{
	struct tramp_layout lay;
	uint64_t rsp = 0, ret;
	uint8_t *t;
	char *p;

	if (!filtered)
		return;
	p = lmalloc(16);
	t = build(TRAMP_REALLOC, "realloc", NULL, 0, page, 512, &lay);
	expect_true(t != NULL);
	if (!t)
		return;
	strcpy(p, "hello");
	setup_traps();
	ret = tcall(t, (uintptr_t)p, 5000, 0, &rsp);
	expect_true(ret != 0);
	expect_str_eq((char *)ret, "hello");
	expect_int_eq(ntraps, 2);
	expect_int_eq(tramp_trap_kind(&lay, (uintptr_t)t, traps[0].rip), TRAMP_TRAP_ENTRY);
	expect_int_eq(tramp_trap_kind(&lay, (uintptr_t)t, traps[1].rip), TRAMP_TRAP_EXIT);
	expect_u64_eq(traps[0].rdi, (uintptr_t)p);
	expect_u64_eq(traps[0].rsi, 5000);
	expect_u64_eq(traps[0].rsp, rsp);
	expect_u64_eq(traps[0].top, (uintptr_t)tcall_ret);
	expect_u64_eq(traps[1].rdi, (uintptr_t)p);
	expect_u64_eq(traps[1].rsi, 5000);
	expect_u64_eq(traps[1].rax, ret);
	expect_u64_eq(traps[1].rsp, rsp);
	lfree((void *)ret);
}

static void test_exec_free(void)
{
	struct tramp_layout lay;
	uint64_t rsp = 0;
	uint8_t *t;
	void *p, *q;

	if (!filtered)
		return;
	p = lmalloc(40);
	t = build(TRAMP_FREE, "free", NULL, 0, page, 768, &lay);
	expect_true(t != NULL);
	if (!t)
		return;
	setup_traps();
	tcall(t, (uintptr_t)p, 0, 0, &rsp);
	expect_int_eq(ntraps, 1);
	expect_int_eq(tramp_trap_kind(&lay, (uintptr_t)t, traps[0].rip), TRAMP_TRAP_ENTRY);
	expect_u64_eq(traps[0].rdi, (uintptr_t)p);
	expect_u64_eq(traps[0].rsp, rsp);
	q = lmalloc(40);		/* tcache hands the chunk just freed back */
	expect_true(q == p);
	lfree(q);
	tcall(t, 0, 0, 0, &rsp);	/* free(NULL): the relocated je */
	expect_int_eq(ntraps, 2);
}

/*
 * Patch a function of our own for real: fake is "mov rax,rsp; nop; nop;
 * ret", its first 5 bytes become a jmp to an ALLOC trampoline; calling
 * fake then returns the rsp the relocated body saw (must be 8 mod 16) and
 * traps once on exit.
 */
static void test_exec_patched_fake(void)
{
	static const uint8_t body[] = { 0x48, 0x89, 0xe0, 0x90, 0x90, 0xc3 };
	struct tramp_layout lay;
	uint64_t rsp = 0, ret;
	uint8_t *fake, *t;

	if (!filtered)
		return;
	fake = page + 2048;
	memcpy(fake, body, sizeof(body));
	ret = tcall(fake, 0, 0, 0, &rsp);
	expect_u64_eq(ret, rsp);	/* unpatched: rsp at entry */
	t = build(TRAMP_ALLOC, NULL, fake, sizeof(body), page, 1024, &lay);
	expect_true(t != NULL);
	if (!t)
		return;
	expect_int_eq(reloc_encode_jmp(fake, (uintptr_t)fake, (uintptr_t)t), 0);
	setup_traps();
	ret = tcall(fake, 1, 2, 3, &rsp);
	expect_int_eq(ret % 16, 8);
	expect_u64_eq(ret, rsp - 32);	/* three pushes and the call */
	expect_int_eq(ntraps, 1);
	expect_u64_eq(traps[0].rax, ret);
	expect_u64_eq(traps[0].rsp, rsp);
	expect_u64_eq(traps[0].top, (uintptr_t)tcall_ret);
	expect_u64_eq(traps[0].rdi, 1);
}

static void test_exec_setup(void)
{
	lmalloc = libc_sym("malloc");
	lfree = libc_sym("free");
	page = lmalloc && lfree ? near_page(4096) : NULL;
	if (!page)
		printf("note: no RWX page near libc, execution tests skipped\n");
}

static void test_exec_teardown(void)
{
	signal(SIGSYS, SIG_DFL);
	if (page)
		munmap(page, 4096);
	page = NULL;
}

HARNESS_MAIN("tramp",
	T(test_reloc_offsets), T(test_alloc_layout), T(test_realloc_layout),
	T(test_free_layout), T(test_emit_errors), T(test_bkpt_helpers),
	T(test_regs_macros), T(test_exec_setup), T(test_exec_untraced), T(test_exec_filter),
	T(test_exec_alloc_malloc),
	T(test_exec_alloc_posix_memalign), T(test_exec_realloc), T(test_exec_free),
	T(test_exec_patched_fake), T(test_exec_teardown))
