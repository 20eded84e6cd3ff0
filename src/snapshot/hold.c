/* Holding a snapshot's target: stopped once no vfork is in flight, let go even when a thread cannot stop, the stop signals and the waits' tick. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "snapshot/copysafe.h"
#include "snapshot/hold.h"

/* Waiting for a vfork in flight to end: tries VFORK_STEP_MS apart while the
 * target runs, then fewer once it is seized (its other threads stopping). */
#define VFORK_STEP_MS 10
#define VFORK_TRIES_RUNNING 20
#define VFORK_TRIES_SEIZED 3
#define STOP_ROUNDS 3                   /* seizes, when a vfork began as the target was seized */
#define RELEASE_TRIES 100               /* 1 ms apart: threads still to enter their stop */
#define TICK_MS 10                      /* SIGALRM while waiting for stops */

volatile sig_atomic_t snaphold_stop_asked;

static void on_stop_signal(int sig)
{
	snaphold_stop_asked = sig;
}

static void on_tick(int sig)
{
	(void)sig;
}

void snaphold_tick(int on)
{
	static struct sigaction old;
	struct itimerval it = { { 0, TICK_MS * 1000 }, { 0, TICK_MS * 1000 } };
	struct sigaction sa;

	if (!on) {
		memset(&it, 0, sizeof(it));
		setitimer(ITIMER_REAL, &it, NULL);
		sigaction(SIGALRM, &old, NULL);
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_tick;
	sigaction(SIGALRM, &sa, &old);
	setitimer(ITIMER_REAL, &it, NULL);
}

void snaphold_catch_signals(int on, struct sigaction old[3])
{
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;
	sigset_t set;

	sigemptyset(&set);
	for (int i = 0; i < 3; i++) {
		sigaddset(&set, sigs[i]);
		if (!on)
			sigaction(sigs[i], &old[i], NULL);
	}
	if (!on)
		return;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	sigprocmask(SIG_UNBLOCK, &set, NULL);	/* one held since before the exec comes now */
}

/*
 * Wait up to tries x VFORK_STEP_MS for the vfork in flight in pid
 * (copysafe_vfork) to end: the first one seen (first_only: the target
 * runs, and may vfork again at once; the seize that follows then holds
 * the parent thread as its child ends), or every one (the target seized:
 * none can begin). 0 when it has (or pid's children cannot be listed:
 * said with -v), 1 with *tid and *child when one is still in flight.
 */
static int vfork_wait(pid_t pid, int tries, int first_only, pid_t *tid, pid_t *child)
{
	pid_t first = 0;
	int i, rc = 0;

	for (i = 0; i <= tries; i++) {
		rc = copysafe_vfork(pid, tid, child);
		if (rc <= 0 || (first_only && first && *child != first)) {
			rc = rc > 0 ? 0 : rc;
			break;
		}
		first = *child;
		if (i < tries)
			usleep(VFORK_STEP_MS * 1000);
	}
	if (rc < 0)
		pr_debug("snapshot: the children of %d cannot be listed (%s): a vfork in flight "
			 "would not be seen", pid, strerror(-rc));
	else if (i)
		pr_debug("snapshot: waited %d ms for thread %d's vfork (child %d) %s",
			 (i < tries ? i : tries) * VFORK_STEP_MS, (int)*tid, (int)*child,
			 rc ? "in vain" : "to end");
	return rc > 0;
}

void snaphold_release(struct tracee *tr)
{
	for (int k = 0; k <= RELEASE_TRIES; k++) {
		size_t left = 0;

		for (size_t i = 0; i < tr->n; i++) {
			struct thread *th = &tr->t[i];
			int sig = th->pending_sig > 0 ? th->pending_sig : 0;

			if (!th->tid)
				continue;
			if (ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)sig) == 0 || errno != ESRCH ||
			    !tracee_thread_alive(tr->pid, th->tid))
				th->tid = 0;
			else
				left++;
		}
		if (!left)
			break;
		usleep(1000);
	}
	tr->n = 0;
}

int snaphold_stop(pid_t pid, int interruptible, struct tracee *tr, struct events *ev, char *why,
		  size_t len, uint64_t *t0)
{
	pid_t vt = 0, vc = 0;
	int rc;

	for (int round = 0;; round++) {
		if (vfork_wait(pid, VFORK_TRIES_RUNNING, 1, &vt, &vc)) {
			snprintf(why, len, "its thread %d is in vfork: its child %d shares its "
				 "memory and has not exec'd or exited in %d ms (%d was not stopped)",
				 (int)vt, (int)vc, VFORK_TRIES_RUNNING * VFORK_STEP_MS, pid);
			return -EBUSY;
		}
		if (interruptible && snaphold_stop_asked) {
			snprintf(why, len, "interrupted");
			return -EINTR;
		}
		if (!round)
			*t0 = clock_ns(CLOCK_MONOTONIC);
		rc = tracee_seize(tr, pid);
		if (rc) {
			why[0] = '\0';	/* said */
			return rc;
		}
		if (!vfork_wait(pid, VFORK_TRIES_SEIZED, 0, &vt, &vc))
			break;
		snaphold_release(tr);
		tracee_release(tr);
		if (round + 1 == STOP_ROUNDS) {
			snprintf(why, len, "its thread %d vforked as it was being stopped, %d times: "
				 "its child %d shares its memory and has not exec'd or exited in %d "
				 "ms", (int)vt, STOP_ROUNDS, (int)vc,
				 VFORK_TRIES_SEIZED * VFORK_STEP_MS);
			return -EBUSY;
		}
		pr_debug("snapshot: %d let go (a vfork as it was seized), seized again", pid);
	}
	snaphold_tick(1);
	rc = tracee_stop_all(tr, events_dispatch, ev);
	snaphold_tick(0);
	if (rc || ev->gone) {
		snprintf(why, len, "cannot stop it: %s", ev->gone ? "it exited" :
			 rc == -ETIMEDOUT ? "a thread does not stop (in uninterruptible sleep?)" :
			 strerror(-rc));
		snaphold_release(tr);
		return rc ? rc : -ESRCH;
	}
	return 0;
}
