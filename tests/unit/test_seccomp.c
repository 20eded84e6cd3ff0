/* Unit tests for the seccomp filter evaluator and the plan heapattach derives from it. */
/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include "harness.h"
#include "ptrace/inject.h"
#include "ptrace/seccomp.h"
#include "ptrace/seccomp_plan.h"
#include "shm.h"
#include "base/sys_compat.h"

#define ARCH AUDIT_ARCH_X86_64
#define OFF_NR offsetof(struct seccomp_data, nr)
#define OFF_ARCH offsetof(struct seccomp_data, arch)
#define OFF_ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define OFF_ARG_HI(i) (OFF_ARG_LO(i) + 4)
#define OFF_IP offsetof(struct seccomp_data, instruction_pointer)
#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define INSN(x) ((struct sock_filter)x)
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define PROG(a) ((struct seccomp_prog){ (a), sizeof(a) / sizeof((a)[0]) })

/* Outcomes of one program for syscall nr with arg1 (if has_arg). */
static unsigned one(struct seccomp_prog p, uint32_t arch, uint32_t nr, int has_arg, uint64_t arg1)
{
	struct seccomp_input in;

	seccomp_input_init(&in, arch, nr);
	if (has_arg)
		seccomp_input_arg(&in, 1, arg1);
	return seccomp_outcomes(&p, 1, &in);
}

/* A filter of the usual shape: kill other arches, then nr == kill_nr -> action. */
static void nr_filter(struct sock_filter *f, uint32_t kill_nr, uint32_t action)
{
	struct sock_filter v[] = {
		LD(OFF_ARCH),
		JEQ(ARCH, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LD(OFF_NR),
		JEQ(kill_nr, 0, 1),
		RET(action),
		RET(SECCOMP_RET_ALLOW),
	};

	memcpy(f, v, sizeof(v));
}

static void test_arch_and_nr(void)
{
	struct sock_filter f[7];

	nr_filter(f, SYS_getpid, SECCOMP_RET_KILL_PROCESS);
	expect_int_eq(one(PROG(f), ARCH, SYS_getpid, 0, 0), SECCOMP_O_KILL);
	expect_int_eq(one(PROG(f), ARCH, SYS_getppid, 0, 0), SECCOMP_O_ALLOW);
	expect_int_eq(one(PROG(f), AUDIT_ARCH_I386, SYS_getppid, 0, 0), SECCOMP_O_KILL);
}

static void test_each_action(void)
{
	static const struct {
		uint32_t ret;
		unsigned o;
	} t[] = {
		{ SECCOMP_RET_ALLOW, SECCOMP_O_ALLOW },
		{ SECCOMP_RET_LOG, SECCOMP_O_ALLOW },
		{ SECCOMP_RET_KILL_PROCESS, SECCOMP_O_KILL },
		{ SECCOMP_RET_KILL_THREAD, SECCOMP_O_KILL },
		{ SECCOMP_RET_ERRNO | EPERM, SECCOMP_O_ERRNO },
		{ SECCOMP_RET_TRACE | 7, SECCOMP_O_ERRNO },	/* no tracer asking: ENOSYS */
		{ SECCOMP_RET_TRAP, SECCOMP_O_TRAP },
		{ SECCOMP_RET_USER_NOTIF, SECCOMP_O_NOTIF },
		{ 0x12340000, SECCOMP_O_KILL },			/* unknown: the kernel kills */
	};
	struct sock_filter f[7];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		nr_filter(f, SYS_getpid, t[i].ret);
		expect_int_eq(one(PROG(f), ARCH, SYS_getpid, 0, 0), t[i].o);
		expect_int_eq(seccomp_action_class(t[i].ret), t[i].o);
	}
}

