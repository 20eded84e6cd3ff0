/* Unit tests for events.c: ptrace stops of a fake target (made-up threads, the kernel's answers faked). */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "harness.h"
#include "ptrace/events.h"
#include "ptrace/tracee.h"

#define PID	0x3ffff000	/* above pid_max: no ptrace call reaches anything */
#define T1	(PID + 1)
#define T2	(PID + 2)
#define CHILD	(PID + 100)
#define OTHER	(PID + 500)	/* a thread of another process */

/* The faked kernel: answers, and what was asked of it. */
static struct {
	unsigned long msg;      /* PTRACE_GETEVENTMSG */
	pid_t tgid_of_child;    /* Tgid of CHILD (PID for a thread of ours) */
	int alive;
	int stops;              /* first_stop's answer */
	pid_t detached[8];
	int ndetached;
	pid_t interrupted;
	pid_t forked[8];
	int nforked;
	pid_t moved_to;
	pid_t news[8];          /* new_thread calls, in order */
	int nnews;
	pid_t trapped;
	int trap_record;
} k;

static int f_event_msg(pid_t tid, unsigned long *msg)
{
	(void)tid;
	*msg = k.msg;
	return 0;
}

static pid_t f_tgid(pid_t tid)
{
	return tid == CHILD || tid == OTHER ? k.tgid_of_child : PID;
}

static int f_alive(pid_t pid, pid_t tid)
{
	(void)pid;
	(void)tid;
	return k.alive;
}

static int f_first_stop(pid_t child)
{
	(void)child;
	return k.stops ? 0 : -1;
}

static void f_detach(pid_t tid)
{
	if (k.ndetached < 8)
		k.detached[k.ndetached++] = tid;
}

static void f_interrupt_after(pid_t tid)
{
	k.interrupted = tid;
}

static const struct events_sys fake_sys = {
	.event_msg = f_event_msg,
	.tgid = f_tgid,
	.alive = f_alive,
	.first_stop = f_first_stop,
	.detach = f_detach,
	.interrupt_after = f_interrupt_after,
};

static void on_fork_child(void *arg, pid_t child)
{
	(void)arg;
	if (k.nforked < 8)
		k.forked[k.nforked++] = child;
}

static int on_syscall_stop(void *arg, pid_t tid, int record)
{
	(void)arg;
	k.trapped = tid;
	k.trap_record = record;
	return 1;
}

static void on_reader_moved(void *arg, pid_t tid)
{
	(void)arg;
	k.moved_to = tid;
}

/* A new thread at its first stop: stopped, never resumed before this. */
static void on_new_thread(void *arg, struct thread *th)
{
	(void)arg;
	expect_int_eq(th->state, TS_STOPPED);
	if (k.nnews < 8)
		k.news[k.nnews++] = th->tid;
}

static const struct events_ops ops = {
	.fork_child = on_fork_child,
	.syscall_stop = on_syscall_stop,
	.reader_moved = on_reader_moved,
	.new_thread = on_new_thread,
};

static struct tracee tr;
static struct events ev;

/* A target of three stopped threads (PID, T1, T2), read through PID. */
static void setup(void)
{
	tracee_release(&tr);
	memset(&tr, 0, sizeof(tr));
	memset(&k, 0, sizeof(k));
	tr.pid = PID;
	tracee_add(&tr, PID, TS_STOPPED);
	tracee_add(&tr, T1, TS_STOPPED);
	tracee_add(&tr, T2, TS_STOPPED);
	ev = (struct events){ .pid = PID, .reader = PID, .tr = &tr, .ops = &ops, .arg = NULL,
			      .sys = &fake_sys, .exit_status = -1 };
	k.alive = 1;
	k.stops = 1;
	tracee_stopping = 1;	/* leave threads stopped: their bookkeeping shows */
}

#define STOPPED(sig)		(((sig) << 8) | 0x7f)
#define EVENT(e, sig)		((e) << 16 | STOPPED(sig))
#define EXITED(code)		((code) << 8)

