/* Dispatch of ptrace stops: new threads, children, exec, exit, signals and our traps. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "agentlink.h"
#include "collect.h"
#include "events.h"
#include "forkchild.h"
#include "log.h"
#include "proc.h"
#include "session.h"
#include "unwind.h"

/* Leave th stopped while the tracer is stopping everyone, else resume it. */
static int settle(struct session *s, struct thread *th)
{
	th->state = TS_STOPPED;
	if (!tracee_stopping)
		tracee_resume(&s->tr, th);	/* -ESRCH: its exit will be reported */
	return 0;
}

/* The thread the process is read through (s->proc_tid) is exiting: read
 * it through another one (a leader's /proc/PID/maps and mem go empty when
 * it exits before its other threads). */
static void proc_tid_leaves(struct session *s, pid_t tid)
{
	if (tid != s->proc_tid)
		return;
	for (size_t i = 0; i < s->tr.n; i++)
		if (s->tr.t[i].tid != tid && !s->tr.t[i].vfork_child) {
			s->proc_tid = s->tr.t[i].tid;
			if (s->unw)
				unwinder_set_pid(s->unw, s->proc_tid);
			if (s->link)
				agent_link_set_pid(s->link, s->proc_tid);
			pr_debug("reading %d through thread %d from now on", s->pid, s->proc_tid);
			return;
		}
}

/* A forked child, stopped before running, is a copy of the target with our
 * jumps in its private text and our mappings: undo both, then let it go. */
static void release_fork_child(struct session *s, pid_t child)
{
	forkchild_clean(s->im, s->pid, child);
	ptrace(PTRACE_DETACH, child, 0, 0);
	pr_debug("released forked child %d", child);
}

/* Wait for a new child's first stop. 0, or -1 if it did not stop. */
static int wait_first_stop(pid_t child)
{
	int status;
	pid_t w;

	do
		w = waitpid(child, &status, __WALL);
	while (w < 0 && errno == EINTR);
	return w == child && WIFSTOPPED(status) ? 0 : -1;
}

/* A tid we do not know yet: a new thread whose clone event has not been
 * seen, or a vfork child; fork children are handled at their fork event. */
static int unknown_tid(struct session *s, pid_t tid, int status)
{
	char val[32];
	struct thread *th;

	if (!WIFSTOPPED(status))
		return 0;
	if (proc_status_read(tid, "Tgid", val, sizeof(val)) == 0 && atoi(val) == s->pid) {
		th = tracee_add(&s->tr, tid, TS_STOPPED);
		return settle(s, th);
	}
	/* A child process that stopped before its parent's event: keep it until
	 * that event says whether it shares our memory. */
	th = tracee_add(&s->tr, tid, TS_STOPPED);
	th->vfork_child = 2;	/* not yet classified */
	return 0;
}

static int on_ptrace_event(struct session *s, struct thread *th, int status)
{
	unsigned long msg = 0;
	int ev = status >> 16;
	pid_t child;
	struct thread *c;

	ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg);
	child = (pid_t)msg;
	switch (ev) {
	case PTRACE_EVENT_CLONE:
		/* The child's own stops may all have come first, exit included. */
		if (!tracee_find(&s->tr, child) && tracee_thread_alive(s->pid, child)) {
			tracee_add(&s->tr, child, TS_RUNNING);
			th = tracee_find(&s->tr, th->tid);
		}
		break;
	case PTRACE_EVENT_FORK:
		if (tracee_find(&s->tr, child)) {
			/* Its first stop came earlier: it is stopped. */
			tracee_remove(&s->tr, child);
			th = tracee_find(&s->tr, th->tid);
			release_fork_child(s, child);
		} else if (wait_first_stop(child) == 0) {
			release_fork_child(s, child);
		}
		break;
	case PTRACE_EVENT_VFORK:
		c = tracee_find(&s->tr, child);
		if (c) {
			c->vfork_child = 1;
			if (c->state == TS_STOPPED && !tracee_stopping)
				tracee_resume(&s->tr, c);
		} else {
			c = tracee_add(&s->tr, child, TS_RUNNING);
			c->vfork_child = 1;
		}
		th = tracee_find(&s->tr, th->tid);
		break;
	case PTRACE_EVENT_EXEC:
		if (th->vfork_child) {
			/* The vfork child now has its own image: let it go. */
			ptrace(PTRACE_DETACH, th->tid, 0, 0);
			tracee_remove(&s->tr, th->tid);
			return 0;
		}
		s->exec_seen = 1;
		th->state = TS_STOPPED;
		return 0;
	case PTRACE_EVENT_EXIT:
		proc_tid_leaves(s, th->tid);
		break;
	case PTRACE_EVENT_STOP:
	default:
		break;
	}
	return settle(s, th);
}

int events_dispatch(void *arg, pid_t tid, int status)
{
	struct session *s = arg;
	struct thread *th = tracee_find(&s->tr, tid);
	int sig, rc;

	if (!th)
		return unknown_tid(s, tid, status);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		s->exit_status = status;	/* the last thread's says how the process ended */
		tracee_remove(&s->tr, tid);
		proc_tid_leaves(s, tid);
		if (!s->tr.n || tid == s->pid) {
			int others = 0;

			for (size_t i = 0; i < s->tr.n; i++)
				others += !s->tr.t[i].vfork_child;
			if (!others)
				s->target_gone = 1;
		}
		return 0;
	}
	if (!WIFSTOPPED(status))
		return 0;
	sig = WSTOPSIG(status);
	if (status >> 16) {
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			th->interrupted = 0;
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
				th->pending_sig = -1;	/* group stop: PTRACE_LISTEN */
		}
		return on_ptrace_event(s, th, status);
	}
	if (sig == (SIGTRAP | 0x80)) {
		/* A syscall-stop (trap mode): maybe one of our traps. */
		rc = collect_trap(&s->trap, tid, !th->vfork_child);
		if (rc < 0 && rc != -ESRCH)
			pr_debug("trap in %d: %d", tid, rc);
		th = tracee_find(&s->tr, tid);
		if (!th)
			return 0;
		th->pending_sig = 0;
		if (tracee_stopping && th->interrupted) {
			/* No place for remote syscalls: stop it again once the
			 * syscall is done (this stop used up the interrupt). */
			th->state = TS_RUNNING;
			ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			ptrace(PTRACE_CONT, tid, 0, 0);
			return 0;
		}
	} else {
		th->pending_sig = sig;	/* pass every signal on unchanged */
	}
	return settle(s, th);
}
