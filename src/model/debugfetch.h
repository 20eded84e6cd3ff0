/* Debug files fetched by build id from debuginfod servers (DEBUGINFOD_URLS), bounded in time. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_DEBUGFETCH_H
#define HEAPATTACH_DEBUGFETCH_H

#include <signal.h>
#include <stdint.h>
#include "model/elfobj.h"

/*
 * As gdb, perf and valgrind do: when DEBUGINFOD_URLS is set and not empty
 * in our environment, an object's DWARF not found on disk is asked for by
 * its build id through libdebuginfod, which keeps what it fetched in its
 * own cache (DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client)
 * and takes its other settings from the environment too. libdebuginfod
 * (libdebuginfod.so.1, and with it libcurl) is loaded on the first fetch,
 * not linked: heapattach runs where it is absent, and a session that
 * fetches nothing never has it in its address space.
 *
 * Time: a fetch is cancelled after DEBUGINFOD_TIMEOUT seconds if that is
 * set (1 to 3600), else after DEBUGFETCH_FETCH_S; all of them together
 * stop after DEBUGFETCH_SESSION_S (or one fetch's bound if that is
 * longer), at a stop request (debugfetch_watch_stop), and after the first
 * one cancelled for its time: a server that did not answer in time is
 * not asked again.
 *
 * A fetched file is hostile input, read as any debug file (elfobj) and
 * kept only if it carries the build id asked for.
 */
#define DEBUGFETCH_FETCH_S 10
#define DEBUGFETCH_SESSION_S 30

/* --no-debuginfod: no fetch from now on. */
void debugfetch_disable(void);
/* Cancel a fetch, and fetch no more, once *stop is nonzero (stop NULL:
 * no such flag). */
void debugfetch_watch_stop(const volatile sig_atomic_t *stop);
/* Cancel a fetch, and start none, from CLOCK_MONOTONIC time deadline_ns
 * (0: no such deadline) until another is set: fetches cut so are not
 * counted as timed out and leave fetching on. */
void debugfetch_set_deadline(uint64_t deadline_ns);
/* The debug file (with .debug_info or not) of build id build_id (lowercase
 * hex): 0 and *out; -EAGAIN (*out NULL) if cut short or not started for
 * debugfetch_set_deadline's deadline, worth asking again after another;
 * -ENOENT for none, fetches off, out of time or failed. */
int debugfetch_debuginfo(const char *build_id, struct elfobj **out);
/* If any fetch was tried: one line on stderr, what was asked and what came
 * back; then libdebuginfod's client is freed. */
void debugfetch_end(void);

#endif
