/* Trap-free mode, tool side: shared data setup, draining the ring, teaching frame rules. */
/* SPDX-License-Identifier: MIT */
/*
 * The shared area is input from the target: it can write every byte of
 * it, through its own view, at any moment. So the geometry and settings
 * are the tool's own (s->shm_want, s->rings), never read back; a record
 * is parsed from a private copy (ring.c) and checked against what the
 * agent writes (record_ok); the header is compared with our copy after
 * every drain, and the counters are believed only as far as they could
 * have grown since the area was set up. The first thing the agent could
 * not have written makes the session hostile (shm_hostile): nothing in the
 * area is read any more, and session.c detaches. What well-formed events
 * can cost is capped too: the profile's tables (profile.h), the frame
 * rules learnt a second (frametab.c) and the time a drain may take.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#include <time.h>
#include "clock.h"
#include "frametab.h"
#include "log.h"
#include "mapguard.h"
#include "ring.h"
#include "session.h"
#include "stackids.h"
#include "symbolize.h"
#include "sys_compat.h"
#include "unwind.h"

#define DRAIN_BATCH 65536
#define DRAIN_MAX (1u << 20)		/* then back to the loop: ptrace events wait */
#define NAP_MIN_NS 1000000ULL		/* 1 ms */
#define NAP_MAX_NS 20000000ULL		/* 20 ms */
#define DRAIN_NS 100000000ULL		/* a drain hands over events for at most 100 ms */
#define DRAIN_CLOCK_EVERY 64		/* events between two looks at the clock */
/* Counters no agent can raise faster: 16 a nanosecond since the area was set up. */
#define COUNT_PER_NS 16
#define COUNT_SLACK (1ULL << 20)

static uint8_t *data_of(struct session *s)
{
	return (uint8_t *)s->shm;
}

/* The shared layout is mapped and set up (not yet, or no longer, released):
 * after detach too, until fast_release(), so that what the rings hold is
 * read once the target runs again. */
static int fast_ready(const struct session *s)
{
	return s->shm && s->ftab;
}

void fast_heartbeat(struct session *s)
{
	__atomic_store_n(&s->shm->heartbeat, clock_ns(CLOCK_MONOTONIC),
			 __ATOMIC_RELEASE);
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

/* Fill the shared layout of region 0 (already mapped, zeroed by ftruncate);
 * what goes into the header goes into s->shm_want first. */
void fast_init_data(struct session *s, uint64_t data_remote, uint64_t ring_size)
{
	struct shm_hdr *h = s->regions[0].hdr, *w = &s->shm_want;
	uint8_t *d = (uint8_t *)h;

	s->shm = h;
	/* charged to our memory cgroup, not the target's (membudget.c) */
	if (s->prefault)
		prefault(d, SHM_OFF_RING);
	w->flags = (s->exact ? SHM_F_EXACT : 0) | s->sc.shm_flags;
	h->no_stack_copy = s->sc.no_stack_copy;	/* seccomp: no process_vm_readv */
	w->data_remote = data_remote;
	w->ring_size = ring_size;
	w->rate = s->opt->sample_rate;
	/* shm_exp_gap's multiplier; rates above 2^46 (64 TiB) sample as that */
	w->gap_mul = (uint64_t)((double)(w->rate < (1ull << 46) ? w->rate : 1ull << 46) *
				M_LN2 * 65536.0 + 0.5);
	h->flags = w->flags;
	h->data_remote = w->data_remote;
	h->ring_size = w->ring_size;
	h->rate = w->rate;
	h->gap_mul = w->gap_mul;
	s->shm_since = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		struct shm_counter *c = (struct shm_counter *)(d + SHM_OFF_COUNTERS +
							       i * SHM_COUNTER_STRIDE);

		c->left = s->exact ? 0 : (int64_t)sampler_next_gap(&s->sampler);
		c->rng = sampler_rand(&s->sampler) | 1;	/* xorshift seed, non-zero */
	}
	memset(d + SHM_OFF_BITS, s->exact ? 0xff : 0, SHM_BLOOM_SIZE / 8);
	fast_heartbeat(s);
	ring_reader_init(&s->rings, h, ring_size);
	s->ftab = frametab_new(s->proc_tid, (struct shm_frame *)(d + SHM_OFF_FRAMES));
}

/*
 * The shared area is no longer trusted: the target wrote what the agent
 * never writes (what). Said once, on stderr and in the profile; from now
 * on nothing in the area is read (session.c detaches).
 */