/* memfd_create killed only when flags (arg 1) has MFD_EXEC. */
static void test_arg_compare(void)
{
	struct sock_filter f[] = {
		LD(OFF_NR),
		JEQ(SYS_memfd_create, 0, 3),
		LD(OFF_ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MFD_EXEC, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS),
		RET(SECCOMP_RET_ALLOW),
	};

	expect_int_eq(one(PROG(f), ARCH, SYS_memfd_create, 1, MFD_CLOEXEC), SECCOMP_O_ALLOW);
	expect_int_eq(one(PROG(f), ARCH, SYS_memfd_create, 1, MFD_CLOEXEC | MFD_EXEC),
		      SECCOMP_O_KILL);
	/* unknown argument: both ways */
	expect_int_eq(one(PROG(f), ARCH, SYS_memfd_create, 0, 0),
		      SECCOMP_O_KILL | SECCOMP_O_ALLOW);
	expect_int_eq(one(PROG(f), ARCH, SYS_close, 0, 0), SECCOMP_O_ALLOW);
}

/* The high word of an argument, JGT/JGE, and the instruction pointer. */
static void test_high_word_and_ip(void)
{
	struct sock_filter f[] = {
		LD(OFF_ARG_HI(1)),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 0, 0, 1),
		RET(SECCOMP_RET_ERRNO | 22),	/* a length above 4 GiB */
		LD(OFF_ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x10000, 0, 1),
		RET(SECCOMP_RET_TRAP),
		LD(OFF_IP),
		RET(SECCOMP_RET_ALLOW),
	};

	expect_int_eq(one(PROG(f), ARCH, SYS_mmap, 1, 1ULL << 32), SECCOMP_O_ERRNO);
	expect_int_eq(one(PROG(f), ARCH, SYS_mmap, 1, 0x20000), SECCOMP_O_TRAP);
	expect_int_eq(one(PROG(f), ARCH, SYS_mmap, 1, 0x1000), SECCOMP_O_ALLOW);
	expect_int_eq(one(PROG(f), ARCH, SYS_mmap, 0, 0),
		      SECCOMP_O_ERRNO | SECCOMP_O_TRAP | SECCOMP_O_ALLOW);
}

/* ALU, scratch memory, X, RET A and the LEN load. */
static void test_alu_memory_x(void)
{
	struct sock_filter f[] = {
		LD(OFF_ARG_LO(1)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff),
		BPF_STMT(BPF_ST, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),	/* 64 */
		BPF_STMT(BPF_LDX | BPF_MEM, 3),
		BPF_STMT(BPF_ALU | BPF_SUB | BPF_X, 0),	/* 64 - (arg & 0xff) */
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		BPF_STMT(BPF_LD | BPF_IMM, 60),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 2),
		BPF_STMT(BPF_LD | BPF_IMM, SECCOMP_RET_ERRNO | 5),
		BPF_STMT(BPF_RET | BPF_A, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_prog p = PROG(f);
	struct seccomp_input in;
	uint32_t rets[8];
	size_t n;

	expect_int_eq(one(p, ARCH, 0, 1, 0x104), SECCOMP_O_ERRNO);	/* 64 - 4 == 60 */
	expect_int_eq(one(p, ARCH, 0, 1, 0x105), SECCOMP_O_ALLOW);
	seccomp_input_init(&in, ARCH, 0);
	seccomp_input_arg(&in, 1, 4);
	expect_int_eq(seccomp_prog_returns(&p, &in, rets, 8, &n), 0);
	expect_int_eq(n, 1);
	expect_u64_eq(rets[0], SECCOMP_RET_ERRNO | 5);
	/* returning a value computed from an unknown input cannot be judged */
	{
		struct sock_filter g[] = { LD(OFF_ARG_LO(0)), BPF_STMT(BPF_RET | BPF_A, 0) };

		expect_int_eq(one(PROG(g), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	}
}

/* Division by zero ends a classic program with 0: RET_KILL_THREAD. */
static void test_div_by_zero(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LDX | BPF_IMM, 0),
		BPF_STMT(BPF_LD | BPF_IMM, 10),
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter g[] = {
		LD(OFF_ARG_LO(0)),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		BPF_STMT(BPF_LD | BPF_IMM, 10),
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
		RET(SECCOMP_RET_ALLOW),
	};

	expect_int_eq(one(PROG(f), ARCH, 0, 0, 0), SECCOMP_O_KILL);
	expect_int_eq(one(PROG(g), ARCH, 0, 0, 0), SECCOMP_O_KILL | SECCOMP_O_ALLOW);
}

/* Programs the kernel would not load are not guessed at. */
static void test_invalid(void)
{
	struct sock_filter off_end[] = { LD(64), RET(SECCOMP_RET_ALLOW) };
	struct sock_filter unaligned[] = { LD(2), RET(SECCOMP_RET_ALLOW) };
	struct sock_filter jump_out[] = { JEQ(0, 5, 0), RET(SECCOMP_RET_ALLOW) };
	struct sock_filter no_ret[] = { LD(OFF_NR) };
	struct sock_filter mod[] = { BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 3), RET(0) };
	struct sock_filter div0[] = { BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0), RET(0) };
	struct sock_filter msh[] = { BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0), RET(0) };
	struct sock_filter shift[] = { BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32), RET(0) };
	struct sock_filter mem[] = { BPF_STMT(BPF_ST, 16), RET(0) };

	expect_int_eq(one(PROG(off_end), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(unaligned), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(jump_out), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(no_ret), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(mod), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(div0), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(msh), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(shift), ARCH, 0, 0, 0), SECCOMP_O_BAD);
	expect_int_eq(one(PROG(mem), ARCH, 0, 0, 0), SECCOMP_O_BAD);
}

