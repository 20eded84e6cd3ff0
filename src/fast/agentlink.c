/* The agent link's core: setting up the shared area, the drain loop, naps and the agent's counters. */
/* SPDX-License-Identifier: MIT */
/*
 * The shared area is input from the target: it can write every byte of
 * it, through its own view, at any moment. So the geometry and settings
 * are the tool's own (the header as written, l->want, and l->rings), never
 * read back; a record is parsed from a private copy (ring.c) and checked
 * against what the agent writes (alloc_ok, records.c); the header is
 * compared with our copy after every drain (hdrcheck.c), and the counters
 * are believed only as far as they could have grown since the area was
 * set up. The first thing the agent could not have written makes the link
 * hostile (hdrcheck_hostile): nothing in the area is read any more, and
 * session.c detaches. What well-formed events can cost is capped too: the
 * profile's tables (profile.h), the frame rules learnt a second
 * (frametab.c) and the time a drain may take. The link's parts and what
 * each owns: link_priv.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#include <time.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "fast/link_priv.h"
#include "fast/stackids.h"
#include "model/mapguard.h"
#include "model/proc.h"
#include "model/target.h"
#include "profile/sampler.h"
#include "ptrace/seccomp_plan.h"
#include "stacks/frametab.h"
#include "stacks/ownframes.h"

#define DRAIN_BATCH 65536
#define NAP_MIN_NS 1000000ULL		/* 1 ms */
#define NAP_MAX_NS 20000000ULL		/* 20 ms */
#define DRAIN_NS 100000000ULL		/* a drain hands over events for at most 100 ms */
#define QUIESCE_DRAIN_MAX 65536		/* records drained per round of implant_wait_quiet:
					 * room for writers waiting, not the whole backlog */
/* Counters no agent can raise faster: 16 a nanosecond since the area was set up. */
#define COUNT_PER_NS 16
#define COUNT_SLACK (1ULL << 20)

uint64_t agent_link_ring_size(uint64_t rate)
{
	/*
	 * Bytes of each of the SHM_NRINGS rings (in practice one per thread;
	 * only the pages a ring uses are ever touched). At 256 KiB and more per
	 * sample even 20 GB/s of allocation sends ~8 MB/s: 2 MiB holds a
	 * quarter of a second. Higher rates send up to hundreds of MB/s per
	 * thread, and until the frame table is learnt each event carries an
	 * 8 KiB stack copy: they need room for the tool's first, slow moments.
	 */
	return rate >= 256 * 1024 ? 2u << 20 : 8u << 20;
}

uint64_t agent_link_data_size(uint64_t ring_size, uint64_t xlive_slots)
{
	return SHM_OFF_RING + SHM_NRINGS * ring_size + SHM_XACCT_SIZE(xlive_slots);
}

struct agent_link *agent_link_new(const struct agent_link_params *p)
{
	struct agent_link *l = xcalloc(1, sizeof(*l));

	l->p = *p;
	l->own = ownframes_new();
	l->exact = p->rate == 1;
	l->depth = shm_depth(p->max_depth);
	xacct_init(l);
	return l;
}

/* Fault in len bytes of our shared mapping at p (page aligned), so that
 * their pages are charged to our memory cgroup rather than the target's. */
static void prefault(uint8_t *p, size_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < len; off += 4096)
		__atomic_fetch_or(&p[off], 0, __ATOMIC_RELAXED);
}

/*
 * target_on_change listener (TARGET_ON_STACKIDS: after the frame table's reset): forget the
 * stack ids too. An id stands for the frames the agent walked, which stay
 * true, but the walks that led to them used rules of the old code.
 */
static void on_code_change(void *arg, const struct proc_maps *old)
{
	struct agent_link *l = arg;

	(void)old;
	if (ready(l))
		stackids_reset((struct shm_stack *)(data_of(l) + SHM_OFF_STACKS));
}


/* Fill the shared layout (already mapped, zeroed by ftruncate); what goes
 * into the header goes into the implant's copy (w) first. */