static void shm_hostile(struct session *s, const char *what)
{
	if (s->hostile)
		return;
	s->hostile = 1;
	session_note(s, "%d wrote over heapattach's shared memory (%s): it is no longer "
		     "trusted; detaching, the profile ends there", s->pid, what);
}

/* Header fields the tool wrote and nothing else does, by name. */
static const struct {
	size_t off, len;
	const char *name;
} hdr_fields[] = {
#define F(f) { offsetof(struct shm_hdr, f), sizeof(((struct shm_hdr *)0)->f), #f }
	F(magic), F(version), F(flags), F(total_size), F(data_remote), F(code_remote),
	F(code_size), F(tool_pid), F(target_pid), F(ring_size), F(rate), F(npatches),
	F(pad0), F(patches), F(nest_lo), F(nest_hi), F(gap_mul),
#undef F
};

/* Compare the shared header with what we wrote (s->shm_want); the first
 * field that differs makes the session hostile. */
static void check_header(struct session *s)
{
	const uint8_t *h = (const uint8_t *)s->shm, *w = (const uint8_t *)&s->shm_want;
	char what[96];

	for (size_t i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++) {
		if (!memcmp(h + hdr_fields[i].off, w + hdr_fields[i].off, hdr_fields[i].len))
			continue;
		snprintf(what, sizeof(what), "its header's %s changed", hdr_fields[i].name);
		shm_hostile(s, what);
		return;
	}
}

/* ---- events ---- */

/* Hand the queued events to the profile (they are recorded in batches). */
static void flush_ops(struct session *s)
{
	profile_record_batch(s->prof, s->ops, s->nops);
	s->nops = 0;
}

static void queue_op(struct session *s, uint32_t kind, uint32_t stack, uint64_t size,
		     uint64_t ptr)
{
	s->ops[s->nops++] = (struct profile_op){ kind, stack, size, ptr };
	if (s->nops == SESSION_BATCH)
		flush_ops(s);
}

/* The agent keeps its live table itself: only the profile to update. */
static void on_free(struct session *s, const struct shm_ev_free *e)
{
	s->events++;
	queue_op(s, PROFILE_OP_FREE, 0, 0, e->ptr);
}

#define EVF_KNOWN (SHM_EVF_STACK | SHM_EVF_TRUNC | SHM_EVF_MISS | SHM_EVF_UNTABLED | \
		   SHM_EVF_STACKID | (0xffu << SHM_EVF_HOOK_SHIFT))

/*
 * Whether an allocation record of len bytes (our copy) is one the agent
 * writes: its length is exactly what its frames, registers and copy
 * take (agent_alloc), a stack id is one we gave out, and its pointer and
 * size are user-space figures of a call that succeeded.
 */
static int alloc_ok(const struct session *s, const struct shm_ev_alloc *e, uint32_t len)
{
	size_t base = sizeof(*e) + (size_t)e->nframes * 8;
	uint32_t f = e->flags;

	if (e->nframes > SHM_MAX_DEPTH || (f & ~EVF_KNOWN) || !e->ptr ||
	    e->ptr >= SHM_ADDR_LIMIT || e->size >= SHM_ADDR_LIMIT)
		return 0;
	if (f & SHM_EVF_STACKID)
		return !e->nframes && !(f & (SHM_EVF_MISS | SHM_EVF_STACK)) && len == base &&
		       e->stack_id < profile_nstacks(s->prof);
	if (!(f & SHM_EVF_MISS))
		return !(f & SHM_EVF_STACK) && !e->stack_len && len == base;
	base += sizeof(struct shm_ev_regs);
	if (f & SHM_EVF_STACK)
		return e->stack_len && e->stack_len <= SHM_STACK_COPY &&
		       len == base + SHM_STACK_COPY;
	return !e->stack_len && (len == base || len == base + SHM_STACK_COPY);
}

/*
 * Load the symbols of one more mapped object, so that names are there even
 * if the target exits before the dump. session.c loads them all before it
 * attaches, then one at a time between drains (objects found later):
 * loading a big object's DWARF must not hold up the rings.
 */
void fast_warm_step(struct session *s)
{
	struct sym_info si;

	while (s->sym && s->warm_next < s->maps.n) {
		const struct proc_map *m = &s->maps.v[s->warm_next++];

		if ((m->prot & PROC_MAP_X) && m->path && m->path[0] == '/') {
			symbolizer_lookup(s->sym, m->start, &si);
			return;
		}
	}
}

/* Read a word of a stack copy of len bytes taken at sp; 0 or -ERANGE
 * outside it (sp and addr are the target's: no sum may wrap). */
