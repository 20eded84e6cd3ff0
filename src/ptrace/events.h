/* Dispatch of ptrace stops: new threads, children, exec, exit, signals and our traps. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_EVENTS_H
#define HEAPATTACH_EVENTS_H

#include <sys/types.h>

#include "ptrace/tracee.h"

/* What the run does with some stops; the rest is bookkeeping of the threads. */
struct events_ops {
	/* A child forked while attached, stopped before it ran: make it a
	 * clean copy of the target (forkchild.h); events then lets it go. */
	void (*fork_child)(void *arg, pid_t child);
	/* A syscall-stop of tid (trap mode's traps): 1 if it was ours, 0 if
	 * not, -errno. record is 0 for a vfork child's. May be NULL. */
	int (*syscall_stop)(void *arg, pid_t tid, int record);
	/* A fault's signal stopped tid: 1 if it was the agent's and tid was
	 * moved past it (the signal is dropped), 0 if not, -errno. May be NULL. */
	int (*fault_stop)(void *arg, pid_t tid);
	/* The thread the target is read through has exited: read it through
	 * tid from now on. */
	void (*reader_moved)(void *arg, pid_t tid);
	/* A new thread of the target at its first stop, before it ran any
	 * code (its registers can be read). May be NULL. */
	void (*new_thread)(void *arg, struct thread *th);
};

/* The calls to the kernel events makes: ptrace and /proc (a test fakes them). */
struct events_sys {
	/* PTRACE_GETEVENTMSG: 0 or -errno. */
	int (*event_msg)(pid_t tid, unsigned long *msg);
	/* The thread group of tid, or -errno. */
	pid_t (*tgid)(pid_t tid);
	/* 0 only when thread tid of pid no longer exists (tracee_thread_alive). */
	int (*alive)(pid_t pid, pid_t tid);
	/* Wait for a new child's first stop: 0, or -1 if it did not stop. */
	int (*first_stop)(pid_t child);
	/* PTRACE_DETACH. */
	void (*detach)(pid_t tid);
	/* Stop tid again once the syscall it is in is done (PTRACE_INTERRUPT, PTRACE_CONT). */
	void (*interrupt_after)(pid_t tid);
};
extern const struct events_sys events_sys_ptrace;

/* The stops of one target, and what they told so far. */
struct events {
	pid_t pid;                      /* the target */
	pid_t reader;                   /* the thread it is read through */
	struct tracee *tr;              /* its threads */
	const struct events_ops *ops;
	void *arg;
	const struct events_sys *sys;   /* NULL: events_sys_ptrace */
	int gone;                       /* every thread exited */
	int exec_seen;                  /* the target replaced its image */
	int exit_status;                /* wait status of the last of its threads seen to end, or -1 */
};

/* Handle one waitpid status (a tracee_event_fn; arg is a struct events).
 * Resumes the thread unless tracee_stopping. */
int events_dispatch(void *arg, pid_t tid, int status);

#endif