static void init_data(struct agent_link *l, struct shm_hdr *h, struct shm_hdr *w)
{
	uint8_t *d = (uint8_t *)h;

	l->shm = h;
	l->want = w;
	/* charged to our memory cgroup, not the target's (membudget.c) */
	if (l->p.prefault)
		prefault(d, SHM_OFF_RING);
	w->flags = (l->exact ? SHM_F_EXACT : 0) | (l->xa.slots ? SHM_F_XACCT : 0) |
		   (l->xa.slots && l->xa.tp ? SHM_F_XTP : 0) | l->p.sc->shm_flags;
	w->xlive_slots = l->xa.slots;	/* its regions after the rings: never prefaulted */
	h->no_stack_copy = l->p.sc->no_stack_copy;	/* seccomp: no process_vm_readv */
	w->data_remote = l->fenv.data;
	w->ring_size = l->p.ring_size;
	w->rate = l->p.rate;
	w->max_depth = l->depth;
	w->gap_mul = interval_gap_mul(w->rate);
	h->flags = w->flags;
	h->data_remote = w->data_remote;
	h->ring_size = w->ring_size;
	h->rate = w->rate;
	h->gap_mul = w->gap_mul;
	h->max_depth = w->max_depth;
	h->xlive_slots = w->xlive_slots;
	if (l->p.py && l->p.py->kind && l->p.pyframes) {
		if (l->p.sc->no_stack_copy) {
			/* the agent reads other threads' states only through it */
			link_note(l, "the target's seccomp filter may refuse process_vm_readv: no "
			     "Python frames, native stacks only");
		} else {
			w->py = *l->p.py;
			w->py.found = w->py.not_found = 0;
			h->py = w->py;
			l->py_max = w->py.max_frames < SHM_PY_MAX_FRAMES ? w->py.max_frames :
									  SHM_PY_MAX_FRAMES;
		}
	}
	l->since = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		struct shm_counter *c = (struct shm_counter *)(d + SHM_OFF_COUNTERS +
							       i * SHM_COUNTER_STRIDE);

		c->left = l->exact ? 0 : (int64_t)sampler_next_gap(l->p.sampler);
		c->rng = sampler_rand(l->p.sampler) | 1;	/* xorshift seed, non-zero */
	}
	memset(d + SHM_OFF_BITS, l->exact ? 0xff : 0, SHM_BLOOM_SIZE / 8);
	ring_reader_init(&l->rings, h, l->p.ring_size, l->depth, l->py_max);
	l->ftab = l->p.target ?
		  frametab_new_target(l->p.target, (struct shm_frame *)(d + SHM_OFF_FRAMES)) : NULL;
	if (l->ftab) {
		struct frametab_stats fs;

		frametab_set_gen(l->ftab, &h->walk_gen);
		frametab_prime_go(l->ftab);
		frametab_get_stats(l->ftab, &fs);
		if (fs.go_nosyms)
			link_note(l, "a Go binary without symbols (-ldflags=-s): stacks through cgo "
			     "calls end at runtime.asmcgocall (not supported)");
	}
	agent_link_heartbeat(l);	/* ready now: writers must not find none */
	/* before the hooks go in: till then the agent walks nothing */
	if (toolguard_arm(&l->guard, &h->tool_alive))
		pr_warn("cannot set up the guard of the agent's reads (set_robust_list): "
		     "no stacks will be walked in the target");
	if (l->p.target && !target_on_change(l->p.target, TARGET_ON_STACKIDS, on_code_change, l))
		l->watching = 1;
	fpranges_refresh(l);
}

/* Say msg once on stderr and in the profile (the run's note). */
void link_note(struct agent_link *l, const char *fmt, ...)
{
	char msg[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->p.note)
		l->p.note(l->p.note_arg, msg);
	else
		pr_warn("%s", msg);
}

/* Say once that frame rules are learnt at the capped rate. */
static void note_learning(struct agent_link *l)
{
	struct frametab_stats st;

	if (l->learn_noted)
		return;
	frametab_get_stats(l->ftab, &st);
	if (st.throttled) {
		l->learn_noted = 1;
		link_note(l, "the target reports frames without a rule faster than heapattach "
		     "learns rules (capped): the others are learnt when they come again");
	}
}

