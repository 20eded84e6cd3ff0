/* What the target's seccomp filters let heapattach make it do: the syscalls, the verdict, the fallbacks. */
/* SPDX-License-Identifier: MIT */
/*
 * Every system call heapattach makes the target perform is listed in
 * seccomp_plan_calls(): the remote ones (remote.c, run in a stopped thread by
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

#include "base/sys_compat.h"
#include "base/xmalloc.h"
#include "ptrace/inject.h"
#include "ptrace/seccomp_plan.h"
#include "seccomp_arch.h"
#include "shm.h"

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

#define ARGS(...) { __VA_ARGS__ }
#define RX (PROT_READ | PROT_EXEC)
#define NOREPL MAP_FIXED_NOREPLACE

void seccomp_plan_calls(const struct seccomp_params *pp, struct seccomp_call *c)
{
	const uint64_t sz = pp->region_size, none = (uint64_t)-1;
	const struct seccomp_call calls[SC_NCALLS] = {
		[SC_MEMFD_EXEC] = { "memfd_create", SYS_memfd_create, NEED_MEMFD, 0x3e,
				    ARGS(0, MFD_CLOEXEC | MFD_EXEC | MFD_ALLOW_SEALING),
				    "to make its shared memory" },
		[SC_MEMFD] = { "memfd_create", SYS_memfd_create, NEED_MEMFD, 0x3e,
			       ARGS(0, MFD_CLOEXEC | MFD_ALLOW_SEALING), "to make its shared memory" },
		[SC_MMAP_MEMFD] = { "mmap", SYS_mmap, NEED_MEMFD, 0x2e,
				    ARGS(0, sz, RX, MAP_SHARED | NOREPL, 0, 0), "to map its code" },
		[SC_CLOSE] = { "close", SYS_close, NEED_MEMFD, 0x3e, ARGS(0),
			       "to close the memfd it mapped" },
		[SC_MMAP_ANON] = { "mmap", SYS_mmap, NEED_ANON, 0x3e,
				   ARGS(0, sz, RX, MAP_SHARED | MAP_ANONYMOUS | NOREPL, none, 0),
				   "to map its code" },
		[SC_MUNMAP] = { "munmap", SYS_munmap, NEED_ALWAYS, 0x3c, ARGS(0),
			        "to remove its mappings" },
		[SC_SIGRETURN] = { "rt_sigreturn", SYS_rt_sigreturn, NEED_ALWAYS, 0, ARGS(0),
				   "to return from the system calls it makes in the target" },
		[SC_MMAP_RESV] = { "mmap", SYS_mmap, NEED_FAST, 0x3e,
				   ARGS(0, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | NOREPL, none, 0),
				   "in --mode fast to map its data (--mode trap does not)" },
		[SC_MREMAP] = { "mremap", SYS_mremap, NEED_FAST, 0x2e,
			        ARGS(0, 0, sz, MREMAP_MAYMOVE | MREMAP_FIXED, 0, 0),
			        "in --mode fast to map its data (--mode trap does not)" },
		[SC_MPROTECT] = { "mprotect", SYS_mprotect, NEED_FAST, 0x3e,
				  ARGS(0, sz, PROT_READ | PROT_WRITE),
				  "in --mode fast to map its data (--mode trap does not)" },
		/* a stack copy: process_vm_readv on the calling thread's id
		 * (agent_walk.h, stack_copy), which gettid gives: not known here */
		[SC_GETTID] = { "gettid", SYS_gettid, NEED_COPY, 0x3f, ARGS(0), "" },
		[SC_VM_READV] = { "process_vm_readv", SYS_process_vm_readv, NEED_COPY, 0x34,
				  ARGS(0, 0, 1, 0, 1, 0), "" },
		[SC_FUTEX_WAKE] = { "futex", SYS_futex, NEED_FUTEX, 0x3e, ARGS(0, FUTEX_WAKE, 1), "" },
		[SC_FUTEX_WAIT] = { "futex", SYS_futex, NEED_FUTEX, 0x32, ARGS(0, FUTEX_WAIT), "" },
		[SC_YIELD] = { "sched_yield", SYS_sched_yield, NEED_YIELD, 0x3f, ARGS(0), "" },
		[SC_CLOCK] = { "clock_gettime", SYS_clock_gettime, NEED_CLOCK, 0x3d,
			       ARGS(CLOCK_MONOTONIC), "in exact mode (--sample-rate 1) to time its "
			       "waits for ring room; a sampling rate does not" },
		[SC_GETPID] = { "getpid", SYS_getpid, NEED_TRAP, 0x3f, ARGS(0),
			        "in --mode trap, whose traps are getpid calls (--mode fast has none)" },
		/* jemalloc's and tcmalloc's mutexes, contended (glibc's figures are
		 * read from its memory: nothing runs in the target for them) */
		[SC_LOCK_WAIT] = { "futex", SYS_futex, NEED_STATS, 0x02,
				   ARGS(0, FUTEX_WAIT | FUTEX_PRIVATE_FLAG), "" },
		[SC_LOCK_WAKE] = { "futex", SYS_futex, NEED_STATS, 0x02,
				   ARGS(0, FUTEX_WAKE | FUTEX_PRIVATE_FLAG), "" },
		[SC_POPULATE] = { "madvise", SYS_madvise, NEED_POPULATE, 0x3e,
				  ARGS(0, SHM_RING_CHUNK, MADV_POPULATE_WRITE), "" },
	};

	memcpy(c, calls, sizeof(calls));
}

