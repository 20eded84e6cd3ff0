/* What heapattach adds to the target, planned before the attach (budget.h), and what heapattach's own profile may take. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMBUDGET_H
#define HEAPATTACH_MEMBUDGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/memcg.h"
#include "session/budget.h"

/* What heapattach adds to the target (budget.h), and the note that says it. */
struct membudget {
	uint64_t ring_size;             /* bytes of each ring; 0 when there are none */
	int prefault;                   /* fault the shared tables in ourselves */
	uint64_t xlive_slots;           /* exact mode: the in-target accounting's table
					 * (shm.h, SHM_F_XACCT) may have this many slots; 0: none */
	char note[MEMCG_PATH_MAX + 480]; /* what we add to the target (-v, profile) */
	/* what the note is made of (membudget_set_xlive makes it again) */
	struct budget_ask ask;
	struct budget_room room;        /* the target's limits when it was planned */
	struct budget_cost cost;
};

/* The target's limits and what it uses of them (proc_limits.h, memcg.h),
 * as the budget takes them: what cannot be read is no limit. */
void membudget_room(pid_t pid, struct budget_room *out);

/*
 * Before attaching to pid: the one budget (budget_fit) of what heapattach
 * will add for ask, against the room the target's limits leave. 0, or
 * -ENOSPC after one message saying why heapattach must not attach
 * (nothing was done to the target).
 */
int membudget_plan(pid_t pid, const struct budget_ask *ask, struct membudget *out);
/* The most live blocks exact mode's profile may hold: half of the memory
 * heapattach has (MemAvailable, or the room in its own memory cgroup if
 * less) at MEMBUDGET_LIVE_BYTES a block, within [PROFILE_MAX_LIVE,
 * MEMBUDGET_LIVE_MAX]. */
#define MEMBUDGET_LIVE_BYTES 32         /* a live table slot and its growth (profile.c) */
#define MEMBUDGET_LIVE_MAX (1u << 28)
size_t membudget_live_cap(void);
/* The same for room bytes (UINT64_MAX: unknown, PROFILE_MAX_LIVE). */
size_t membudget_live_cap_for(uint64_t room);
/* The accounting's regions are slots (fewer than planned, 0 when the
 * attach turned it off): the note says so. */
void membudget_set_xlive(struct membudget *m, uint64_t slots);

#endif
