/* The agent link's own state, shared by the files of src/fast that make up the link (private). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_LINK_PRIV_H
#define HEAPATTACH_LINK_PRIV_H

/*
 * struct agent_link (agentlink.h) is made of parts, each a file of its own
 * that owns a sub-struct of it:
 *   agentlink.c  the core: create/free, the area's setup (the implant
 *                backend), the drain loop, naps, the counters' sync
 *   records.c    the records of the rings: events, their checks, stack copies (rec)
 *   xacct.c      exact mode's in-target accounting (xa)
 *   heartbeat.c  the heartbeat and its thread (beat)
 *   fpranges.c   the JIT code walked by its frame pointer (fp)
 *   hdrcheck.c   the header compared with ours; the link turned hostile
 *   interval.c   the sampling interval raised while we cannot keep up (iv; adapt.c judges)
 * The rest (the area, its header as we wrote it, the rings, the frame
 * table) is the core's, and read by every part.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "fast/adapt.h"
#include "fast/agentlink.h"
#include "fast/ring.h"
#include "fast/toolguard.h"
#include "profile/profile.h"
#include "stacks/copywalk.h"
#include "tramp_fast.h"

#define DRAIN_CLOCK_EVERY 64		/* events between two looks at the clock */
#define OP_BATCH 64
#define SHIFT_HIST 256			/* interval changes kept for events still in the rings */

/* The records' part (records.c). */
struct records {
	struct profile_op ops[OP_BATCH]; /* events not yet recorded */
	size_t nops;
	struct copywalk_stats cwst;     /* walks of copies through the frame table */
};

/* The heartbeat thread's part (heartbeat.c). */
struct beat {
	int running;                    /* thread runs (agent_link_beat_start) */
	int stop;                       /* under lock: it is to end */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* The frame-pointer ranges' part (fpranges.c). */
struct fpranges {
	int stale;                      /* a walk missed in code of no known range */
	uint32_t n;                     /* frame-pointer ranges published */
	uint64_t read_ns;               /* when the maps were last read for them */
};

/* Sampled mode: the interval in force is p.rate << ad.shift (adapt.h; interval.c). */
struct interval {
	struct adapt_state ad;
	struct shift_change {
		uint64_t tsc;           /* our time stamp just before the agent could see it */
		uint8_t shift, before;
	} shifts[SHIFT_HIST];           /* the last SHIFT_HIST changes, by nshifts % SHIFT_HIST */
	uint64_t nshifts;
	uint64_t raised_from_ns;        /* the current raised period's start */
};

/* Exact mode's in-target accounting (SHM_F_XACCT; xacct.c). */
struct xacct {
	uint64_t slots;                 /* slots of the xlive table; 0: no accounting */
	int tp;                         /* thread ids from %fs:0, not rdfsbase (SHM_F_XTP) */
	int shared;                     /* lanes closed (SHM_F_XSHARED): threads share an id */
	uint64_t bytes_seen;            /* the lanes' alloc_bytes at the last look (--interval) */
	struct xpages {                 /* the pages of a region the agent has touched */
		uint64_t off, n;        /* entries (16 bytes) from offset off of the area */
		uint8_t *seen;          /* by page of our view from the region's first */
	} count_pages, live_pages;
	uint64_t bad_keys, bad_counts, bad_ptrs, torn;	/* entries not believed */
	int bad_noted;                  /* said once (debug) */
	uint64_t syncs, sync_max_ns;    /* readings, and the longest (debug) */
	int final_read;                 /* read after agent_link_final: nothing changes now */
	struct { uint64_t ptr, size; } *big;    /* accounted blocks of AGENT_LINK_BIG bytes
						 * or more at the last reading */
	size_t nbig, big_cap;
};

struct agent_link {
	struct agent_link_params p;
	struct shm_hdr *shm;            /* our view of the shared data (the first region's) */
	const struct shm_hdr *want;     /* its header as we wrote it (the implant's copy) */
	uint8_t *map;                   /* that view's mapping, once the implant handed it
					 * over (the target's are gone), and its size */
	size_t map_size;
	struct frametab *ftab;          /* frame rules the agent walks with */
	struct ownframes *own;          /* rules of our own code there (trampolines, agent) */
	int watching;                   /* on_code_change is the target's listener */
	struct tramp_fast_env fenv;     /* where trampolines find the data and the agent */
	struct toolguard guard;         /* tool_alive and the agent's faults (toolguard.h) */
	uint64_t faults;                /* the agent's loads that faulted, taken back */
	struct ring_reader rings;       /* our side of the event rings */
	uint64_t drops_seen;
	uint64_t nap_head, nap_ns;      /* ring_heads_total and time at the last nap_ns */
	uint64_t since;                 /* CLOCK_MONOTONIC ns when the area was set up */
	uint64_t drain_deadline;        /* a drain hands over no event after this */
	unsigned drain_left;            /* events until the drain looks at the clock */
	unsigned depth;                 /* frames the agent walks: our copy, never read back */
	int exact;                      /* every call recorded (rate 1) */
	int hostile;                    /* it held what no agent writes: trusted no more */
	int learn_noted;                /* the learning cap was said */
	int final;                      /* no writer will come back (agent_link_final) */
	unsigned py_max;                /* Python words an event may carry (0: none) */
	uint64_t napped_ns;             /* time spent in agent_link_nap, in all */
	uint64_t nallocs, nfrees;       /* events handled, in all */

