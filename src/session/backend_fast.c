/* The fast backend: an agent in the target decides and records, its events come through shared rings (fast/agentlink.c). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/wait.h>
#include "base/log.h"
#include "fast/agentlink.h"
#include "python/pyattach.h"
#include "session/budget.h"
#include "session/state.h"

_Static_assert(MEMREPORT_BIG == AGENT_LINK_BIG, "one size makes a block large");

#define RECONCILE_TICKS 4	/* 200 ms: frees the agent did not report */

/* Before the attach: rings sized to the target's limits (budget.h), and the link. */
static int fast_prepare(struct session *s)
{
	struct agent_link_params lp;
	struct budget_ask ask = {
		.agent = 1,
		.exact = s->opt->sample_rate == 1,
		.ring_want = agent_link_ring_size(s->opt->sample_rate),
	};
	int rc;

	rc = membudget_plan(s->pid, &ask, &s->mem);
	if (rc)
		return rc;
	lp = (struct agent_link_params){
		.pid = s->pid,
		.rate = s->opt->sample_rate,
		.max_depth = s->opt->max_depth,
		.ring_size = s->mem.ring_size,
		.prefault = s->mem.prefault,
		.count_bytes = s->opt->interval != 0,
		.xlive_slots = agent_link_xacct_slots(s->mem.xlive_slots),
		.sc = &s->sc,	/* made at attach, before the area is set up */
		.prof = s->prof,
		.sampler = &s->sampler,
		.unw = s->unw,
		.target = s->t,
		.stats = &s->stats,
		.note = session_note_cb,
		.note_arg = s,
	};
	if (s->py) {
		lp.py = pyattach_shm(s->py);
		lp.pyframes = pyattach_frames(s->py);
		lp.pymerge = *pyattach_merge(s->py);
	}
	s->link_xacct = lp.xlive_slots != 0;
	membudget_set_xlive(&s->mem, lp.xlive_slots);	/* what the link will map */
	s->link = agent_link_new(&lp);
	s->implant_arg = s->link;
	return 0;
}

/* What the rings, the agent's live table and its accounting hold, into the profile. */
static void fast_sync(struct session *s)
{
	agent_link_reconcile(s->link);
	agent_link_xacct_sync(s->link);
}

/*
 * Poll the rings and ptrace events. The tool shares the CPUs with its
 * target, and every wake-up of ours may preempt one of its threads, so it
 * batches: it sleeps between drains for as long as the writers take to
 * fill an eighth of the ring (1 to 20 ms, agent_link_nap_ns), not at all
 * while the ring is more than a quarter full (exact mode under load).
 * SIGCHLD, which every tracee stop sends us, cuts a nap short, and
 * waitpid is called only after one; so does a writer that finds its ring
 * past a quarter full (agent_link_nap's doorbell).
 */
static void fast_loop(struct session *s)
{
	size_t got;
	int status;
	pid_t tid;

	while (!session_stop_signal && !s->ev.gone && !s->ev.exec_seen && !agent_link_hostile(s->link)) {
		if (session_ticked) {
			session_ticked = 0;
			session_child_event = 1;	/* also poll, in case a SIGCHLD was missed */
			/* frees found this tick: live bytes are right */
			s->live_fresh = ++s->ticks % RECONCILE_TICKS == 0;
			if (s->live_fresh)
				agent_link_reconcile(s->link);
			if (session_housekeeping(s))
				break;
		} else if (s->opt->interval && session_housekeeping(s)) {
			break;
		}
		agent_link_heartbeat(s->link);
		got = agent_link_drain(s->link, AGENT_LINK_DRAIN_ALL);
		session_watch_maps(s);	/* after the drain: what the rings held came first */
		session_note_caps(s);
		session_serve_poll(s);	/* after the drain: the rings first */
		if (session_child_event) {
			session_child_event = 0;
			while ((tid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
				events_dispatch(&s->ev, tid, status);
				session_child_event = 1;	/* more may be queued */
			}
			if (tid < 0 && errno == ECHILD) {
				s->ev.gone = 1;
				break;
			}
			if (session_child_event)
				continue;
		}
		if (got && agent_link_busy(s->link))
			continue;	/* no nap, unless a writer mid-record held the drain */
		agent_link_nap(s->link, agent_link_nap_ns(s->link));
	}
	/* the heartbeat goes on until the detach has stopped every thread
	 * (session_run): till then the hooks run, and exact-mode writers
	 * waiting for room must not take us for gone */
	if (s->ev.gone || s->ev.exec_seen)
		agent_link_final(s->link);	/* writers gone, maybe mid-record */
}

/* Threads stopped: can exact mode's accounting tell every thread apart?
 * It sizes the shared area: before anything asks its size. */
static void fast_seized(struct session *s)
{
	s->link_xacct = agent_link_xacct_threads(s->link, &s->tr);
	if (!s->link_xacct && s->mem.xlive_slots) {
		membudget_set_xlive(&s->mem, 0);
		pr_debug("no in-target accounting: %s", s->mem.note);
	}
}

/* Beating before the hooks run: an exact-mode writer that finds its ring
 * full before our loop starts must not take us for gone. */
static void fast_started(struct session *s)
{
	agent_link_beat_start(s->link);
}

static void fast_accounted(struct session *s)
{
	agent_link_xacct_sync(s->link);
}

static int fast_live_extra(struct session *s, uint64_t *bytes)
{
	return agent_link_xacct_live(s->link, bytes);
}

static void fast_big_blocks(struct session *s, void (*add)(uint64_t ptr, uint64_t size, void *arg),
			    void *arg)
{
	agent_link_xacct_sync(s->link);	/* exact mode's accounted blocks, as they are now */
	agent_link_xacct_big(s->link, add, arg);
}

static int fast_fault_stop(struct session *s, pid_t tid)
{
	return agent_link_fault(s->link, tid);
}

/* Before a new thread runs: can exact mode's accounting tell it apart? */
static void fast_new_thread(struct session *s, struct thread *th)
{
	agent_link_xacct_thread(s->link, &s->tr, th);
}

static void fast_why_dropped(struct session *s, char *buf, size_t len)
{
	agent_link_drop_reasons(s->stats.drop_why, buf, len);
}

static int fast_hostile(const struct session *s)
{
	return agent_link_hostile(s->link);
}

/* No writer runs the agent any more: the heartbeat stops. */
static void fast_detached(struct session *s)
{
	agent_link_beat_stop(s->link);
}

static void fast_free(struct session *s)
{
	agent_link_free(s->link);
	s->link = NULL;
}

const struct session_mode session_fast_mode = {
	.name = "fast",
	.agent = 1,
	.implant = &agent_link_implant_ops,
	.prepare = fast_prepare,
	.seized = fast_seized,
	.started = fast_started,
	.loop = fast_loop,
	.sync = fast_sync,
	.accounted = fast_accounted,
	.live_extra = fast_live_extra,
	.big_blocks = fast_big_blocks,
	.fault_stop = fast_fault_stop,
	.new_thread = fast_new_thread,
	.why_dropped = fast_why_dropped,
	.hostile = fast_hostile,
	.detached = fast_detached,
	.free = fast_free,
};
