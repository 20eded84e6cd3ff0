/* The state of one profiling run, shared by the session's files only (session.h is the way in). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SESSION_STATE_H
#define HEAPATTACH_SESSION_STATE_H

#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include "model/hooks.h"
#include "model/proc.h"
#include "output/dump.h"
#include "output/wrapfind.h"
#include "profile/peak.h"
#include "profile/runstats.h"
#include "profile/sampler.h"
#include "ptrace/events.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/tracee.h"
#include "session/config.h"
#include "session/membudget.h"
#include "session/memreport.h"
#include "session/rotate.h"
#include "trap/collect.h"

struct agent_link;
struct implant;
struct implant_ops;
struct profile;
struct symbolizer;
struct perfmap;
struct jvm_asker;
struct unwinder;
struct target;
struct topview;
struct session;
struct serve;
struct pprof_base;

/*
 * A backend: what the trap and fast modes do differently, the only place
 * the session reaches a mode's parts (backend_trap.c, backend_fast.c).
 * Every operation may be NULL: nothing to do in that mode.
 */
struct session_mode {
	const char *name;
	int agent;                      /* an agent runs in the target (its syscalls: seccomp) */
	int syscall_stops;              /* the traps are syscall-stops */
	const struct implant_ops *implant;
	/* before the attach, while the target runs untouched */
	int (*prepare)(struct session *s);
	/* every thread stopped, before the seccomp plan and the hooks */
	void (*seized)(struct session *s);
	/* hooks in place, before the threads run again */
	void (*started)(struct session *s);
	/* collect until told to stop */
	void (*loop)(struct session *s);
	/* what the target holds, into the profile */
	void (*sync)(struct session *s);
	/* what the agent accounted in the target itself, into the profile */
	void (*accounted)(struct session *s);
	/* the bytes the agent holds accounted now (in-target accounting), 0 or -ENOENT */
	int (*live_extra)(struct session *s, uint64_t *bytes);
	/* large blocks only the agent accounts, each as add(ptr, size, arg) */
	void (*big_blocks)(struct session *s, void (*add)(uint64_t ptr, uint64_t size, void *arg),
			   void *arg);
	/* the target's stops: a trap (syscall-stop), a fault, a new thread */
	int (*syscall_stop)(struct session *s, pid_t tid, int record);
	int (*fault_stop)(struct session *s, pid_t tid);
	void (*new_thread)(struct session *s, struct thread *th);
	/* why events were dropped (run_stats.drop_why), as "; why: ..." into buf */
	void (*why_dropped)(struct session *s, char *buf, size_t len);
	/* 1 once the target wrote over what we share with it */
	int (*hostile)(const struct session *s);
	/* every thread detached: nothing of ours runs in the target any more */
	void (*detached)(struct session *s);
	void (*free)(struct session *s);
};

extern const struct session_mode session_trap_mode, session_fast_mode;

struct session {
	const struct session_config *opt;
	const struct session_mode *mode;

	/* The target. */
	pid_t pid;
	struct tracee tr;               /* its threads */
	struct events ev;               /* its stops: gone, exec'd, how it ended; ev.reader is
					 * the live thread /proc and memory reads go through */
	struct target *t;               /* its maps, memory and objects, as we know them */
	struct proc_maps maps;          /* the maps the hooks were resolved in (at attach) */
	uint64_t next_maps_ns;          /* when session_watch_maps reads the maps again */
	struct hook_set hooks;
	struct seccomp_plan sc;         /* what its seccomp filters let us make it do */

	/* The parts of the run. */
	struct implant *im;             /* what we put into the target */
	void *implant_arg;              /* the backend's, for its implant ops (prepare) */
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
	struct skipsites *skip;         /* the built-in wrappers and --skip */
	struct wrapfind *wf;            /* wrappers found by their code: dumps and --top */

	/* Dumps (schedule.c decides when, write.c writes). */
	const char *output;
	struct dump_dir out;            /* output's directory, opened before attaching */
	uint64_t start_ns, start_wall_ns;
	uint64_t next_every_ns;
	unsigned dump_seq;
	struct rotate rot;              /* --keep: the numbered dumps kept */
	unsigned ticks;                 /* timer ticks seen */
	uint64_t inuse_mark;            /* --inuse-interval: live bytes at the last such dump */
	uint64_t live_next_ns;          /* when live bytes are counted next (track_live) */
	int live_fresh;                 /* the profile knows every free so far */
	uint64_t live_read_ns;          /* track_live's last count (0: none yet) */
	uint64_t live_read, xlive_read; /* its live bytes, and the lanes' then */
	uint64_t alloc_read;            /* the profile's allocated bytes then */
	struct peak peak;               /* the live set at the highest point so far */
	struct topview *tv;             /* --top: the live view, while attached */