static int copy_word(const uint8_t *copy, uint64_t sp, uint32_t len, uint64_t addr, uint64_t *v)
{
	if (addr < sp || len < 8 || addr - sp > len - 8)
		return -ERANGE;
	memcpy(v, copy + (addr - sp), 8);
	return 0;
}

/*
 * Walk a stack copy with the frame table, as the agent would have: most
 * misses in a burst are for frames learnt a moment later, and this is
 * much cheaper than libunwind. Frames, or -ENOENT on a miss.
 */
static int table_walk(struct session *s, const struct shm_ev_regs *regs, const uint8_t *copy,
		      uint32_t copy_len, uint64_t *pcs)
{
	const struct shm_frame *table = (const struct shm_frame *)(data_of(s) + SHM_OFF_FRAMES);
	uint64_t ip = regs->ip, sp = regs->sp, bp = regs->bp;
	int n = 0;

	while (ip && n < PROFILE_MAX_FRAMES) {
		const struct shm_frame *slot;
		struct shm_frame r;	/* read once: the target can rewrite the table */
		uint64_t cfa;

		pcs[n++] = ip;
		slot = frametab_lookup(table, ip);
		if (!slot)
			return -ENOENT;
		memcpy(&r, (const void *)slot, sizeof(r));
		if (r.ip != ip)
			return -ENOENT;
		if (r.base == SHM_BASE_END)
			break;
		if (r.base != SHM_BASE_RSP && r.base != SHM_BASE_RBP)
			return -ENOENT;
		cfa = (r.base == SHM_BASE_RSP ? sp : bp) + (uint64_t)(int64_t)r.cfa_off;
		if (cfa <= sp || copy_word(copy, regs->sp, copy_len, cfa - 8, &ip))
			return -ENOENT;
		if (r.rbp_saved && copy_word(copy, regs->sp, copy_len,
					     cfa + (uint64_t)(int64_t)r.rbp_off, &bp))
			return -ENOENT;
		sp = cfa;
	}
	return n;
}

/* The bytes one sample of size bytes stands for (for --interval). */
static uint64_t unsampled_bytes(const struct session *s, uint64_t size)
{
	double rate = (double)s->opt->sample_rate;

	if (s->exact || !size)
		return size;
	return (uint64_t)((double)size / -expm1(-(double)size / rate));
}

/* An allocation record (our copy, checked by alloc_ok). */
static void on_alloc(struct session *s, const struct shm_ev_alloc *e)
{
	uint64_t pcs[PROFILE_MAX_FRAMES];
	const uint64_t *stack_pcs = e->frames;
	const struct shm_ev_regs *regs = (const struct shm_ev_regs *)(e->frames + e->nframes);
	size_t nframes = e->nframes;
	uint32_t stack;
	int n;

	s->events++;
	if (s->opt->interval)
		s->bytes_since_dump += unsampled_bytes(s, e->size);
	if (e->flags & SHM_EVF_STACKID) {
		stack = e->stack_id;
		goto queue;
	}
	if (e->flags & SHM_EVF_STACK) {
		struct unwind_regs ur = {
			.ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .bx = regs->bx,
			.r12 = regs->r12, .r13 = regs->r13, .r14 = regs->r14, .r15 = regs->r15,
		};
		const uint8_t *copy = (const uint8_t *)(regs + 1);

		n = table_walk(s, regs, copy, e->stack_len, pcs);
		if (n > 0) {
			stack_pcs = pcs;
			nframes = (size_t)n;
			goto record;
		}
		n = unwind_stack_copy(s->unw, &ur, copy, e->stack_len, pcs, PROFILE_MAX_FRAMES);
		if (n > 0) {
			frametab_learn_many(s->ftab, pcs, (size_t)n);
			if (n < PROFILE_MAX_FRAMES)
				frametab_set_end(s->ftab, pcs[n - 1]);
			stack_pcs = pcs;
			nframes = (size_t)n;
		} else {
			s->unwind_errors++;
		}
	} else if (e->flags & SHM_EVF_MISS) {
		/* No copy (refused): teach what we can from the frames we have. */
		frametab_learn_many(s->ftab, e->frames, e->nframes);
	}
record:
	stack = profile_stack_id(s->prof, stack_pcs, nframes);
	/* a complete walk of the agent's: from now on it sends the id */
	if (!(e->flags & SHM_EVF_MISS))
		stackids_publish((struct shm_stack *)(data_of(s) + SHM_OFF_STACKS),
				 e->frames, e->nframes, stack);
queue:
	queue_op(s, e->flags & SHM_EVF_UNTABLED ? PROFILE_OP_ALLOC_KEPT : PROFILE_OP_ALLOC,
		 stack, e->size, e->ptr);
}

