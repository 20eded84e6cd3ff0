/* Calls into the target's allocator, made only at a safe point: every thread stopped, none inside the allocator, a signal handler or fork. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "ptrace/safecall.h"
#include "ptrace/seccomp_plan.h"
#include "regs.h"
#include "remote_arch.h"

/*
 * An allocator's locks are held only while one of its functions runs, or
 * in fork between the prefork and postfork handlers that take them all
 * (jemalloc, tcmalloc register such handlers). A signal handler runs on
 * top of whatever its thread was doing, so a thread in one is taken as
 * unsafe whatever lies below. The walk must reach the outermost frame:
 * a frame it could not get past might hide any of these.
 */

#define SAFECALL_MAX_FRAMES 1024

static int add(struct safecall_range *v, size_t *n, size_t max, struct safecall_range r)
{
	if (*n == max)
		return -ENOSPC;
	v[(*n)++] = r;
	return 0;
}

int safecall_code_add(struct safecall_code *c, uint64_t lo, uint64_t hi, const char *what)
{
	return add(c->v, &c->n, SAFECALL_MAX_RANGES, (struct safecall_range){ lo, hi, what, 0 });
}

int safecall_code_add_own(struct safecall_code *c, uint64_t lo, uint64_t hi, const char *what)
{
	return add(c->v, &c->n, SAFECALL_MAX_RANGES, (struct safecall_range){ lo, hi, what, 1 });
}

int safecall_code_add_wait(struct safecall_code *c, uint64_t lo, uint64_t hi)
{
	return add(c->wait, &c->nwait, SAFECALL_MAX_WAITS,
		   (struct safecall_range){ lo, hi, "in a wait", 0 });
}

/* The range of v[0..n) that holds ip, or NULL. */
static const struct safecall_range *range_of(const struct safecall_range *v, size_t n,
					     uint64_t ip)
{
	for (size_t k = 0; k < n; k++)
		if (ip >= v[k].lo && ip < v[k].hi)
			return &v[k];
	return NULL;
}

/* Frame i's code address: pcs[0] exact, a return address its call. */
static uint64_t frame_ip(const uint64_t *pcs, size_t i)
{
	return i ? pcs[i] - 1 : pcs[i];
}

/* For a thread blocked in a futex wait: the first frame of the allocator's
 * own code if it called a condition-variable wait directly (the frame
 * below it), which is where the thread is parked; else n. */
static size_t parked_from(const uint64_t *pcs, size_t n, const struct safecall_code *c)
{
	for (size_t i = 0; i < n; i++) {
		const struct safecall_range *r = range_of(c->v, c->n, frame_ip(pcs, i));

		if (!r)
			continue;
		if (i && r->parks && range_of(c->wait, c->nwait, frame_ip(pcs, i - 1)))
			return i;
		return n;
	}
	return n;
}

const char *safecall_judge(const uint64_t *pcs, size_t n, unsigned walk, int blocked,
			   const struct safecall_code *c, int (*in_ours)(void *arg, uint64_t ip),
			   void *arg)
{
	size_t parked = blocked ? parked_from(pcs, n, c) : n;

	if (walk & SAFECALL_WALK_SIGNAL)
		return "in a signal handler";
	for (size_t i = 0; i < n; i++) {
		uint64_t ip = frame_ip(pcs, i);
		const struct safecall_range *r;

		if (in_ours && (in_ours(arg, pcs[i]) || in_ours(arg, ip)))
			return "in heapattach's trampolines";
		r = range_of(c->v, c->n, ip);
		if (r && !(r->parks && i >= parked))
			return r->what;
	}
	if (!(walk & SAFECALL_WALK_END))
		return "on a stack not walked to its end";
	return NULL;
}

/* The verdict on stopped thread tid (safecall_judge), or why its stack
 * could not be read. */
static const char *judge_thread(const struct safecall_env *env, const struct safecall_code *c,
				pid_t tid, uint64_t *pcs)
{
	arch_regs_t r;
	unsigned walk;
	int n;

	if (arch_regs_get(tid, &r))
		return "with unreadable registers";
	n = env->walk(env->walk_arg, tid, &r, pcs, SAFECALL_MAX_FRAMES, &walk);
	if (n <= 0)
		return "on an unreadable stack";
	return safecall_judge(pcs, (size_t)n, walk, remote_arch_blocked_in(&r, SYS_futex), c,
			      env->in_ours, env->ours_arg);
}

/* 1 if tid is among the n threads of held. */
static int was_held(const pid_t *held, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (held[i] == tid)
			return 1;
	return 0;
}

/* op in the first thread that can run it (see safecall_run); the thread's
 * bookkeeping follows what remote_call did to it. */
static int run_op(const struct safecall_env *env, int (*op)(struct remote_ctx *ctx, void *arg),
		  void *arg)
{
	struct tracee *tr = env->tr;
	int rc = -ESRCH;

	for (size_t i = 0; i < tr->n; i++) {
		struct thread *th = &tr->t[i];
		struct remote_ctx ctx;

		if (th->state != TS_STOPPED || th->vfork_child || th->pending_sig ||
		    (env->sc && env->sc->remote_listed && !th->remote_ok))
			continue;
		remote_ctx_init(&ctx, env->pid, th->tid);
		ctx.picky = 1;
		rc = op(&ctx, arg);
		if (ctx.resumed)
			th->interrupted = 0;	/* it stopped in a fresh event stop */
		if (ctx.delivered)
			th->pending_sig = ctx.stop_sig == SIGTRAP ? 0 : -1;
		if (ctx.running)
			th->state = TS_RUNNING;	/* let go to finish the call by itself */
		if (rc != -EINVAL && rc != -ESRCH && rc != -EAGAIN)
			break;
	}
	return rc;
}

int safecall_run(const struct safecall_env *env, const struct safecall_code *c,
		 int (*op)(struct remote_ctx *ctx, void *arg), void *arg, char *why,
		 size_t whylen)
{
	struct tracee *tr = env->tr;
	pid_t *held = xmalloc((tr->n + 1) * sizeof(*held));
	uint64_t *pcs = xmalloc(SAFECALL_MAX_FRAMES * sizeof(*pcs));
	size_t nheld = 0;
	int rc;

	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].state == TS_STOPPED)
			held[nheld++] = tr->t[i].tid;	/* stopped already: left so */
	rc = tracee_stop_all(tr, env->on_event, env->event_arg);
	if (rc == -ETIMEDOUT) {
		log_say(why, whylen, "thread %d did not stop", (int)tr->unstopped);
		rc = -EBUSY;
		goto resume;
	}
	if (rc)
		goto resume;
	for (size_t i = 0; i < tr->n; i++) {
		const char *w;

		if (tr->t[i].state != TS_STOPPED)
			continue;
		w = judge_thread(env, c, tr->t[i].tid, pcs);
		if (w) {
			log_say(why, whylen, "thread %d %s", (int)tr->t[i].tid, w);
			rc = -EBUSY;
			goto resume;
		}
	}
	rc = run_op(env, op, arg);
	if (rc == -ESRCH)
		log_say(why, whylen, "no thread could make the call");
resume:
	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].state == TS_STOPPED && !was_held(held, nheld, tr->t[i].tid))
			tracee_resume(tr, &tr->t[i]);
	free(pcs);
	free(held);
	return rc;
}
