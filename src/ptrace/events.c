/* Dispatch of ptrace stops: new threads, children, exec, exit, signals and our traps. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "base/log.h"
#include "model/proc.h"
#include "ptrace/events.h"

/* ---- the kernel's side ---- */

static int sys_event_msg(pid_t tid, unsigned long *msg)
{
	return ptrace(PTRACE_GETEVENTMSG, tid, 0, msg) < 0 ? -errno : 0;
}

static pid_t sys_tgid(pid_t tid)
{
	char val[32];
	int rc = proc_status_read(tid, "Tgid", val, sizeof(val));

	return rc ? rc : atoi(val);
}

/* Wait for a new child's first stop. 0, or -1 if it did not stop. */
static int sys_first_stop(pid_t child)
{
	int status;
	pid_t w;

	do
		w = waitpid(child, &status, __WALL);
	while (w < 0 && errno == EINTR);
	return w == child && WIFSTOPPED(status) ? 0 : -1;
}

static void sys_detach(pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, 0, 0);
}

static void sys_interrupt_after(pid_t tid)
{
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	ptrace(PTRACE_CONT, tid, 0, 0);
}

const struct events_sys events_sys_ptrace = {
	.event_msg = sys_event_msg,
	.tgid = sys_tgid,
	.alive = tracee_thread_alive,
	.first_stop = sys_first_stop,
	.detach = sys_detach,
	.interrupt_after = sys_interrupt_after,
};

static const struct events_sys *sys_of(const struct events *s)
{
	return s->sys ? s->sys : &events_sys_ptrace;
}

/* ---- bookkeeping ---- */

/* Leave th stopped while the tracer is stopping everyone, else resume it. */
static int settle(struct events *s, struct thread *th)
{
	th->state = TS_STOPPED;
	if (!tracee_stopping)
		tracee_resume(s->tr, th);	/* -ESRCH: its exit will be reported */
	return 0;
}

/* The thread the process is read through (s->reader) is exiting: read it
 * through another one (a leader's /proc/PID/maps and mem go empty when it
 * exits before its other threads). */
static void proc_tid_leaves(struct events *s, pid_t tid)
{
	if (tid != s->reader)
		return;
	for (size_t i = 0; i < s->tr->n; i++)
		if (s->tr->t[i].tid != tid && !s->tr->t[i].vfork_child) {
			s->reader = s->tr->t[i].tid;
			if (s->ops->reader_moved)
				s->ops->reader_moved(s->arg, s->reader);
			pr_debug("reading %d through thread %d from now on", s->pid, s->reader);
			return;
		}
}

/* A forked child, stopped before running, is a copy of the target with our
 * jumps in its private text and our mappings: undo both, then let it go. */
static void release_fork_child(struct events *s, pid_t child)
{
	if (s->ops->fork_child)
		s->ops->fork_child(s->arg, child);
	sys_of(s)->detach(child);
	pr_debug("released forked child %d", child);
}

/* The first stop of a new thread of the target: it has not run yet. */
static void first_stop(struct events *s, struct thread *th)
{
	th->fresh = 0;
	th->state = TS_STOPPED;
	if (s->ops->new_thread)
		s->ops->new_thread(s->arg, th);
}

/* A tid we do not know yet: a new thread whose clone event has not been
 * seen, or a vfork child; fork children are handled at their fork event. */
static int unknown_tid(struct events *s, pid_t tid, int status)
{
	struct thread *th;

	if (!WIFSTOPPED(status))
		return 0;
	if (sys_of(s)->tgid(tid) == s->pid) {
		th = tracee_add(s->tr, tid, TS_STOPPED);
		first_stop(s, th);
		return settle(s, th);
	}
	/* A child process that stopped before its parent's event: keep it until
	 * that event says whether it shares our memory. */
	th = tracee_add(s->tr, tid, TS_STOPPED);
	th->vfork_child = 2;	/* not yet classified */
	return 0;
}

static int on_ptrace_event(struct events *s, struct thread *th, int status)
{
	const struct events_sys *sys = sys_of(s);
	unsigned long msg = 0;
	int ev = status >> 16;
	pid_t child;
	struct thread *c;

	sys->event_msg(th->tid, &msg);
	child = (pid_t)msg;
	switch (ev) {
	case PTRACE_EVENT_CLONE:
		/* The child's own stops may all have come first, exit included. */
		if (!tracee_find(s->tr, child) && sys->alive(s->pid, child)) {
			tracee_add(s->tr, child, TS_RUNNING)->fresh = 1;
			th = tracee_find(s->tr, th->tid);
		}
		break;
	case PTRACE_EVENT_FORK:
		if (tracee_find(s->tr, child)) {
			/* Its first stop came earlier: it is stopped. */
			tracee_remove(s->tr, child);
			th = tracee_find(s->tr, th->tid);
			release_fork_child(s, child);
		} else if (sys->first_stop(child) == 0) {
			release_fork_child(s, child);
		}
		break;
	case PTRACE_EVENT_VFORK:
		c = tracee_find(s->tr, child);
		if (c) {
			c->vfork_child = 1;
			if (c->state == TS_STOPPED && !tracee_stopping)
				tracee_resume(s->tr, c);
		} else {
			c = tracee_add(s->tr, child, TS_RUNNING);
			c->vfork_child = 1;
		}
		th = tracee_find(s->tr, th->tid);
		break;
	case PTRACE_EVENT_EXEC:
		if (th->vfork_child) {
			/* The vfork child now has its own image: let it go. */
			sys->detach(th->tid);
			tracee_remove(s->tr, th->tid);
			return 0;
		}
		s->exec_seen = 1;
		th->state = TS_STOPPED;
		return 0;
	case PTRACE_EVENT_EXIT:
		th->exiting = 1;
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
	struct events *s = arg;
	struct thread *th = tracee_find(s->tr, tid);
	int sig, rc;

	if (!th)
		return unknown_tid(s, tid, status);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		s->exit_status = status;	/* the last thread's says how the process ended */
		tracee_remove(s->tr, tid);
		proc_tid_leaves(s, tid);
		if (!s->tr->n || tid == s->pid) {
			int others = 0;

			for (size_t i = 0; i < s->tr->n; i++)
				others += !s->tr->t[i].vfork_child;
			if (!others)
				s->gone = 1;
		}
		return 0;
	}
	if (!WIFSTOPPED(status))
		return 0;
	if (th->fresh) {
		first_stop(s, th);
		th = tracee_find(s->tr, tid);
	}
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
		rc = s->ops->syscall_stop ? s->ops->syscall_stop(s->arg, tid, !th->vfork_child) : 0;
		if (rc < 0 && rc != -ESRCH)
			pr_debug("trap in %d: %d", tid, rc);
		th = tracee_find(s->tr, tid);
		if (!th)
			return 0;
		th->pending_sig = 0;
		if (tracee_stopping && th->interrupted) {
			/* No place for remote syscalls: stop it again once the
			 * syscall is done (this stop used up the interrupt). */
			th->state = TS_RUNNING;
			sys_of(s)->interrupt_after(tid);
			return 0;
		}
	} else if ((sig == SIGSEGV || sig == SIGBUS) && s->ops->fault_stop &&
		   s->ops->fault_stop(s->arg, tid) > 0) {
		th->pending_sig = 0;	/* the agent's load, taken back */
	} else {
		th->pending_sig = sig;	/* pass every other signal on unchanged */
	}
	return settle(s, th);
}
