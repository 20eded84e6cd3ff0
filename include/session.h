/* One profiling run against one target: the state shared by attach, events, traps and dumps. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SESSION_H
#define HEAPATTACH_SESSION_H

#include <stdint.h>
#include <sys/types.h>
#include "cli.h"
#include "hooks.h"
#include "memcg.h"
#include "proc.h"
#include "profile.h"
#include "reloc.h"
#include "ring.h"
#include "sampler.h"
#include "seccomp_plan.h"
#include "tracee.h"
#include "shm.h"
#include "tramp.h"
#include "tramp_fast.h"

struct unwinder;
struct symbolizer;
struct perfmap;
struct frametab;
struct inject_region;

/* A patched entry point and its trampoline. */
struct patch {
	const struct hook *hook;
	enum tramp_class cls;
	struct reloc_result reloc;
	struct tramp_layout lay;
	uint64_t tramp;                 /* trampoline address in the target */
	uint8_t *tramp_local;           /* the same bytes in our mapping */
	uint8_t orig[RELOC_JMP_LEN];    /* bytes the jmp replaced */
	int region;                     /* index into session.regions */
	int installed;                  /* the jmp is written */
};

/*
 * A memfd injected near one hooked object: [0, REGION_CODE) code (r-x in the
 * target), then a data part whose first page is a struct shm_hdr carrying at
 * least the magic and the patch records, so that a later heapattach can undo
 * our jumps if this one dies. In fast mode the first region's data part is
 * the whole shared layout of shm.h, also mapped rw- in the target (alias).
 */
#define REGION_CODE (64 * 1024)
struct region {
	struct inject_region *inj;      /* the r-x view; NULL for a leftover */
	struct inject_region *alias;    /* fast mode: the rw- view, or NULL */
	uint64_t remote;                /* address in the target */
	uint8_t *local;                 /* our RW view */
	size_t size, used;              /* used: bytes of code */
	uint64_t near;                  /* the object it serves */
	struct shm_hdr *hdr;            /* local + REGION_CODE */
};

#define SESSION_MAX_REGIONS 16

struct session {
	const struct options *opt;
	pid_t pid;
	pid_t proc_tid;                 /* a live thread: /proc/TID and memory reads go through it
					 * (pid, unless the leader has exited) */
	struct tracee tr;
	struct proc_maps maps;
	struct hook_set hooks;
	struct patch *patches;
	size_t npatches;
	struct region regions[SESSION_MAX_REGIONS];
	size_t nregions;

	int fast;                       /* trap-free mode */
	int exact;                      /* every call recorded (rate 1) */
	struct tramp_fast_env fenv;     /* fast mode: where trampolines find data and agent */
	struct frametab *ftab;          /* fast mode: frame rules the agent walks with */
	struct shm_hdr *shm;            /* fast mode: our view of the shared data (region 0's
					 * hdr), kept after detach until fast_release() */
	uint8_t *shm_map;               /* that view's mapping, once patch_remove handed it
					 * over (the target's are gone), and its size */
	size_t shm_map_size;
	struct ring_reader rings;       /* fast mode: our side of the event rings */
#define SESSION_BATCH 64
	struct profile_op ops[SESSION_BATCH];  /* fast mode: events not yet recorded */
	size_t nops;
	uint64_t drops_seen;
	size_t warm_next;               /* next map whose symbols fast_warm_step loads */
	uint64_t nap_head, nap_ns;      /* ring_head and time at the last fast_nap_ns */
	unsigned ticks;                 /* fast mode: timer ticks seen */
	uint64_t regions_stats[2];      /* fast mode: agent walks, walk misses */
	uint64_t nest_lo, nest_hi;      /* hooked allocator text: calls from there are nested */
	struct seccomp_plan sc;         /* what the target's seccomp filters let us make it do */
	uint64_t ring_size;             /* fast mode: bytes of each ring; 0 = the default */
	int prefault;                   /* fast mode: fault the shared tables in ourselves */
	char mem_note[MEMCG_PATH_MAX + 160]; /* what we add to the target's memory (-v, profile) */
	/* fast mode: the shared area is the target's to write (fast.c) */
	struct shm_hdr shm_want;        /* region 0's header as we wrote it: never read back */
	uint64_t shm_since;             /* CLOCK_MONOTONIC ns when it was set up */
	uint64_t drain_deadline;        /* a drain hands over no event after this */
	unsigned drain_left;            /* events until the drain looks at the clock */
	int hostile;                    /* it held what no agent writes: trusted no more */

	struct profile *prof;
	struct sampler sampler;
	struct unwinder *unw;
	struct symbolizer *sym;         /* kept warm while the target lives */
	struct perfmap *jit;            /* the target's perf map (JIT names), or NULL */

	uint64_t leftover_lo[SESSION_MAX_REGIONS], leftover_hi[SESSION_MAX_REGIONS];
	size_t nleftovers;

	uint64_t start_ns, start_wall_ns;
	uint64_t next_every_ns;
	uint64_t bytes_since_dump;
	unsigned dump_seq;
	uint64_t events, nested, unwind_errors, doorbells;

	int attached;                   /* hooks are live */
	int maps_changed;               /* s->maps was re-read: rebuild what points into it */
	int target_gone;                /* every thread exited */
	int exec_seen;                  /* the target replaced its image */
	int exit_status;                /* wait status of the last of its threads seen to end */
	size_t regions_left;            /* heapattach mappings detach had to leave in it */
	const char *output;
	struct dump_dir out;            /* output's directory, opened before attaching */

#define SESSION_MAX_NOTES 8
	char notes[SESSION_MAX_NOTES][192];  /* said on stderr, kept as profile comments */
	size_t nnotes;
	unsigned noted;                 /* PROFILE_CAP_* and SESSION_NOTE_* already said */
};

