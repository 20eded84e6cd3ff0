/* Several targets from one heapattach: a session per process (-p PID,PID,... and --tree PID). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FLEET_H
#define HEAPATTACH_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "session/config.h"

/* At most this many processes in one run (given, or found in a tree). */
#define FLEET_MAX 4096

/*
 * What a session of a run over several publishes for --top's process
 * table (fleettop.c) and for the run (an exec), in memory shared with the
 * run's process: written by the session only, read as it stands.
 */
struct fleet_slot {
	uint64_t live;           /* live bytes since the attach (the profile's estimate) */
	uint64_t alloc_bytes;    /* allocated since the attach (estimate) */
	uint64_t events;
	int attached;            /* 1 once attached */
	int execd;               /* 1 when it ended because its target called exec */
};

/* Called in a session's own process before its session_run (main's
 * --snapshot); cfg is that process's copy. 0, or nonzero to give up on
 * this process (its exit code). */
typedef int (*fleet_before_fn)(struct session_config *cfg, void *arg);

struct fleet_config {
	const struct session_config *run;  /* each session's configuration; its
					    * pid and output are set per process */
	const pid_t *pids;       /* the processes given (-p), or the tree's root */
	size_t npids;
	int tree;                /* --tree: pids[0] and its descendants, followed */
	fleet_before_fn before;
	void *before_arg;
	int top;                 /* --top: a table of the processes every second */
};

/*
 * Profile each process in its own heapattach process (one session each,
 * forked from this one): FILE.PID.heap, every sample labelled pid=PID.
 * With tree, the descendants of pids[0] found every 100 ms are attached
 * too, and a process that calls exec is attached again (FILE.PID-2.heap,
 * ...). SIGINT, SIGTERM and SIGHUP end every session (each writes its
 * profile); SIGUSR1 asks each for a numbered profile. Returns the exit
 * code: 0 when every session wrote its profile, else the gravest of the
 * sessions' codes (1 over 4 over 5 over 3); in a tree, a process that
 * ended before its attach is not a failure.
 */
int fleet_run(const struct fleet_config *fc);

/* FILE.PID.heap for output FILE (FILE's ".heap" replaced), or NULL for
 * the session's default (heapattach.PID.heap); gen > 1 adds "-GEN" after
 * the pid. xmalloc'd. */
char *fleet_output(const char *output, pid_t pid, unsigned gen);

#endif
