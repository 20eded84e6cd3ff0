/* The agent link's own state, shared by the files of src/fast that make up the link (private). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_LINK_PRIV_H
#define HEAPATTACH_LINK_PRIV_H

/*
 * struct agent_link (agentlink.h) is made of parts, each owning a
 * sub-struct of it: the records' (rec), exact mode's in-target accounting
 * (xa), the heartbeat thread (beat), the JIT code walked by its frame
 * pointer (fp) and the sampling interval (iv; adapt.c judges). The rest
 * (the area, its header as we wrote it, the rings, the frame table) is the
 * core's, and read by every part.
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

/* The records' part. */
struct records {
	struct profile_op ops[OP_BATCH]; /* events not yet recorded */
	size_t nops;
	struct copywalk_stats cwst;     /* walks of copies through the frame table */
};

/* The heartbeat thread's part. */
struct beat {
	int running;                    /* thread runs (agent_link_beat_start) */
	int stop;                       /* under lock: it is to end */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* The frame-pointer ranges' part. */
struct fpranges {
	int stale;                      /* a walk missed in code of no known range */
	uint32_t n;                     /* frame-pointer ranges published */
	uint64_t read_ns;               /* when the maps were last read for them */
};

/* Sampled mode: the interval in force is p.rate << ad.shift (adapt.h). */
struct interval {
	struct adapt_state ad;
	struct shift_change {
		uint64_t tsc;           /* our time stamp just before the agent could see it */
		uint8_t shift, before;
	} shifts[SHIFT_HIST];           /* the last SHIFT_HIST changes, by nshifts % SHIFT_HIST */
	uint64_t nshifts;
	uint64_t raised_from_ns;        /* the current raised period's start */
};

/* Exact mode's in-target accounting (SHM_F_XACCT). */
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

#endif
