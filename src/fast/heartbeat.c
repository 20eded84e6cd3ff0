/* The agent link's heartbeat: the time heapattach last ran, refreshed by a thread of its own. */
/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include "base/clock.h"
#include "base/log.h"
#include "fast/link_priv.h"

#define BEAT_NS 50000000L		/* the heartbeat thread's period: 50 ms */

void agent_link_heartbeat(struct agent_link *l)
{
	if (ready(l))
		__atomic_store_n(&l->shm->heartbeat, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
}

/*
 * The beating thread: refreshes the heartbeat every BEAT_NS until told to
 * stop. It only stores the time into our view of the area, so the heartbeat
 * says "heapattach runs" whatever its main thread is busy with (a table
 * doubling, a dump, a write or a page fault that sleeps in the kernel), and
 * goes stale only when heapattach is gone, stopped or gets no CPU at all.
 * It blocks every signal (they stay the main thread's) but SIGBUS, which
 * its store raises if the target shrank shared memory it could not seal
 * (mapguard.c maps a zero page there, and the next drain finds the area
 * cut short), and SIGSEGV.
 */
static void *beat_main(void *arg)
{
	struct agent_link *l = arg;
	struct timespec until;

	pthread_mutex_lock(&l->beat.lock);
	while (!l->beat.stop) {
		agent_link_heartbeat(l);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += BEAT_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&l->beat.cond, &l->beat.lock, &until);
	}
	pthread_mutex_unlock(&l->beat.lock);
	return NULL;
}

void agent_link_beat_start(struct agent_link *l)
{
	pthread_condattr_t ca;
	sigset_t all, old;

	if (!ready(l) || l->beat.running)
		return;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->beat.cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&l->beat.lock, NULL);
	l->beat.stop = 0;
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	pthread_sigmask(SIG_SETMASK, &all, &old);	/* inherited by the thread */
	l->beat.running = !pthread_create(&l->beat.thread, NULL, beat_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!l->beat.running) {
		pthread_cond_destroy(&l->beat.cond);
		pthread_mutex_destroy(&l->beat.lock);
		pr_debug("no heartbeat thread: the heartbeat is refreshed between drains only");
	}
}

void agent_link_beat_stop(struct agent_link *l)
{
	if (!l || !l->beat.running)
		return;
	pthread_mutex_lock(&l->beat.lock);
	l->beat.stop = 1;
	pthread_cond_signal(&l->beat.cond);
	pthread_mutex_unlock(&l->beat.lock);
	pthread_join(l->beat.thread, NULL);
	pthread_cond_destroy(&l->beat.cond);
	pthread_mutex_destroy(&l->beat.lock);
	l->beat.running = 0;
}