/* The outcomes of call i (c is its entry) for one chain's filters. */
static unsigned judge(const struct seccomp_chain *chain, int i, const struct seccomp_call *c)
{
	struct seccomp_input in;

	if (chain->outcomes)
		return chain->outcomes[i];
	seccomp_input_init(&in, SECCOMP_ARCH_SELF, (uint32_t)c->nr);
	for (unsigned i = 0; i < 6; i++)
		if (c->known & (1u << i))
			seccomp_input_arg(&in, i, c->args[i]);
	return seccomp_outcomes(chain->progs, chain->n, &in);
}

/* Tests on o, the outcomes of every call (by SC_*) for some filters. */
#define FATAL(o, i) ((o)[i] & SECCOMP_O_FATAL)
#define UNUSABLE(o, i) (FATAL(o, i) || (o)[i] == SECCOMP_O_ERRNO)	/* kills, or always fails */
#define SURE(o, i) ((o)[i] == SECCOMP_O_ALLOW)

/* Whether regions can be mapped the memfd way: nothing on it may kill, and it can work. */
static int memfd_way(const unsigned *o)
{
	return !FATAL(o, SC_MEMFD_EXEC) && !FATAL(o, SC_MEMFD) && !UNUSABLE(o, SC_MMAP_MEMFD) &&
	       !UNUSABLE(o, SC_CLOSE) &&
	       !(o[SC_MEMFD_EXEC] == SECCOMP_O_ERRNO && o[SC_MEMFD] == SECCOMP_O_ERRNO);
}

/* The first remote call heapattach cannot do without under o, or -1. */
static int remote_bad(const unsigned *o, const struct seccomp_params *pp)
{
	if (!memfd_way(o) && UNUSABLE(o, SC_MMAP_ANON))
		return UNUSABLE(o, SC_MMAP_MEMFD) ? SC_MMAP_MEMFD : SC_MMAP_ANON;
	if (UNUSABLE(o, SC_MUNMAP))
		return SC_MUNMAP;
	if (UNUSABLE(o, SC_SIGRETURN))
		return SC_SIGRETURN;
	if (pp->fast && UNUSABLE(o, SC_MMAP_RESV))
		return SC_MMAP_RESV;
	if (pp->fast && UNUSABLE(o, SC_MREMAP))
		return SC_MREMAP;
	if (pp->fast && UNUSABLE(o, SC_MPROTECT))
		return SC_MPROTECT;
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
		     const struct seccomp_call *c, int i, const unsigned *u)
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

/* How heapattach knows what ch's filters do, for a message. */
static const char *source(const struct seccomp_chain *ch)
{
	if (!ch->outcomes)
		return "";
	if (ch->outcomes[0] & SECCOMP_O_BAD)
		return ", which heapattach can neither read nor probe";
	return ", learnt from a throwaway copy: heapattach cannot read it";
}

/* The one-line refusal: the filters of chain ch do o to call c. */
static int refuse(char *why, size_t whylen, const struct seccomp_params *pp,
		  const struct seccomp_chain *ch, unsigned o, const struct seccomp_call *c)
{
	snprintf(why, whylen, "cannot attach to %d: its seccomp filter (thread %d%s) %s %s, "
		 "which heapattach needs %s", (int)pp->pid, (int)ch->tid, source(ch), verb(o),
		 c->name, c->what);
	return -EPERM;
}

