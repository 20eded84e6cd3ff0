/* What the target's seccomp filters let heapattach make it do: the syscalls, the verdict, the fallbacks. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SECCOMP_PLAN_H
#define HEAPATTACH_SECCOMP_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ptrace/seccomp.h"

struct tracee;

/* The filters of one or more threads (threads with the same filters share one). */
struct seccomp_chain {
	pid_t tid;                      /* the first thread that has them */
	struct seccomp_prog *progs;     /* in PTRACE_SECCOMP_GET_FILTER's order; none: */
	size_t n;                       /* the threads without a filter */
	unsigned *outcomes;             /* instead of progs, filters heapattach could not
					 * read: the SECCOMP_O_* outcomes of each call
					 * (SC_NCALLS, by SC_*) a probe saw (seccomp_probe.h) */
	int remote_ok;                  /* set by seccomp_plan_decide: its threads may
					 * run the remote syscalls */
};

/* The system calls heapattach makes the target run, by seccomp_plan_calls' index. */
enum seccomp_call_id {
	SC_MEMFD_EXEC, SC_MEMFD, SC_MMAP_MEMFD, SC_CLOSE, SC_MMAP_ANON, SC_MUNMAP, SC_SIGRETURN,
	SC_MMAP_RESV, SC_MREMAP, SC_MPROTECT, SC_GETTID, SC_VM_READV, SC_FUTEX_WAKE,
	SC_FUTEX_WAIT, SC_YIELD, SC_CLOCK, SC_GETPID, SC_LOCK_WAIT, SC_LOCK_WAKE, SC_POPULATE,
	SC_NCALLS
};

/* One of them: what a filter sees of it and why heapattach makes it. */
struct seccomp_call {
	const char *name;
	long nr;
	int need;               /* which part of heapattach needs it (seccomp_plan.c) */
	uint8_t known;          /* bit i: args[i] is what the call passes */
	uint64_t args[6];
	const char *what;       /* "heapattach needs it to ..." */
};

/* What heapattach will make the target do (from the options and the attach plan). */
struct seccomp_params {
	pid_t pid;
	int fast;               /* --mode fast: the data view and the agent */
	int exact;              /* --sample-rate 1: the agent may wait for room */
	uint64_t region_size;   /* bytes of each injected region */
	int no_probe;           /* refuse a filter it cannot read (--no-seccomp-probe) */
};

/* The decision: how to avoid every syscall a filter may kill on. */
struct seccomp_plan {
	unsigned inject_flags;  /* INJECT_F_ANON: no memfd; INJECT_F_NO_ANON: no fallback */
	uint32_t shm_flags;     /* SHM_F_NO_FUTEX, SHM_F_NO_YIELD: what the agent avoids */
	int no_stack_copy;      /* the agent sends no stack copies (no process_vm_readv) */
	int no_alloc_stats;     /* jemalloc and tcmalloc are not called for their
				 * statistics (their locks, contended, make private
				 * futex calls; glibc's are read, not asked) */
	int filtered;           /* some thread runs under a filter */
	int remote_listed;      /* remote syscalls run only in threads marked remote_ok */
	char note[160];         /* what was avoided, for -v and the profile ("" if nothing) */
};

/* Every call heapattach makes the target run for pp, into c[SC_NCALLS]. */
void seccomp_plan_calls(const struct seccomp_params *pp, struct seccomp_call *c);

/*
 * Evaluate every syscall heapattach would make the target run against
 * every chain (one per distinct set of filters, and one with none if some
 * thread has none), with the real arch, numbers and the arguments known in
 * advance (addresses and fds count as unknown); a chain with outcomes
 * is taken at the probe's word. The agent's calls run in
 * any thread: the worst chain decides their fallbacks. The remote calls
 * run in one stopped thread: chains[k].remote_ok marks the chains whose
 * threads may run all of them (one way of mapping for all). Fill plan
 * with the fallbacks that avoid each call a filter may kill on (or trap,
 * or hand to a supervisor). 0, or -EPERM with why[] saying in one line
 * which syscall heapattach needs and cannot make safely.
 */
int seccomp_plan_decide(struct seccomp_chain *chains, size_t n,
			const struct seccomp_params *pp, struct seccomp_plan *plan,
			char *why, size_t whylen);

/*
 * Read the seccomp mode of every stopped thread of tr (/proc/PID/task/TID/
 * status) and the filters of those in filter mode (PTRACE_SECCOMP_GET_FILTER:
 * needs CAP_SYS_ADMIN and a ptrace-stopped thread), then decide as above
 * and set each thread's remote_ok. 0, or -EPERM after one message on
 * stderr saying why heapattach must not attach (strict mode, a filter it
 * cannot read, a syscall it needs killed).
 */
int seccomp_plan_make(struct tracee *tr, const struct seccomp_params *pp,
		      struct seccomp_plan *plan);

#endif