size_t agent_link_drain(struct agent_link *l, size_t max)
{
	size_t total = 0, n, batch = max < DRAIN_BATCH ? max : DRAIN_BATCH;

	if (!ready(l) || l->hostile)
		return 0;
	if (mapguard_zeroed_in(data_of(l) - REGION_CODE)) {
		hdrcheck_hostile(l, "it cut the memory short");
		return 0;
	}
	l->drain_deadline = clock_ns(CLOCK_MONOTONIC) + DRAIN_NS;
	l->drain_left = DRAIN_CLOCK_EVERY;
	do {
		n = ring_drain(&l->rings, batch, records_on_record, l);
		total += n;
		agent_link_heartbeat(l);	/* exact-mode writers wait only while it is fresh */
	} while (n == batch && total < max && !l->hostile &&
		 clock_ns(CLOCK_MONOTONIC) <= l->drain_deadline);
	records_flush(l);
	if (l->xa.slots && l->p.count_bytes)
		xacct_bytes(l);
	/* a writer whose ring stood still through this drain stops waiting (agent.c) */
	__atomic_store_n(&l->shm->drained, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
	if (l->rings.corrupt)
		hdrcheck_hostile(l, l->rings.corrupt);
	hdrcheck_header(l);
	note_learning(l);
	interval_adapt(l, clock_ns(CLOCK_MONOTONIC));
	fpranges_after_drain(l);
	return total;
}

void agent_link_final(struct agent_link *l)
{
	if (!ready(l))
		return;
	ring_reader_final(&l->rings);	/* writers gone, maybe mid-record */
	l->final = 1;
}

/*
 * How long to sleep before the next drain: the time the writers take to
 * fill an eighth of a ring at the rate they filled them all since the last
 * call, within [NAP_MIN_NS, NAP_MAX_NS]. Every wake-up costs the target
 * too (ours may preempt one of its threads), so an idle ring is looked at
 * only NAP_MAX_NS apart; SIGCHLD and the tick still cut a nap short.
 */
long agent_link_nap_ns(struct agent_link *l)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), head, bytes, dt, nap = NAP_MAX_NS;

	if (!ready(l))
		return NAP_MIN_NS;
	head = ring_heads_total(&l->rings);
	bytes = head - l->nap_head;
	dt = now - l->nap_ns;
	if (!l->nap_ns) {
		nap = NAP_MIN_NS;	/* first call: no rate known yet */
	} else if (bytes && dt) {
		double fill = (double)(l->rings.size / 8) * (double)dt / (double)bytes;

		nap = fill < NAP_MIN_NS ? NAP_MIN_NS : fill > NAP_MAX_NS ? NAP_MAX_NS :
			(uint64_t)fill;
	}
	l->nap_head = head;
	l->nap_ns = now;
	return (long)nap;
}

/* Sleep until a doorbell, a signal or ns have come (agent_link_nap). */
static void nap(struct agent_link *l, long ns)
{
	struct timespec ts = { 0, ns };
	struct shm_hdr *h = l->shm;
	uint32_t seq;

	/* exact mode drops nothing (writers wait) and drains in bigger
	 * batches when not woken at every quarter ring */
	if (!ready(l) || l->exact || l->hostile) {
		nanosleep(&ts, NULL);
		return;
	}
	seq = h->doorbell;
	__atomic_store_n(&h->tool_asleep, 1, __ATOMIC_RELAXED);
	/* pairs with the writers' cmpxchg: either they see us asleep, or we
	 * see the ring they took past the mark. Then only a short nap: if the
	 * last drain could not move that ring (a writer stopped mid-record),
	 * no doorbell comes and a nap of none would spin. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ring_pending_max(&l->rings) >= SHM_DOORBELL_FILL(l->rings.size) && ns > (long)NAP_MIN_NS)
		ts.tv_nsec = NAP_MIN_NS;
	syscall(SYS_futex, &h->doorbell, FUTEX_WAIT, seq, &ts, NULL, 0);
	__atomic_store_n(&h->tool_asleep, 0, __ATOMIC_RELAXED);
}

void agent_link_nap(struct agent_link *l, long ns)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	nap(l, ns);
	if (l)
		l->napped_ns += clock_ns(CLOCK_MONOTONIC) - t0;	/* how busy we are: adapt */
}

int agent_link_busy(struct agent_link *l)
{
	if (!ready(l) || l->hostile)
		return 0;
	return ring_pending_max(&l->rings) > l->rings.size / 4;
}

/* A counter of the agent's that started at 0 when the area was set up:
 * whether v is a count it could have reached by now. */
int link_plausible(const struct agent_link *l, uint64_t v)
{
	uint64_t ns = clock_ns(CLOCK_MONOTONIC) - l->since;

	return v <= COUNT_SLACK || (v - COUNT_SLACK) / COUNT_PER_NS <= ns;
}

/*
 * Copy the agent's counters into the profile and the stats, each read
 * once and believed only if the agent could have counted that far: drops
 * only grow (lock inc), and no counter grows faster than COUNT_PER_NS.
 */
