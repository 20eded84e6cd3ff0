/* A seccomp filter evaluator: what a thread's classic BPF filters do to one system call. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SECCOMP_H
#define HEAPATTACH_SECCOMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/filter.h>

/*
 * The input of a filter (struct seccomp_data) as the 16 little-endian
 * 32-bit words a filter loads: nr, arch, instruction_pointer (low, high),
 * args[0..5] (low, high each). A word not set in `known` may hold any
 * value: the evaluator then follows every branch that depends on it and
 * reports each action that some value could lead to.
 */
#define SECCOMP_W_NR    0
#define SECCOMP_W_ARCH  1
#define SECCOMP_W_IP    2       /* and 3 */
#define SECCOMP_W_ARG(i) (4 + 2 * (i))  /* low word; high word + 1 */
#define SECCOMP_NWORDS  16

struct seccomp_input {
	uint32_t w[SECCOMP_NWORDS];
	uint32_t known;         /* bit i: w[i] is the real value */
};

/* The input of syscall nr made by an arch (AUDIT_ARCH_*): ip and args unknown. */
void seccomp_input_init(struct seccomp_input *in, uint32_t arch, uint32_t nr);
/* Argument i (0..5) is known to be v. */
void seccomp_input_arg(struct seccomp_input *in, unsigned i, uint64_t v);

/* The classes of outcome, as bits of an outcome set. */
#define SECCOMP_O_ALLOW 1u      /* runs (RET_ALLOW, RET_LOG) */
#define SECCOMP_O_ERRNO 2u      /* fails with an errno, does not run (RET_ERRNO; RET_TRACE
				 * with no tracer asking for it: ENOSYS) */
#define SECCOMP_O_KILL  4u      /* RET_KILL_PROCESS, RET_KILL_THREAD, an unknown action */
#define SECCOMP_O_TRAP  8u      /* SIGSYS (RET_TRAP): fatal while signals are blocked */
#define SECCOMP_O_NOTIF 16u     /* RET_USER_NOTIF: a supervisor decides */
#define SECCOMP_O_BAD   32u     /* a program we cannot evaluate (invalid, too many paths) */
/* Outcomes that may hurt the target or that we cannot foresee. */
#define SECCOMP_O_FATAL (SECCOMP_O_KILL | SECCOMP_O_TRAP | SECCOMP_O_NOTIF | SECCOMP_O_BAD)

/* One filter program, as PTRACE_SECCOMP_GET_FILTER returns it. */
struct seccomp_prog {
	const struct sock_filter *insns;
	size_t len;
};

/*
 * The return values one program can give for in (all of them when words
 * are unknown): up to max distinct values into out, their count in *n.
 * 0, -EINVAL for a program the kernel would not have loaded (or that runs
 * off its end), -E2BIG when there are more values than max or more paths
 * than the evaluator follows.
 */
int seccomp_prog_returns(const struct seccomp_prog *p, const struct seccomp_input *in,
			 uint32_t *out, size_t max, size_t *n);

/*
 * The outcomes (SECCOMP_O_* bits) a thread whose filters are progs[0..n)
 * gives the syscall in: the kernel runs them all and takes the most
 * restrictive action (the lowest as a signed value; among equals the
 * newest filter's data, which does not change the class, so the order of
 * progs does not matter). With unknown words the set may be larger than
 * the truth, never smaller. n == 0: SECCOMP_O_ALLOW.
 */
unsigned seccomp_outcomes(const struct seccomp_prog *progs, size_t n,
			  const struct seccomp_input *in);

/* The outcome class of one return value. */
unsigned seccomp_action_class(uint32_t ret);

/* Short names of the outcomes in set o ("kill", "errno|allow"...), into buf. */
const char *seccomp_outcome_names(unsigned o, char *buf, size_t len);

#endif
