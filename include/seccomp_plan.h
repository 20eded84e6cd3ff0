/* What the target's seccomp filters let heapattach make it do: the syscalls, the verdict, the fallbacks. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SECCOMP_PLAN_H
#define HEAPATTACH_SECCOMP_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "seccomp.h"

struct tracee;

/* The filters of one or more threads (threads with the same filters share one). */
struct seccomp_chain {
	pid_t tid;                      /* the first thread that has them */
	struct seccomp_prog *progs;     /* in PTRACE_SECCOMP_GET_FILTER's order */
	size_t n;
};

/* What heapattach will make the target do (from the options and the attach plan). */
struct seccomp_params {
	pid_t pid;
	int fast;               /* --mode fast: the data view and the agent */
	int exact;              /* --sample-rate 1: the agent may wait for room */
	uint64_t region_size;   /* bytes of each injected region */
};

/* The decision: how to avoid every syscall a filter may kill on. */
struct seccomp_plan {
	unsigned inject_flags;  /* INJECT_F_ANON: no memfd; INJECT_F_NO_ANON: no fallback */
	uint32_t shm_flags;     /* SHM_F_NO_FUTEX, SHM_F_NO_YIELD: what the agent avoids */
	int no_stack_copy;      /* the agent sends no stack copies (no process_vm_readv) */
	int filtered;           /* some thread runs under a filter */
	char note[160];         /* what was avoided, for -v and the profile ("" if nothing) */
};

/*
 * Evaluate every syscall heapattach would make the target run (remote
 * syscalls in a stopped thread, and the agent's own in any thread) against
 * every chain, with the real arch, numbers and the arguments known in
 * advance (addresses and fds count as unknown). Fill plan with the
 * fallbacks that avoid each call some filter may kill on (or trap, or hand
 * to a supervisor). 0, or -EPERM with why[] saying in one line which
 * syscall heapattach needs and cannot make safely.
 */
int seccomp_plan_decide(const struct seccomp_chain *chains, size_t n,
			const struct seccomp_params *pp, struct seccomp_plan *plan,
			char *why, size_t whylen);

/*
 * Read the seccomp mode of every stopped thread of tr (/proc/PID/task/TID/
 * status) and the filters of those in filter mode (PTRACE_SECCOMP_GET_FILTER:
 * needs CAP_SYS_ADMIN and a ptrace-stopped thread), then decide as above.
 * 0, or -EPERM after one message on stderr saying why heapattach must not
 * attach (strict mode, a filter it cannot read, a syscall it needs killed).
 */
int seccomp_plan_make(struct tracee *tr, const struct seccomp_params *pp,
		      struct seccomp_plan *plan);

#endif
