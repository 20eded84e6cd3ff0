/* Test tool: learn rules for the stacks of a stopped process, check table walks against the unwinder. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "stacks/frametab.h"
#include "ptrace/tracee.h"
#include "stacks/unwind.h"
#include "testtarget.h"

/*
 * Usage: ftcheck PID [ROUNDS]
 * Stops every thread of PID (ptrace), and for each: unwinds its stack with
 * the libunwind-ptrace unwinder, learns a rule for every frame (the first,
 * the thread's rip, as an exact pc), then walks the stack again using only
 * the table, reading the target's memory the way the agent reads its own.
 * Prints one line per thread. ROUNDS > 1 resumes the target for 50 ms
 * between rounds. Exit 0 when every walk agrees with the unwinder up to the
 * point where a frame has no representable rule, 1 on a disagreement,
 * 77 when ptrace is not permitted, 2 on a usage error.
 */

#define MAXF 128

/* One word of the target's memory: 0 or -EFAULT. */
static int read_word(pid_t pid, uint64_t addr, uint64_t *out)
{
	struct iovec l = { .iov_base = out, .iov_len = 8 };
	struct iovec r = { .iov_base = (void *)(uintptr_t)addr, .iov_len = 8 };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == 8 ? 0 : -EFAULT;
}

/* Walk from the live registers with the table only. Returns the number of
 * frames; *how says why it stopped: "end", "miss" or "fault". */
static int table_walk(pid_t pid, const struct shm_frame *tab, const struct user_regs_struct *r,
		      uint64_t *chain, const char **how)
{
	uint64_t ip = r->rip, sp = r->rsp, bp = r->rbp;
	int n = 0;

	*how = "depth";
	while (n < MAXF) {
		const struct shm_frame *f = frametab_lookup(tab, ip);
		uint64_t cfa;

		chain[n++] = ip;
		if (!f) {
			*how = "miss";
			break;
		}
		if (f->base == SHM_BASE_END) {
			*how = "end";
			break;
		}
		cfa = (f->base == SHM_BASE_RSP ? sp : bp) + f->cfa_off;
		if ((f->rbp_saved && read_word(pid, cfa + f->rbp_off, &bp)) ||
		    read_word(pid, cfa - 8, &ip)) {
			*how = "fault";
			break;
		}
		sp = cfa;
	}
	return n;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Leave signal stops stopped (the signal is delivered on detach), drop exits. */
static int on_event(void *arg, pid_t tid, int status)
{
	struct tracee *tr = arg;
	struct thread *th = tracee_find(tr, tid);

	if (!th)
		return 0;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		tracee_remove(tr, tid);
		return 0;
	}
	th->state = TS_STOPPED;
	if (WIFSTOPPED(status) && !(status >> 16))
		th->pending_sig = WSTOPSIG(status);
	return 0;
}

/* One thread: 0 agree, 1 disagree. */
static int check_thread(struct frametab *ft, const struct shm_frame *tab, struct unwinder *uw,
			pid_t pid, pid_t tid, double *learn_us, int *nlearned)
{
	uint64_t pcs[MAXF], chain[MAXF];
	struct user_regs_struct r;
	struct unwind_regs st;
	const char *how;
	int n, m, k, bad = 0;
	double t0;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0) {
		printf("tid %d: no registers: %s\n", (int)tid, strerror(errno));
		return 0;
	}
	unwind_regs_from_live(&r, &st);
	n = unwind_stack(uw, tid, &st, pcs, MAXF, 0, 0);
	if (n <= 0) {
		printf("tid %d: unwinder failed: %d\n", (int)tid, n);
		return 0;
	}
	t0 = now_us();
	*nlearned += frametab_learn_flags(ft, pcs[0], FRAMETAB_IP_EXACT) == 1;
	*nlearned += frametab_learn_many(ft, pcs + 1, (size_t)n - 1);
	*learn_us += now_us() - t0;
	m = table_walk(pid, tab, &r, chain, &how);
	for (k = 0; k < n && k < m; k++)
		if (chain[k] != pcs[k])
			break;
	/* agree: same prefix, and the walk only stops early at a frame without a rule */
	if (k < m && k < n)
		bad = 1;
	else if (m > n)
		bad = 1;
	else if (m < n && strcmp(how, "miss"))
		bad = 1;
	printf("tid %d: unwinder %d frames, table %d frames (%s)%s\n", (int)tid, n, m, how,
	       bad ? ": MISMATCH" : "");
	if (bad)
		for (int i = 0; i < n || i < m; i++)
			printf("  %2d  0x%016llx  0x%016llx\n", i,
			       i < n ? (unsigned long long)pcs[i] : 0ULL,
			       i < m ? (unsigned long long)chain[i] : 0ULL);
	return bad;
}

int main(int argc, char **argv)
{
	struct shm_frame *tab = calloc(SHM_NFRAMES, sizeof(*tab));
	struct frametab_stats fst;
	struct tracee tr = { 0 };
	struct frametab *ft = NULL;
	struct unwinder *uw = NULL;
	int rounds, ret = 0, rc, nlearned = 0;
	double learn_us = 0;
	pid_t pid;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: ftcheck PID [ROUNDS]\n");
		return 2;
	}
	pid = atoi(argv[1]);
	rounds = argc > 2 ? atoi(argv[2]) : 1;
	rc = tracee_check(pid);
	if (rc)
		return rc == -EPERM ? 77 : 1;
	ft = testtarget_frametab(pid, tab);
	uw = testtarget_unwinder(pid);
	if (!tab || !ft || !uw) {
		ret = 1;
		goto out;
	}
	rc = tracee_seize(&tr, pid);
	if (rc) {
		fprintf(stderr, "seize %d: %s\n", (int)pid, strerror(-rc));
		ret = rc == -EPERM ? 77 : 1;
		goto out;
	}
	for (int round = 0; round < rounds; round++) {
		if (round) {
			tracee_resume_all(&tr);
			usleep(50000);
		}
		rc = tracee_stop_all(&tr, on_event, &tr);
		if (rc) {
			fprintf(stderr, "stop: %s\n", strerror(-rc));
			ret = 1;
			break;
		}
		for (size_t i = 0; i < tr.n; i++)
			ret |= check_thread(ft, tab, uw, pid, tr.t[i].tid, &learn_us, &nlearned);
	}
	tracee_detach_all(&tr);
	frametab_get_stats(ft, &fst);
	printf("learned %d rules in %.0f us (%.1f us each incl. object opens); %llu objects, "
	       "%llu unrepresentable, %llu present, %llu skipped (full)\n",
	       nlearned, learn_us, nlearned ? learn_us / nlearned : 0.0,
	       (unsigned long long)fst.objects, (unsigned long long)fst.unrepresentable,
	       (unsigned long long)fst.present, (unsigned long long)fst.full);
out:
	tracee_release(&tr);
	testtarget_unwinder_free(uw);
	testtarget_frametab_free(ft);
	free(tab);
	return ret;
}
