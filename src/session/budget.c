/* One budget of what heapattach adds to a target (address space, mappings, memory cgroup, locked memory, stack) against the room its limits leave. */
/* SPDX-License-Identifier: MIT */
/*
 * What heapattach adds, by mode (budget_cost):
 *
 * Fast mode injects one region, REGION_CODE of code and the shared data
 * (agent_link_data_size: the tables, SHM_NRINGS rings, exact mode's
 * accounting regions), mapped twice in the target: r-x and rw-. Both
 * views count in its address space (RLIMIT_AS counts every mapping,
 * shared or not, touched or not) and are two mappings; the rw- view is
 * made by reserving its place (a third mapping for a moment, then
 * replaced) and mremap, which refuses unless the count stays
 * BUDGET_MREMAP_MARGIN below vm.max_map_count with two more: 8 must be
 * free. The pages are a shared memfd's, charged to the memory cgroup of
 * whoever touches them first: the rings and the accounting regions are
 * the agent's, so the target's; the tables are the tool's when it
 * faults them in first (prefault: whenever the target's cgroup has a
 * limit), which charges the target's cgroup only when heapattach runs in
 * it too. A hooked call adds the trampoline's and the agent's frames to
 * the caller's stack (AGENT_STACK, agent.h).
 *
 * Trap mode injects up to IMPLANT_MAX_REGIONS regions (one near each
 * group of hooked code; how many is known only as they are placed, so
 * the budget counts the most) of code and a header page, mapped once
 * each; heapattach writes all of their pages (charged to its own
 * cgroup). A trampoline pushes COLLECT_STACK bytes at most.
 *
 * Nothing is locked (no mlock, MAP_LOCKED), and nothing is writable and
 * private (RLIMIT_DATA). But a target that called mlockall(MCL_FUTURE)
 * has every new mapping locked and faulted in by the mmap itself, which
 * runs in the target: the budget takes any locked memory (VmLck) for
 * that, counts both views against RLIMIT_MEMLOCK (locked_vm counts each
 * mapping) and the whole region against its memory cgroup.
 *
 * Each limit's room is the target's: heapattach takes at most a share of
 * it (BUDGET_*_SHARE) and leaves the rest to what the target was about to
 * do. The rings shrink to fit; the mappings and the stack cannot, and
 * neither can the rings below their least: then heapattach refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "fast/agentlink.h"
#include "implant/implant.h"
#include "session/budget.h"
#include "shm.h"
#include "trap/collect.h"

enum limit {
	FITS,
	LIMIT_MAPS,
	LIMIT_STACK,
	LIMIT_AS,
	LIMIT_LOCK,
	LIMIT_MEMCG,
};

/* What is left of limit after used: BUDGET_NONE when either is not known. */
static uint64_t room_of(uint64_t limit, uint64_t used)
{
	if (limit == BUDGET_NONE || used == BUDGET_NONE)
		return BUDGET_NONE;
	return limit > used ? limit - used : 0;
}

/* Whether the target's mappings get locked (mlockall MCL_FUTURE, as far
 * as /proc tells: anything of it locked). */
static int locks(const struct budget_room *r)
{
	return r->lock_used != BUDGET_NONE && r->lock_used > 0;
}

void budget_cost(const struct budget_ask *a, const struct budget_room *r, uint64_t ring_size,
		 uint64_t xlive_slots, struct budget_cost *out)
{
	memset(out, 0, sizeof(*out));
	if (a->agent) {
		out->ring_size = ring_size;
		out->xlive_slots = a->exact ? xlive_slots : 0;
		out->prefault = r->cg.avail != MEMCG_NONE;
		out->region = REGION_CODE + agent_link_data_size(ring_size, out->xlive_slots);
		out->regions = 1;
		out->views = 2;
		out->maps = 2;
		out->maps_free = 2 + BUDGET_MREMAP_MARGIN;
		out->memcg = SHM_NRINGS * ring_size + SHM_XACCT_SIZE(out->xlive_slots);
		if (!out->prefault)
			out->memcg += SHM_OFF_RING;
		else if (r->cg_ours)
			out->memcg += SHM_OFF_RING + REGION_CODE;
		out->stack = AGENT_STACK;
	} else {
		out->region = REGION_CODE + COLLECT_DATA_SIZE;
		out->regions = IMPLANT_MAX_REGIONS;
		out->views = 1;
		out->maps = out->maps_free = out->regions;
		out->memcg = r->cg_ours ? out->regions * out->region : 0;
		out->stack = COLLECT_STACK;
	}
	out->as = (uint64_t)out->regions * out->views * out->region;
	if (locks(r)) {
		out->locked = out->as;
		out->memcg = (uint64_t)out->regions * out->region;	/* faulted in by the mmap */
	}
}