#define SESSION_NOTE_LEARN 0x100        /* frame rules learnt at the capped rate */

/* Run a whole profile: attach, collect until a stop condition, dump, detach.
 * Returns the process exit code: 0 profile written (the target may have
 * exited, with any status), 1 could not attach or write (or the target wrote
 * over the shared memory: the profile is partial), 3 written but the
 * target was killed by a signal, 4 written but detach had to leave
 * heapattach mappings in the target. */
int session_run(const struct options *opt);

/* ---- patch.c ---- */
/* Inject regions and install every hook; threads must all be stopped.
 * 0, or -errno after undoing everything. */
int patch_install(struct session *s);
/* Disarm traps, restore every patched byte, wait until no thread is inside
 * a trampoline (resuming briefly), then unmap the regions; what had to stay
 * mapped is counted in regions_left (and said once). Threads are all
 * stopped on return. */
void patch_remove(struct session *s);
/* The patch whose trampoline holds ip, or NULL. */
struct patch *patch_by_tramp_ip(struct session *s, uint64_t ip);
/* Non-zero if addr lies in any injected region (or a leftover being removed). */
int patch_in_region(const struct session *s, uint64_t addr);
/* Non-zero if the stopped thread tid runs in, or will return into, a region
 * (its memory read as the target's: a thread of it, or a child just forked). */
int patch_in_flight(struct session *s, pid_t tid);
/* Resume and re-stop the threads until none is inside a region; 0 when
 * quiet, -EBUSY (count in *busy) after the time limit. */
int patch_wait_quiet(struct session *s, int *busy);
/* Unmap a target range by a syscall in some stopped thread. 0 or -errno. */
int patch_unmap_remote(struct session *s, uint64_t addr, size_t len);
/* Fast mode: bytes of each ring (s->ring_size, or the default for the rate). */
uint64_t patch_ring_size(const struct session *s);
/* Bytes of each injected region. */
uint64_t patch_region_size(const struct session *s);

/* ---- membudget.c ---- */
/* Size the rings to the room in the target's memory cgroup (before attach):
 * sets ring_size, prefault and mem_note. 0, or -ENOSPC after one message
 * saying why heapattach must not attach (exact mode or the least rings do
 * not fit). */
int membudget_plan(struct session *s);
/* Close a target fd by a syscall in some stopped thread. 0 or -errno. */
int patch_close_remote(struct session *s, int fd);

/* ---- recover.c ---- */
/* Undo what a previous heapattach that died left in the target (jumps into
 * memfd:heapattach mappings): restore bytes, wait, unmap. Threads stopped.
 * 0 (nothing left or all undone) or -errno. */
int recover_leftovers(struct session *s);

/* ---- forkchild.c ---- */
/* A child forked while attached, stopped before it ran: give it its original
 * text back and, when nothing in it can reach our regions any more, unmap
 * them in it. Leaves a child that shares the target's memory alone. */
void forkchild_clean(struct session *s, pid_t child);
/* 0 if processes a and b use one address space, 1 if not, -errno when
 * unknown (no kcmp). */
int forkchild_separate_memory(pid_t a, pid_t b);

/* ---- events.c ---- */
/* Handle one waitpid status; resumes the thread unless tracee_stopping. */
int events_dispatch(void *sess, pid_t tid, int status);

/* ---- collect.c ---- */
/* Handle a syscall-stop of thread tid that may be one of our traps (bkpt.h):
 * 1 if it was a trap's entry stop (recorded unless record is 0), 0 if not,
 * -errno on error. */
int collect_trap(struct session *s, pid_t tid, int record);

/* ---- fast.c ---- */
/* Fill region 0's shared layout: header, counters, bits; frame table. */
void fast_init_data(struct session *s, uint64_t data_remote, uint64_t ring_size);
void fast_heartbeat(struct session *s);
/* Handle the committed events of the rings (at most about a million, then
 * back to the main loop) and record them; returns how many. */
size_t fast_drain(struct session *s);
/* The same, for at most max events. */
size_t fast_drain_max(struct session *s, size_t max);
/* Load one more object's symbols while the target lives (between drains). */
void fast_warm_step(struct session *s);
/* Nanoseconds to sleep before the next drain, from the ring's fill rate. */
long fast_nap_ns(struct session *s);
/* Sleep ns nanoseconds, or until a writer rings the doorbell (a ring past
 * SHM_DOORBELL_FILL) or a signal arrives. */
void fast_nap(struct session *s, long ns);
/* Non-zero while the ring is more than a quarter full: drain without a nap. */
int fast_ring_busy(struct session *s);
/* Drain the rings, then (sampled mode) free what the agent's live table
 * says was freed (before a dump, at detach, and now and then to keep our
 * table small). */
void fast_reconcile(struct session *s);
/* Fold the agent's drop and nesting counters into the session. */
void fast_sync_stats(struct session *s);
/* After detach: the frame table and our view of the shared data go. */
void fast_release(struct session *s);

/* ---- session.c ---- */
/* Write a numbered dump (seq > 0) or the final one (seq == 0). */
int session_dump(struct session *s, unsigned seq);
/* Say something the user must know about the profile: a warning on
 * stderr, and a comment in every profile written from now on. */
void session_note(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Note each profile cap the events have reached, once (profile.h). */
void session_note_caps(struct session *s);

#endif
