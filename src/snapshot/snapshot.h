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
};

/* The results of one snapshot, for the summary and tests. */
struct snapshot_stats {
	uint64_t blocks, bytes;                 /* in use */
	uint64_t leaked_blocks, leaked_bytes;   /* no root reaches them */
	uint64_t shared_bytes;                  /* reached from two roots or more */
	uint64_t classed;                       /* blocks named by their class (vtable) */
	uint64_t roots;
	uint64_t pause_ns;                      /* the target stopped */
	uint64_t scan_ns;                       /* blocks listed, scanned and typed */
	uint64_t words;                         /* words scanned */
};

/*
 * Stop pid (every thread), list its allocator's blocks in use, scan from
 * its roots, name types, let it go; then write the profile (pprof: a
 * sample per block, its stack type <- owner chain <- root) and print the
 * summary. The process exit code: 0, 1 (could not, said).
 */
int snapshot_run(const struct snapshot_config *cfg);

/* heapattach snapshot ARGS: parse, run. */
int snapshot_main(int argc, char **argv);

#endif
