/* Unit tests for budget.c: what heapattach adds, and the one decision against made-up limits. */
/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "agent.h"
#include "fast/agentlink.h"
#include "session/budget.h"
#include "trap/collect.h"
#include "harness.h"
#include "implant/implant.h"
#include "shm.h"

#define MIB (1024ULL * 1024)

static const struct budget_ask sampled = { .agent = 1, .ring_want = 2 * MIB };
static const struct budget_ask exact = { .agent = 1, .exact = 1, .ring_want = 8 * MIB };
static const struct budget_ask trap = { .agent = 0 };

/* A target with no limit of any kind. */
static struct budget_room unlimited(void)
{
	struct budget_room r;

	memset(&r, 0, sizeof(r));
	r.as_limit = r.maps_max = r.lock_limit = r.stack_limit = BUDGET_NONE;
	r.as_used = 200 * MIB;
	r.maps_used = 40;
	r.stack_used = 132 << 10;
	r.cg.avail = MEMCG_NONE;
	return r;
}

/* Fast mode: one region, two views; the stack as agent.h says. */
static void test_cost_fast(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	uint64_t region = REGION_CODE + agent_link_data_size(2 * MIB, 0);

	budget_cost(&sampled, &r, 2 * MIB, BUDGET_XLIVE_WANT, &c);
	expect_u64_eq(c.xlive_slots, 0);	/* sampled: no accounting */
	expect_u64_eq(c.region, region);
	expect_u64_eq(c.as, 2 * region);
	expect_int_eq(c.maps, 2);
	expect_int_eq(c.maps_free, 8);
	expect_u64_eq(c.memcg, SHM_NRINGS * 2 * MIB + SHM_OFF_RING);	/* no prefault */
	expect_int_eq(c.prefault, 0);
	expect_u64_eq(c.locked, 0);
	expect_u64_eq(c.stack, AGENT_STACK);
	budget_cost(&exact, &r, 8 * MIB, BUDGET_XLIVE_WANT, &c);
	expect_u64_eq(c.as, 2 * (REGION_CODE + agent_link_data_size(8 * MIB, BUDGET_XLIVE_WANT)));
	/* a memory cgroup limit: heapattach faults the tables in; they are
	 * the target's cgroup's only when heapattach runs in it */
	r.cg.avail = 1ULL << 40;
	budget_cost(&sampled, &r, MIB, 0, &c);
	expect_int_eq(c.prefault, 1);
	expect_u64_eq(c.memcg, SHM_NRINGS * MIB);
	r.cg_ours = 1;
	budget_cost(&sampled, &r, MIB, 0, &c);
	expect_u64_eq(c.memcg, SHM_NRINGS * MIB + SHM_OFF_RING + REGION_CODE);
}

/* Trap mode: up to IMPLANT_MAX_REGIONS regions of one view each. */
static void test_cost_trap(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;

	budget_cost(&trap, &r, 0, 0, &c);
	expect_u64_eq(c.ring_size, 0);
	expect_int_eq(c.regions, IMPLANT_MAX_REGIONS);
	expect_u64_eq(c.as, IMPLANT_MAX_REGIONS * (REGION_CODE + COLLECT_DATA_SIZE));
	expect_int_eq(c.maps, IMPLANT_MAX_REGIONS);
	expect_u64_eq(c.memcg, 0);
	expect_u64_eq(c.stack, COLLECT_STACK);
}

/* A target that locks its memory: both views locked, all of it resident. */
static void test_cost_locked(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;

	r.lock_used = 4096;
	budget_cost(&sampled, &r, MIB, 0, &c);
	expect_u64_eq(c.locked, c.as);
	expect_u64_eq(c.memcg, c.region);
}

/* No limit: what is asked for, and exact mode's whole accounting. */
static void test_fit_unlimited(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512] = "";

	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 2 * MIB);
	expect_int_eq(budget_fit(&exact, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 8 * MIB);
	expect_u64_eq(c.xlive_slots, BUDGET_XLIVE_WANT);
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), 0);
	expect_str_eq(why, "");
}

/* RLIMIT_AS with 128 MiB of room (as-limit.test): the rings shrink to a
 * quarter of it; exact mode's least does not fit, and says so. */
static void test_fit_as(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512] = "";

	r.as_limit = r.as_used + 128 * MIB;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 512 << 10);
	expect_true(c.as <= 32 * MIB);
	expect_int_eq(budget_fit(&exact, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_true(strstr(why, "its address space limit (RLIMIT_AS) is 328 MiB with 128 MiB of "
			   "room and heapattach would add at least 40.7 MiB") != NULL);
	expect_true(strstr(why, "use a sampling rate") != NULL);
	/* room enough for exact mode's rings, but not all of its accounting */
	r.as_limit = r.as_used + 400 * MIB;
	expect_int_eq(budget_fit(&exact, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 2 * MIB);
	expect_true(c.xlive_slots < BUDGET_XLIVE_WANT);
	expect_true(c.as <= 100 * MIB);
	/* over its limit already (lowered below its size): no room at all */
	r.as_limit = r.as_used - MIB;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), -ENOSPC);
	/* the least of the sampled rings: 4 x (2 views of 64 KiB rings) */
	r.as_limit = r.as_used + 4 * 2 * (REGION_CODE + agent_link_data_size(64 << 10, 0));
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 64 << 10);
	r.as_limit--;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
}

