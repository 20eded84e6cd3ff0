/* What heapattach adds to the target's memory: rings sized to the room in its memory cgroup. */
/* SPDX-License-Identifier: MIT */
/*
 * The shared area is a memfd (or shared anonymous memory): each of its
 * pages is charged to the memory cgroup of the process that first touches
 * it. The tool writes the code, the header and the counters itself; the
 * agent, running in the target, is the first to touch each ring page
 * (and, unless the tool touched them first, the pages of the tables it
 * reads or writes: live pointers, frame rules, stack ids). So up to
 * SHM_NRINGS rings (one per thread stack; more threads share them) are
 * charged to the target's cgroup, and a target near its limit would be
 * OOM-killed by attaching. When its cgroup has a limit the tool faults the
 * tables in itself at setup (charged to its own cgroup) and picks the
 * largest ring size whose SHM_NRINGS rings take at most 1/ROOM_SHARE of
 * the room left; exact mode, which needs big rings to keep up, is refused
 * below EXACT_MIN_RING. Exact mode's in-target accounting (shm.h,
 * SHM_F_XACCT) takes regions after the rings that are never prefaulted:
 * the agent touches their pages as it uses them (its counters, one page
 * of the xlive table per 256 blocks live at once), so they are charged to
 * the target; they get what the rings leave of that share, or nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "implant.h"
#include "log.h"
#include "membudget.h"
#include "memcg.h"
#include "profile.h"
#include "shm.h"

#define ROOM_SHARE 2                    /* take at most half of the room left */
#define SAMPLED_MIN_RING (64u << 10)    /* holds a few 8 KiB stack copies */
#define EXACT_MIN_RING (1u << 20)

/* Whether dir is inside (or is) the cgroup directory top. */
static int within(const char *dir, const char *top)
{
	size_t tl = strlen(top);

	return !strncmp(dir, top, tl) && (!dir[tl] || dir[tl] == '/');
}

uint64_t membudget_xlive_fit(uint64_t room)
{
	uint64_t slots = MEMBUDGET_XLIVE_WANT;

	while (slots >= MEMBUDGET_XLIVE_MIN && SHM_XACCT_SIZE(slots) > room)
		slots /= 2;
	return slots >= MEMBUDGET_XLIVE_MIN ? slots : 0;
}

void membudget_nothing(struct membudget *out)
{
	out->ring_size = 0;
	out->prefault = 0;
	out->xlive_slots = 0;
	snprintf(out->note, sizeof(out->note), "heapattach adds nothing to the "
		 "target's memory (trap mode: heapattach writes every page it maps)");
}

/* The note, from what membudget_plan found and the accounting's slots. */
static void note_make(struct membudget *m)
{
	char a[32], b[32], c[32], d[32];
	uint64_t x = SHM_XACCT_SIZE(m->xlive_slots);

	if (m->cg.avail == MEMCG_NONE)
		snprintf(m->note, sizeof(m->note), "heapattach adds up to %s to the "
			 "target's memory (%d rings of %s, %s of tables; no memory cgroup limit)",
			 memcg_fmt(m->base + x, a, sizeof(a)), SHM_NRINGS,
			 memcg_fmt(m->ring_size, b, sizeof(b)),
			 memcg_fmt(SHM_OFF_RING + x, c, sizeof(c)));
	else
		snprintf(m->note, sizeof(m->note), "heapattach adds up to %s to the target's "
			 "memory cgroup %s (%d rings of %s%s; limit %s, room %s)",
			 memcg_fmt(m->base + x, a, sizeof(a)), m->cg.tight, SHM_NRINGS,
			 memcg_fmt(m->ring_size, b, sizeof(b)), m->fixed ?
			 ", and its tables: heapattach runs in it" : "",
			 memcg_fmt(m->cg.limit, c, sizeof(c)), memcg_fmt(m->cg.avail, d, sizeof(d)));
}

void membudget_set_xlive(struct membudget *m, uint64_t slots)
{
	if (!m->ring_size || slots == m->xlive_slots)
		return;
	m->xlive_slots = slots;
	note_make(m);
}

int membudget_plan(pid_t pid, int exact, uint64_t want, struct membudget *out)
{
	char a[32], b[32], c[32], d[32];
	struct memcg_info mi, self;
	uint64_t min, fixed = 0, ring, share, used;

	out->ring_size = 0;
	out->prefault = 0;
	out->xlive_slots = 0;
	out->fixed = 0;
	if (memcg_read(pid, &mi) || mi.avail == MEMCG_NONE) {
		out->ring_size = want;
		out->xlive_slots = exact ? MEMBUDGET_XLIVE_WANT : 0;
		out->base = SHM_NRINGS * want + SHM_OFF_RING;
		out->cg.avail = MEMCG_NONE;
		note_make(out);
		return 0;
	}
	/* Our own pages count too if we run inside the limited cgroup. */
	if (!memcg_read(getpid(), &self) && self.version == mi.version && within(self.dir, mi.tight))
		fixed = SHM_OFF_RING + REGION_CODE;
	min = exact ? EXACT_MIN_RING : SAMPLED_MIN_RING;
	ring = memcg_fit_ring(mi.avail / ROOM_SHARE, want, min, SHM_NRINGS, fixed);
	if (!ring) {
		pr_err("cannot attach to %d%s: its memory cgroup %s has %s of room (limit %s) and "
		       "heapattach would add at least %s to it (%d rings of %s; it takes at most "
		       "1/%d of the room)%s", pid, exact ? " in exact mode" : "", mi.tight,
		       memcg_fmt(mi.avail, a, sizeof(a)), memcg_fmt(mi.limit, b, sizeof(b)),
		       memcg_fmt(SHM_NRINGS * min + fixed, c, sizeof(c)), SHM_NRINGS,
		       memcg_fmt(min, d, sizeof(d)), ROOM_SHARE,
		       exact ? "; use a sampling rate, or raise the limit" : "; raise the limit");
		return -ENOSPC;
	}
	out->ring_size = ring;
	out->prefault = 1;
	share = mi.avail / ROOM_SHARE;
	used = SHM_NRINGS * ring + fixed;
	if (exact && share > used)
		out->xlive_slots = membudget_xlive_fit(share - used);
	out->base = used;
	out->fixed = fixed != 0;
	out->cg = mi;
	note_make(out);
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
