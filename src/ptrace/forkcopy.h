/* A copy of a stopped target that never runs: forked from one of its threads, traced and held stopped, read at leisure, then removed. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FORKCOPY_H
#define HEAPATTACH_FORKCOPY_H

#include <stddef.h>
#include <sys/types.h>

#include "ptrace/remote.h"

/*
 * The thread T of the target, in a ptrace stop (every other one stopped
 * too, so the copy is of one instant), runs clone(flags 0) as a remote
 * syscall: exit signal 0, so the target is not told when the copy ends.
 * The copy starts in a ptrace stop (the target was seized with
 * PTRACE_O_TRACECLONE/TRACEFORK), with T's registers at the syscall
 * gadget's `ret` and, as its stack, an exit frame written below T's stack
 * pointer (remote_exit_frame): a copy a dying heapattach let run exits
 * without running the program. It gets PTRACE_O_EXITKILL (heapattach's
 * death kills it) and a core size limit of 1. Its memory is the target's
 * at that instant, copy on write: only what the target writes while the
 * copy lives costs memory. The copy's zombie is the target's child, reaped
 * by a remote wait4 in T (forkcopy_reap) once the copy is killed.
 */
struct forkcopy {
	struct remote_ctx t;            /* the target's thread that forks */
	pid_t child;                    /* the copy (our PID namespace), 0: none */
	pid_t ns_child;                 /* its id in the target's PID namespace */
	int killed;                     /* forkcopy_end ran */
};

/* Make the copy from stopped thread tid of pid. 0, or -errno with why
 * (clone refused by a seccomp filter, no room below the stack pointer, the
 * copy not traced). */
int forkcopy_make(struct forkcopy *fc, pid_t pid, pid_t tid, char *why, size_t whylen);
/* A new traced child's first stop: 0, or -errno (-ECHILD: it ended instead). */
int forkcopy_first_stop(pid_t child);
/* Kill traced child and reap it as its tracer (its zombie stays its parent's). */
void forkcopy_kill(pid_t child);
/* Kill the copy and reap it as its tracer; its zombie stays the target's. */
void forkcopy_end(struct forkcopy *fc);
/* In thread tid of the target, stopped again: wait4 the copy's zombie
 * (__WALL | WNOHANG). 0 or -errno. */
int forkcopy_reap(struct forkcopy *fc, pid_t tid);

#endif
