/* What one profiling run is asked to do: the session's configuration, filled by the command line. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SESSION_CONFIG_H
#define HEAPATTACH_SESSION_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "output/dump.h"

enum run_mode { MODE_TRAP, MODE_FAST };

struct snapshot_keep;
struct fleet_slot;

struct session_config {
	pid_t pid;
	const char *output;       /* NULL: heapattach.PID.heap */
	uint64_t sample_rate;     /* mean bytes between samples; 1 = every allocation */
	uint64_t interval;        /* bytes allocated between numbered dumps; 0 = off */
	uint64_t inuse_interval;  /* a numbered dump at each new high of live bytes by this much */
	int top;                  /* --top: the live view on stdout */
	const char *const *skip;  /* --skip: more wrappers, passed over to name a site */
	size_t nskip;
	int census;               /* --census: walk glibc's heaps before attaching */
	const struct snapshot_keep *snapshot;	/* --snapshot: the blocks in use before the
				   * attach, in every pprof profile (label kind=snapshot) */
	int no_python;            /* --no-python: native frames only */
	int no_debuginfod;        /* --no-debuginfod: no debug file fetched (DEBUGINFOD_URLS) */
	int python_c_frames;      /* --python-c-frames: keep the interpreter's frames */
	int no_seccomp_probe;     /* --no-seccomp-probe: refuse a seccomp filter it
				   * cannot read instead of asking a copy of the target */
	uint64_t jvm_perfmap_ns;  /* --jvm-perfmap: between asking the JVM for a perf map; 0 = off */
	int label_pid;            /* every sample labelled pid=PID (a run over several) */
	struct fleet_slot *slot;  /* a run over several with --top: the figures it shows */
	const char *listen;       /* --listen: the HTTP endpoint's address, or NULL */
	uint64_t every_ns;        /* time between numbered dumps; 0 = off */
	unsigned keep;            /* --keep: numbered dumps kept, the newest; 0 = all */
	uint64_t duration_ns;     /* stop after this long; 0 = until interrupted */
	unsigned max_depth;       /* frames kept of each stack, 1..CLI_MAX_DEPTH */
	enum dump_format format;
	enum run_mode mode;
};

#endif
