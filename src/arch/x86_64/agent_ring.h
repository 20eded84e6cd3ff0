/* The agent's side of the rings: records reserved and committed, and the wait for room in exact mode (x86-64), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_RING_H
#define HEAPATTACH_AGENT_RING_H

#define SPIN_PAUSES		64
#define SLEEP_NS		10000000L	/* longest sleep between looks at the ring */
#define MAX_WAIT_NS		1000000000LL	/* longest wait for a ring the tool drains but cannot move */
#define BUSY_WAIT_NS		30000000000LL	/* longest wait while the tool drains nothing at all */
#define STALE_NS		500000000LL	/* heartbeat older than this: tool gone, or we were all paused */
#define GRACE_NS		100000000LL	/* how long a stale heartbeat is watched for a new beat */
#define GONE_NS			5000000000LL	/* heartbeat older than this: tool gone, no grace */

struct waiting {
	unsigned spins;
	int64_t since;          /* when the tail was last seen to move (0: not yet looked) */
	uint64_t tail;          /* the tail then */
	int64_t stale;          /* when the heartbeat was first seen stale (0: fresh) */
	int64_t first;          /* the first look at the clock (0: not yet) */
};

/*
 * Sleep until the tool moves a tail (it then bumps wake_seq and wakes the
 * waiters, ring.c), for at most SLEEP_NS. Announced in waiters before the
 * tail is read again (both sides store, fence, then load: one of them sees
 * the other), so a tail moved meanwhile means no sleep and a wake-up sent
 * meanwhile makes FUTEX_WAIT return at once. Sleeping rather than yielding
 * leaves the CPU to the tool: with more busy threads than CPUs, a writer
 * spinning on its own CPU only delays the drain it waits for. A futex
 * that fails otherwise than by being woken, timing out, finding wake_seq
 * moved or being interrupted (refused by seccomp, say) is replaced by a
 * sched_yield. When the target's seccomp filter may kill on futex
 * (SHM_F_NO_FUTEX) the writer yields instead, and when it may kill on
 * sched_yield too (SHM_F_NO_YIELD) it spins: the tool decided at attach.
 */
static void sleep_for_room(struct shm_hdr *h, const volatile uint64_t *tailp, uint64_t tail)
{
	struct {
		int64_t sec, nsec;
	} ts = { 0, SLEEP_NS };
	uint32_t seq = h->wake_seq, flags = h->flags;
	long rc = -ENOSYS;

	if (!(flags & SHM_F_NO_FUTEX)) {
		rc = 0;
		__atomic_fetch_add(&h->waiters, 1, __ATOMIC_SEQ_CST);
		if (*tailp == tail)
			rc = sys6(NR_FUTEX, (long)&h->wake_seq, FUTEX_WAIT, seq, (long)&ts, 0, 0);
		__atomic_fetch_sub(&h->waiters, 1, __ATOMIC_SEQ_CST);
	}
	if (rc >= 0 || rc == -EAGAIN || rc == -ETIMEDOUT || rc == -EINTR)
		return;
	if (!(flags & SHM_F_NO_YIELD)) {
		sys6(NR_SCHED_YIELD, 0, 0, 0, 0, 0, 0);
		return;
	}
	for (int i = 0; i < SPIN_PAUSES; i++)
		cpu_pause();
}

/*
 * Exact mode only, ring full at tail (*tailp): wait a little. Returns 0 to
 * retry, or the reason to give up (SHM_DROP_*). The tool is gone when its
 * heartbeat is missing or older than GONE_NS: give up at once. A heartbeat
 * older than STALE_NS (a thread of the tool's refreshes it every 50 ms
 * while it runs, whatever the tool is busy with, from before the hooks
 * go in) is watched for GRACE_NS more, then given up on:
 * a machine whose CPUs were all held (a virtual machine paused by its
 * host) wakes with every heartbeat stale, and the tool's beat comes
 * within a few ms of the writers' first look. The tool is alive but the ring
 * does not move: give up once the tail stood still for MAX_WAIT_NS while
 * the tool finished a drain (drained, later than the tail's last move), or
 * for BUSY_WAIT_NS whatever it did; a tool busy with one long step (a
 * table resize, a dump) drains nothing, and is waited for. Also give up at
 * once if another writer gave up less than STALE_NS ago. The drained rule
 * matters when the consumer is stuck behind a record that is reserved but
 * never committed (its thread is stopped, or is the one waiting: a signal
 * handler allocating in the middle of the agent); the latch keeps every
 * other thread from waiting that long too. A few pauses first (the tool
 * may be draining on another CPU), then sleeps; the clock is read only on
 * the first call and before each sleep.
 */