/* vm.max_map_count: fast mode needs 8 free (2 views, mremap's margin of
 * 6), trap mode 16; at most half of what is left. No ring changes it. */
static void test_fit_maps(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512] = "";

	r.maps_max = 65530;
	r.maps_used = 65530 - 16;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 2 * MIB);
	r.maps_used++;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_str_eq(why, "it has 15 of vm.max_map_count's 65530 mappings left and heapattach "
		      "needs 8 of them free to add its 2 (it takes at most 1/2 of those left); "
		      "raise vm.max_map_count");
	r.maps_used = 65530 - 32;
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), 0);
	r.maps_used++;
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), -ENOSPC);
	r.maps_used = 70000;	/* above the limit (lowered since) */
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
	r.maps_max = BUDGET_NONE;	/* the sysctl unreadable */
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
}

/* The memory cgroup: what membudget did before the one budget. */
static void test_fit_memcg(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512] = "";

	snprintf(r.cg.tight, sizeof(r.cg.tight), "/sys/fs/cgroup/t");
	r.cg.limit = 10 * MIB;
	r.cg.avail = 9 * MIB;	/* 16 rings in 4.5 MiB: 256 KiB each */
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 256 << 10);
	expect_int_eq(c.prefault, 1);
	expect_int_eq(budget_fit(&exact, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_true(strstr(why, "its memory cgroup /sys/fs/cgroup/t has 9 MiB of room (limit "
			   "10 MiB) and heapattach would add at least 16 MiB to it (16 rings of "
			   "1 MiB; it takes at most 1/2 of the room)") != NULL);
	r.cg.avail = 34 * MIB;	/* exact: 1 MiB rings, accounting from what is left */
	expect_int_eq(budget_fit(&exact, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, MIB);
	expect_u64_eq(c.xlive_slots, 0);	/* 1 MiB left, the least regions take more */
	r.cg.avail = 2 * MIB;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 64 << 10);
	r.cg.avail = 2 * MIB - 2;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
	r.cg_ours = 1;	/* heapattach's tables count too */
	r.cg.avail = 64 * MIB;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, MIB);
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), 0);
	r.cg.avail = MIB;	/* trap mode's regions, written by heapattach, in the cgroup */
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_true(strstr(why, "(up to 16 regions of 72 KiB;") != NULL);
}

/* Locked memory counts only when the target locks its own. */
static void test_fit_lock(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512] = "";

	r.lock_limit = 8 * MIB;
	r.lock_used = 0;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.locked, 0);
	r.lock_used = 4 * MIB;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_true(strstr(why, "it locks its memory (4 MiB locked) and its RLIMIT_MEMLOCK of "
			   "8 MiB leaves 4 MiB of room") != NULL);
	r.lock_limit = 100 * MIB;	/* 48 MiB for heapattach: rings shrink to it */
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, MIB);
	expect_true(c.locked <= 48 * MIB);
	r.lock_limit = BUDGET_NONE;	/* unlimited, or CAP_IPC_LOCK */
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.ring_size, 2 * MIB);
}

/* The main thread's stack: a quarter of what it may still grow, whatever
 * the depth (the walk's frames are not on the stack). */
static void test_fit_stack(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512] = "";

	r.stack_limit = 8 * MIB;
	r.stack_used = 8 * MIB - 4 * AGENT_STACK;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	expect_u64_eq(c.stack, AGENT_STACK);
	r.stack_used += 64;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), -ENOSPC);
	expect_true(strstr(why, "RLIMIT_STACK") != NULL && strstr(why, "prlimit --stack") != NULL);
	r.stack_used = 8 * MIB;	/* grown to its limit: even trap mode's pushes do not fit */
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), -ENOSPC);
	r.stack_used = BUDGET_NONE;	/* no [stack] found */
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
}

/* The note says what is added, where, and the room left. */
static void test_note(void)
{
	struct budget_room r = unlimited();
	struct budget_cost c;
	char why[512], note[1024];

	r.as_limit = r.as_used + 128 * MIB;
	expect_int_eq(budget_fit(&sampled, &r, &c, why, sizeof(why)), 0);
	budget_note(&sampled, &r, &c, note, sizeof(note));
	expect_true(strstr(note, "heapattach adds up to 12.3 MiB to the target's memory (16 rings "
			   "of 512 KiB, 4.3 MiB of tables; no memory cgroup limit); 24.7 MiB of "
			   "address space in 2 mappings (RLIMIT_AS 328 MiB, room 128 MiB)") == note);
	expect_int_eq(budget_fit(&trap, &r, &c, why, sizeof(why)), 0);
	budget_note(&trap, &r, &c, note, sizeof(note));
	expect_true(strstr(note, "heapattach adds nothing to the target's memory") == note);
	expect_true(strstr(note, "in up to 16 mappings") != NULL);
}

HARNESS_MAIN("budget",
	T(test_cost_fast), T(test_cost_trap), T(test_cost_locked), T(test_fit_unlimited),
	T(test_fit_as), T(test_fit_maps), T(test_fit_memcg), T(test_fit_lock), T(test_fit_stack),
	T(test_note))
