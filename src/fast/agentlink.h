/* The tool's side of the in-target agent: the shared area, its rings, frame table and counters. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENTLINK_H
#define HEAPATTACH_AGENTLINK_H

/*
 * The agent (src/arch/x86_64/agent.c) lives in the target and shares one
 * memfd with the tool: the layout of shm.h. The link is everything the
 * tool keeps of that sharing: its view of the area, the header as the tool
 * wrote it (never read back), the readers of the rings, the frame table
 * it teaches, the events not yet handed to the profile, the nap and drain
 * timing, and whether the target has written what no agent writes (then
 * nothing in the area is read any more). It is the fast mode's implant
 * backend too (agent_link_implant_ops): the implant calls it to lay out
 * the first region and to emit the trampolines that call the agent.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "implant/implant.h"
#include "profile/runstats.h"
#include "python/pymerge.h"

struct profile;
struct sampler;
struct seccomp_plan;
struct unwinder;
struct target;
struct agent_link;

struct agent_link_params {
	pid_t pid;                      /* the target (named in notes) */
	uint64_t rate;                  /* --sample-rate; 1: exact, every call and free */
	unsigned max_depth;             /* --max-depth: frames kept of a stack (0: SHM_DEFAULT_DEPTH) */
	uint64_t ring_size;             /* bytes of each ring (agent_link_ring_size) */
	int prefault;                   /* fault the tables in ourselves (membudget.h) */
	int count_bytes;                /* add the unsampled bytes to stats->bytes (--interval) */
	uint64_t xlive_slots;           /* exact mode: slots of the in-target accounting's
					 * table (agent_link_xacct_slots); 0: no accounting */
	const struct seccomp_plan *sc;  /* what the agent may not do (read when the area is set up) */
	struct profile *prof;           /* where events go */
	struct sampler *sampler;        /* the counters' first gaps and seeds */
	struct unwinder *unw;           /* stacks the frame table cannot walk */
	struct target *target;          /* maps, memory, objects, and the thread they are
					 * read through (NULL: no frame table, no ranges) */
	struct run_stats *stats;        /* what the events add to */
	const struct shm_py *py;        /* the agent's view of the target's Python
					 * (pyfind.c); NULL or kind 0: no Python frames */
	struct pyframes *pyframes;      /* decodes the Python frames of events */
	struct pymerge_code pymerge;    /* where they go in the native stacks */
	/* said once on stderr and kept in the profile (session_note) */
	void (*note)(void *arg, const char *msg);
	void *note_arg;
};

/* Bytes of each ring by default for a sampling rate (before the memory
 * cgroup has its say, membudget.c). */
uint64_t agent_link_ring_size(uint64_t rate);
/* Bytes of the shared data part for rings of ring_size bytes and an
 * accounting table of xlive_slots slots (0: none). */
uint64_t agent_link_data_size(uint64_t ring_size, uint64_t xlive_slots);
/*
 * Exact mode's in-target accounting (shm.h, SHM_F_XACCT): the xlive slots,
 * budget (membudget.h's xlive_slots) unless HEAPATTACH_NO_XACCT is set.
 * agent_link_xacct_threads decides at the attach whether the agent can
 * tell its threads apart.
 */
uint64_t agent_link_xacct_slots(uint64_t budget);
struct tracee;
struct thread;
/*
 * At the attach, every thread of tr stopped, before the area is sized:
 * keep accounting only if the agent can tell every live thread but a vfork
 * child from the others by its id: its fs base (each thread's tp), no two
 * the same, at least one read; where the agent must take it from %fs:0
 * (SHM_F_XTP), every thread's thread pointer there too
 * (arch_xacct_tp_check). Returns whether accounting stays on.
 */
int agent_link_xacct_threads(struct agent_link *l, struct tracee *tr);
/*
 * A new thread th of tr at its first stop, before it ran: its id read
 * (th->tp) and compared with every other live thread's. One the agent
 * cannot tell from another's (the same fs base: a clone without
 * CLONE_SETTLS; with SHM_F_XTP, a first TLS word that is not its thread
 * pointer; registers that cannot be read) closes the lanes for good
 * (SHM_F_XSHARED, said once): every later allocation is an event, and the
 * profile stays exact. Returns whether the lanes are open (0: no
 * accounting). Before the area is set up nothing is read: the attach's
 * agent_link_xacct_threads reads every thread.
 */
