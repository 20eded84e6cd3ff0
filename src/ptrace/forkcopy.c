/* A copy of a stopped target that never runs: forked from one of its threads, traced and held stopped, read at leisure, then removed. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "model/proc.h"
#include "ptrace/forkcopy.h"
#include "remote_arch.h"
#include "sigframe.h"

#define CLONE_WAIT_NS	5000000000ULL
#define CLONE_TRIES	3		/* -ERESTARTNOINTR: a signal came during the fork */
/* Below T's stack pointer: the red zone, scratch and T's own remote call
 * frame, a gap, then the exit frame the copy is given as its stack. */
#define T_FRAMES	(REMOTE_ARCH_RED_ZONE + REMOTE_ARCH_SCRATCH + SIGFRAME_MAX)
#define GAP		4096
#define EXIT_FRAME_MAX	2048
#define ROOM		(T_FRAMES + GAP + EXIT_FRAME_MAX + 4096)

/* The exit frame below T's stack pointer, into *stack: 0, or -errno. */
static int exit_frame(struct forkcopy *fc, uint64_t *stack)
{
	struct proc_maps maps = { 0 };
	const struct proc_map *m;
	uint64_t sp, top;
	int err = remote_get_sp(fc->t.tid, &sp);

	if (!err)
		err = proc_maps_read(fc->t.tid, &maps);
	if (err)
		return err;
	m = proc_maps_find(&maps, sp - 1);
	err = !m || !(m->prot & PROC_MAP_W) || sp - m->start < ROOM ? -ENOSPC : 0;
	proc_maps_free(&maps);
	if (err)
		return err;
	top = (sp - T_FRAMES - GAP) & ~(uint64_t)63;
	err = remote_exit_frame(&fc->t, top, stack);
	return !err && top - *stack > EXIT_FRAME_MAX ? -E2BIG : err;
}

int forkcopy_first_stop(pid_t child)
{
	int status;
	pid_t w;

	do
		w = waitpid(child, &status, __WALL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	return WIFSTOPPED(status) ? 0 : -ECHILD;
}

int forkcopy_make(struct forkcopy *fc, pid_t pid, pid_t tid, char *why, size_t whylen)
{
	struct rlimit core = { 1, 1 };	/* 1: no core file, and no core pipe either */
	long ret = -REMOTE_ERESTARTNOINTR;
	uint64_t stack;
	int err;

	memset(fc, 0, sizeof(*fc));
	remote_ctx_init(&fc->t, pid, tid);
	fc->t.flags = REMOTE_F_SECCOMP_TRAP;
	err = exit_frame(fc, &stack);
	if (err) {
		snprintf(why, whylen, "no room below thread %d's stack pointer: %s", (int)tid,
			 strerror(-err));
		return err;
	}
	for (int i = 0; i < CLONE_TRIES && ret == -REMOTE_ERESTARTNOINTR && !err; i++) {
		fc->t.child = 0;
		fc->t.deadline_ns = clock_ns(CLOCK_MONOTONIC) + CLONE_WAIT_NS;
		err = remote_syscall(&fc->t, SYS_clone, 0, (long)stack, 0, 0, 0, 0, &ret);
		fc->t.deadline_ns = 0;
	}
	if (!err && fc->t.trapped)
		err = -EPERM;
	if (!err && ret <= 0)
		err = ret < 0 && ret > -4096 ? (int)ret : -EPROTO;
	if (err) {
		snprintf(why, whylen, "clone %s: %s", fc->t.trapped ? "raised SIGSYS (seccomp)" :
			 fc->t.timed_out ? "was held (a seccomp supervisor?)" : "failed",
			 strerror(-err));
		return err;
	}
	fc->ns_child = (pid_t)ret;
	fc->child = fc->t.child;
	if (!fc->child) {	/* not attached: its exit frame ends it */
		snprintf(why, whylen, "the copy was not traced");
		return -ECHILD;
	}
	err = forkcopy_first_stop(fc->child);
	if (!err && ptrace(PTRACE_SETOPTIONS, fc->child, NULL, (void *)(long)PTRACE_O_EXITKILL) < 0)
		err = -errno;
	if (err) {
		forkcopy_end(fc);
		snprintf(why, whylen, "the copy did not stop: %s", strerror(-err));
		return err;
	}
	if (prlimit(fc->child, RLIMIT_CORE, &core, NULL) < 0)
		pr_debug("forkcopy: cannot limit the core size of %d: %s", (int)fc->child,
			 strerror(errno));
	pr_debug("forkcopy: %d (%d in the target) forked from thread %d", (int)fc->child,
		 (int)fc->ns_child, (int)tid);
	return 0;
}

void forkcopy_kill(pid_t child)
{
	int status;
	pid_t w;

	kill(child, SIGKILL);
	for (;;) {
		w = waitpid(child, &status, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(status) || WIFSIGNALED(status))
			break;
	}
}

void forkcopy_end(struct forkcopy *fc)
{
	if (!fc->child || fc->killed)
		return;
	fc->killed = 1;
	forkcopy_kill(fc->child);
}

int forkcopy_reap(struct forkcopy *fc, pid_t tid)
{
	long r = 0;
	int err;

	if (!fc->ns_child)
		return 0;
	remote_ctx_init(&fc->t, fc->t.pid, tid);
	fc->t.flags = REMOTE_F_SECCOMP_TRAP;
	err = remote_syscall(&fc->t, SYS_wait4, fc->ns_child, 0, __WALL | WNOHANG, 0, 0, 0, &r);
	if (!err && r != fc->ns_child)
		err = r < 0 && r > -4096 ? (int)r : -ECHILD;
	if (err)
		pr_debug("forkcopy: %d left a zombie in the target: %s", (int)fc->ns_child,
			 strerror(-err));
	fc->ns_child = 0;
	return err;
}
