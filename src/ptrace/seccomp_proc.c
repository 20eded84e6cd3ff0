/* Reading the target's seccomp state: each thread's mode and filters, for seccomp_plan_decide. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sys_compat.h"
#include "base/xmalloc.h"
#include "model/proc.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/seccomp_probe.h"
#include "ptrace/tracee.h"

#define MAX_FILTERS 1024	/* the kernel caps a chain at 32768 instructions in all */

/* Free the programs (or outcomes) of chain c. */
static void chain_free(struct seccomp_chain *c)
{
	for (size_t i = 0; i < c->n; i++)
		free((void *)c->progs[i].insns);
	free(c->progs);
	free(c->outcomes);
	memset(c, 0, sizeof(*c));
}

/* Whether chains a and b hold the same programs (probed ones never do). */
static int chain_same(const struct seccomp_chain *a, const struct seccomp_chain *b)
{
	if (a->n != b->n || a->outcomes || b->outcomes)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->progs[i].len != b->progs[i].len ||
		    memcmp(a->progs[i].insns, b->progs[i].insns,
			   a->progs[i].len * sizeof(struct sock_filter)))
			return 0;
	return 1;
}

/* Fetch every filter of the stopped thread tid into c. 0 or -errno. */
static int chain_fetch(pid_t tid, struct seccomp_chain *c)
{
	memset(c, 0, sizeof(*c));
	c->tid = tid;
	for (unsigned long i = 0;; i++) {
		struct sock_filter *insns;
		long len;

		len = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, NULL);
		if (len < 0 && errno == ENOENT && i)
			return 0;	/* past the last one */
		if (len < 0)
			return -errno;
		if (len == 0 || len > BPF_MAXINSNS || i == MAX_FILTERS)
			return -E2BIG;
		insns = xcalloc((size_t)len, sizeof(*insns));
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, insns) != len) {
			free(insns);
			return errno ? -errno : -EIO;
		}
		c->progs = xrealloc(c->progs, (c->n + 1) * sizeof(*c->progs));
		c->progs[c->n].insns = insns;
		c->progs[c->n].len = (size_t)len;
		c->n++;
	}
}

/* The seccomp mode of thread tid (0, 1 strict, 2 filter), or -errno. */
static int seccomp_mode(pid_t tid)
{
	char val[32];
	int rc = proc_status_read(tid, "Seccomp", val, sizeof(val));

	if (rc == -ENOENT)
		return 0;	/* a kernel without seccomp */
	return rc ? rc : atoi(val);
}

/* The number of filters of thread tid (Seccomp_filters, Linux 5.9+), or -1. */
static long filter_count(pid_t tid)
{
	char val[32];

	return proc_status_read(tid, "Seccomp_filters", val, sizeof(val)) ? -1 : atol(val);
}

/* Add c to chains[0..*n), as it is; its index. */
static size_t chain_push(struct seccomp_chain **chains, size_t *n, struct seccomp_chain *c)
{
	*chains = xrealloc(*chains, (*n + 1) * sizeof(**chains));
	(*chains)[*n] = *c;
	return (*n)++;
}

#define UNREAD (SIZE_MAX - 1)	/* of[i]: a thread whose filters cannot be read */

/*
 * Chains for the threads whose filters heapattach cannot read (of[i] ==
 * UNREAD; err the first error): one learnt by a probe forked from one of
 * them (those with the fewest filters are tried, the leader first), for
 * every such thread with as many filters (taken to be the same ones: a
 * thread that added its own has more); the others get a chain of unknowns
 * (SECCOMP_O_BAD: no remote calls there, and none of the agent's optional
 * calls anywhere). 0, or -EPERM after one message.
 */
static int probe_unread(struct tracee *tr, const struct seccomp_params *pp, size_t *of,
			struct seccomp_chain **chains, size_t *n, int err)
{
	long *cnt = xcalloc(tr->n, sizeof(*cnt)), min = -1;
	struct seccomp_chain pc = { 0 }, uc = { 0 };
	size_t kp = 0, ku = SIZE_MAX;
	pid_t first = 0;
	char why[256] = "";
	int rc = -EAGAIN;

