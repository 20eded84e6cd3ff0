/* Reading the target's seccomp state: each thread's mode and filters, for seccomp_plan_decide. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "proc.h"
#include "seccomp_plan.h"
#include "sys_compat.h"
#include "tracee.h"
#include "xmalloc.h"

#define MAX_FILTERS 1024	/* the kernel caps a chain at 32768 instructions in all */

/* Free the programs of chain c. */
static void chain_free(struct seccomp_chain *c)
{
	for (size_t i = 0; i < c->n; i++)
		free((void *)c->progs[i].insns);
	free(c->progs);
	memset(c, 0, sizeof(*c));
}

/* Whether chains a and b hold the same programs. */
static int chain_same(const struct seccomp_chain *a, const struct seccomp_chain *b)
{
	if (a->n != b->n)
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

/* Index of c among chains[0..*n) (c added, or freed as a duplicate). */
static size_t chain_add(struct seccomp_chain **chains, size_t *n, struct seccomp_chain *c)
{
	for (size_t k = 0; k < *n; k++)
		if (chain_same(&(*chains)[k], c)) {
			chain_free(c);
			return k;
		}
	*chains = xrealloc(*chains, (*n + 1) * sizeof(**chains));
	(*chains)[*n] = *c;
	return (*n)++;
}

int seccomp_plan_make(struct tracee *tr, const struct seccomp_params *pp,
		      struct seccomp_plan *plan)
{
	struct seccomp_chain *chains = NULL, c;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	size_t n = 0, *of = xcalloc(tr->n + 1, sizeof(*of));	/* chain of each thread */
	size_t filtered = 0;
	char why[512];
	int rc = 0;

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
		if (rc) {
			pr_err("cannot attach to %d: thread %d runs under a seccomp filter that "
			       "heapattach cannot read (%s%s), so it cannot tell which system "
			       "calls the filter kills", (int)pp->pid, (int)tid, strerror(-rc),
			       rc == -EACCES ? ": reading one needs CAP_SYS_ADMIN and no seccomp "
			       "filter on heapattach itself" : "");
			chain_free(&c);
			rc = -EPERM;
			break;
		}
		filtered += c.n > 0;
		of[i] = chain_add(&chains, &n, &c);	/* no filter: the empty chain */
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