/* ring_fn: one record (our copy). Non-zero stops the drain: a record the
 * agent cannot have written, or the drain's time is up. */
static int on_record(void *arg, const void *rec, uint32_t len)
{
	struct session *s = arg;
	uint16_t kind = ((const struct shm_ev_free *)rec)->kind;

	if (kind == SHM_EV_FREE && len == sizeof(struct shm_ev_free)) {
		on_free(s, rec);
	} else if (kind == SHM_EV_ALLOC && len >= sizeof(struct shm_ev_alloc) &&
		   alloc_ok(s, rec, len)) {
		on_alloc(s, rec);
	} else {
		shm_hostile(s, "a record no agent writes");
		return 1;
	}
	if (--s->drain_left)
		return 0;
	s->drain_left = DRAIN_CLOCK_EVERY;
	return clock_ns(CLOCK_MONOTONIC) > s->drain_deadline;
}

size_t fast_drain(struct session *s)
{
	return fast_drain_max(s, DRAIN_MAX);
}

/* Say once each cap the events have reached: the profile's, and the
 * frame rules' learning rate. */
static void fast_note_caps(struct session *s)
{
	struct frametab_stats st;

	session_note_caps(s);
	if (s->noted & SESSION_NOTE_LEARN)
		return;
	frametab_get_stats(s->ftab, &st);
	if (st.throttled) {
		s->noted |= SESSION_NOTE_LEARN;
		session_note(s, "the target reports frames without a rule faster than heapattach "
			     "learns rules (capped): the others are learnt when they come again");
	}
}

size_t fast_drain_max(struct session *s, size_t max)
{
	size_t total = 0, n, batch = max < DRAIN_BATCH ? max : DRAIN_BATCH;

	if (!fast_ready(s) || s->hostile)
		return 0;
	if (mapguard_zeroed_in(data_of(s) - REGION_CODE)) {
		shm_hostile(s, "it cut the memory short");
		return 0;
	}
	if (s->target_gone || s->exec_seen)
		ring_reader_final(&s->rings);	/* writers gone, maybe mid-record */
	s->drain_deadline = clock_ns(CLOCK_MONOTONIC) + DRAIN_NS;
	s->drain_left = DRAIN_CLOCK_EVERY;
	do {
		n = ring_drain(&s->rings, batch, on_record, s);
		total += n;
		fast_heartbeat(s);	/* exact-mode writers wait only while it is fresh */
	} while (n == batch && total < max && !s->hostile &&
		 clock_ns(CLOCK_MONOTONIC) <= s->drain_deadline);
	flush_ops(s);
	if (s->rings.corrupt)
		shm_hostile(s, s->rings.corrupt);
	check_header(s);
	fast_note_caps(s);
	return total;
}

/*
 * How long to sleep before the next drain: the time the writers take to
 * fill an eighth of a ring at the rate they filled them all since the last
 * call, within [NAP_MIN_NS, NAP_MAX_NS]. Every wake-up costs the target
 * too (ours may preempt one of its threads), so an idle ring is looked at
 * only NAP_MAX_NS apart; SIGCHLD and the tick still cut a nap short.
 */
long fast_nap_ns(struct session *s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), head, bytes, dt, nap = NAP_MAX_NS;

	if (!fast_ready(s))
		return NAP_MIN_NS;
	head = ring_heads_total(&s->rings);
	bytes = head - s->nap_head;
	dt = now - s->nap_ns;
	if (!s->nap_ns) {
		nap = NAP_MIN_NS;	/* first call: no rate known yet */
	} else if (bytes && dt) {
		double fill = (double)(s->rings.size / 8) * (double)dt / (double)bytes;

		nap = fill < NAP_MIN_NS ? NAP_MIN_NS : fill > NAP_MAX_NS ? NAP_MAX_NS :
			(uint64_t)fill;
	}
	s->nap_head = head;
	s->nap_ns = now;
	return (long)nap;
}