int seccomp_plan_decide(struct seccomp_chain *chains, size_t n,
			const struct seccomp_params *pp, struct seccomp_plan *plan,
			char *why, size_t whylen)
{
	struct seccomp_call c[SC_NCALLS];
	unsigned *oc, u[SC_NCALLS] = { 0 };
	const struct seccomp_chain *clock_ch = NULL, *getpid_ch = NULL;
	size_t memfd_n = 0, anon_n = 0;
	int rc = 0, bad;

	memset(plan, 0, sizeof(*plan));
	why[0] = '\0';
	for (size_t k = 0; k < n; k++)
		plan->filtered |= chains[k].n > 0 || chains[k].outcomes;
	if (!plan->filtered)
		return 0;
	plan->remote_listed = 1;
	seccomp_plan_calls(pp, c);
	oc = xcalloc(n * SC_NCALLS, sizeof(*oc));
	for (size_t k = 0; k < n; k++) {
		unsigned *o = &oc[k * SC_NCALLS];

		for (int i = 0; i < SC_NCALLS; i++) {
			o[i] = judge(&chains[k], i, &c[i]);
			u[i] |= o[i];
		}
		if (!clock_ch && !SURE(o, SC_CLOCK))
			clock_ch = &chains[k];
		if (!getpid_ch && FATAL(o, SC_GETPID))
			getpid_ch = &chains[k];
		/* remote calls run in one thread: those whose filters allow them */
		if (remote_bad(o, pp) < 0) {
			memfd_n += memfd_way(o);
			anon_n += !UNUSABLE(o, SC_MMAP_ANON);
		}
	}
	/* the agent's calls run in any thread: every chain counts */
	if (pp->fast && pp->exact && !SURE(u, SC_CLOCK)) {
		rc = refuse(why, whylen, pp, clock_ch, u[SC_CLOCK], &c[SC_CLOCK]);
		goto out;
	}
	if (!pp->fast && getpid_ch) {
		rc = refuse(why, whylen, pp, getpid_ch, u[SC_GETPID], &c[SC_GETPID]);
		goto out;
	}
	if (!memfd_n && !anon_n) {
		bad = remote_bad(oc, pp);	/* the first chain's reason */
		rc = refuse(why, whylen, pp, &chains[0], oc[bad], &c[bad]);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		const unsigned *o = &oc[k * SC_NCALLS];
		int ok = remote_bad(o, pp) < 0 && (memfd_n ? memfd_way(o) : !UNUSABLE(o, SC_MMAP_ANON));

		chains[k].remote_ok = ok;
		if (ok && memfd_n && FATAL(o, SC_MMAP_ANON))
			plan->inject_flags |= INJECT_F_NO_ANON;
		if (!ok)
			note_add(plan, "no remote calls in thread", chains[k].tid, c, -1, u);
	}
	if (!memfd_n) {
		plan->inject_flags |= INJECT_F_ANON;
		note_add(plan, "shared anonymous memory instead of a memfd", 0, c,
			 FATAL(u, SC_MEMFD_EXEC) ? SC_MEMFD_EXEC : FATAL(u, SC_MEMFD) ? SC_MEMFD :
			 UNUSABLE(u, SC_MMAP_MEMFD) ? SC_MMAP_MEMFD :
			 UNUSABLE(u, SC_CLOSE) ? SC_CLOSE : SC_MEMFD, u);
	}
	if (plan->inject_flags & INJECT_F_NO_ANON)
		note_add(plan, "no shared anonymous fallback", 0, c, SC_MMAP_ANON, u);
	if (!pp->fast)
		goto out;
	if (!SURE(u, SC_GETTID) || !SURE(u, SC_VM_READV)) {
		plan->no_stack_copy = 1;
		note_add(plan, "no stack copies", 0, c, SURE(u, SC_GETTID) ? SC_VM_READV : SC_GETTID,
			 u);
	}
	if (!SURE(u, SC_FUTEX_WAKE) || !SURE(u, SC_FUTEX_WAIT)) {
		plan->shm_flags |= SHM_F_NO_FUTEX;
		note_add(plan, "the agent makes no futex calls", 0, c,
			 SURE(u, SC_FUTEX_WAKE) ? SC_FUTEX_WAIT : SC_FUTEX_WAKE, u);
	}
	if (!SURE(u, SC_YIELD)) {
		plan->shm_flags |= SHM_F_NO_YIELD;
		note_add(plan, "the agent does not yield", 0, c, SC_YIELD, u);
	}
	if (!SURE(u, SC_POPULATE)) {
		plan->shm_flags |= SHM_F_NO_POPULATE;
		note_add(plan, "rings mapped in by page faults", 0, c, SC_POPULATE, u);
	}
	/* calling jemalloc or tcmalloc for its statistics may wait on its locks */
	if (!SURE(u, SC_LOCK_WAIT) || !SURE(u, SC_LOCK_WAKE)) {
		plan->no_alloc_stats = 1;
		note_add(plan, "no calls for jemalloc's or tcmalloc's statistics", 0, c,
			 SURE(u, SC_LOCK_WAIT) ? SC_LOCK_WAKE : SC_LOCK_WAIT, u);
	}
out:
	free(oc);
	return rc;
}
