/* The tool's side of the shared event rings: drain committed records in time order. */
/* SPDX-License-Identifier: MIT */
/*
 * Writers (the in-target agent) stamp a record with the time, then reserve
 * it with a cmpxchg on their ring's head, write it and store its len last
 * (shm.h). We read each ring at its tail: len 0 means empty or a writer
 * still busy, a PAD record fills the end of a ring so that no record
 * straddles it. Consumed bytes are zeroed before the tail moves past them,
 * so a stale len can never look committed.
 *
 * Order across rings matters where one thread frees a block and another
 * gets it back (the free must come first), or one allocates a block that
 * another frees (the allocation first). Such pairs are causal: a record is
 * committed before its block can change hands (the free's before the real
 * free, the allocation's before the block is returned to the program),
 * and the second record is stamped (rdtscp) after the block reached its
 * thread, so the first stamp is the earlier one, and once the second
 * record is visible so is the first. The
 * merge therefore works in passes: take a time stamp T, then look at every
 * ring; any record committed with a stamp below T has all its predecessors
 * among what the pass can see (a predecessor committed later than our look
 * at its ring would have made the record's stamp later than T). Those
 * records are handed over in stamp order; later ones wait for the next
 * pass.
 *
 * Unless a ring is blocked: its tail record reserved but not committed
 * (its writer between the two, or preempted there). A committed record
 * behind it in that ring (another thread's: threads can share a ring) is
 * invisible until then, and its successors elsewhere must wait too. They
 * were stamped after the blocked record's stamp, which the writer stores
 * in the record right after reserving it; so the pass's bound becomes
 * that stamp, or nothing at all while even the stamp is not there yet. A
 * ring blocked at the same place for STUCK_NS (a writer stopped or killed
 * mid-record) stops holding the others back.
 *
 * The target can write every byte of the rings, heads and tails, not only
 * through the agent. So the reader keeps the geometry and the tails to
 * itself, reads each shared word once, and checks what it reads against
 * what the agent can write: a head is never behind our tail nor more than
 * a ring ahead of it, a PAD runs exactly to the end of its ring, and any
 * other record is 8-byte aligned, 16 to max_len bytes long (what the
 * run's depth allows, shm_ev_max_len) and
 * within its ring. The first breach of these rules marks the reader
 * corrupt; it drains nothing after that (the caller stops trusting the
 * area). A record is copied out before it is handed over, so the target
 * cannot change it while it is being parsed.
 */
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "base/clock.h"
#include "base/sys_compat.h"
#include "fast/ring.h"
#include "timestamp.h"

#define STUCK_NS 100000000ULL	/* 100 ms */
#define BLOCKED_PASSES 256	/* passes held back by a writer mid-record before giving up */

/* A ring's tail is stored every this many bytes, not after every record:
 * each store pulls the line away from the writers, who read it on every
 * event. */
#define RING_PUBLISH (64 * 1024)

static uint64_t *tails_of(struct shm_hdr *h)
{
	return (uint64_t *)((uint8_t *)h + SHM_OFF_TAILS);
}

/* Note the first thing found that the agent cannot have written. */
static void set_corrupt(struct ring_reader *rd, const char *why)
{
	if (!rd->corrupt)
		rd->corrupt = why;
}

/*
 * Ring r's head, read once and checked: between our tail and a ring
 * ahead of it (writers reserve against the published tail, which is never
 * ahead of ours). Anything else marks the reader corrupt and reads as our
 * tail (an empty ring).
 */
static uint64_t head_of(struct ring_reader *rd, unsigned r)
{
	uint64_t head = __atomic_load_n((const uint64_t *)((const uint8_t *)rd->hdr +
					SHM_OFF_HEADS + r * 64), __ATOMIC_ACQUIRE);

	if (head - rd->tail[r] > rd->size) {
		set_corrupt(rd, "a ring's head behind its tail or more than a ring ahead of it");
		return rd->tail[r];
	}
	return head;
}

static uint8_t *ring_of(struct ring_reader *rd, unsigned r)
{
	return rd->rings + r * rd->size;
}