static void test_exits(void)
{
	setup();
	/* a thread that is not the reader */
	expect_int_eq(events_dispatch(&ev, T2, EXITED(0)), 0);
	expect_true(!tracee_find(&tr, T2));
	expect_true(!ev.gone);
	expect_int_eq(ev.reader, PID);
	/* the reader: reads go through another thread */
	expect_int_eq(events_dispatch(&ev, PID, EVENT(PTRACE_EVENT_EXIT, SIGTRAP)), 0);
	expect_int_eq(ev.reader, T1);
	expect_int_eq(k.moved_to, T1);
	expect_true(!ev.gone);
	/* the leader's exit with another thread left: not gone yet */
	expect_int_eq(events_dispatch(&ev, PID, EXITED(0)), 0);
	expect_true(!ev.gone);
	/* the last one, killed: gone, and how */
	expect_int_eq(events_dispatch(&ev, T1, SIGKILL), 0);
	expect_true(ev.gone);
	expect_true(WIFSIGNALED(ev.exit_status) && WTERMSIG(ev.exit_status) == SIGKILL);
	expect_int_eq(tr.n, 0);
}

/* The leader exits while only a vfork child is left: the target is gone. */
static void test_exit_vfork_left(void)
{
	struct thread *c;

	setup();
	events_dispatch(&ev, T1, EXITED(0));
	events_dispatch(&ev, T2, EXITED(0));
	c = tracee_add(&tr, CHILD, TS_RUNNING);
	c->vfork_child = 1;
	events_dispatch(&ev, PID, EXITED(3 << 0));
	expect_true(ev.gone);
	expect_true(WIFEXITED(ev.exit_status));
}

static void test_signals(void)
{
	struct thread *th;

	setup();
	/* a signal for the target: passed on unchanged */
	events_dispatch(&ev, T1, STOPPED(SIGUSR1));
	th = tracee_find(&tr, T1);
	expect_int_eq(th->pending_sig, SIGUSR1);
	expect_int_eq(th->state, TS_STOPPED);
	/* a group stop: listened to, not resumed */
	th->interrupted = 1;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_STOP, SIGSTOP));
	expect_int_eq(th->pending_sig, -1);
	expect_int_eq(th->interrupted, 0);
	/* our own interrupt's stop */
	th->pending_sig = 0;
	th->interrupted = 1;
	events_dispatch(&ev, T2, EVENT(PTRACE_EVENT_STOP, SIGTRAP));
	expect_int_eq(tracee_find(&tr, T2)->pending_sig, 0);
	/* resumed when the tracer is not stopping everyone */
	tracee_stopping = 0;
	events_dispatch(&ev, T1, STOPPED(SIGUSR2));
	expect_int_eq(tracee_find(&tr, T1)->state, TS_RUNNING);
	tracee_stopping = 1;
}

static void test_new_threads(void)
{
	setup();
	/* clone event first */
	k.msg = PID + 3;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_CLONE, SIGTRAP));
	expect_true(tracee_find(&tr, PID + 3) && tracee_find(&tr, PID + 3)->state == TS_RUNNING);
	/* its stop after: not added twice */
	events_dispatch(&ev, PID + 3, EVENT(PTRACE_EVENT_STOP, SIGTRAP));
	expect_int_eq(tr.n, 4);
	/* a thread whose stop comes before its clone event */
	events_dispatch(&ev, PID + 4, EVENT(PTRACE_EVENT_STOP, SIGTRAP));
	expect_true(tracee_find(&tr, PID + 4) && !tracee_find(&tr, PID + 4)->vfork_child);
	k.msg = PID + 4;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_CLONE, SIGTRAP));
	expect_int_eq(tr.n, 5);
	/* a clone event for a thread already gone (exited and reaped) */
	k.msg = PID + 5;
	k.alive = 0;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_CLONE, SIGTRAP));
	expect_true(!tracee_find(&tr, PID + 5));
	/* each new thread was shown once, at its first stop, in either order */
	expect_int_eq(k.nnews, 2);
	expect_int_eq(k.news[0], PID + 3);
	expect_int_eq(k.news[1], PID + 4);
	events_dispatch(&ev, PID + 3, STOPPED(SIGUSR1));	/* a later stop: not new */
	expect_int_eq(k.nnews, 2);
	/* nor are the threads seized at the attach, nor a vfork child */
	events_dispatch(&ev, T2, EVENT(PTRACE_EVENT_STOP, SIGTRAP));
	k.tgid_of_child = OTHER;
	events_dispatch(&ev, OTHER, EVENT(PTRACE_EVENT_STOP, SIGSTOP));
	expect_int_eq(k.nnews, 2);
	/* an exiting thread is marked: its thread pointer may be reused */
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_EXIT, SIGTRAP));
	expect_int_eq(tracee_find(&tr, T1)->exiting, 1);
}

