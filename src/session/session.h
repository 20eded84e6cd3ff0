/* One profiling run against one target: options, profile, dump schedule, counters, and its parts. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SESSION_H
#define HEAPATTACH_SESSION_H

#include <stdint.h>
#include <sys/types.h>
#include "cli/cli.h"
#include "model/hooks.h"
#include "model/proc.h"
#include "output/dump.h"
#include "profile/peak.h"
#include "profile/runstats.h"
#include "profile/sampler.h"
#include "ptrace/events.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/tracee.h"
#include "session/membudget.h"
#include "session/memreport.h"
#include "trap/collect.h"

struct agent_link;
struct implant;
struct profile;
struct symbolizer;
struct perfmap;
struct jvm_asker;
struct unwinder;
struct target;
struct session_mode;
struct topview;

struct session {
	const struct options *opt;
	const struct session_mode *mode; /* trap or fast: session.c's table */

	/* The target. */
	pid_t pid;
	struct tracee tr;               /* its threads */
	struct events ev;               /* its stops: gone, exec'd, how it ended; ev.reader is
					 * the live thread /proc and memory reads go through */
	struct target *t;               /* its maps, memory and objects, as we know them */
	struct proc_maps maps;          /* the maps the hooks were resolved in (at attach) */
	uint64_t next_maps_ns;          /* when watch_maps reads the maps again */
	struct hook_set hooks;
	struct seccomp_plan sc;         /* what its seccomp filters let us make it do */

	/* The parts of the run. */
	struct implant *im;             /* what we put into the target */
	struct agent_link *link;        /* fast mode: the agent's shared area */
	int link_xacct;                 /* exact mode: the agent accounts allocations itself */
	struct collect_ctx trap;        /* trap mode: where the traps' events go */
	struct profile *prof;
	struct sampler sampler;
	struct unwinder *unw;
	struct symbolizer *sym;
	struct membudget mem;           /* rings sized to the target's memory cgroup */
	struct perfmap *jit;            /* the target's perf map (JIT names), or NULL */
	struct jvm_asker *jvm;          /* --jvm-perfmap: asks the JVM for it, or NULL */
	unsigned jvm_maps;              /* maps it had written at the last read */
	struct pyattach *py;            /* the target's CPython (Python frames), or NULL */
	struct memreport mr;            /* smaps and allocator figures: heap vs RSS */

	/* Dumps. */
	const char *output;
	struct dump_dir out;            /* output's directory, opened before attaching */
	uint64_t start_ns, start_wall_ns;
	uint64_t next_every_ns;
	unsigned dump_seq;
	unsigned ticks;                 /* timer ticks seen */
	uint64_t inuse_mark;            /* --inuse-interval: live bytes at the last such dump */
	uint64_t live_next_ns;          /* when live bytes are counted next (track_live) */
	int live_fresh;                 /* the profile knows every free so far */
	uint64_t live_read_ns;          /* track_live's last count (0: none yet) */
	uint64_t live_read, xlive_read; /* its live bytes, and the lanes' then */
	uint64_t alloc_read;            /* the profile's allocated bytes then */
	struct peak peak;               /* the live set at the highest point so far */
	struct topview *tv;             /* --top: the live view, while attached */
	struct skipsites *skip;         /* the built-in wrappers and --skip, for dumps */
	struct wrapfind *wf;            /* wrappers found by their code, for dumps */

	struct run_stats stats;
	int attached;                   /* hooks are live */

#define SESSION_MAX_NOTES 8
	char notes[SESSION_MAX_NOTES][192];  /* said on stderr, kept as profile comments */
	size_t nnotes;
	unsigned noted;                 /* PROFILE_CAP_* already said */
};

/* Run a whole profile: attach, collect until a stop condition, dump, detach.
 * Returns the process exit code: 0 profile written (the target may have
 * exited, with any status), 1 could not attach or write (or the target wrote
 * over the shared memory: the profile is partial), 3 written but the
 * target was killed by a signal, 4 written but detach had to leave
 * heapattach mappings in the target. */
int session_run(const struct options *opt);
/* Write a numbered dump (seq > 0) or the final one (seq == 0). */
int session_dump(struct session *s, unsigned seq);
/* Say something the user must know about the profile: a warning on
 * stderr, and a comment in every profile written from now on. */
void session_note(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Note each profile cap the events have reached, once (profile.h). */
void session_note_caps(struct session *s);

#endif
