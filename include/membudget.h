/* What heapattach adds to the target's memory: rings sized to the room in its memory cgroup. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMBUDGET_H
#define HEAPATTACH_MEMBUDGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memcg.h"

struct membudget {
	uint64_t ring_size;             /* bytes of each ring; 0 when there are none */
	int prefault;                   /* fault the shared tables in ourselves */
	uint64_t xlive_slots;           /* exact mode: the in-target accounting's table
					 * (shm.h, SHM_F_XACCT) may have this many slots; 0: none */
	char note[MEMCG_PATH_MAX + 160]; /* what we add to the target's memory (-v, profile) */
	/* what the note is made of (membudget_set_xlive makes it again) */
	uint64_t base;                  /* bytes but the accounting's regions */
	int fixed;                      /* our tables count: we run in that cgroup */
	struct memcg_info cg;           /* the target's; cg.avail MEMCG_NONE: no limit */
};

/* Size the rings of pid (want bytes each without a limit) to the room in
 * its memory cgroup, before attaching, and in exact mode the in-target
 * accounting's regions after them (MEMBUDGET_XLIVE_WANT slots, fewer to fit
 * the room the rings leave, none below MEMBUDGET_XLIVE_MIN). 0, or -ENOSPC
 * after one message saying why heapattach must not attach (exact mode or
 * the least rings do not fit). */
#define MEMBUDGET_XLIVE_WANT (1u << 20)
#define MEMBUDGET_XLIVE_MIN (1u << 16)
int membudget_plan(pid_t pid, int exact, uint64_t want, struct membudget *out);
/* The most live blocks exact mode's profile may hold: half of the memory
 * heapattach has (MemAvailable, or the room in its own memory cgroup if
 * less) at MEMBUDGET_LIVE_BYTES a block, within [PROFILE_MAX_LIVE,
 * MEMBUDGET_LIVE_MAX]. */
#define MEMBUDGET_LIVE_BYTES 32         /* a live table slot and its growth (profile.c) */
#define MEMBUDGET_LIVE_MAX (1u << 28)
size_t membudget_live_cap(void);
/* The same for room bytes (UINT64_MAX: unknown, PROFILE_MAX_LIVE). */
size_t membudget_live_cap_for(uint64_t room);
/* Trap mode: no rings, nothing the target writes. */
void membudget_nothing(struct membudget *out);
/* The most xlive slots (a power of two in [MEMBUDGET_XLIVE_MIN,
 * MEMBUDGET_XLIVE_WANT]) whose accounting regions take at most room bytes,
 * or 0. */
uint64_t membudget_xlive_fit(uint64_t room);
/* The accounting's regions are slots (fewer than planned, 0 when the
 * attach turned it off): the note says so. */
void membudget_set_xlive(struct membudget *m, uint64_t slots);

#endif