/* Too many paths through unknown words: judged unknown, not guessed. */
static void test_path_budget(void)
{
	struct sock_filter f[2 * 12 + 1];
	size_t n = 0;

	for (int i = 0; i < 12; i++) {
		f[n++] = INSN(LD(OFF_ARG_LO(i % 6)));
		f[n++] = INSN(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1u << i, 0, 0));
	}
	f[n++] = INSN(RET(SECCOMP_RET_ALLOW));
	/* jt == jf: no fork at all */
	expect_int_eq(one((struct seccomp_prog){ f, n }, ARCH, 0, 0, 0), SECCOMP_O_ALLOW);
	/* each test skips one load when set: 2^11 paths */
	for (int i = 0; i < 11; i++)
		f[2 * i + 1].jt = 1;
	expect_int_eq(one((struct seccomp_prog){ f, n }, ARCH, 0, 0, 0), SECCOMP_O_BAD);
}

/* Several filters: the most restrictive action wins, whatever the order. */
static void test_precedence(void)
{
	static const uint32_t order[] = {	/* most restrictive first */
		SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP,
		SECCOMP_RET_ERRNO | 1, SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE,
		SECCOMP_RET_LOG, SECCOMP_RET_ALLOW,
	};
	const size_t n = sizeof(order) / sizeof(order[0]);
	struct sock_filter fa[7], fb[7];
	struct seccomp_prog p[2];
	struct seccomp_input in;

	seccomp_input_init(&in, ARCH, SYS_getpid);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++) {
			nr_filter(fa, SYS_getpid, order[i]);
			nr_filter(fb, SYS_getpid, order[k]);
			p[0] = PROG(fa);
			p[1] = PROG(fb);
			expect_int_eq(seccomp_outcomes(p, 2, &in),
				      seccomp_action_class(order[i < k ? i : k]));
			p[0] = PROG(fb);
			p[1] = PROG(fa);
			expect_int_eq(seccomp_outcomes(p, 2, &in),
				      seccomp_action_class(order[i < k ? i : k]));
		}
	expect_int_eq(seccomp_outcomes(p, 0, &in), SECCOMP_O_ALLOW);
}