	struct serve *srv;              /* --listen: the HTTP server, or NULL */
	uint64_t srv_mr_ns;             /* when a request last took a memreport snapshot */

	struct run_stats stats;
	int attached;                   /* hooks are live */

#define SESSION_MAX_NOTES 8
	char notes[SESSION_MAX_NOTES][192];  /* said on stderr, kept as profile comments */
	size_t nnotes;
	unsigned noted;                 /* PROFILE_CAP_* already said */
};

/* ---- signals.c: what the signal handlers saw ---- */

extern volatile sig_atomic_t session_stop_signal;  /* SIGINT, SIGTERM, SIGHUP: stop */
extern volatile sig_atomic_t session_ticked;       /* the periodic timer fired */
extern volatile sig_atomic_t session_child_event;  /* SIGCHLD: a stop to wait for */
extern volatile sig_atomic_t session_dump_asked;   /* SIGUSR1: a numbered dump now */

/* From the first instant: a stop request before the attach leaves the
 * target untouched, one after it detaches cleanly. */
void session_install_stop_handlers(void);
/* Handlers without SA_RESTART, so waitpid returns EINTR; a periodic tick
 * bounds the time a flag set just before waitpid goes unseen. */
void session_install_signals(void);
void session_stop_timer(void);
/* Tests only: hold for the milliseconds the environment variable var says. */
void session_test_delay(const char *var);

/* ---- write.c: the profiles and what they say ---- */

/* Write a numbered dump (seq > 0) or the final one (seq == 0). */
int session_dump(struct session *s, unsigned seq);
/* A pprof profile as a dump's, into f: what the HTTP endpoint serves. */
struct session_render {
	FILE *f;
	const char *default_type;       /* its default_sample_type, or NULL */
	const struct pprof_base *base;  /* a delta since base, or NULL */
};
/* 0 or -errno. */
int session_render(struct session *s, const struct session_render *r);
/* Say something the user must know about the profile: a warning on
 * stderr, and a comment in every profile written from now on. */
void session_note(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Note each profile cap the events have reached, once (profile.h). */
void session_note_caps(struct session *s);
/* What zsection skipped since the last look: said once, kept in the profile. */
void session_zsection_notes(struct session *s);
/* The agent link's notes (agentlink.h): session_note's callback form. */
void session_note_cb(void *arg, const char *msg);
/* Take what the target's perf map gained; 0 or -errno (-ENOENT: none). */
int session_jit_refresh(struct session *s);
/* Where wrapfind reads the target and the interpreter's code is. */
struct wrapfind_src session_wrapfind_src(struct session *s);

/* ---- serve.c, serve_metrics.c: --listen ---- */

/* Before the attach: listen (a port taken fails here, the target
 * untouched). 0, or 1 after a message. */
int session_serve_open(struct session *s);
/* Attached: the server thread starts answering. */
void session_serve_start(struct session *s);
/* Between drains: answer what the server thread handed on (an atomic
 * load when there is nothing). */
void session_serve_poll(struct session *s);
/* Stop the server thread, close its sockets. */
void session_serve_close(struct session *s);
/* The Prometheus text exposition of the run now (malloc'd, *len bytes), or NULL. */
char *session_metrics(struct session *s, size_t *len);

/* ---- schedule.c: when dumps are written, the periodic work ---- */

/* A run over several with --top: this session's figures into its slot
 * (fleet.h), at every tick and once the final count is in. */
void session_publish(struct session *s);
/* Periodic work between events: --duration, --every, --interval, SIGUSR1,
 * new highs, the allocator's figures, --top. 1 to stop. */
int session_housekeeping(struct session *s);
/* The profile's live bytes: a new high is kept for the peak profile, and
 * one by --inuse-interval writes a numbered dump (final: no dump). */
void session_track_live(struct session *s, uint64_t now, int final);
/* Read the target's maps when their period has passed (code changes). */
void session_watch_maps(struct session *s);

#endif
