/* Command-line options: parsing of flags, sizes (64K, 200M) and durations (500ms, 5m). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_CLI_H
#define HEAPATTACH_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "output/dump.h"
#include "session/config.h"
#include "session/fleet.h"

#define CLI_DEFAULT_RATE (512 * 1024)
/* Above this the agent's gap arithmetic would sample nothing at all. */
#define CLI_MAX_RATE (1ULL << 40)

/* --max-depth: frames kept of each stack (the agent's SHM_DEFAULT_DEPTH and
 * SHM_MAX_DEPTH, shm.h). */
#define CLI_DEFAULT_DEPTH 128
#define CLI_MAX_DEPTH 1024
/* --keep: numbered profiles kept at most */
#define CLI_MAX_KEEP 100000
/* --skip: expressions at most */
#define CLI_MAX_SKIP 16

/* The command line: a run's configuration, and what only the command line does. */
struct options {
	struct session_config run;
	const char *skip[CLI_MAX_SKIP]; /* --skip: more wrappers (run.skip points here) */
	pid_t pids[FLEET_MAX];          /* -p PID,PID,...: run.pid is the first */
	size_t npids;
	int tree;                       /* --tree PID: it and its descendants */
	int list_hooks;
	int snapshot;                   /* --snapshot: run.snapshot is taken before the attach */
	int verbose;
};

/* Parse argv into o. Returns 0 to run, 1 when --help/--version was printed
 * (exit 0), -EINVAL after printing one error line (exit 2). */
int cli_parse(int argc, char **argv, struct options *o);
/* A plain decimal process id ("123"; not "+123", " 123", "0x10"). 0 or -EINVAL. */
int cli_parse_pid(const char *s, pid_t *out);
/* "512", "64K", "200M", "1G" (also "KB"/"KiB"; powers of 1024). 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *out);
/* "500ms", "30s", "5m", "1h", bare number = seconds. 0 or -EINVAL. */
int cli_parse_duration(const char *s, uint64_t *out_ns);
void cli_usage(FILE *f);

#endif
