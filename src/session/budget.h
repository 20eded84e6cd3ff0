/* One budget of what heapattach adds to a target (address space, mappings, memory cgroup, locked memory, stack) against the room its limits leave. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_BUDGET_H
#define HEAPATTACH_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "model/memcg.h"

#define BUDGET_NONE UINT64_MAX          /* no limit, or not known */

/*
 * The share of each room heapattach may take; the rest is left to the
 * target, for what it was about to do. Address space: a quarter, since
 * programs take it in big pieces (a thread's stack is 8 MiB, a glibc
 * arena 64 MiB, a large malloc a mapping of its own). Mappings: half of
 * those left. Memory cgroup, locked memory: half of the room. The main
 * thread's stack: a quarter of what it may still grow.
 */
#define BUDGET_AS_SHARE         4
#define BUDGET_MAPS_SHARE       2
#define BUDGET_MEMCG_SHARE      2
#define BUDGET_LOCK_SHARE       2
#define BUDGET_STACK_SHARE      4

#define BUDGET_SAMPLED_MIN_RING (64u << 10)     /* holds a few 8 KiB stack copies */
#define BUDGET_EXACT_MIN_RING   (1u << 20)      /* exact mode needs big rings to keep up */
#define BUDGET_XLIVE_WANT       (1u << 20)      /* exact mode's accounting: xlive slots */
#define BUDGET_XLIVE_MIN        (1u << 16)
/* mremap (inject_region_alias) refuses unless the mappings stay this many
 * below vm.max_map_count after two more (mm/mremap.c) */
#define BUDGET_MREMAP_MARGIN    6

/* The target's limits and what it uses of them (BUDGET_NONE: no limit,
 * or not known). */
struct budget_room {
	uint64_t as_limit, as_used;     /* RLIMIT_AS (soft) and VmSize, bytes */
	uint64_t maps_max, maps_used;   /* vm.max_map_count and its mappings */
	uint64_t lock_limit, lock_used; /* RLIMIT_MEMLOCK (NONE with CAP_IPC_LOCK) and
					 * VmLck: anything locked, and our mappings may
					 * be locked too (mlockall(MCL_FUTURE)) */
	uint64_t stack_limit, stack_used; /* RLIMIT_STACK and its main thread's [stack] */
	struct memcg_info cg;           /* its memory cgroup; cg.avail MEMCG_NONE: no limit */
	int cg_ours;                    /* heapattach runs in that cgroup too */
};

/* What heapattach is asked for. */
struct budget_ask {
	int agent;                      /* fast mode: one region, r-x and rw- views, rings */
	int exact;                      /* --sample-rate 1: bigger rings, the accounting */
	uint64_t ring_want;             /* bytes of each ring without a limit */
};

/* One choice of sizes and what it adds to the target. */
struct budget_cost {
	uint64_t ring_size;             /* bytes of each ring; 0: none (trap mode) */
	uint64_t xlive_slots;           /* exact mode's accounting; 0: none */
	int prefault;                   /* heapattach faults the tables in (charged to it) */
	uint64_t region;                /* bytes of each injected region */
	unsigned regions, views;        /* regions (at most), views of each */
	uint64_t as;                    /* address space: regions x views x region */
	uint64_t maps;                  /* mappings kept while attached */
	uint64_t maps_free;             /* mappings that must be free to make them */
	uint64_t memcg;                 /* bytes the target's memory cgroup may be charged */
	uint64_t locked;                /* bytes locked with the target's memory */
	uint64_t stack;                 /* bytes a hooked call adds to a thread's stack */
};

/* What heapattach adds with rings of ring_size and xlive_slots slots
 * (ignored in trap mode) to a target with room r. Pure. */
void budget_cost(const struct budget_ask *a, const struct budget_room *r, uint64_t ring_size,
		 uint64_t xlive_slots, struct budget_cost *out);

/*
 * The one decision: the largest rings (a power of two from a->ring_want
 * down to the mode's least) and then, in exact mode, the largest
 * accounting regions (BUDGET_XLIVE_WANT slots down to BUDGET_XLIVE_MIN,
 * else none) whose cost fits every limit's share of its room. 0 with *out,
 * or -ENOSPC with why (what follows "cannot attach to PID: ": which
 * limit, its room, the least heapattach would add, what to do). Pure.
 */
int budget_fit(const struct budget_ask *a, const struct budget_room *r, struct budget_cost *out,
	       char *why, size_t len);

/* "heapattach adds up to ..." for c (-v, the profile's comments). */
void budget_note(const struct budget_ask *a, const struct budget_room *r,
		 const struct budget_cost *c, char *buf, size_t len);

#endif