static void sync_stats(struct agent_link *l)
{
	uint64_t drops, sum[4] = { 0, 0, 0, 0 }, v[4];
	char what[96];

	if (!ready(l) || l->hostile)
		return;
	drops = __atomic_load_n(&l->shm->drops, __ATOMIC_RELAXED);
	if (drops < l->drops_seen || !link_plausible(l, drops)) {
		snprintf(what, sizeof(what), "a drop count of %llu is implausible",
			 (unsigned long long)drops);
		hdrcheck_hostile(l, what);
		return;
	}
	if (drops > l->drops_seen) {
		profile_add_drops(l->p.prof, drops - l->drops_seen);
		l->drops_seen = drops;
		/* said only: a hostile word misleads nobody */
		l->p.stats->drop_why |= __atomic_load_n(&l->shm->drop_why, __ATOMIC_RELAXED) &
					SHM_DROP_ALL;
	}
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		const struct shm_counter *c = (const struct shm_counter *)(data_of(l) +
			SHM_OFF_COUNTERS + i * SHM_COUNTER_STRIDE);

		v[0] = __atomic_load_n(&c->walks, __ATOMIC_RELAXED);
		v[1] = __atomic_load_n(&c->walk_misses, __ATOMIC_RELAXED);
		v[2] = __atomic_load_n(&c->nested, __ATOMIC_RELAXED);
		v[3] = __atomic_load_n(&c->memo_hits, __ATOMIC_RELAXED);
		for (int k = 0; k < 4; k++) {
			if (!link_plausible(l, v[k]) || !link_plausible(l, sum[k] + v[k])) {
				hdrcheck_hostile(l, "an implausible count of calls in its counters");
				return;
			}
			sum[k] += v[k];
		}
	}
	l->p.stats->walks = sum[0];
	l->p.stats->walk_misses = sum[1];
	l->p.stats->nested = sum[2];
	l->p.stats->memo_hits = sum[3];
	l->p.stats->doorbells = __atomic_load_n(&l->shm->doorbell, __ATOMIC_RELAXED);
	l->p.stats->wait_max_ns = __atomic_load_n(&l->shm->wait_max_ns, __ATOMIC_RELAXED);
	if (l->xa.slots)
		xacct_stats(l);
	if (l->py_max) {	/* said with -v only: a hostile figure misleads nobody */
		l->p.stats->py_found = __atomic_load_n(&l->shm->py.found, __ATOMIC_RELAXED);
		l->p.stats->py_not_found = __atomic_load_n(&l->shm->py.not_found,
							   __ATOMIC_RELAXED);
	}
}

/* "; why: ..." for the reasons writers gave for their drops (SHM_DROP_*), or "". */
void agent_link_drop_reasons(uint32_t why, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *what;
	} reasons[] = {
		{ SHM_DROP_FULL, "a ring was full" },
		{ SHM_DROP_HUGE, "a record larger than a ring" },
		{ SHM_DROP_NO_TOOL, "no heartbeat from heapattach" },
		{ SHM_DROP_STALE, "heapattach's heartbeat stopped" },
		{ SHM_DROP_STUCK, "a ring stood still 1 s while heapattach drained" },
		{ SHM_DROP_BUSY, "a ring stood still 30 s" },
		{ SHM_DROP_LATCH, "another writer had just given up" },
	};
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]) && n < len; i++)
		if (why & reasons[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "; why: ",
					      reasons[i].what);
}

struct shm_hdr *agent_link_shm(struct agent_link *l)
{
	return ready(l) ? l->shm : NULL;
}

/*
 * Drain, then (sampled mode) sweep: the agent reports no free it finds in
 * its live table (see shm.h), so a pointer we hold live (and it entered) is
 * freed once its bucket no longer has it. The drain first, so that the
 * frees already reported come before the sweep. A pointer entered but not
 * committed yet is not ours yet; one freed and entered again (another
 * sampled block at the same address) stays live here until that block's
 * event replaces it.
 */
void agent_link_reconcile(struct agent_link *l)
{
	if (!ready(l))
		return;
	/* a drain ends after DRAIN_NS: with the writers gone, what the
	 * rings hold is all there is, and must not be left behind */
	while (agent_link_drain(l, AGENT_LINK_DRAIN_ALL) && l->final)
		;
	if (!l->exact && !l->hostile)
		profile_sweep_live(l->p.prof, records_freed_in_table, l);
	sync_stats(l);
}

