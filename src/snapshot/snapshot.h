/* heapattach snapshot: every block in use in a live process, leaked or kept alive by which root, and its type. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPSHOT_H
#define HEAPATTACH_SNAPSHOT_H

#include <stdint.h>
#include <sys/types.h>

struct sym_info;

struct snapshot_keep;

#define SNAPSHOT_MAX_STOP_NS 10000000000ULL     /* --max-stop's default: 10 s */

struct snapshot_config {
	pid_t pid;
	const char *output;             /* NULL: heapattach.PID.snapshot.heap */
	unsigned top;                   /* lines of each table in the summary */
	int no_fork;                    /* read the target stopped, no copy */
	uint64_t max_stop_ns;           /* no copy: the target is let go after this
					 * (0: SNAPSHOT_MAX_STOP_NS) */
	struct snapshot_keep *keep;     /* non-NULL: no file, the profile kept here */
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
	uint64_t sampled;                       /* blocks with the allocator's own stack */
	int copied;                             /* read from a copy the target forked */
	char how[200];                          /* "a copy it forked", or why not */
	uint64_t words;                         /* words scanned */
};

struct profile;
struct snapnames;

/*
 * A snapshot kept for a profile of the attach that follows (heapattach
 * --snapshot): its samples, the names of their frames (pseudo-PCs from
 * SYMBOLIZE_SNAPSHOT_BASE, named by snapshot_keep_namer with names as its
 * argument) and the summary's lines, for the profile's comments.
 */
struct snapshot_keep {
	struct profile *p;
	struct snapnames *names;
	char **lines;
	size_t nlines;
};
int snapshot_keep_namer(const void *names, uint64_t addr, struct sym_info *out);
void snapshot_keep_free(struct snapshot_keep *k);

/*
 * Stop pid (every thread), have it fork a copy that never runs and let it
 * go (else keep it stopped), list its allocator's blocks in use, scan
 * from its roots, name types; then write the profile (pprof: a
 * sample per block, its stack type <- owner chain <- root) and print the
 * summary (with cfg->keep: the profile is kept there, not written). The
 * process exit code: 0, 1 (could not, said).
 */
int snapshot_run(const struct snapshot_config *cfg);

/* heapattach snapshot ARGS: parse (durations with parse_duration: the
 * command line's, cli_parse_duration), run. */
int snapshot_main(int argc, char **argv, int (*parse_duration)(const char *s, uint64_t *ns));

#endif
