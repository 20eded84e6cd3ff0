/* Holding a snapshot's target: stopped once no vfork is in flight, let go even when a thread cannot stop, the stop signals and the waits' tick. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPHOLD_H
#define HEAPATTACH_SNAPHOLD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace/events.h"
#include "ptrace/tracee.h"

/* The stop signal that came (SIGINT, SIGTERM, SIGHUP) while the target was
 * held, stopped or copied (snaphold_catch_signals): the read ends at its
 * next batch. 0: none. */
extern volatile sig_atomic_t snaphold_stop_asked;

/*
 * Stop every thread of pid into tr (its stops through ev), once no vfork
 * is in flight (copysafe_vfork): the one seen waited for while the target
 * runs (200 ms at most), then every one again once each thread is seized
 * (a vfork begun meanwhile: its parent stops as its child ends), 30 ms at
 * most, else the target is let go and seized again, three times at most.
 * The waits for the stops are bounded (snaphold_tick). 0 with *t0 the
 * time of the first seize, or -errno with why (the target let go; why
 * empty when the seize failed, said already; -EINTR when interruptible
 * and a stop signal came first).
 */
int snaphold_stop(pid_t pid, int interruptible, struct tracee *tr, struct events *ev, char *why,
		  size_t len, uint64_t *t0);

/*
 * Let go every thread of tr; a detach needs the thread in its stop, so
 * one still on its way there is tried again for 100 ms. One that never
 * gets there (a vfork parent waiting for its child) stays seized, its
 * stop still to come, until heapattach exits: the kernel then lets it
 * go, and it runs on without stopping.
 */
void snaphold_release(struct tracee *tr);

/*
 * While heapattach waits for the target's threads to stop, or for its
 * fork (on, then off): a SIGALRM every 10 ms (no SA_RESTART) interrupts
 * waitpid, so that the waits keep their own bounds (TRACEE_STOP_WAIT_MS,
 * the clone's deadline) instead of blocking on a thread that never stops.
 */
void snaphold_tick(int on);

/* Caught (on) while heapattach holds the target, stopped or copied: a stop
 * signal sets snaphold_stop_asked (the read ends at its next batch, then
 * the copy is killed and reaped or the target let go); the old actions
 * back (off). */
void snaphold_catch_signals(int on, struct sigaction old[3]);

#endif