int agent_link_fault(struct agent_link *l, pid_t tid)
{
	int rc;

	if (!l || !l->guard.word)
		return 0;
	rc = toolguard_fault(&l->fenv, tid);
	if (rc > 0)
		l->faults++;
	return rc;
}

void agent_link_free(struct agent_link *l)
{
	if (!l)
		return;
	toolguard_disarm(&l->guard);
	agent_link_beat_stop(l);
	if (l->faults)
		pr_debug("the agent's reads of the target faulted %llu times (taken back: those "
			 "walks end there)", (unsigned long long)l->faults);
	if (l->watching)
		target_off_change(l->p.target, on_code_change, l);
	if (l->ftab) {
		struct frametab_stats st;

		frametab_get_stats(l->ftab, &st);
		pr_debug("frame table: %llu rules learnt (%llu frame-pointer ones), %llu without one, "
			 "%llu skipped (full), %llu throttled, %llu objects, %llu unwalkable ends",
			 (unsigned long long)st.learned, (unsigned long long)st.fp_frames,
			 (unsigned long long)st.unrepresentable, (unsigned long long)st.full,
			 (unsigned long long)st.throttled, (unsigned long long)st.objects,
			 (unsigned long long)st.unwalkable);
	}
	xacct_free(l);
	if (l->rec.cwst.own || l->rec.cwst.own_stuck)
		pr_debug("stack copies walked through heapattach's code (a signal interrupted a "
			 "trampoline or the agent): %llu, %llu more ended there",
			 (unsigned long long)l->rec.cwst.own,
			 (unsigned long long)l->rec.cwst.own_stuck);
	frametab_free(l->ftab);
	ownframes_free(l->own);
	if (l->map) {
		mapguard_remove(l->map);
		munmap(l->map, l->map_size);
	}
	free(l);
}

/* ---- the fast mode's implant backend ---- */

static uint64_t ops_data_size(void *arg)
{
	struct agent_link *l = arg;

	return agent_link_data_size(l->p.ring_size, l->xa.slots);
}

/* The first region: shared data, the agent blob, and where trampolines find them. */
static int ops_setup(void *arg, struct implant_area *a)
{
	struct agent_link *l = arg;
	size_t at = (a->used + 63) & ~(size_t)63;
	int rc;

	l->fenv.data = a->data_remote;
	/* A locked sub measured ~3% slower with two busy threads; a rare lost
	 * update between two threads sharing a counter only shifts a sample. */
	l->fenv.plain_sub = 1;
	init_data(l, a->hdr, a->want);
	rc = tramp_fast_agent_install(a->code + at, a->code_size - at, a->code_remote + at,
				      &l->fenv);
	if (rc)
		return rc;
	a->used = at + tramp_fast_agent_size();
	ownframes_set_agent(l->own, a->code_remote + at, a->code_remote + a->used);
	pr_debug("agent at +%#zx, trampolines below", at);
	return 0;
}

static int ops_reloc_offset(void *arg, const struct hook *h, enum tramp_class cls)
{
	struct agent_link *l = arg;

	return tramp_fast_reloc_offset(cls, h, &l->fenv);
}

static int ops_emit(void *arg, const struct hook *h, enum tramp_class cls, uint64_t at,
		    const struct reloc_result *r, uint8_t *buf, size_t len,
		    struct tramp_layout *lay)
{
	struct agent_link *l = arg;
	int rc = tramp_fast_emit(cls, h, at, r, &l->fenv, buf, len, lay);

	if (!rc)
		ownframes_add_tramp(l->own, at, lay, r);
	return rc;
}

/* exact mode: a thread inside a trampoline may be waiting for ring room */
static void ops_quiesce(void *arg)
{
	agent_link_drain(arg, QUIESCE_DRAIN_MAX);
}

/* No writer comes back: what the rings still hold is read from our view,
 * which outlives the target's. */
static void ops_removed(void *arg, void *map, size_t size)
{
	struct agent_link *l = arg;

	agent_link_final(l);
	if (l->shm && !l->map) {
		l->map = map;
		l->map_size = size;
	} else {
		mapguard_remove(map);
		munmap(map, size);
	}
}

const struct implant_ops agent_link_implant_ops = {
	.name = "fast",
	.agent = 1,
	.tramp_max = TRAMP_FAST_MAX_SIZE,
	.data_size = ops_data_size,
	.setup = ops_setup,
	.reloc_offset = ops_reloc_offset,
	.emit = ops_emit,
	.quiesce = ops_quiesce,
	.removed = ops_removed,
};