static unsigned wait_room(struct shm_hdr *h, struct waiting *w, const volatile uint64_t *tailp,
			  uint64_t tail)
{
	int64_t hb, now;
	unsigned why = 0;

	if (w->spins && w->spins < SPIN_PAUSES) {
		w->spins++;
		cpu_pause();
		return 0;
	}
	hb = (int64_t)h->heartbeat;
	now = now_ns();
	if (!hb || !now || now - hb > GONE_NS)
		return SHM_DROP_NO_TOOL;
	if (!w->first)
		w->first = now;
	else if ((uint64_t)(now - w->first) > h->wait_max_ns)
		h->wait_max_ns = (uint64_t)(now - w->first);	/* a race loses a figure: said */
	if (!w->since) {
		if (now - (int64_t)h->wait_giveup < STALE_NS)
			return SHM_DROP_LATCH;
		w->since = now;
		w->tail = tail;
	} else if (tail != w->tail) {
		w->since = now;		/* it moves: the tool keeps up, if slowly */
		w->tail = tail;
	}
	if (now - hb <= STALE_NS)
		w->stale = 0;
	else if (!w->stale)
		w->stale = now;
	if (w->stale && now - w->stale > GRACE_NS)
		why = SHM_DROP_STALE;
	else if (now - w->since > BUSY_WAIT_NS)
		why = SHM_DROP_BUSY;
	else if (now - w->since > MAX_WAIT_NS && (int64_t)h->drained > w->since)
		why = SHM_DROP_STUCK;
	if (why) {
		h->wait_giveup = (uint64_t)now;
		return why;
	}
	if (w->spins)
		sleep_for_room(h, tailp, tail);
	else
		w->spins = 1;
	return 0;
}

/* The ring number of the stack sp lies on. */
static inline unsigned ring_of(uint64_t sp)
{
	return (sp >> SHM_RING_SHIFT) & (SHM_NRINGS - 1);
}

/* Wake the napping tool: a ring has just passed SHM_DOORBELL_FILL (never blocks). */
static void ring_doorbell(struct shm_hdr *h)
{
	__atomic_fetch_add(&h->doorbell, 1, __ATOMIC_SEQ_CST);
	sys6(NR_FUTEX, (long)&h->doorbell, FUTEX_WAKE, 1, 0, 0, 0);
}

/* Ring r's head (its own line) and tail. */
static uint64_t *ring_headp(const struct shm_hdr *h, unsigned r)
{
	return (uint64_t *)((char *)h + SHM_OFF_HEADS + r * 64);
}

static const volatile uint64_t *ring_tailp(const struct shm_hdr *h, unsigned r)
{
	return (const volatile uint64_t *)((const char *)h + SHM_OFF_TAILS) + r;
}

/* Bytes ring r holds (written, not yet read): a stale tail only adds. */
static uint64_t ring_fill(const struct shm_hdr *h, unsigned r)
{
	uint64_t tail = *ring_tailp(h, r);

	return *(const volatile uint64_t *)ring_headp(h, r) - tail;
}

/*
 * Map in the chunk of ring (size bytes) at byte off before a writer gets
 * there, if it lies within the ring (a wrapped ring's pages are mapped
 * already): SHM_RING_CHUNK bytes from the page it starts in (rings are
 * not page aligned; the page before a ring is in the same mapping). A
 * kernel without MADV_POPULATE_WRITE (before 5.14) or a filter that
 * refuses madvise turns it off for good; running out of memory only
 * leaves the pages to their faults.
 */
