/* What a run counts as events come in: for the profile's comments, -v and --interval. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_RUNSTATS_H
#define HEAPATTACH_RUNSTATS_H

#include <stdint.h>

/* Owned by the run (session.h); the collectors (collect.c in trap mode,
 * fast/records.c in fast mode) add to it. */
struct run_stats {
	uint64_t events;        /* events recorded */
	uint64_t nested;        /* calls made from inside another hooked call */
	uint64_t unwind_errors; /* stacks the unwinder could not walk */
	uint64_t bytes;         /* bytes allocated (unsampled) since the last --interval dump */
	uint64_t walks;         /* fast mode: the agent's walks... */
	uint64_t walk_misses;   /* ...of which missed the frame table */
	uint64_t memo_hits;     /* ...and exact mode: served by the agent's walk memo */
	uint64_t doorbells;     /* fast mode: times a writer woke the napping tool */
	uint64_t py_found;      /* fast mode: samples that found their thread's Python state */
	uint64_t py_not_found;  /* ...and that looked and did not */
	uint64_t xacct_allocs;  /* exact mode: allocations accounted in the target
				 * (no event: SHM_F_XACCT), by its lanes' totals... */
	uint64_t xacct_frees;   /* ...and the frees of those blocks */
	uint32_t drop_why;      /* fast mode: why events were dropped (SHM_DROP_*) */
	uint64_t wait_max_ns;   /* exact mode: the longest a writer waited for ring room
				 * (the target's figure: debug only) */
};

#endif