	struct records rec;
	struct beat beat;
	struct fpranges fp;
	struct interval iv;
	struct xacct xa;
};

static inline uint8_t *data_of(struct agent_link *l)
{
	return (uint8_t *)l->shm;
}

/* The shared layout is mapped and set up (not yet, or no longer, released):
 * after detach too, until agent_link_free(), so that what the rings hold
 * is read once the target runs again. */
static inline int ready(const struct agent_link *l)
{
	return l && l->shm && l->ftab;
}

/* ---- agentlink.c ---- */

/* Say msg once on stderr and in the profile (the run's note). */
void link_note(struct agent_link *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A counter of the agent's that started at 0 when the area was set up:
 * whether v is a count it could have reached by now. */
int link_plausible(const struct agent_link *l, uint64_t v);

/* ---- records.c ---- */

/* ring_fn: one record (our copy). Non-zero stops the drain: a record the
 * agent cannot have written, or the drain's time is up. */
int records_on_record(void *arg, const void *rec, uint32_t len);
/* Hand the queued events to the profile (they are recorded in batches). */
void records_flush(struct agent_link *l);
/* Whether the agent's live table no longer holds ptr, a pointer it entered
 * (it never drops one: see shm.h); arg is the link. */
int records_freed_in_table(uint64_t ptr, void *arg);

/* ---- xacct.c ---- */

/* At agent_link_new: accounting only in exact mode with a table of a power
 * of two slots (p.xlive_slots), and how the agent tells threads apart. */
void xacct_init(struct agent_link *l);
/* --interval: what the lanes allocated since the last look, into the stats' bytes. */
void xacct_bytes(struct agent_link *l);
/* The lanes' allocation and free totals into the stats (-v). */
void xacct_stats(struct agent_link *l);
/* At agent_link_free: what it read (debug), and its memory freed. */
void xacct_free(struct agent_link *l);

/* ---- fpranges.c ---- */

/* Read the maps and publish the ranges (ours first, then the shared
 * header: ranges before their count). */
void fpranges_refresh(struct agent_link *l);
/* A walk missed at ip: if it is no frame-pointer code we know of, look at
 * the maps again soon (new JIT code). */
void fpranges_missed(struct agent_link *l, uint64_t ip);
/* After a drain: the maps read again if a walk missed, at most every FP_REFRESH_NS. */
void fpranges_after_drain(struct agent_link *l);

/* ---- hdrcheck.c ---- */

/* The shared area is no longer trusted: the target wrote what the agent
 * never writes (what). Said once; from now on nothing in the area is read. */
void hdrcheck_hostile(struct agent_link *l, const char *what);
/* Compare the shared header with what we wrote (l->want); the first
 * field that differs makes the link hostile. */
void hdrcheck_header(struct agent_link *l);

/* ---- interval.c ---- */

/* shm_exp_gap's multiplier for a mean interval of rate bytes; rates above
 * 2^46 (64 TiB) sample as that. */
uint64_t interval_gap_mul(uint64_t rate);
/* The shift in force when an event stamped tsc was sampled. */
unsigned interval_shift_at(const struct agent_link *l, uint64_t tsc);
/* After a drain: the window's figures to the controller (adapt.h), and
 * its verdict applied. */
void interval_adapt(struct agent_link *l, uint64_t now);

#endif