/* The first limit c does not fit a share of, or FITS. */
static enum limit check(const struct budget_room *r, const struct budget_cost *c)
{
	uint64_t maps = room_of(r->maps_max, r->maps_used);
	uint64_t stack = room_of(r->stack_limit, r->stack_used);
	uint64_t as = room_of(r->as_limit, r->as_used);
	uint64_t lock = room_of(r->lock_limit, r->lock_used);

	if (maps != BUDGET_NONE && c->maps_free > maps / BUDGET_MAPS_SHARE)
		return LIMIT_MAPS;
	if (stack != BUDGET_NONE && c->stack > stack / BUDGET_STACK_SHARE)
		return LIMIT_STACK;
	if (as != BUDGET_NONE && c->as > as / BUDGET_AS_SHARE)
		return LIMIT_AS;
	if (locks(r) && lock != BUDGET_NONE && c->locked > lock / BUDGET_LOCK_SHARE)
		return LIMIT_LOCK;
	if (r->cg.avail != MEMCG_NONE && c->memcg > r->cg.avail / BUDGET_MEMCG_SHARE)
		return LIMIT_MEMCG;
	return FITS;
}

/* Why c (the least heapattach would add) does not fit limit l, into why. */
static void say_why(enum limit l, const struct budget_ask *a, const struct budget_room *r,
		    const struct budget_cost *c, char *why, size_t len)
{
	char s1[32], s2[32], s3[32], s4[32], what[64];
	const char *raise = a->exact ? "; use a sampling rate, or raise the limit" : "; raise the limit";

	switch (l) {
	case LIMIT_MAPS:
		snprintf(why, len, "it has %llu of vm.max_map_count's %llu mappings left and "
			 "heapattach needs %llu of them free to add its %llu (it takes at most "
			 "1/%d of those left); raise vm.max_map_count",
			 (unsigned long long)room_of(r->maps_max, r->maps_used),
			 (unsigned long long)r->maps_max, (unsigned long long)c->maps_free,
			 (unsigned long long)c->maps, BUDGET_MAPS_SHARE);
		break;
	case LIMIT_STACK:
		snprintf(why, len, "its main thread's stack has grown to %s of its %s limit "
			 "(RLIMIT_STACK) and a hooked call adds up to %s to it (it takes at most "
			 "1/%d of the room)%s",
			 memcg_fmt(r->stack_used, s1, sizeof(s1)),
			 memcg_fmt(r->stack_limit, s2, sizeof(s2)), memcg_fmt(c->stack, s3, sizeof(s3)),
			 BUDGET_STACK_SHARE, "; raise the limit (prlimit --stack)");
		break;
	case LIMIT_AS:
		snprintf(why, len, "its address space limit (RLIMIT_AS) is %s with %s of room and "
			 "heapattach would add at least %s (%u mappings of %s; it takes at most 1/%d "
			 "of the room)%s (prlimit --as)",
			 memcg_fmt(r->as_limit, s1, sizeof(s1)),
			 memcg_fmt(room_of(r->as_limit, r->as_used), s2, sizeof(s2)),
			 memcg_fmt(c->as, s3, sizeof(s3)), c->regions * c->views,
			 memcg_fmt(c->region, s4, sizeof(s4)), BUDGET_AS_SHARE, raise);
		break;
	case LIMIT_LOCK:
		snprintf(why, len, "it locks its memory (%s locked) and its RLIMIT_MEMLOCK of %s "
			 "leaves %s of room: heapattach's mappings would be locked too, at least %s "
			 "(it takes at most 1/%d of the room)%s (prlimit --memlock)",
			 memcg_fmt(r->lock_used, s1, sizeof(s1)),
			 memcg_fmt(r->lock_limit, s2, sizeof(s2)),
			 memcg_fmt(room_of(r->lock_limit, r->lock_used), s3, sizeof(s3)),
			 memcg_fmt(c->locked, s4, sizeof(s4)), BUDGET_LOCK_SHARE, raise);
		break;
	case LIMIT_MEMCG:
	default:
		if (a->agent)
			snprintf(what, sizeof(what), "%d rings of %s", SHM_NRINGS,
				 memcg_fmt(c->ring_size, s4, sizeof(s4)));
		else
			snprintf(what, sizeof(what), "up to %u regions of %s", c->regions,
				 memcg_fmt(c->region, s4, sizeof(s4)));
		snprintf(why, len, "its memory cgroup %s has %s of room (limit %s) and heapattach "
			 "would add at least %s to it (%s; it takes at most 1/%d of the room)%s",
			 r->cg.tight, memcg_fmt(r->cg.avail, s1, sizeof(s1)),
			 memcg_fmt(r->cg.limit, s2, sizeof(s2)), memcg_fmt(c->memcg, s3, sizeof(s3)),
			 what, BUDGET_MEMCG_SHARE, raise);
		break;
	}
}

