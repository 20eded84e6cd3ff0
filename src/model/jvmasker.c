/* The thread that asks a running HotSpot JVM for a fresh perf map every period (--jvm-perfmap). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/jvmasker.h"
#include "model/jvmattach.h"

struct jvm_asker {
	pid_t pid;
	uint64_t period_ns;
	pthread_t th;
	int running;            /* th not joined yet */
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* stop set */
	int stop;               /* under mu, and read atomically by requests */
	int gave_up;            /* an error that asking again would not mend */
	unsigned done;          /* under mu */
	int flags_read;         /* its VM.flags looked at */
	char note[320];         /* under mu: the latest failure */
	int fresh;              /* note not said yet */
};

/* Keep a note (under mu). */
static void set_note(struct jvm_asker *a, const char *why)
{
	snprintf(a->note, sizeof(a->note), "--jvm-perfmap: %s", why);
	a->fresh = 1;
}

/*
 * Once: whether the JVM's VM.flags has -XX:+PreserveFramePointer, without
 * which its JIT frames cannot be walked (docs/jvm.md); a note if not.
 * A JVM that does not answer is not said anything about.
 */
static void check_flags(struct jvm_asker *a)
{
	char *flags = xmalloc(JVM_ANSWER_MAX + 1), why[256];
	int rc;

	a->flags_read = 1;
	rc = jvm_request(a->pid, "VM.flags", clock_ns(CLOCK_MONOTONIC) + JVM_REQUEST_NS,
			 &a->stop, flags, JVM_ANSWER_MAX + 1, why, sizeof(why));
	if (!rc && !strstr(flags, "-XX:+PreserveFramePointer")) {
		pthread_mutex_lock(&a->mu);
		set_note(a, "the JVM runs without -XX:+PreserveFramePointer: stacks through its "
			 "JIT code end there or skip Java frames, names or not; only a restart "
			 "with the flag mends that (docs/jvm.md)");
		pthread_mutex_unlock(&a->mu);
	}
	free(flags);
}

/* Ask once; count it or keep why not. 0 to go on, 1 to give up. */
static int ask(struct jvm_asker *a)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	char why[256] = "";
	int rc = jvm_request(a->pid, "Compiler.perfmap", t0 + JVM_REQUEST_NS, &a->stop, NULL, 0,
			     why, sizeof(why));

	pr_debug("jvm: asked %d for a perf map in %.1f ms: %s", (int)a->pid,
		 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6, rc ? why : "written");
	pthread_mutex_lock(&a->mu);
	if (!rc) {
		a->done++;
	} else if (rc != -EINTR) {
		set_note(a, why);
		a->gave_up = rc != -ETIMEDOUT && rc != -EAGAIN;
	}
	pthread_mutex_unlock(&a->mu);
	if (!rc && !a->flags_read)
		check_flags(a);
	return a->gave_up;
}

static void *asker_main(void *p)
{
	struct jvm_asker *a = p;
	struct timespec ts;

	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		pthread_mutex_unlock(&a->mu);
		if (ask(a))
			return NULL;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(a->period_ns / 1000000000);
		ts.tv_nsec += (long)(a->period_ns % 1000000000);
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&a->mu);
		while (!a->stop && pthread_cond_timedwait(&a->cv, &a->mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

struct jvm_asker *jvm_asker_start(pid_t pid, uint64_t period_ns)
{
	struct jvm_asker *a = xcalloc(1, sizeof(*a));
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	a->pid = pid;
	a->period_ns = period_ns;
	pthread_mutex_init(&a->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* every signal blocked: they stay the main thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&a->th, NULL, asker_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	a->running = !rc;
	if (rc) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		free(a);
		return NULL;
	}
	return a;
}

unsigned jvm_asker_done(struct jvm_asker *a)
{
	unsigned n;

	pthread_mutex_lock(&a->mu);
	n = a->done;
	pthread_mutex_unlock(&a->mu);
	return n;
}

int jvm_asker_take_note(struct jvm_asker *a, char *buf, size_t len)
{
	int said = 0;

	pthread_mutex_lock(&a->mu);
	if (a->fresh) {
		snprintf(buf, len, "%s", a->note);
		a->fresh = 0;
		said = 1;
	}
	pthread_mutex_unlock(&a->mu);
	return said;
}

void jvm_asker_stop(struct jvm_asker *a, int last)
{
	if (!a || !a->running)
		return;
	pthread_mutex_lock(&a->mu);
	__atomic_store_n(&a->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->th, NULL);
	a->running = 0;
	if (last && !a->gave_up) {
		__atomic_store_n(&a->stop, 0, __ATOMIC_RELEASE);
		ask(a);
	}
}

void jvm_asker_free(struct jvm_asker *a)
{
	if (!a)
		return;
	jvm_asker_stop(a, 0);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