static void ring_populate(struct shm_hdr *h, char *ring, uint64_t size, uint64_t off)
{
	long rc;

	if (off >= size || size < SHM_RING_CHUNK || (h->flags & SHM_F_NO_POPULATE) ||
	    h->no_populate)
		return;
	rc = sys6(NR_MADVISE, (long)(ring + off) & ~4095L, SHM_RING_CHUNK, MADV_POPULATE_WRITE,
		  0, 0, 0);
	if (rc == -EINVAL || rc == -EPERM || rc == -EACCES || rc == -ENOSYS)
		h->no_populate = 1;
}

/*
 * Reserve len bytes (a multiple of 8) in ring r, padding its end if
 * the record would straddle it; *tsc gets the time stamp taken just before
 * the reservation (so that the ring's records are in tsc order). Returns
 * the record (len not yet written), or NULL after counting a drop.
 */
static char *ring_reserve(struct shm_hdr *h, unsigned r, uint32_t len, uint64_t *tsc)
{
	uint64_t size = h->ring_size, mask = size - 1;
	char *ring = (char *)h + SHM_OFF_RING + r * size;
	uint64_t *headp = ring_headp(h, r);
	const volatile uint64_t *tailp = ring_tailp(h, r);
	struct waiting w = { 0, 0, 0, 0, 0 };
	unsigned why = SHM_DROP_HUGE;

	if (len > size)
		goto drop;
	for (;;) {
		/* tail first: an older tail only underestimates the room,
		 * a tail newer than head would wrap head - tail */
		uint64_t tail = *tailp;
		uint64_t head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
		uint64_t off = head & mask, pad = 0, ahead;

		if (off + len > size)
			pad = size - off;
		if (head + pad + len - tail <= size) {
			uint64_t t = rdtsc_ordered();

			if (!__atomic_compare_exchange_n(headp, &head, head + pad + len,
							 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				continue;
			/* the stamp first: a reader finding this record not
			 * committed yet holds back what was stamped after it */
			*(volatile uint64_t *)(ring + ((head + pad) & mask) + 8) = t;
			/* past the doorbell mark, the tool napping: the first
			 * writer to take tool_asleep wakes it (the cmpxchg
			 * ordered our store of head before this load, see
			 * agentlink.c; a stale tail only makes the ring look
			 * fuller). Not in exact mode: its line is the tool's. */
			if (head + pad + len - tail >= SHM_DOORBELL_FILL(size) &&
			    !(h->flags & (SHM_F_EXACT | SHM_F_NO_FUTEX)) && h->tool_asleep &&
			    __atomic_exchange_n(&h->tool_asleep, 0, __ATOMIC_SEQ_CST))
				ring_doorbell(h);
			if (pad) {
				struct shm_ev_free *p = (struct shm_ev_free *)(ring + off);

				p->kind = SHM_EV_PAD;
				barrier();
				*(volatile uint32_t *)&p->len = (uint32_t)pad;
			}
			/* the first record maps the first two chunks, and the
			 * writer entering chunk k of the first pass chunk k + 1 */
			if (!head)
				ring_populate(h, ring, size, 0);
			ahead = shm_ring_chunk_ahead(head, pad + len);
			if (ahead)
				ring_populate(h, ring, size, ahead);
			*tsc = t;
			return ring + ((head + pad) & mask);
		}
		why = (h->flags & SHM_F_EXACT) ? wait_room(h, &w, tailp, tail) : SHM_DROP_FULL;
		if (why)
			break;
	}
drop:
	lock_inc(&h->drops);
	if (!(h->drop_why & why))
		__atomic_fetch_or(&h->drop_why, why, __ATOMIC_RELAXED);
	return NULL;
}

static inline void commit(void *rec, uint32_t len)
{
	barrier();
	*(volatile uint32_t *)rec = len;
}

#endif
