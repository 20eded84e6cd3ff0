/* heapattach snapshot: every block in use in a live process, leaked or kept alive by which root, and its type. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPSHOT_H
#define HEAPATTACH_SNAPSHOT_H

#include <stdint.h>
#include <sys/types.h>

struct snapshot_config {
	pid_t pid;
	const char *output;             /* NULL: heapattach.PID.snapshot.heap */
	unsigned top;                   /* lines of each table in the summary */
	int no_fork;                    /* read the target stopped, no copy */
	uint64_t max_stop_ns;           /* no copy: the target is let go after this */
};

/* The results of one snapshot, for the summary and tests. */
struct snapshot_stats {
	uint64_t blocks, bytes;                 /* in use */
	uint64_t leaked_blocks, leaked_bytes;   /* no root reaches them */
	uint64_t shared_bytes;                  /* reached from two roots or more */
	uint64_t classed;                       /* blocks named by their class (vtable) */
	uint64_t roots;
	uint64_t pause_ns;                      /* the target stopped (fork, and reap) */
	uint64_t scan_ns;                       /* blocks listed, scanned and typed */
	int copied;                             /* read from a copy the target forked */
	char how[200];                          /* "a copy it forked", or why not */
	uint64_t words;                         /* words scanned */
};

/*
 * Stop pid (every thread), have it fork a copy that never runs and let it
 * go (else keep it stopped), list its allocator's blocks in use, scan
 * from its roots, name types; then write the profile (pprof: a
 * sample per block, its stack type <- owner chain <- root) and print the
 * summary. The process exit code: 0, 1 (could not, said).
 */
int snapshot_run(const struct snapshot_config *cfg);

/* heapattach snapshot ARGS: parse (durations with parse_duration: the
 * command line's, cli_parse_duration), run. */
int snapshot_main(int argc, char **argv, int (*parse_duration)(const char *s, uint64_t *ns));

#endif