void fast_nap(struct session *s, long ns)
{
	struct timespec ts = { 0, ns };
	struct shm_hdr *h = s->shm;
	uint32_t seq;

	/* exact mode drops nothing (writers wait) and drains in bigger
	 * batches when not woken at every quarter ring */
	if (!fast_ready(s) || s->exact || s->hostile) {
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
	if (ring_pending_max(&s->rings) >= SHM_DOORBELL_FILL(s->rings.size) && ns > (long)NAP_MIN_NS)
		ts.tv_nsec = NAP_MIN_NS;
	syscall(SYS_futex, &h->doorbell, FUTEX_WAIT, seq, &ts, NULL, 0);
	__atomic_store_n(&h->tool_asleep, 0, __ATOMIC_RELAXED);
}

int fast_ring_busy(struct session *s)
{
	if (!fast_ready(s) || s->hostile)
		return 0;
	return ring_pending_max(&s->rings) > s->rings.size / 4;
}

/* Whether the agent's live table no longer holds ptr, a pointer it entered
 * (it never drops one: see shm.h). */
static int freed_in_table(uint64_t ptr, void *arg)
{
	struct session *s = arg;
	const uint64_t *w = (const uint64_t *)(data_of(s) + SHM_OFF_LIVE) +
			    (size_t)shm_bloom_slot(ptr) * SHM_LIVE_WAYS;

	for (int i = 0; i < SHM_LIVE_WAYS; i++)
		if ((__atomic_load_n(&w[i], __ATOMIC_ACQUIRE) & ~(uint64_t)SHM_LIVE_OVERFLOW) == ptr)
			return 0;
	return 1;
}

/*
 * Drain, then (sampled mode) sweep: the agent reports no free it finds in
 * its live table (see shm.h), so a pointer we hold live (and it entered) is
 * freed once its bucket no longer has it. The drain first, so that the
 * frees already reported come before the sweep. A pointer entered but not committed yet is not
 * ours yet; one freed and entered again (another sampled block at the same
 * address) stays live here until that block's event replaces it.
 */
void fast_reconcile(struct session *s)
{
	if (!fast_ready(s))
		return;
	fast_drain(s);
	if (!s->exact && !s->hostile)
		profile_sweep_live(s->prof, freed_in_table, s);
	fast_sync_stats(s);
}

/* A counter of the agent's that started at 0 when the area was set up:
 * whether v is a count it could have reached by now. */
static int plausible(const struct session *s, uint64_t v)
{
	uint64_t ns = clock_ns(CLOCK_MONOTONIC) - s->shm_since;

	return v <= COUNT_SLACK || (v - COUNT_SLACK) / COUNT_PER_NS <= ns;
}

/*
 * Copy the agent's counters into the profile before a dump, each read
 * once and believed only if the agent could have counted that far: drops
 * only grow (lock inc), and no counter grows faster than COUNT_PER_NS.
 */
void fast_sync_stats(struct session *s)
{
	uint64_t drops, sum[3] = { 0, 0, 0 }, v[3];
	char what[96];

	if (!fast_ready(s) || s->hostile)
		return;
	drops = __atomic_load_n(&s->shm->drops, __ATOMIC_RELAXED);
	if (drops < s->drops_seen || !plausible(s, drops)) {
		snprintf(what, sizeof(what), "a drop count of %llu is implausible",
			 (unsigned long long)drops);
		shm_hostile(s, what);
		return;
	}
	if (drops > s->drops_seen) {
		profile_add_drops(s->prof, drops - s->drops_seen);
		s->drops_seen = drops;
	}
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		const struct shm_counter *c = (const struct shm_counter *)(data_of(s) +
			SHM_OFF_COUNTERS + i * SHM_COUNTER_STRIDE);

		v[0] = __atomic_load_n(&c->walks, __ATOMIC_RELAXED);
		v[1] = __atomic_load_n(&c->walk_misses, __ATOMIC_RELAXED);
		v[2] = __atomic_load_n(&c->nested, __ATOMIC_RELAXED);
		for (int k = 0; k < 3; k++) {
			if (!plausible(s, v[k]) || !plausible(s, sum[k] + v[k])) {
				shm_hostile(s, "an implausible count of calls in its counters");
				return;
			}
			sum[k] += v[k];
		}
	}
	s->regions_stats[0] = sum[0];
	s->regions_stats[1] = sum[1];
	s->nested = sum[2];
	s->doorbells = __atomic_load_n(&s->shm->doorbell, __ATOMIC_RELAXED);
}

void fast_release(struct session *s)
{
	frametab_free(s->ftab);
	s->ftab = NULL;
	s->shm = NULL;
	if (s->shm_map) {
		mapguard_remove(s->shm_map);
		munmap(s->shm_map, s->shm_map_size);
	}
	s->shm_map = NULL;
}
