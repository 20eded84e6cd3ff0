/* When the session writes its numbered dumps (--every, --interval, --inuse-interval, SIGUSR1, --top), and its other periodic work. */
/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "base/clock.h"
#include "model/target.h"
#include "output/breakdown.h"
#include "output/topview.h"
#include "profile/profile.h"
#include "session/fleet.h"
#include "session/state.h"

#define SESSION_MAPS_EVERY_NS 100000000ULL	/* watch_maps: 100 ms */
#define LIVE_EVERY_NS 100000000ULL	/* live bytes counted for new highs: at every
					 * reconcile (200 ms) unless counting is slow */
#define LIVE_READ_EVERY_NS 1000000000ULL	/* ... and the accounting read at least
						 * every second (see track_live) */

/*
 * Read the target's maps every SESSION_MAPS_EVERY_NS: a change of its code
 * (dlopen, dlclose, mmap of code) bumps the target's generation, which
 * flushes the unwinder, the frame table and stack ids the agent walks with,
 * and the symbolizer (target_on_change). Misses find new mappings on their
 * own (an address outside every known mapping re-reads the maps), but
 * nothing misses when a library replaces another in the same range, and in
 * fast mode nothing stops the tool at an mmap. A read costs about 1 us per
 * line: 0.1% of a CPU for a thousand mappings.
 */
void session_watch_maps(struct session *s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (now < s->next_maps_ns || s->ev.gone || s->ev.exec_seen)
		return;
	s->next_maps_ns = now + SESSION_MAPS_EVERY_NS;
	target_maps_reload(s->t);
}

/* Whether live bytes of about est would be a new high or call for an
 * --inuse-interval dump. */
static int live_may_rise(const struct session *s, uint64_t est)
{
	return est > s->peak.bytes ||
	       (s->opt->inuse_interval && est >= s->inuse_mark + s->opt->inuse_interval);
}

/*
 * The profile's live bytes, every LIVE_EVERY_NS: a new high by
 * --inuse-interval writes a numbered dump, and a new high at all is
 * snapshotted for the peak profile (final: the last count, no dump).
 * In fast mode the profile learns of sampled frees only when it reconciles
 * with the agent's live table, so the count waits for one (live_fresh).
 * Counting them walks the live table, which holds millions of blocks in
 * exact mode at scale: the walks are spaced so that they take at most 2%
 * of the time, by the CPU time they took (a count preempted for 12 ms on
 * a loaded machine would otherwise put off the next one by 600 ms, past a
 * short peak or a whole --inuse-interval step). With in-target accounting
 * a count also reads the agent's tables, whose lines the target then
 * takes back from our CPU's cache one miss at a time. Between reads (at
 * least one a second) an estimate
 * stands in: the last count, plus what the lanes' totals say the agent
 * holds more, plus every byte the events allocated since (their frees
 * left out: an estimate too high only reads sooner). The tables are read
 * when it says the live bytes may have risen to a new high (or to an
 * --inuse-interval dump). Not with --top, which shows the profile as the
 * last count left it.
 */
void session_track_live(struct session *s, uint64_t now, int final)
{
	uint64_t live, cost, cpu, x = 0;
	int have_x;

	if (!final && (now < s->live_next_ns || !s->live_fresh))
		return;
	s->live_fresh = 0;
	have_x = s->mode->live_extra && s->mode->live_extra(s, &x) == 0;
	if (!final && have_x && !s->tv && s->live_read_ns &&
	    now - s->live_read_ns < LIVE_READ_EVERY_NS &&
	    !live_may_rise(s, s->live_read + (x - s->xlive_read) +
				  (profile_total_alloc_bytes(s->prof) - s->alloc_read))) {
		s->live_next_ns = now + LIVE_EVERY_NS;
		return;
	}
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (s->mode->accounted)
		s->mode->accounted(s);	/* what the agent accounted itself */
	live = breakdown_profile_live(s->prof);
	peak_update(&s->peak, s->prof, live, now - s->start_ns);
	s->live_read_ns = now;
	s->live_read = live;
	s->xlive_read = x;
	s->alloc_read = profile_total_alloc_bytes(s->prof);
	cost = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	s->live_next_ns = now + (cost * 50 > LIVE_EVERY_NS ? cost * 50 : LIVE_EVERY_NS);
	if (s->opt->inuse_interval && !final && live >= s->inuse_mark + s->opt->inuse_interval) {
		s->inuse_mark = live;
		session_dump(s, ++s->dump_seq);
	}
}

/* --top's d: a numbered profile now, and the view says which file. */
static void top_dump(struct session *s)
{
	char *path = dump_numbered_path(s->output, ++s->dump_seq);
	char msg[PATH_MAX + 32];

	snprintf(msg, sizeof(msg), "%s %s", session_dump(s, s->dump_seq) ? "could not write" :
		 "wrote", path);
	topview_say(s->tv, msg);
	free(path);
}

/* --top: the view's keys and refresh. 1: the user quit. */
static int top_tick(struct session *s, uint64_t now)
{
	struct topview_in ti = {
		.pid = s->pid, .prof = s->prof, .sym = s->sym, .wf = s->wf,
		.as = s->mr.have_as ? &s->mr.as : NULL,
		.elapsed_ns = now - s->start_ns, .dumps = s->dump_seq,
	};

	if (!s->tv)
		return 0;
	ti.src = session_wrapfind_src(s);
	switch (topview_tick(s->tv, &ti, now)) {
	case TOPVIEW_QUIT:
		return 1;
	case TOPVIEW_DUMP:
		top_dump(s);
		break;
	default:
		break;
	}
	return 0;
}

void session_publish(struct session *s)
{
	struct fleet_slot *sl = s->opt->slot;

	if (!sl)
		return;
	__atomic_store_n(&sl->live, s->live_read, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->alloc_bytes, profile_total_alloc_bytes(s->prof), __ATOMIC_RELAXED);
	__atomic_store_n(&sl->events, s->stats.events, __ATOMIC_RELAXED);
	sl->attached = 1;
}

/* Every numbered dump is decided here (and --top's key, top_tick). */
int session_housekeeping(struct session *s)
{
	const struct session_config *o = s->opt;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (o->duration_ns && now - s->start_ns >= o->duration_ns)
		return 1;
	if (o->every_ns && now >= s->next_every_ns) {
		session_dump(s, ++s->dump_seq);
		s->next_every_ns = now + o->every_ns;
	}
	if (o->interval && s->stats.bytes >= o->interval) {
		s->stats.bytes %= o->interval;
		session_dump(s, ++s->dump_seq);
	}
	if (session_dump_asked) {
		session_dump_asked = 0;
		session_dump(s, ++s->dump_seq);
	}
	session_track_live(s, now, 0);
	memreport_poll(&s->mr, s->tv != NULL);
	session_publish(s);
	return top_tick(s, now);
}

