/* What the target's seccomp filters let heapattach make it do: the syscalls, the verdict, the fallbacks. */
/* SPDX-License-Identifier: MIT */
/*
 * Every system call heapattach makes the target perform is listed in
 * plan_calls(): the remote ones (remote.c, run in a stopped thread by
 * inject.c and implant.c) and the agent's (agent.c, run by any thread that
 * allocates). A new one must be added there, or a filter that kills on it
 * will kill the target. Each is evaluated with the arguments it really
 * gets wherever they are known in advance; an address or an fd is
 * unknown, and so is the instruction pointer (the stub and the agent are
 * placed later), so a filter that checks one of those is judged by the
 * worst thing it could do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <linux/futex.h>

#include "inject.h"
#include "seccomp_arch.h"
#include "seccomp_plan.h"
#include "shm.h"
#include "sys_compat.h"
#include "xmalloc.h"

/* Why heapattach makes a call: which part of it needs the call. */
enum need {
	NEED_ALWAYS,    /* remote, any mode */
	NEED_MEMFD,     /* remote: the memfd way of mapping a region */
	NEED_ANON,      /* remote: the shared anonymous way */
	NEED_FAST,      /* remote: the data view of --mode fast */
	NEED_COPY,      /* agent: stack copies on a frame-table miss */
	NEED_FUTEX,     /* agent: doorbell, sleeping for ring room */
	NEED_YIELD,     /* agent: exact mode, futex refused */
	NEED_CLOCK,     /* agent: exact mode, how long it waited */
	NEED_TRAP,      /* trampolines: --mode trap's trap (bkpt.h) */
	NEED_STATS,     /* jemalloc's, tcmalloc's statistics: their function takes their locks (statscall.c) */
	NEED_POPULATE,  /* agent: mapping in a ring's next chunk (SHM_RING_CHUNK) */
};

struct call {
	const char *name;
	long nr;
	enum need need;
	uint8_t known;          /* bit i: args[i] is what the call passes */
	uint64_t args[6];
	const char *what;       /* "heapattach needs it to ..." */
};

enum {
	C_MEMFD_EXEC, C_MEMFD, C_MMAP_MEMFD, C_CLOSE, C_MMAP_ANON, C_MUNMAP, C_SIGRETURN,
	C_MMAP_RESV, C_MREMAP, C_MPROTECT, C_GETTID, C_VM_READV, C_FUTEX_WAKE, C_FUTEX_WAIT,
	C_YIELD, C_CLOCK, C_GETPID, C_LOCK_WAIT, C_LOCK_WAKE, C_POPULATE, NCALLS
};

#define ARGS(...) { __VA_ARGS__ }
#define RX (PROT_READ | PROT_EXEC)
#define NOREPL MAP_FIXED_NOREPLACE