/* The largest power of two not above v (v > 0). */
static uint64_t pow2_floor(uint64_t v)
{
	while (v & (v - 1))
		v &= v - 1;
	return v;
}

int budget_fit(const struct budget_ask *a, const struct budget_room *r, struct budget_cost *out,
	       char *why, size_t len)
{
	uint64_t min = a->exact ? BUDGET_EXACT_MIN_RING : BUDGET_SAMPLED_MIN_RING;
	uint64_t ring = a->ring_want > min ? pow2_floor(a->ring_want) : min;
	struct budget_cost c;
	enum limit l;

	if (!a->agent) {
		budget_cost(a, r, 0, 0, out);
		l = check(r, out);
	} else {
		for (;; ring /= 2) {
			budget_cost(a, r, ring, 0, out);
			l = check(r, out);
			if (l == FITS || l == LIMIT_MAPS || l == LIMIT_STACK || ring / 2 < min)
				break;	/* no smaller ring changes maps or stack */
		}
	}
	if (l != FITS) {
		say_why(l, a, r, out, why, len);
		return -ENOSPC;
	}
	if (!a->agent || !a->exact)
		return 0;
	for (uint64_t x = BUDGET_XLIVE_WANT; x >= BUDGET_XLIVE_MIN; x /= 2) {
		budget_cost(a, r, ring, x, &c);
		if (check(r, &c) == FITS) {
			*out = c;
			break;
		}
	}
	return 0;
}

/* "; 71 MiB of address space in 2 mappings (RLIMIT_AS 1 GiB, room 900 MiB)"
 * and the locked part, at the end of the note. */
static void note_tail(const struct budget_room *r, const struct budget_cost *c, char *buf,
		      size_t len)
{
	char s1[32], s2[32], s3[32], lk[128] = "";

	if (c->locked)
		snprintf(lk, sizeof(lk), "; all of it locked with the target's memory "
			 "(RLIMIT_MEMLOCK %s, room %s)", memcg_fmt(r->lock_limit, s1, sizeof(s1)),
			 memcg_fmt(room_of(r->lock_limit, r->lock_used), s2, sizeof(s2)));
	if (r->as_limit == BUDGET_NONE)
		snprintf(buf, len, "; %s of address space in %s%u mappings (no RLIMIT_AS)%s",
			 memcg_fmt(c->as, s3, sizeof(s3)), c->regions > 1 ? "up to " : "",
			 c->regions * c->views, lk);
	else
		snprintf(buf, len, "; %s of address space in %s%u mappings (RLIMIT_AS %s, room %s)%s",
			 memcg_fmt(c->as, s3, sizeof(s3)), c->regions > 1 ? "up to " : "",
			 c->regions * c->views, memcg_fmt(r->as_limit, s1, sizeof(s1)),
			 memcg_fmt(room_of(r->as_limit, r->as_used), s2, sizeof(s2)), lk);
}

void budget_note(const struct budget_ask *a, const struct budget_room *r,
		 const struct budget_cost *c, char *buf, size_t len)
{
	char a1[32], a2[32], a3[32], a4[32], tail[256];
	uint64_t tables = SHM_OFF_RING + SHM_XACCT_SIZE(c->xlive_slots);

	note_tail(r, c, tail, sizeof(tail));
	if (!a->agent && !c->memcg)
		snprintf(buf, len, "heapattach adds nothing to the target's memory (trap mode: "
			 "heapattach writes every page it maps)%s", tail);
	else if (!a->agent)
		snprintf(buf, len, "heapattach adds up to %s to the target's memory (trap mode: "
			 "up to %u regions of %s)%s", memcg_fmt(c->memcg, a1, sizeof(a1)),
			 c->regions, memcg_fmt(c->region, a2, sizeof(a2)), tail);
	else if (r->cg.avail == MEMCG_NONE)
		snprintf(buf, len, "heapattach adds up to %s to the target's memory (%d rings of "
			 "%s, %s of tables; no memory cgroup limit)%s",
			 memcg_fmt(c->memcg, a1, sizeof(a1)), SHM_NRINGS,
			 memcg_fmt(c->ring_size, a2, sizeof(a2)), memcg_fmt(tables, a3, sizeof(a3)),
			 tail);
	else
		snprintf(buf, len, "heapattach adds up to %s to the target's memory cgroup %s "
			 "(%d rings of %s%s; limit %s, room %s)%s",
			 memcg_fmt(c->memcg, a1, sizeof(a1)), r->cg.tight, SHM_NRINGS,
			 memcg_fmt(c->ring_size, a2, sizeof(a2)), r->cg_ours ?
			 ", and its tables: heapattach runs in it" : "",
			 memcg_fmt(r->cg.limit, a3, sizeof(a3)), memcg_fmt(r->cg.avail, a4, sizeof(a4)),
			 tail);
}
