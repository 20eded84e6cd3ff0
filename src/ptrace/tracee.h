/* The traced thread set: seize, interrupt, resume and detach every thread of a target. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TRACEE_H
#define HEAPATTACH_TRACEE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum thread_state {
	TS_RUNNING,     /* resumed; a stop will be reported by waitpid */
	TS_STOPPED,     /* in a ptrace stop; registers can be read */
	TS_LISTENING,   /* in a group stop, resumed with PTRACE_LISTEN */
};

struct thread {
	pid_t tid;
	enum thread_state state;
	int pending_sig;        /* signal to deliver when resumed (0: none) */
	int interrupted;        /* a PTRACE_INTERRUPT is outstanding */
	int vfork_child;        /* a CLONE_VM child sharing the target's memory */
	int mark;               /* scratch flag for one pass over the set */
	int remote_ok;          /* its seccomp filters allow our remote syscalls (seccomp_plan.h) */
	int fresh;              /* seen at its clone event: its first stop is still to come */
	int exiting;            /* past its PTRACE_EVENT_EXIT: its thread pointer may be reused */
	uint64_t tp;            /* its id for exact mode's accounting (its fs base), 0: not read
				 * (agent_link_xacct_threads, agent_link_xacct_thread) */
};

struct tracee {
	pid_t pid;
	struct thread *t;
	size_t n, cap;
	int syscall_stops;      /* resume with PTRACE_SYSCALL (trap mode's traps) */
	pid_t unstopped;        /* tracee_stop_all timed out: a thread that did not stop */
};

/* Called for a wait status (of a known thread or of a new tid) that is not
 * the expected interrupt or group stop. The handler deals with it and either
 * resumes the thread (tracee_resume) or, while tracee_stopping, may leave it
 * TS_STOPPED. Return 0 or -errno (which ends the wait). */
typedef int (*tracee_event_fn)(void *arg, pid_t tid, int status);

/* Check that pid can be traced and say why not: 0, or -errno after one
 * clear message on stderr (no such process, our own pid, a kernel thread,
 * a zombie, already traced, no permission with the reason). */
int tracee_check(pid_t pid);
/* The part of tracee_check that needs no ptrace (no such process, our own
 * pid, a thread id, a kernel thread, a zombie; as PID 1 of its own PID
 * namespace it says so); sets *live to tracee_live_tid(pid). */
int tracee_probe(pid_t pid, pid_t *live);
/* A thread of pid that has not exited, through whose /proc/TID files and
 * memory the process can be read: pid while the leader lives, else another
 * (a leader that called pthread_exit is a zombie whose /proc/PID/maps is
 * empty while its threads run). 0 if none. */
pid_t tracee_live_tid(pid_t pid);
/* Seize every thread of pid (re-reading /proc/PID/task until stable) with
 * the fork/clone/exec/exit options and interrupt each; the caller then waits
 * for the stops with tracee_stop_all. 0, or -errno with nothing attached. */
int tracee_seize(struct tracee *tr, pid_t pid);
/* Interrupt every running thread and wait until all are stopped; other
 * stops that arrive meanwhile go to fn (which must leave the thread stopped
 * when stopping is set: see tracee_stopping). -ETIMEDOUT (tr->unstopped
 * set) when a thread has not stopped after TRACEE_STOP_WAIT_MS: a vfork
 * parent waiting for its child, a thread in uninterruptible sleep. Such a
 * thread runs no user code before its stop (its interrupt is pending), but
 * its registers cannot be read. The bound needs waitpid to be interrupted
 * (session.c's tick) while no stop comes. */
#define TRACEE_STOP_WAIT_MS 3000
int tracee_stop_all(struct tracee *tr, tracee_event_fn fn, void *arg);
/* Resume one stopped thread, delivering its pending signal. */
int tracee_resume(struct tracee *tr, struct thread *th);
int tracee_resume_all(struct tracee *tr);
/* Detach every thread (each must be stopped), delivering pending signals. */
void tracee_detach_all(struct tracee *tr);
struct thread *tracee_find(struct tracee *tr, pid_t tid);
/* 0 only when thread tid of process pid no longer exists (reaped). */
int tracee_thread_alive(pid_t pid, pid_t tid);
struct thread *tracee_add(struct tracee *tr, pid_t tid, enum thread_state st);
void tracee_remove(struct tracee *tr, pid_t tid);
void tracee_release(struct tracee *tr);
/* Non-zero while tracee_stop_all is waiting: event handlers must not resume. */
extern int tracee_stopping;

#endif
