/* Command-line options: parsing of flags, sizes (64K, 200M) and durations (500ms, 5m). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_CLI_H
#define HEAPATTACH_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "output/dump.h"

#define CLI_DEFAULT_RATE (512 * 1024)
/* Above this the agent's gap arithmetic would sample nothing at all. */
#define CLI_MAX_RATE (1ULL << 40)

/* --max-depth: frames kept of each stack (the agent's SHM_DEFAULT_DEPTH and
 * SHM_MAX_DEPTH, shm.h). */
#define CLI_DEFAULT_DEPTH 128
#define CLI_MAX_DEPTH 1024
/* --skip: expressions at most */
#define CLI_MAX_SKIP 16

enum run_mode { MODE_TRAP, MODE_FAST };

struct options {
	pid_t pid;
	const char *output;       /* NULL: heapattach.PID.heap */
	uint64_t sample_rate;     /* mean bytes between samples; 1 = every allocation */
	uint64_t interval;        /* bytes allocated between numbered dumps; 0 = off */
	uint64_t inuse_interval;  /* a numbered dump at each new high of live bytes by this much */
	int top;                  /* --top: the live view on stdout */
	const char *skip[CLI_MAX_SKIP]; /* --skip: more wrappers for --top's sites */
	size_t nskip;
	int census;               /* --census: walk glibc's heaps before attaching */
	int no_python;            /* --no-python: native frames only */
	int no_debuginfod;        /* --no-debuginfod: no debug file fetched (DEBUGINFOD_URLS) */
	int python_c_frames;      /* --python-c-frames: keep the interpreter's frames */
	int no_seccomp_probe;     /* --no-seccomp-probe: refuse a seccomp filter it
				   * cannot read instead of asking a copy of the target */
	uint64_t jvm_perfmap_ns;  /* --jvm-perfmap: between asking the JVM for a perf map; 0 = off */
	uint64_t every_ns;        /* time between numbered dumps; 0 = off */
	uint64_t duration_ns;     /* stop after this long; 0 = until interrupted */
	unsigned max_depth;       /* frames kept of each stack, 1..CLI_MAX_DEPTH */
	enum dump_format format;
	enum run_mode mode;
	int list_hooks;
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