/* The calls for pp, indexed by C_*. */
static void plan_calls(const struct seccomp_params *pp, struct call *c)
{
	const uint64_t sz = pp->region_size, none = (uint64_t)-1;
	const struct call calls[NCALLS] = {
		[C_MEMFD_EXEC] = { "memfd_create", SYS_memfd_create, NEED_MEMFD, 0x3e,
				   ARGS(0, MFD_CLOEXEC | MFD_EXEC | MFD_ALLOW_SEALING),
				   "to make its shared memory" },
		[C_MEMFD] = { "memfd_create", SYS_memfd_create, NEED_MEMFD, 0x3e,
			      ARGS(0, MFD_CLOEXEC | MFD_ALLOW_SEALING), "to make its shared memory" },
		[C_MMAP_MEMFD] = { "mmap", SYS_mmap, NEED_MEMFD, 0x2e,
				   ARGS(0, sz, RX, MAP_SHARED | NOREPL, 0, 0), "to map its code" },
		[C_CLOSE] = { "close", SYS_close, NEED_MEMFD, 0x3e, ARGS(0),
			      "to close the memfd it mapped" },
		[C_MMAP_ANON] = { "mmap", SYS_mmap, NEED_ANON, 0x3e,
				  ARGS(0, sz, RX, MAP_SHARED | MAP_ANONYMOUS | NOREPL, none, 0),
				  "to map its code" },
		[C_MUNMAP] = { "munmap", SYS_munmap, NEED_ALWAYS, 0x3c, ARGS(0),
			       "to remove its mappings" },
		[C_SIGRETURN] = { "rt_sigreturn", SYS_rt_sigreturn, NEED_ALWAYS, 0, ARGS(0),
				  "to return from the system calls it makes in the target" },
		[C_MMAP_RESV] = { "mmap", SYS_mmap, NEED_FAST, 0x3e,
				  ARGS(0, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | NOREPL, none, 0),
				  "in --mode fast to map its data (--mode trap does not)" },
		[C_MREMAP] = { "mremap", SYS_mremap, NEED_FAST, 0x2e,
			       ARGS(0, 0, sz, MREMAP_MAYMOVE | MREMAP_FIXED, 0, 0),
			       "in --mode fast to map its data (--mode trap does not)" },
		[C_MPROTECT] = { "mprotect", SYS_mprotect, NEED_FAST, 0x3e,
				 ARGS(0, sz, PROT_READ | PROT_WRITE),
				 "in --mode fast to map its data (--mode trap does not)" },
		/* a stack copy: process_vm_readv on the calling thread's id
		 * (agent.c, stack_copy), which gettid gives: not known here */
		[C_GETTID] = { "gettid", SYS_gettid, NEED_COPY, 0x3f, ARGS(0), "" },
		[C_VM_READV] = { "process_vm_readv", SYS_process_vm_readv, NEED_COPY, 0x34,
				 ARGS(0, 0, 1, 0, 1, 0), "" },
		[C_FUTEX_WAKE] = { "futex", SYS_futex, NEED_FUTEX, 0x3e, ARGS(0, FUTEX_WAKE, 1), "" },
		[C_FUTEX_WAIT] = { "futex", SYS_futex, NEED_FUTEX, 0x32, ARGS(0, FUTEX_WAIT), "" },
		[C_YIELD] = { "sched_yield", SYS_sched_yield, NEED_YIELD, 0x3f, ARGS(0), "" },
		[C_CLOCK] = { "clock_gettime", SYS_clock_gettime, NEED_CLOCK, 0x3d,
			      ARGS(CLOCK_MONOTONIC), "in exact mode (--sample-rate 1) to time its "
			      "waits for ring room; a sampling rate does not" },
		[C_GETPID] = { "getpid", SYS_getpid, NEED_TRAP, 0x3f, ARGS(0),
			       "in --mode trap, whose traps are getpid calls (--mode fast has none)" },
		/* jemalloc's and tcmalloc's mutexes, contended (glibc's figures are
		 * read from its memory: nothing runs in the target for them) */
		[C_LOCK_WAIT] = { "futex", SYS_futex, NEED_STATS, 0x02,
				  ARGS(0, FUTEX_WAIT | FUTEX_PRIVATE_FLAG), "" },
		[C_LOCK_WAKE] = { "futex", SYS_futex, NEED_STATS, 0x02,
				  ARGS(0, FUTEX_WAKE | FUTEX_PRIVATE_FLAG), "" },
		[C_POPULATE] = { "madvise", SYS_madvise, NEED_POPULATE, 0x3e,
				 ARGS(0, SHM_RING_CHUNK, MADV_POPULATE_WRITE), "" },
	};

	memcpy(c, calls, sizeof(calls));
}

/* The outcomes of call c for one chain's filters. */
static unsigned judge(const struct seccomp_chain *chain, const struct call *c)
{
	struct seccomp_input in;

	seccomp_input_init(&in, SECCOMP_ARCH_SELF, (uint32_t)c->nr);
	for (unsigned i = 0; i < 6; i++)
		if (c->known & (1u << i))
			seccomp_input_arg(&in, i, c->args[i]);
	return seccomp_outcomes(chain->progs, chain->n, &in);
}

/* Tests on o, the outcomes of every call (by C_*) for some filters. */
#define FATAL(o, i) ((o)[i] & SECCOMP_O_FATAL)
#define UNUSABLE(o, i) (FATAL(o, i) || (o)[i] == SECCOMP_O_ERRNO)	/* kills, or always fails */
#define SURE(o, i) ((o)[i] == SECCOMP_O_ALLOW)