int agent_link_xacct_thread(struct agent_link *l, struct tracee *tr, struct thread *th);
/*
 * Read the figures the agent accounted (SHM_F_XACCT) into the profile
 * anew (profile_xacct_*): the (stack, size) counts of every lane and the
 * blocks of the xlive table, each word read once and checked (a stack id
 * we gave out, a size the agent can key, a count it could have reached).
 * Call it before the live figure is taken and before a dump; after
 * agent_link_final, the first call reads what the agent left and later
 * ones keep it. Does nothing without accounting or once hostile.
 */
void agent_link_xacct_sync(struct agent_link *l);
/*
 * cb(ptr, size, arg) for each block of AGENT_LINK_BIG bytes or more
 * (requested) the agent accounted live at the last agent_link_xacct_sync
 * (the heap's resident bytes take off their pages never touched).
 */
#define AGENT_LINK_BIG (64u << 10)
void agent_link_xacct_big(const struct agent_link *l,
			  void (*cb)(uint64_t ptr, uint64_t size, void *arg), void *arg);

/*
 * The bytes the lanes' totals say the agent holds live (allocated minus
 * freed, foreign frees too) into *bytes, without reading the table: 0, or
 * -ENODATA without accounting or once hostile. Unchecked (the target
 * writes them): only good for deciding when agent_link_xacct_sync is due.
 */
int agent_link_xacct_live(struct agent_link *l, uint64_t *bytes);
/* Our view of the shared area (tests fill it as the agent would); NULL before it is set up. */
struct shm_hdr *agent_link_shm(struct agent_link *l);

/* A link with nothing shared yet: the area comes with the implant's first
 * region (agent_link_implant_ops). Never NULL (out of memory exits, xmalloc.h). */
struct agent_link *agent_link_new(const struct agent_link_params *p);
/* Unmaps our view of the area (once the implant handed it over) and frees. NULL is fine. */
/*
 * A signal stopped tid: if it is a fault of one of the agent's guarded
 * loads, resume the thread past it (toolguard.h). 1: taken back, drop the
 * signal; 0: not ours; -errno. l may be NULL.
 */
int agent_link_fault(struct agent_link *l, pid_t tid);

void agent_link_free(struct agent_link *l);

/* The fast mode's implant backend; its arg is the link. */
extern const struct implant_ops agent_link_implant_ops;

/* Refresh the heartbeat: exact-mode writers wait for room only while it is fresh. */
void agent_link_heartbeat(struct agent_link *l);
/* Refresh it every 50 ms from a thread of its own, so that it stays fresh
 * while heapattach lives, however long one step of the main thread takes,
 * until agent_link_beat_stop (also done by agent_link_free). */
void agent_link_beat_start(struct agent_link *l);
void agent_link_beat_stop(struct agent_link *l);
/* Handle the committed events of the rings (at most max, then back to the
 * main loop) and record them; returns how many. */
size_t agent_link_drain(struct agent_link *l, size_t max);
#define AGENT_LINK_DRAIN_ALL ((size_t)1 << 20)
/* Nanoseconds to sleep before the next drain, from the rings' fill rate. */
long agent_link_nap_ns(struct agent_link *l);
/* Sleep ns nanoseconds, or until a writer rings the doorbell (a ring past
 * SHM_DOORBELL_FILL) or a signal arrives. */
void agent_link_nap(struct agent_link *l, long ns);
/* Non-zero while a ring is more than a quarter full: drain without a nap. */
int agent_link_busy(struct agent_link *l);
/* Drain the rings (to the end once the writers are gone: agent_link_final),
 * then (sampled mode) free what the agent's live table says was freed, and
 * fold the agent's counters into the stats (before a dump, at detach, and
 * now and then to keep the profile's table small). */
void agent_link_reconcile(struct agent_link *l);
/* No writer will make progress any more (target gone, exec'd, or detached):
 * a record left half written is skipped. */
void agent_link_final(struct agent_link *l);
/* Non-zero once the target wrote what no agent writes: nothing in the area
 * is read any more and the run must end. */
int agent_link_hostile(const struct agent_link *l);

/* Writes "; why: reason, ..." for the SHM_DROP_* bits of why (run_stats.drop_why),
 * or "" for none, into buf. */
void agent_link_drop_reasons(uint32_t why, char *buf, size_t len);

#endif
