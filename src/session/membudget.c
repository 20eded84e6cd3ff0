/* What heapattach adds to the target, planned before the attach (budget.h), and what heapattach's own profile may take. */
/* SPDX-License-Identifier: MIT */
/*
 * The plan reads the target's limits (its memory cgroup, RLIMIT_AS,
 * RLIMIT_STACK, RLIMIT_MEMLOCK, vm.max_map_count, what it uses of each)
 * and hands them to the one budget (budget.c), which says what heapattach
 * adds and whether that leaves the target its room. Read before the
 * attach, while the target runs: each share leaves room for what it does
 * meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "model/memcg.h"
#include "model/proc_limits.h"
#include "profile/profile.h"
#include "ptrace/tracee.h"
#include "session/membudget.h"

/* Whether dir is inside (or is) the cgroup directory top. */
static int within(const char *dir, const char *top)
{
	size_t tl = strlen(top);

	return !strncmp(dir, top, tl) && (!dir[tl] || dir[tl] == '/');
}

void membudget_room(pid_t pid, struct budget_room *out)
{
	struct memcg_info self;
	struct proc_limits pl;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = proc_limits_read(pid, &pl);
	if (rc)
		pr_debug("limits of %d: not all read (%s): those are taken for none", pid,
			 strerror(-rc));
	out->as_limit = pl.as;
	out->as_used = pl.vm_size;
	out->maps_max = pl.max_map_count;
	out->maps_used = pl.maps;
	out->lock_limit = pl.ipc_lock ? BUDGET_NONE : pl.memlock;
	out->lock_used = pl.vm_locked;
	out->stack_limit = pl.stack;
	out->stack_used = pl.stack_size ? pl.stack_size : BUDGET_NONE;
	if (memcg_read(pid, &out->cg) || out->cg.avail == MEMCG_NONE) {
		out->cg.avail = MEMCG_NONE;
		return;
	}
	/* Our own pages count too if we run inside the limited cgroup. */
	if (!memcg_read(getpid(), &self) && self.version == out->cg.version &&
	    within(self.dir, out->cg.tight))
		out->cg_ours = 1;
}

/* ring_size, prefault, xlive_slots and the note, from m->cost. */
static void take(struct membudget *m)
{
	m->ring_size = m->cost.ring_size;
	m->prefault = m->cost.prefault;
	m->xlive_slots = m->cost.xlive_slots;
	budget_note(&m->ask, &m->room, &m->cost, m->note, sizeof(m->note));
}

void membudget_set_xlive(struct membudget *m, uint64_t slots)
{
	if (!m->ring_size || slots == m->xlive_slots)
		return;
	budget_cost(&m->ask, &m->room, m->ring_size, slots, &m->cost);
	take(m);
}

int membudget_plan(pid_t pid, const struct budget_ask *ask, struct membudget *out)
{
	pid_t live = tracee_live_tid(pid);	/* a leader gone before its threads has no maps */
	char why[MEMCG_PATH_MAX + 480];
	int rc;

	memset(out, 0, sizeof(*out));
	out->ask = *ask;
	membudget_room(live > 0 ? live : pid, &out->room);
	rc = budget_fit(ask, &out->room, &out->cost, why, sizeof(why));
	if (rc) {
		pr_err("cannot attach to %d%s: %s", pid, ask->exact ? " in exact mode" : "", why);
		return rc;
	}
	take(out);
	return 0;
}

/* MemAvailable of /proc/meminfo in bytes, or UINT64_MAX if unknown. */
static uint64_t mem_available(void)
{
	unsigned long long kb;
	uint64_t v = UINT64_MAX;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			v = (uint64_t)kb * 1024;
			break;
		}
	fclose(f);
	return v;
}

size_t membudget_live_cap_for(uint64_t room)
{
	uint64_t cap = room == UINT64_MAX ? PROFILE_MAX_LIVE : room / 2 / MEMBUDGET_LIVE_BYTES;

	if (cap < PROFILE_MAX_LIVE)
		cap = PROFILE_MAX_LIVE;
	return cap > MEMBUDGET_LIVE_MAX ? MEMBUDGET_LIVE_MAX : (size_t)cap;
}

size_t membudget_live_cap(void)
{
	struct memcg_info self;
	uint64_t r = mem_available();

	if (!memcg_read(getpid(), &self) && self.avail != MEMCG_NONE && self.avail < r)
		r = self.avail;
	return membudget_live_cap_for(r);
}