/* Whether regions can be mapped the memfd way: nothing on it may kill, and it can work. */
static int memfd_way(const unsigned *o)
{
	return !FATAL(o, C_MEMFD_EXEC) && !FATAL(o, C_MEMFD) && !UNUSABLE(o, C_MMAP_MEMFD) &&
	       !UNUSABLE(o, C_CLOSE) &&
	       !(o[C_MEMFD_EXEC] == SECCOMP_O_ERRNO && o[C_MEMFD] == SECCOMP_O_ERRNO);
}

/* The first remote call heapattach cannot do without under o, or -1. */
static int remote_bad(const unsigned *o, const struct seccomp_params *pp)
{
	if (!memfd_way(o) && UNUSABLE(o, C_MMAP_ANON))
		return UNUSABLE(o, C_MMAP_MEMFD) ? C_MMAP_MEMFD : C_MMAP_ANON;
	if (UNUSABLE(o, C_MUNMAP))
		return C_MUNMAP;
	if (UNUSABLE(o, C_SIGRETURN))
		return C_SIGRETURN;
	if (pp->fast && UNUSABLE(o, C_MMAP_RESV))
		return C_MMAP_RESV;
	if (pp->fast && UNUSABLE(o, C_MREMAP))
		return C_MREMAP;
	if (pp->fast && UNUSABLE(o, C_MPROTECT))
		return C_MPROTECT;
	return -1;
}

/* "kills it on", "refuses"...: what a filter does to a call with outcomes o. */
static const char *verb(unsigned o)
{
	if (o & SECCOMP_O_BAD)
		return "cannot be evaluated for";
	if (o & SECCOMP_O_KILL)
		return "kills it on";
	if (o & SECCOMP_O_TRAP)
		return "raises SIGSYS on";
	if (o & SECCOMP_O_NOTIF)
		return "hands to a supervisor";
	return "refuses";
}

/* Append "what (name: outcomes)" for call i of c, with u the outcomes by
 * call; or "what TID" when i < 0. */
static void note_add(struct seccomp_plan *plan, const char *what, pid_t tid,
		     const struct call *c, int i, const unsigned *u)
{
	char names[64];
	size_t at = strlen(plan->note);

	if (at >= sizeof(plan->note) - 1)
		return;
	if (i < 0)
		snprintf(plan->note + at, sizeof(plan->note) - at, "%s%s %d", at ? "; " : "",
			 what, (int)tid);
	else
		snprintf(plan->note + at, sizeof(plan->note) - at, "%s%s (%s: %s)",
			 at ? "; " : "", what, c[i].name,
			 seccomp_outcome_names(u[i], names, sizeof(names)));
}

/* The one-line refusal: thread tid's filters do o to call c. */
static int refuse(char *why, size_t whylen, const struct seccomp_params *pp, pid_t tid,
		  unsigned o, const struct call *c)
{
	snprintf(why, whylen, "cannot attach to %d: its seccomp filter (thread %d) %s %s, "
		 "which heapattach needs %s", (int)pp->pid, (int)tid, verb(o), c->name, c->what);
	return -EPERM;
}

