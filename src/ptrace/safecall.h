/* Calls into the target's allocator, made only at a safe point: every thread stopped, none inside the allocator, a signal handler or fork. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SAFECALL_H
#define HEAPATTACH_SAFECALL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace/remote.h"
#include "ptrace/tracee.h"
#include "regs.h"

/*
 * Code no thread may be in (or return into) when the allocator is called,
 * but for one case: a thread of the allocator's own code (parks) blocked
 * in a condition-variable wait (wait[]) that it called directly holds
 * none of the allocator's locks but the mutex the wait released: jemalloc
 * waits so only in its background threads, which hold nothing else then.
 */
#define SAFECALL_MAX_RANGES 16
#define SAFECALL_MAX_WAITS  4
struct safecall_range {
	uint64_t lo, hi;        /* [lo, hi) */
	const char *what;       /* "inside jemalloc", "in fork": the reason */
	int parks;              /* the allocator's code: parked threads are safe */
};
struct safecall_code {
	struct safecall_range v[SAFECALL_MAX_RANGES];
	size_t n;
	struct safecall_range wait[SAFECALL_MAX_WAITS];
	size_t nwait;
};

/* Add [lo, hi) to c (at most SAFECALL_MAX_RANGES; 0, or -ENOSPC). */
int safecall_code_add(struct safecall_code *c, uint64_t lo, uint64_t hi, const char *what);

/* The same for the allocator's own code, whose parked threads are safe. */
int safecall_code_add_own(struct safecall_code *c, uint64_t lo, uint64_t hi, const char *what);

/* Add a condition-variable wait of libc's (at most SAFECALL_MAX_WAITS). */
int safecall_code_add_wait(struct safecall_code *c, uint64_t lo, uint64_t hi);

/*
 * The verdict on one stopped thread from its stack: pcs[0..n) as
 * unwind_stack returns them (pcs[0] exact, the rest return addresses, each
 * looked up one byte back), walk its SAFECALL_WALK_* flags, blocked whether
 * it was stopped inside a futex wait (parked, see above), in_ours(arg, ip)
 * heapattach's own code in the target (NULL: none). NULL when the thread
 * can hold none of the allocator's locks: a walk that reached the
 * outermost frame, through no signal frame, no frame in c's code or in
 * ours. Else why not, for "thread TID ..." (the range's what, "in a
 * signal handler", "in heapattach's trampolines", "on a stack not walked
 * to its end").
 */
const char *safecall_judge(const uint64_t *pcs, size_t n, unsigned walk, int blocked,
			   const struct safecall_code *c, int (*in_ours)(void *arg, uint64_t ip),
			   void *arg);

/* How a thread's walk went (the unwinder's UNWIND_WALK_* values): END, it
 * reached the outermost frame; SIGNAL, through a signal frame. */
#define SAFECALL_WALK_END    1
#define SAFECALL_WALK_SIGNAL 2

struct seccomp_plan;

/*
 * The frames of stopped thread tid from its registers r, at most max into
 * pcs (as unwind_stack_judged gives them, the session's unwinder): how
 * many, or -errno; *flags its SAFECALL_WALK_*.
 */
typedef int (*safecall_walk_fn)(void *arg, pid_t tid, const arch_regs_t *r, uint64_t *pcs,
				size_t max, unsigned *flags);

/* What safecall_run needs of the session. */
struct safecall_env {
	pid_t pid;
	struct tracee *tr;
	safecall_walk_fn walk;
	void *walk_arg;
	const struct seccomp_plan *sc;          /* which threads may run our code (remote_ok) */
	tracee_event_fn on_event;               /* stops seen while stopping them */
	void *event_arg;
	int (*in_ours)(void *arg, uint64_t ip); /* heapattach's code in the target */
	void *ours_arg;
};

/*
 * Stop every thread, judge each (safecall_judge), and only if every one is
 * safe run op(ctx, arg) in one of them (a stopped thread that holds no
 * signal and may run our code; op makes its remote_calls there); then
 * resume what was stopped here. Returns op's result; -EBUSY with the
 * reason in why ("thread TID inside jemalloc", "thread TID did not stop")
 * when this is no safe point; -ESRCH when no thread could run op.
 */
int safecall_run(const struct safecall_env *env, const struct safecall_code *c,
		 int (*op)(struct remote_ctx *ctx, void *arg), void *arg, char *why,
		 size_t whylen);

#endif