	for (size_t i = 0; i < tr->n; i++) {
		if (of[i] != UNREAD)
			continue;
		cnt[i] = filter_count(tr->t[i].tid);
		if (cnt[i] >= 0 && (min < 0 || cnt[i] < min))
			min = cnt[i];
		if (!first)
			first = tr->t[i].tid;
	}
	pc.outcomes = xcalloc(SC_NCALLS, sizeof(*pc.outcomes));
	if (pp->no_probe)
		snprintf(why, sizeof(why), "--no-seccomp-probe");
	/* pass 0: the leader; pass 1: the other threads with the fewest */
	for (int pass = 0; pass < 2 && rc == -EAGAIN && !pp->no_probe; pass++)
		for (size_t i = 0; i < tr->n && rc == -EAGAIN; i++) {
			if (of[i] != UNREAD || cnt[i] != min || (tr->t[i].tid == pp->pid) == pass)
				continue;
			pc.tid = tr->t[i].tid;
			rc = seccomp_probe_run(pp->pid, pc.tid, pp, pc.outcomes, why, sizeof(why));
		}
	if (rc) {
		pr_err("cannot attach to %d: thread %d runs under a seccomp filter that heapattach "
		       "cannot read (%s: reading one needs CAP_SYS_ADMIN and no seccomp filter on "
		       "heapattach itself), nor learn from a throwaway copy (%s)", (int)pp->pid,
		       (int)first, strerror(-err), why[0] ? why : "no thread has room below its "
		       "stack for one");
		free(pc.outcomes);
		free(cnt);
		return -EPERM;
	}
	kp = chain_push(chains, n, &pc);
	for (size_t i = 0; i < tr->n; i++) {
		if (of[i] != UNREAD)
			continue;
		if (tr->t[i].tid == pc.tid || (min >= 0 && cnt[i] == min)) {
			of[i] = kp;
			continue;
		}
		if (ku == SIZE_MAX) {
			uc.tid = tr->t[i].tid;
			uc.outcomes = xcalloc(SC_NCALLS, sizeof(*uc.outcomes));
			for (int k = 0; k < SC_NCALLS; k++)
				uc.outcomes[k] = SECCOMP_O_BAD;
			ku = chain_push(chains, n, &uc);
			pr_debug("seccomp: thread %d has other filters than thread %d, probed: "
				 "taken to do anything", (int)uc.tid, (int)pc.tid);
		}
		of[i] = ku;
	}
	free(cnt);
	return 0;
}

/* Index of c among chains[0..*n) (c added, or freed as a duplicate). */
static size_t chain_add(struct seccomp_chain **chains, size_t *n, struct seccomp_chain *c)
{
	for (size_t k = 0; k < *n; k++)
		if (chain_same(&(*chains)[k], c)) {
			chain_free(c);
			return k;
		}
	return chain_push(chains, n, c);
}

int seccomp_plan_make(struct tracee *tr, const struct seccomp_params *pp,
		      struct seccomp_plan *plan)
{
	struct seccomp_chain *chains = NULL, c;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	size_t n = 0, *of = xcalloc(tr->n + 1, sizeof(*of));	/* chain of each thread */
	size_t filtered = 0;
	char why[512];
	int rc = 0, unread = 0;

	memset(plan, 0, sizeof(*plan));
	for (size_t i = 0; i < tr->n && !rc; i++) {
		pid_t tid = tr->t[i].tid;
		int mode;

		memset(&c, 0, sizeof(c));
		c.tid = tid;
		of[i] = SIZE_MAX;
		if (tr->t[i].vfork_child)
			continue;
		mode = seccomp_mode(tid);
		if (mode == -ENOENT || mode == -ESRCH)
			continue;	/* gone */
		if (mode == 1) {
			pr_err("cannot attach to %d: thread %d runs in seccomp strict mode, which "
			       "kills it on any system call heapattach would make it run",
			       (int)pp->pid, (int)tid);
			rc = -EPERM;
			break;
		}
		rc = mode < 0 ? mode : mode ? chain_fetch(tid, &c) : 0;
		if (rc == -ESRCH && !tracee_thread_alive(pp->pid, tid)) {
			rc = 0;
			chain_free(&c);
			continue;
		}
		if (rc && mode == 2) {	/* a filter heapattach may not read: probed */
			chain_free(&c);
			unread = unread ? unread : rc;
			of[i] = UNREAD;
			rc = 0;
			continue;
		}
		if (rc) {
			pr_err("cannot attach to %d: cannot read the seccomp mode of thread %d: %s",
			       (int)pp->pid, (int)tid, strerror(-rc));
			chain_free(&c);
			rc = -EPERM;
			break;
		}
		filtered += c.n > 0;
		of[i] = chain_add(&chains, &n, &c);	/* no filter: the empty chain */
	}
	if (!rc && unread) {
		rc = probe_unread(tr, pp, of, &chains, &n, unread);
		filtered++;
	}
	if (!rc && filtered) {
		rc = seccomp_plan_decide(chains, n, pp, plan, why, sizeof(why));
		if (rc)
			pr_err("%s", why);
		else if (plan->note[0])
			pr_warn("seccomp filter of %d: %s", (int)pp->pid, plan->note);
		for (size_t i = 0; i < tr->n; i++)
			tr->t[i].remote_ok = of[i] != SIZE_MAX && chains[of[i]].remote_ok;
	}
	if (!rc)
		pr_debug("seccomp: %zu distinct filter chain(s) in %d, judged in %.2f ms",
			 filtered ? n : 0, (int)pp->pid, (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	for (size_t k = 0; k < n; k++)
		chain_free(&chains[k]);
	free(chains);
	free(of);
	return rc;
}