int seccomp_plan_decide(struct seccomp_chain *chains, size_t n,
			const struct seccomp_params *pp, struct seccomp_plan *plan,
			char *why, size_t whylen)
{
	struct call c[NCALLS];
	unsigned *oc, u[NCALLS] = { 0 };
	pid_t clock_tid = 0, getpid_tid = 0;
	size_t memfd_n = 0, anon_n = 0;
	int rc = 0, bad;

	memset(plan, 0, sizeof(*plan));
	why[0] = '\0';
	for (size_t k = 0; k < n; k++)
		plan->filtered |= chains[k].n > 0;
	if (!plan->filtered)
		return 0;
	plan->remote_listed = 1;
	plan_calls(pp, c);
	oc = xcalloc(n * NCALLS, sizeof(*oc));
	for (size_t k = 0; k < n; k++) {
		unsigned *o = &oc[k * NCALLS];

		for (int i = 0; i < NCALLS; i++) {
			o[i] = judge(&chains[k], &c[i]);
			u[i] |= o[i];
		}
		if (!clock_tid && !SURE(o, C_CLOCK))
			clock_tid = chains[k].tid;
		if (!getpid_tid && FATAL(o, C_GETPID))
			getpid_tid = chains[k].tid;
		/* remote calls run in one thread: those whose filters allow them */
		if (remote_bad(o, pp) < 0) {
			memfd_n += memfd_way(o);
			anon_n += !UNUSABLE(o, C_MMAP_ANON);
		}
	}
	/* the agent's calls run in any thread: every chain counts */
	if (pp->fast && pp->exact && !SURE(u, C_CLOCK)) {
		rc = refuse(why, whylen, pp, clock_tid, u[C_CLOCK], &c[C_CLOCK]);
		goto out;
	}
	if (!pp->fast && getpid_tid) {
		rc = refuse(why, whylen, pp, getpid_tid, u[C_GETPID], &c[C_GETPID]);
		goto out;
	}
	if (!memfd_n && !anon_n) {
		bad = remote_bad(oc, pp);	/* the first chain's reason */
		rc = refuse(why, whylen, pp, chains[0].tid, oc[bad], &c[bad]);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		const unsigned *o = &oc[k * NCALLS];
		int ok = remote_bad(o, pp) < 0 && (memfd_n ? memfd_way(o) : !UNUSABLE(o, C_MMAP_ANON));

		chains[k].remote_ok = ok;
		if (ok && memfd_n && FATAL(o, C_MMAP_ANON))
			plan->inject_flags |= INJECT_F_NO_ANON;
		if (!ok)
			note_add(plan, "no remote calls in thread", chains[k].tid, c, -1, u);
	}
	if (!memfd_n) {
		plan->inject_flags |= INJECT_F_ANON;
		note_add(plan, "shared anonymous memory instead of a memfd", 0, c,
			 FATAL(u, C_MEMFD_EXEC) ? C_MEMFD_EXEC : FATAL(u, C_MEMFD) ? C_MEMFD :
			 UNUSABLE(u, C_MMAP_MEMFD) ? C_MMAP_MEMFD :
			 UNUSABLE(u, C_CLOSE) ? C_CLOSE : C_MEMFD, u);
	}
	if (plan->inject_flags & INJECT_F_NO_ANON)
		note_add(plan, "no shared anonymous fallback", 0, c, C_MMAP_ANON, u);
	if (!pp->fast)
		goto out;
	if (!SURE(u, C_GETTID) || !SURE(u, C_VM_READV)) {
		plan->no_stack_copy = 1;
		note_add(plan, "no stack copies", 0, c, SURE(u, C_GETTID) ? C_VM_READV : C_GETTID,
			 u);
	}
	if (!SURE(u, C_FUTEX_WAKE) || !SURE(u, C_FUTEX_WAIT)) {
		plan->shm_flags |= SHM_F_NO_FUTEX;
		note_add(plan, "the agent makes no futex calls", 0, c,
			 SURE(u, C_FUTEX_WAKE) ? C_FUTEX_WAIT : C_FUTEX_WAKE, u);
	}
	if (!SURE(u, C_YIELD)) {
		plan->shm_flags |= SHM_F_NO_YIELD;
		note_add(plan, "the agent does not yield", 0, c, C_YIELD, u);
	}
	if (!SURE(u, C_POPULATE)) {
		plan->shm_flags |= SHM_F_NO_POPULATE;
		note_add(plan, "rings mapped in by page faults", 0, c, C_POPULATE, u);
	}
	/* calling jemalloc or tcmalloc for its statistics may wait on its locks */
	if (!SURE(u, C_LOCK_WAIT) || !SURE(u, C_LOCK_WAKE)) {
		plan->no_alloc_stats = 1;
		note_add(plan, "no calls for jemalloc's or tcmalloc's statistics", 0, c,
			 SURE(u, C_LOCK_WAIT) ? C_LOCK_WAKE : C_LOCK_WAIT, u);
	}
out:
	free(oc);
	return rc;
}