/* With unknown input, a value is possible only if every filter can be as lenient. */
static void test_precedence_unknown(void)
{
	struct sock_filter a[] = {	/* arg 0 odd: ERRNO, else ALLOW */
		LD(OFF_ARG_LO(0)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1),
		RET(SECCOMP_RET_ERRNO | 1),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter b[] = { RET(SECCOMP_RET_USER_NOTIF) };
	struct sock_filter c[] = { RET(SECCOMP_RET_LOG) };
	struct seccomp_prog p[3] = { PROG(a), PROG(b), PROG(c) };
	struct seccomp_input in;

	seccomp_input_init(&in, ARCH, 0);
	expect_int_eq(seccomp_outcomes(p, 2, &in), SECCOMP_O_ERRNO | SECCOMP_O_NOTIF);
	p[1] = PROG(c);
	expect_int_eq(seccomp_outcomes(p, 2, &in), SECCOMP_O_ERRNO | SECCOMP_O_ALLOW);
	seccomp_input_arg(&in, 0, 2);
	p[1] = PROG(b);
	expect_int_eq(seccomp_outcomes(p, 3, &in), SECCOMP_O_NOTIF);
}

/* ---- the plan ---- */

static struct seccomp_params params(int fast, int exact)
{
	return (struct seccomp_params){ .pid = 1234, .fast = fast, .exact = exact,
					.region_size = 1 << 20 };
}

/* The plan for a single chain of one program. */
static int decide(struct seccomp_prog p, struct seccomp_params pp, struct seccomp_plan *plan,
		  char *why, size_t len)
{
	struct seccomp_chain c = { .tid = 1235, .progs = &p, .n = 1 };

	return seccomp_plan_decide(&c, 1, &pp, plan, why, len);
}

static void test_plan_none(void)
{
	struct seccomp_plan plan;
	char why[256];

	expect_int_eq(seccomp_plan_decide(NULL, 0, &(struct seccomp_params){ 0 }, &plan, why,
					  sizeof(why)), 0);
	expect_int_eq(plan.filtered, 0);
	expect_int_eq(plan.inject_flags, 0);
	expect_int_eq(plan.shm_flags, 0);
	expect_int_eq(plan.no_stack_copy, 0);
}

/* A syscall killed: the fallback, or a refusal naming it. */
static void test_plan_fallbacks(void)
{
	static const struct {
		long nr;
		int fast, exact, rc;
		unsigned inject;
		uint32_t shm;
		int no_copy;
		const char *named;
	} t[] = {
		{ SYS_memfd_create, 1, 0, 0, INJECT_F_ANON, 0, 0, NULL },
		{ SYS_close, 1, 0, 0, INJECT_F_ANON, 0, 0, NULL },
		{ SYS_mmap, 1, 0, -EPERM, 0, 0, 0, "mmap" },
		{ SYS_munmap, 0, 0, -EPERM, 0, 0, 0, "munmap" },
		{ SYS_rt_sigreturn, 0, 0, -EPERM, 0, 0, 0, "rt_sigreturn" },
		{ SYS_mremap, 1, 0, -EPERM, 0, 0, 0, "mremap" },
		{ SYS_mremap, 0, 0, 0, 0, 0, 0, NULL },		/* trap mode needs none */
		{ SYS_mprotect, 1, 0, -EPERM, 0, 0, 0, "mprotect" },
		{ SYS_process_vm_readv, 1, 0, 0, 0, 0, 1, NULL },
		{ SYS_gettid, 1, 0, 0, 0, 0, 1, NULL },		/* the copy's thread id */
		{ SYS_gettid, 0, 0, 0, 0, 0, 0, NULL },		/* trap mode: no agent */
		{ SYS_futex, 1, 0, 0, 0, SHM_F_NO_FUTEX, 0, NULL },
		{ SYS_futex, 1, 1, 0, 0, SHM_F_NO_FUTEX, 0, NULL },
		{ SYS_sched_yield, 1, 1, 0, 0, SHM_F_NO_YIELD, 0, NULL },
		{ SYS_madvise, 1, 0, 0, 0, SHM_F_NO_POPULATE, 0, NULL },
		{ SYS_madvise, 1, 1, 0, 0, SHM_F_NO_POPULATE, 0, NULL },
		{ SYS_madvise, 0, 0, 0, 0, 0, 0, NULL },	/* trap mode: no agent */
		{ SYS_clock_gettime, 1, 1, -EPERM, 0, 0, 0, "clock_gettime" },
		{ SYS_clock_gettime, 1, 0, 0, 0, 0, 0, NULL },
		{ SYS_getpid, 1, 1, 0, 0, 0, 0, NULL },
	};
	static const uint32_t actions[] = { SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_TRAP,
					    SECCOMP_RET_USER_NOTIF, SECCOMP_RET_KILL_THREAD };
	struct sock_filter f[7];
	struct seccomp_plan plan;
	char why[512];

	for (size_t a = 0; a < sizeof(actions) / sizeof(actions[0]); a++)
		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			int rc;

			nr_filter(f, (uint32_t)t[i].nr, actions[a]);
			rc = decide(PROG(f), params(t[i].fast, t[i].exact), &plan, why, sizeof(why));
			expect_int_eq(rc, t[i].rc);
			if (rc != t[i].rc)
				fprintf(stderr, "  case %zu action %#x: %s\n", i, actions[a], why);
			if (rc) {
				expect_true(strstr(why, t[i].named) != NULL);
				expect_true(strstr(why, "1235") != NULL);	/* the thread */
				continue;
			}
			expect_int_eq(plan.inject_flags, t[i].inject);
			expect_int_eq(plan.shm_flags, t[i].shm);
			expect_int_eq(plan.no_stack_copy, t[i].no_copy);
			expect_int_eq(plan.note[0] != 0, t[i].inject || t[i].shm || t[i].no_copy);
		}
}