void ring_reader_init(struct ring_reader *rd, struct shm_hdr *hdr, uint64_t ring_size,
		      uint32_t depth, uint32_t npy)
{
	memset(rd, 0, sizeof(*rd));
	rd->hdr = hdr;
	rd->rings = (uint8_t *)hdr + SHM_OFF_RING;
	rd->size = ring_size;
	rd->max_len = shm_ev_max_len(depth, npy);
}

/*
 * Store ring r's tail for the writers, and wake those asleep for room
 * (exact mode). The fence pairs with theirs (agent_ring.h, sleep_for_room): a
 * writer announced after our load sees the new tail and does not sleep.
 */
static void publish(struct ring_reader *rd, unsigned r)
{
	struct shm_hdr *h = rd->hdr;

	__atomic_store_n(&tails_of(h)[r], rd->tail[r], __ATOMIC_RELEASE);
	rd->published[r] = rd->tail[r];
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->waiters, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&h->wake_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &h->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/*
 * Our view of ring r's chunk at byte off, mapped in before we read it,
 * within the ring's first pass: what the agent does for its own view
 * (agent_ring.h, ring_populate), so that we do not take a page fault for every
 * page either. Failures only leave the pages to their faults.
 */
static void populate(struct ring_reader *rd, unsigned r, uint64_t off)
{
	uintptr_t at = (uintptr_t)(rd->rings + r * rd->size + off) & ~(uintptr_t)4095;

	if (off < rd->size && rd->size >= SHM_RING_CHUNK)
		madvise((void *)at, SHM_RING_CHUNK, MADV_POPULATE_WRITE);
}

/* Zero the len bytes at ring r's tail and move past them. */
static void consume(struct ring_reader *rd, unsigned r, uint8_t *rec, uint32_t len)
{
	uint64_t ahead = shm_ring_chunk_ahead(rd->tail[r], len);

	memset(rec, 0, len);	/* len is a multiple of 8 */
	if (!rd->tail[r])
		populate(rd, r, 0);
	if (ahead)
		populate(rd, r, ahead);
	rd->tail[r] += len;
	if (rd->tail[r] - rd->published[r] >= RING_PUBLISH)
		publish(rd, r);
}

/*
 * Ring r's tail record at p (offset off) is not committed: 1 if it is
 * reserved (blocked: *tsc gets its writer's stamp, 0 if not stored yet),
 * 0 if the ring is empty or has been blocked there for STUCK_NS.
 */
static int blocked(struct ring_reader *rd, unsigned r, const uint8_t *p, uint64_t off,
		   uint64_t *tsc)
{
	if (rd->no_writers || head_of(rd, r) == rd->tail[r])
		return 0;
	if (rd->stuck_tail[r] != rd->tail[r] || !rd->stuck_since[r]) {
		rd->stuck_tail[r] = rd->tail[r];
		rd->stuck_since[r] = clock_ns(CLOCK_MONOTONIC);
	} else if (clock_ns(CLOCK_MONOTONIC) - rd->stuck_since[r] > STUCK_NS) {
		return 0;
	}
	*tsc = off + 16 <= rd->size ?
	       __atomic_load_n((const uint64_t *)(p + 8), __ATOMIC_ACQUIRE) : 0;
	return 1;
}

/*
 * Whether a committed record of n bytes and this kind at offset off of a
 * ring is one the agent could have written: a PAD fills the ring's end
 * exactly (the agent pads only a record that would straddle it), any
 * other record holds at least a header and at most rd->max_len bytes,
 * 8-byte aligned, within the ring.
 */
static int record_ok(const struct ring_reader *rd, uint64_t off, uint32_t n, uint16_t kind)
{
	if (kind == SHM_EV_PAD)
		return off && n == rd->size - off;
	return n >= 16 && !(n & 7) && n <= rd->max_len && n <= rd->size - off;
}

/*
 * The committed record at ring r's tail, pads consumed on the way: 1 with
 * *rec, *len and *tsc set; 0 if the ring is empty or the reader corrupt
 * (a record the agent cannot have written marks it so); -1 if it is
 * blocked (see blocked(), *tsc set).
 */
static int peek(struct ring_reader *rd, unsigned r, uint8_t **rec, uint32_t *len, uint64_t *tsc)
{
	uint64_t off;
	uint16_t kind;
	uint8_t *p;
	uint32_t n;

	for (;;) {
		if (rd->corrupt)
			return 0;
		off = rd->tail[r] & (rd->size - 1);
		p = ring_of(rd, r) + off;
		n = __atomic_load_n((uint32_t *)p, __ATOMIC_ACQUIRE);
		if (n == 0)
			return blocked(rd, r, p, off, tsc) ? -1 : 0;
		kind = __atomic_load_n((uint16_t *)(p + 4), __ATOMIC_RELAXED);
		if (!record_ok(rd, off, n, kind)) {
			set_corrupt(rd, "a record no agent writes (length or padding)");
			return 0;
		}
		if (kind != SHM_EV_PAD)
			break;
		consume(rd, r, p, n);
	}
	*rec = p;
	*len = n;
	*tsc = __atomic_load_n((uint64_t *)(p + 8), __ATOMIC_RELAXED);
	return 1;
}

/* Mark the rings that have been written to since the last look. */
static void find_used(struct ring_reader *rd)
{
	for (unsigned r = 0; r < SHM_NRINGS; r++)
		if (!(rd->used & (1ULL << r)) && head_of(rd, r) != rd->tail[r])
			rd->used |= 1ULL << r;
}

struct cand {
	unsigned r;
	uint32_t len;
	uint64_t tsc;
	uint8_t *rec;
};

/* Peek at ring r into *c: 1 if it holds a committed record; if the ring is
 * blocked, lower *bound to its writer's stamp. */
static int look(struct ring_reader *rd, unsigned r, struct cand *c, uint64_t *bound)
{
	uint64_t stamp;
	int rc = peek(rd, r, &c->rec, &c->len, &stamp);

	if (rc > 0) {
		c->r = r;
		c->tsc = stamp;
	} else if (rc < 0 && stamp < *bound) {
		*bound = stamp;
	}
	return rc > 0;
}

size_t ring_drain(struct ring_reader *rd, size_t max, ring_fn fn, void *arg)
{
	struct cand c[SHM_NRINGS];
	size_t n = 0;
	int idle = 0, stop = 0, held = 0;

	while (n < max && !stop && !rd->corrupt) {
		uint64_t t = arch_timestamp(), bound = t;
		int nc = 0, progressed = 0, force;

		find_used(rd);	/* after t: a ring first written before t is seen */
		for (unsigned r = 0; r < SHM_NRINGS; r++)
			if ((rd->used & (1ULL << r)) && look(rd, r, &c[nc], &bound))
				nc++;
		if (!nc)
			break;
		/* After a pass with no progress and nothing blocked, take one
		 * anyway (clocks out of step). */
		force = idle && bound == t;
		while (nc && n < max && !stop) {
			int m = 0;

			for (int i = 1; i < nc; i++)
				if (c[i].tsc < c[m].tsc)
					m = i;
			/* Stamped after the bound: wait for the next pass. */
			if (c[m].tsc >= bound && !force)
				break;
			/* a private copy: the target may be rewriting it */
			memcpy(rd->rec, c[m].rec, c[m].len);
			stop = fn(arg, rd->rec, c[m].len);
			n++;
			progressed = 1;
			force = 0;
			consume(rd, c[m].r, c[m].rec, c[m].len);
			if (!look(rd, c[m].r, &c[m], &bound))
				c[m] = c[--nc];
		}
		/* A writer mid-record commits within a few hundred ns, unless
		 * it was preempted: then come back after a nap. */
		held = !progressed && bound < t ? held + 1 : 0;
		if (held > BLOCKED_PASSES)
			break;
		idle = !progressed;
	}
	for (unsigned r = 0; r < SHM_NRINGS; r++)
		if (rd->tail[r] != rd->published[r])
			publish(rd, r);
	return n;
}

void ring_reader_final(struct ring_reader *rd)
{
	rd->no_writers = 1;
}

uint64_t ring_pending_max(struct ring_reader *rd)
{
	uint64_t most = 0;

	for (unsigned r = 0; r < SHM_NRINGS; r++) {
		uint64_t p = head_of(rd, r) - rd->tail[r];

		if (p > most)
			most = p;
	}
	return most;
}

uint64_t ring_heads_total(struct ring_reader *rd)
{
	uint64_t total = 0;

	for (unsigned r = 0; r < SHM_NRINGS; r++)
		if (rd->used & (1ULL << r))
			total += head_of(rd, r);
	return total;
}