static void test_fork(void)
{
	setup();
	/* the child's first stop before the parent's fork event */
	k.tgid_of_child = CHILD;
	events_dispatch(&ev, CHILD, EVENT(PTRACE_EVENT_STOP, SIGSTOP));
	expect_int_eq(tracee_find(&tr, CHILD)->vfork_child, 2);	/* not classified yet */
	k.msg = CHILD;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_FORK, SIGTRAP));
	expect_true(!tracee_find(&tr, CHILD));
	expect_int_eq(k.nforked, 1);
	expect_int_eq(k.forked[0], CHILD);
	expect_int_eq(k.ndetached, 1);
	expect_int_eq(k.detached[0], CHILD);
	/* the fork event first: its first stop is waited for */
	k.msg = CHILD + 1;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_FORK, SIGTRAP));
	expect_int_eq(k.nforked, 2);
	expect_int_eq(k.forked[1], CHILD + 1);
	/* a child that never stops is not touched */
	k.msg = CHILD + 2;
	k.stops = 0;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_FORK, SIGTRAP));
	expect_int_eq(k.nforked, 2);
	expect_int_eq(tr.n, 3);
}

static void test_vfork_exec(void)
{
	struct thread *c;

	setup();
	k.msg = CHILD;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_VFORK, SIGTRAP));
	c = tracee_find(&tr, CHILD);
	expect_true(c && c->vfork_child == 1);
	/* the vfork child's exec: let go, the target's profile goes on */
	events_dispatch(&ev, CHILD, EVENT(PTRACE_EVENT_EXEC, SIGTRAP));
	expect_true(!tracee_find(&tr, CHILD));
	expect_int_eq(k.ndetached, 1);
	expect_true(!ev.exec_seen);
	/* the vfork child's first stop before the parent's event: kept stopped
	 * until the event says it shares our memory, then resumed */
	k.tgid_of_child = OTHER;
	events_dispatch(&ev, OTHER, EVENT(PTRACE_EVENT_STOP, SIGSTOP));
	expect_int_eq(tracee_find(&tr, OTHER)->vfork_child, 2);
	k.msg = OTHER;
	tracee_stopping = 0;
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_VFORK, SIGTRAP));
	tracee_stopping = 1;
	c = tracee_find(&tr, OTHER);
	expect_true(c && c->vfork_child == 1 && c->state == TS_RUNNING);
	/* the target's own exec */
	events_dispatch(&ev, T1, EVENT(PTRACE_EVENT_EXEC, SIGTRAP));
	expect_true(ev.exec_seen);
}

static void test_syscall_stops(void)
{
	struct thread *c, *th;

	setup();
	events_dispatch(&ev, T1, STOPPED(SIGTRAP | 0x80));
	expect_int_eq(k.trapped, T1);
	expect_int_eq(k.trap_record, 1);
	/* a vfork child's trap is not recorded */
	c = tracee_add(&tr, CHILD, TS_RUNNING);
	c->vfork_child = 1;
	events_dispatch(&ev, CHILD, STOPPED(SIGTRAP | 0x80));
	expect_int_eq(k.trapped, CHILD);
	expect_int_eq(k.trap_record, 0);
	/* while everyone is being stopped, a thread interrupted in a trap is
	 * stopped again after its syscall */
	th = tracee_find(&tr, T2);
	th->interrupted = 1;
	events_dispatch(&ev, T2, STOPPED(SIGTRAP | 0x80));
	expect_int_eq(k.interrupted, T2);
	expect_int_eq(tracee_find(&tr, T2)->state, TS_RUNNING);
}

static void test_teardown(void)
{
	tracee_stopping = 0;
	tracee_release(&tr);
}

HARNESS_MAIN("events",
	T(test_exits),
	T(test_exit_vfork_left),
	T(test_signals),
	T(test_new_threads),
	T(test_fork),
	T(test_vfork_exec),
	T(test_syscall_stops),
	T(test_teardown))