/* RET_ERRNO: calls that fail are tried (inject falls back by itself) or refused
 * when heapattach cannot do without them. */
static void test_plan_errno(void)
{
	struct sock_filter f[7];
	struct seccomp_plan plan;
	char why[512];

	nr_filter(f, SYS_memfd_create, SECCOMP_RET_ERRNO | EPERM);
	expect_int_eq(decide(PROG(f), params(1, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.inject_flags, INJECT_F_ANON);
	nr_filter(f, SYS_munmap, SECCOMP_RET_ERRNO | EPERM);
	expect_int_eq(decide(PROG(f), params(1, 0), &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "refuses munmap") != NULL);
	nr_filter(f, SYS_process_vm_readv, SECCOMP_RET_ERRNO | EPERM);
	expect_int_eq(decide(PROG(f), params(1, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.no_stack_copy, 1);
	nr_filter(f, SYS_mmap, SECCOMP_RET_TRACE);	/* ENOSYS */
	expect_int_eq(decide(PROG(f), params(0, 0), &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "refuses mmap") != NULL);
}

/* Arguments decide: the real flags, pid and sizes are evaluated. */
static void test_plan_arguments(void)
{
	struct sock_filter memfd_exec[] = {	/* kills memfd_create(.., MFD_EXEC) only */
		LD(OFF_NR), JEQ(SYS_memfd_create, 0, 3), LD(OFF_ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MFD_EXEC, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter memfd_huge[] = {	/* kills it with MFD_HUGETLB only */
		LD(OFF_NR), JEQ(SYS_memfd_create, 0, 3), LD(OFF_ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 4, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter memfd_seal[] = {	/* kills it with MFD_ALLOW_SEALING only */
		LD(OFF_NR), JEQ(SYS_memfd_create, 0, 3), LD(OFF_ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MFD_ALLOW_SEALING, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter mmap_anon[] = {	/* kills anonymous mmap only */
		LD(OFF_NR), JEQ(SYS_mmap, 0, 3), LD(OFF_ARG_LO(3)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter own_pid[] = {	/* process_vm_readv of pid 1234 only */
		LD(OFF_NR), JEQ(SYS_process_vm_readv, 0, 3), LD(OFF_ARG_LO(0)),
		JEQ(1234, 1, 0), RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter addr[] = {		/* kills munmap below 4 GiB */
		LD(OFF_NR), JEQ(SYS_munmap, 0, 3), LD(OFF_ARG_HI(0)),
		JEQ(0, 0, 1), RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_plan plan;
	char why[512];

	expect_int_eq(decide(PROG(memfd_exec), params(1, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.inject_flags, INJECT_F_ANON);
	expect_int_eq(decide(PROG(memfd_huge), params(1, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.inject_flags, 0);
	/* inject.c always asks for the seal */
	expect_int_eq(decide(PROG(memfd_seal), params(1, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.inject_flags, INJECT_F_ANON);
	expect_int_eq(decide(PROG(mmap_anon), params(0, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.inject_flags, INJECT_F_NO_ANON);
	expect_int_eq(decide(PROG(mmap_anon), params(1, 0), &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "--mode trap") != NULL);
	/* the agent reads its stack on its own thread id, not the process id
	 * (a worker's differs): a filter on that argument may kill it */
	expect_int_eq(decide(PROG(own_pid), params(1, 0), &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.no_stack_copy, 1);
	expect_true(strstr(plan.note, "process_vm_readv") != NULL);
	/* an address is not known in advance: the worst case counts */
	expect_int_eq(decide(PROG(addr), params(1, 0), &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "kills it on munmap") != NULL);
}

/* Threads with different filters: the worst of them decides, and is named. */
static void test_plan_threads(void)
{
	struct sock_filter ok[7], bad[7];
	struct seccomp_prog p1, p2;
	struct seccomp_chain c[2];
	struct seccomp_params pp = params(1, 0), params_trap = params(0, 0);
	struct seccomp_plan plan;
	char why[512];

	nr_filter(ok, SYS_getpid, SECCOMP_RET_KILL_PROCESS);
	nr_filter(bad, SYS_futex, SECCOMP_RET_KILL_PROCESS);
	p1 = PROG(ok);
	p2 = PROG(bad);
	c[0] = (struct seccomp_chain){ .tid = 10, .progs = &p1, .n = 1 };
	c[1] = (struct seccomp_chain){ .tid = 11, .progs = &p2, .n = 1 };
	expect_int_eq(seccomp_plan_decide(c, 2, &pp, &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.shm_flags, SHM_F_NO_FUTEX);	/* the agent runs anywhere */
	expect_int_eq(c[0].remote_ok && c[1].remote_ok, 1);
	expect_int_eq(plan.remote_listed, 1);
	/* remote calls: only in the threads whose filters allow them */
	nr_filter(bad, SYS_munmap, SECCOMP_RET_KILL_PROCESS);
	expect_int_eq(seccomp_plan_decide(c, 2, &pp, &plan, why, sizeof(why)), 0);
	expect_int_eq(c[0].remote_ok, 1);
	expect_int_eq(c[1].remote_ok, 0);
	expect_true(strstr(plan.note, "no remote calls in thread 11") != NULL);
	/* in no thread at all: refused, naming one */
	nr_filter(ok, SYS_mremap, SECCOMP_RET_KILL_PROCESS);
	expect_int_eq(seccomp_plan_decide(c, 2, &pp, &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "thread 10") != NULL);
	/* one way of mapping for every thread that runs them: the memfd where
	 * it works, the other thread left out */
	nr_filter(ok, SYS_memfd_create, SECCOMP_RET_KILL_PROCESS);
	{
		struct sock_filter anon[] = {
			LD(OFF_NR), JEQ(SYS_mmap, 0, 3), LD(OFF_ARG_LO(3)),
			BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
			RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_ALLOW),
		};

		p2 = PROG(anon);
		c[1].progs = &p2;
		expect_int_eq(seccomp_plan_decide(c, 2, &params_trap, &plan, why, sizeof(why)), 0);
		expect_int_eq(c[0].remote_ok, 0);
		expect_int_eq(c[1].remote_ok, 1);
		expect_int_eq(plan.inject_flags, INJECT_F_NO_ANON);
	}
}

/* The table the probe walks: each SC_* index is the call it names. */
static void test_plan_calls(void)
{
	static const long nr[SC_NCALLS] = {
		[SC_MEMFD_EXEC] = SYS_memfd_create, [SC_MEMFD] = SYS_memfd_create,
		[SC_MMAP_MEMFD] = SYS_mmap, [SC_CLOSE] = SYS_close, [SC_MMAP_ANON] = SYS_mmap,
		[SC_MUNMAP] = SYS_munmap, [SC_SIGRETURN] = SYS_rt_sigreturn,
		[SC_MMAP_RESV] = SYS_mmap, [SC_MREMAP] = SYS_mremap, [SC_MPROTECT] = SYS_mprotect,
		[SC_GETTID] = SYS_gettid, [SC_VM_READV] = SYS_process_vm_readv,
		[SC_FUTEX_WAKE] = SYS_futex, [SC_FUTEX_WAIT] = SYS_futex,
		[SC_YIELD] = SYS_sched_yield, [SC_CLOCK] = SYS_clock_gettime,
		[SC_GETPID] = SYS_getpid, [SC_LOCK_WAIT] = SYS_futex, [SC_LOCK_WAKE] = SYS_futex,
		[SC_POPULATE] = SYS_madvise,
	};
	struct seccomp_params pp = params(1, 0);
	struct seccomp_call c[SC_NCALLS];

	seccomp_plan_calls(&pp, c);
	for (int i = 0; i < SC_NCALLS; i++) {
		expect_int_eq(c[i].nr, nr[i]);
		expect_true(c[i].name && c[i].name[0]);
	}
	expect_int_eq(c[SC_MMAP_MEMFD].args[1], pp.region_size);
	expect_int_eq(c[SC_FUTEX_WAIT].args[1], FUTEX_WAIT);
}

/* Outcomes every call of a probed chain has, but those set after. */
static void probed(unsigned *o, unsigned all)
{
	for (int i = 0; i < SC_NCALLS; i++)
		o[i] = all;
}

/* A chain learnt by a probe (filters heapattach cannot read): taken at its word. */
static void test_plan_probed(void)
{
	unsigned o[SC_NCALLS], u[SC_NCALLS];
	struct seccomp_chain c[2] = { { .tid = 20, .outcomes = o }, { .tid = 21, .outcomes = u } };
	struct seccomp_params pp = params(1, 0), exact = params(1, 1);
	struct seccomp_plan plan;
	char why[512];

	/* an engine's default profile: every call allowed, nothing to say */
	probed(o, SECCOMP_O_ALLOW);
	expect_int_eq(seccomp_plan_decide(c, 1, &exact, &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.filtered, 1);
	expect_int_eq(plan.inject_flags, 0);
	expect_int_eq(plan.shm_flags, 0);
	expect_int_eq(plan.no_stack_copy, 0);
	expect_str_eq(plan.note, "");
	expect_int_eq(c[0].remote_ok, 1);
	/* memfd_create refused: the shared anonymous way */
	o[SC_MEMFD_EXEC] = o[SC_MEMFD] = SECCOMP_O_ERRNO;
	expect_int_eq(seccomp_plan_decide(c, 1, &pp, &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.inject_flags, INJECT_F_ANON);
	/* a trap on process_vm_readv: no stack copies */
	o[SC_VM_READV] = SECCOMP_O_TRAP;
	expect_int_eq(seccomp_plan_decide(c, 1, &pp, &plan, why, sizeof(why)), 0);
	expect_int_eq(plan.no_stack_copy, 1);
	/* both ways of mapping killed: refused, and says how it knows */
	o[SC_MMAP_MEMFD] = o[SC_MMAP_ANON] = SECCOMP_O_KILL;
	expect_int_eq(seccomp_plan_decide(c, 1, &pp, &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "thread 20, learnt from a throwaway copy") != NULL);
	expect_true(strstr(why, "kills it on mmap") != NULL);
	/* another thread's filters, neither read nor probed: nothing optional
	 * in the agent, no remote calls there, exact mode refused */
	probed(o, SECCOMP_O_ALLOW);
	probed(u, SECCOMP_O_BAD);
	expect_int_eq(seccomp_plan_decide(c, 2, &pp, &plan, why, sizeof(why)), 0);
	expect_int_eq(c[0].remote_ok, 1);
	expect_int_eq(c[1].remote_ok, 0);
	expect_int_eq(plan.no_stack_copy, 1);
	expect_int_eq(plan.shm_flags, SHM_F_NO_FUTEX | SHM_F_NO_YIELD | SHM_F_NO_POPULATE);
	expect_int_eq(plan.no_alloc_stats, 1);
	expect_int_eq(seccomp_plan_decide(c, 2, &exact, &plan, why, sizeof(why)), -EPERM);
	expect_true(strstr(why, "thread 21, which heapattach can neither read nor probe") != NULL);
	expect_true(strstr(why, "clock_gettime") != NULL);
}

HARNESS_MAIN("seccomp",
	T(test_arch_and_nr), T(test_each_action), T(test_arg_compare),
	T(test_high_word_and_ip), T(test_alu_memory_x), T(test_div_by_zero),
	T(test_invalid), T(test_path_budget), T(test_precedence),
	T(test_precedence_unknown), T(test_plan_none), T(test_plan_fallbacks),
	T(test_plan_errno), T(test_plan_arguments), T(test_plan_threads),
	T(test_plan_calls), T(test_plan_probed))
