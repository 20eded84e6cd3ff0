/* The in-target agent: records sampled allocations and frees into the shared ring (x86-64). */
/* SPDX-License-Identifier: MIT */

/*
 * Freestanding code, copied as a flat blob into the CODE view of the
 * target and called by the fast trampolines (tramp_fast.h, ABI in
 * agent.h). Rules: no libc, no data or bss (all state is in the DATA view
 * passed in rsi), no jump tables, no absolute relocations, no trap, never
 * block except in exact mode while the tool's heartbeat is fresh, never
 * call the target's code (nor take a lock the target may hold: the
 * allocator's statistics are the tool's business, memreport.c). The
 * Makefile checks that the object has no undefined symbols, no absolute
 * relocations and a bounded stack.
 *
 * A guest in the target (docs/threat-model.md, "the agent as a guest"):
 * memory the agent did not make (the target's stack beyond the
 * trampoline's frame, Python's frames) is read only through guest_ld,
 * whose one load the tool, as the target's tracer, recovers from if it
 * faults (agent_link_fault: the thread resumes at guest_ld's fixup, which
 * returns -1, and the signal is dropped), and only while the tool is
 * there to do so (shm_hdr.tool_alive). Frames, Python words and the walk
 * log live in the DATA view (scratch_claim), not on the target's stack.
 */
#include <stddef.h>
#include <stdint.h>

#include "shm.h"
#include "agent.h"

#define HIDDEN		__attribute__((visibility("hidden"), used))
#define barrier()	shm_barrier()
/* Out of line: its frame is not added to its caller's (the stack bound, Makefile). */
#define NOINLINE	__attribute__((noinline))

#define NR_SCHED_YIELD		24
#define NR_MADVISE		28
#define NR_GETTID		186
#define NR_FUTEX		202
#define NR_CLOCK_GETTIME	228
#define NR_PROCESS_VM_READV	310
#define CLOCK_MONOTONIC		1
#define EPERM			1
#define ENOSYS			38
#define EACCES			13
#define EINTR			4
#define EAGAIN			11
#define EINVAL			22
#define MADV_POPULATE_WRITE	23
#define ETIMEDOUT		110
#define FUTEX_WAIT		0	/* not private: the tool wakes from its own mapping */
#define FUTEX_WAKE		1

#define SPIN_PAUSES		64
#define SLEEP_NS		10000000L	/* longest sleep between looks at the ring */
#define MAX_WAIT_NS		1000000000LL	/* longest wait for a ring the tool drains but cannot move */
#define BUSY_WAIT_NS		30000000000LL	/* longest wait while the tool drains nothing at all */
#define STALE_NS		500000000LL	/* heartbeat older than this: tool gone, or we were all paused */
#define GRACE_NS		100000000LL	/* how long a stale heartbeat is watched for a new beat */
#define GONE_NS			5000000000LL	/* heartbeat older than this: tool gone, no grace */
#define STACK_REACH		(8ULL << 20)	/* CFA at most this far above entry sp */

/* ---- loads the tool recovers from ---- */

/*
 * guest_ld(addr, &v): 0 and the word at addr (any alignment), or -1 if
 * reading it faulted. guest_fs0(): the word at %fs:0, 0 if that faulted.
 * The tool finds each faulting load and its fixup by the symbols
 * agent_guest_*_at and agent_guest_*_fix (gen/agent_syms.h): a fault at
 * _at resumes at _fix. Nothing but these instructions may sit at _at.
 * Their CFI (nothing pushed) is for the tool's walks of a stack whose
 * thread a signal interrupted in them (agent_cfi.awk).
 */
__attribute__((visibility("hidden"))) int guest_ld(uint64_t addr, uint64_t *v);
__attribute__((visibility("hidden"))) uint64_t guest_fs0(void);
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl guest_ld\n.hidden guest_ld\n.type guest_ld, @function\n"
	"guest_ld:\n"
	".cfi_startproc\n"
	".globl agent_guest_ld_at\n.hidden agent_guest_ld_at\n"
	"agent_guest_ld_at:\n"
	"\tmovq (%rdi), %rax\n"
	"\tmovq %rax, (%rsi)\n"
	"\txorl %eax, %eax\n"
	"\tret\n"
	".globl agent_guest_ld_fix\n.hidden agent_guest_ld_fix\n"
	"agent_guest_ld_fix:\n"
	"\tmovl $-1, %eax\n"
	"\tret\n"
	".cfi_endproc\n"
	".size guest_ld, . - guest_ld\n"
	".globl guest_fs0\n.hidden guest_fs0\n.type guest_fs0, @function\n"
	"guest_fs0:\n"
	".cfi_startproc\n"
	".globl agent_guest_fs0_at\n.hidden agent_guest_fs0_at\n"
	"agent_guest_fs0_at:\n"
	"\tmovq %fs:0, %rax\n"
	"\tret\n"
	".globl agent_guest_fs0_fix\n.hidden agent_guest_fs0_fix\n"
	"agent_guest_fs0_fix:\n"
	"\txorl %eax, %eax\n"
	"\tret\n"
	".cfi_endproc\n"
	".size guest_fs0, . - guest_fs0\n"
	".popsection\n");

/*
 * guest_ld, for the walks: a page that faulted in this frame table's
 * generation is not read again (its read fails at once), so a wild
 * pointer costs one stop in the tool, not one per walk.
 */
static inline int guest_page_ld(const struct shm_hdr *hc, uint64_t addr, uint64_t *v)
{
	struct shm_hdr *h = (struct shm_hdr *)hc;
	uint64_t page = addr >> 12, gen = h->walk_gen & 0xfffffffULL;
	unsigned i = (unsigned)((page * SHM_HASH_MUL) >> 60) & (SHM_BAD_PAGES - 1);
	uint64_t e = (page << 28) | gen;

	if (h->bad_pages[i] == e)
		return -1;
	if (!guest_ld(addr, v))
		return 0;
	h->bad_pages[i] = e;
	return -1;
}

/* Whether the tool is there to take a guest_ld's fault. */
static inline int tool_here(const struct shm_hdr *h)
{
	return shm_tool_here(h->tool_alive);
}

/* framewalk.h's reads of the stack, through guest_page_ld (w->ctx: the header). */
#define WALK_LOAD(w, p, v)	guest_page_ld((const struct shm_hdr *)(w)->ctx, (uint64_t)(p), (v))
#include "framewalk.h"

/* ---- syscalls and atomics ---- */

static inline long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

static inline void cpu_pause(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

static inline void lock_inc(volatile uint64_t *p)
{
	__atomic_fetch_add(p, 1, __ATOMIC_RELAXED);
}

static inline int64_t now_ns(void)
{
	struct {
		int64_t sec, nsec;
	} ts;

	if (sys6(NR_CLOCK_GETTIME, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0))
		return 0;
	return ts.sec * 1000000000LL + ts.nsec;
}

/* ---- the ring ---- */

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

/*
 * The time stamp: rdtscp reads the counter only once every earlier
 * instruction has executed (the allocator's loads, the ring head's), and
 * it retires before any later store (the record, the real free's) can be
 * seen. "lfence; rdtsc; lfence" orders more and was measured to cost a
 * third more per event in exact mode.
 */
static inline uint64_t rdtsc_ordered(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi) :: "rcx", "memory");
	return (uint64_t)hi << 32 | lo;
}

static struct shm_counter *counter_at(struct shm_hdr *h, unsigned slot)
{
	return (struct shm_counter *)((char *)h + SHM_OFF_COUNTERS + slot * SHM_COUNTER_STRIDE);
}

/* The counter number of the stack sp lies on (as the trampolines compute it). */
static inline unsigned slot_of(uint64_t sp)
{
	return (sp >> 21) & (SHM_NCOUNTERS - 1);
}

/* The ring number of the stack sp lies on. */
static inline unsigned ring_of(uint64_t sp)
{
	return (sp >> SHM_RING_SHIFT) & (SHM_NRINGS - 1);
}

#include "agent_xacct.h"

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

/* ---- frame table walk ---- */

/* The window of our own stack a walk from start reads: from the entry sp
 * (the allocator's return address) up to STACK_REACH above it; direct,
 * so that a walk may hop to a goroutine's stack (framewalk.h). */
static inline struct walk_window own_window(const struct shm_hdr *h,
					    const struct frame_regs *start, struct walk_log *log)
{
	uint64_t entry_sp = start->sp - 8;

	return (struct walk_window){ (const uint8_t *)entry_sp, entry_sp, entry_sp + STACK_REACH,
				     log, h, 1 };
}

/*
 * Walk from the allocator's caller (framewalk.h) over our own stack, from
 * the entry sp up to STACK_REACH above it (and a goroutine's it hops to):
 * out[] gets up to depth return addresses, leaf first, and *hash their
 * shm_stack_hash; on a miss *end the state of the frame it missed in.
 */
static unsigned walk(const struct shm_hdr *h, const struct frame_regs *start,
		     uint64_t *out, unsigned depth, uint32_t *flags, uint64_t *hash,
		     struct walk_log *log, struct frame_regs *end)
{
	const struct shm_frame *table = (const void *)((const char *)h + SHM_OFF_FRAMES);
	struct walk_window w = own_window(h, start, log);
	struct walk_fp fp = { h->fp, h->fp_n };

	return walk_frames_to(table, &fp, start, &w, out, depth, flags, hash, end);
}

/* ---- the walk memo (exact mode, shm.h struct shm_memo) ---- */

static struct shm_memo *memo_at(struct shm_hdr *h, const struct frame_regs *start)
{
	return (struct shm_memo *)((char *)h + SHM_OFF_MEMO) +
	       slot_of(start->sp - 8) * SHM_MEMO_WAYS + shm_memo_way(start->ip);
}

/*
 * The walk from start at this depth and gen, from memo entry m: out[] gets
 * its frames, *hash their hash, *flags its SHM_EVF_TRUNC. Returns the
 * count, or 0 if m holds no such walk or a word it read now reads
 * otherwise (each reread through the walk's own window, whatever m says).
 */
static unsigned memo_get(const struct shm_hdr *h, const struct shm_memo *m,
			 const struct frame_regs *start,
			 uint32_t gen, unsigned depth, uint64_t *out, uint32_t *flags,
			 uint64_t *hash)
{
	struct walk_window w = own_window(h, start, (struct walk_log *)0);
	uint32_t seq = m->seq;
	unsigned n, nread, mflags;
	uint64_t v;

	if (seq & 1)
		return 0;
	barrier();
	n = m->nframes;
	nread = m->nread;
	mflags = m->flags;
	if (m->sp != start->sp || m->ip != start->ip || m->gen != gen || m->depth != depth ||
	    ((mflags & SHM_MEMO_USEDBP) && m->bp != start->bp) || !n || n > SHM_MEMO_FRAMES ||
	    n > depth || nread > SHM_MEMO_READS || ((mflags & SHM_MEMO_TRUNC) && n != depth))
		return 0;
	for (unsigned i = 0; i < nread; i++)
		if (walk_read(&w, w.lo + m->off[i], &v) || v != m->val[i])
			return 0;
	for (unsigned i = 0; i < n; i++)
		out[i] = m->frames[i];
	*hash = m->hash;
	barrier();
	if (m->seq != seq)
		return 0;
	if (mflags & SHM_MEMO_TRUNC)
		*flags |= SHM_EVF_TRUNC;
	return n;
}

/*
 * Whether a way that holds a walk is written over at its (k + 1)th miss
 * in a row: the 2nd, 4th, 8th and 16th, then every 16th. A way shared by
 * two stacks keeps the one that comes back (a hit resets the count), and
 * a stream of stacks that never come back costs few writes.
 */
static inline int memo_refill(uint32_t k)
{
	if (k >= 16)
		return (k & 15) == 15;
	return k && !(k & (k + 1));
}

/*
 * Keep in m the walk from start that missed it: n frames out[] with hash
 * and flags (not a miss), at this depth and gen, having read what log
 * says. Only a walk that fits; nothing if another thread writes m.
 */
static void memo_put(struct shm_memo *m, const struct frame_regs *start, uint32_t gen,
		     unsigned depth, const uint64_t *out, unsigned n, uint32_t flags,
		     uint64_t hash, const struct walk_log *log)
{
	uint32_t seq;

	if (!n || n > SHM_MEMO_FRAMES || log->n > SHM_MEMO_READS)
		return;
	seq = m->seq;
	if ((seq & 1) || !__atomic_compare_exchange_n(&m->seq, &seq, seq + 1, 0,
						      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	barrier();
	m->gen = gen;
	m->sp = start->sp;
	m->ip = start->ip;
	m->bp = start->bp;
	m->hash = hash;
	m->depth = depth;
	m->nframes = (uint16_t)n;
	m->nread = (uint8_t)log->n;
	m->flags = (uint8_t)((flags & SHM_EVF_TRUNC ? SHM_MEMO_TRUNC : 0) |
			     (log->used_bp ? SHM_MEMO_USEDBP : 0));
	for (unsigned i = 0; i < log->n; i++) {
		m->off[i] = log->off[i];
		m->val[i] = log->val[i];
	}
	for (unsigned i = 0; i < n; i++)
		m->frames[i] = out[i];
	__atomic_store_n(&m->seq, seq + 2, __ATOMIC_RELEASE);
}

/*
 * walk(), through the memo in exact mode: a walk the memo holds costs
 * rereading its words (counted in c->memo_hits), any other is walked, and
 * kept if its way is empty or memo_refill lets it go (only such a walk
 * logs its reads, into log: a log costs about as much as a short walk;
 * with no log, nothing is kept).
 */
static unsigned walk_memo(struct shm_hdr *h, struct shm_counter *c,
			  const struct frame_regs *start, uint64_t *out, unsigned depth,
			  uint32_t *flags, uint64_t *hash, struct walk_log *log,
			  struct frame_regs *end)
{
	struct shm_memo *m;
	uint32_t gen, k;
	unsigned n;

	if (!(h->flags & SHM_F_EXACT))
		return walk(h, start, out, depth, flags, hash, (struct walk_log *)0, end);
	gen = h->walk_gen;
	barrier();	/* gen before the table: a change during the walk is seen later */
	m = memo_at(h, start);
	n = memo_get(h, m, start, gen, depth, out, flags, hash);
	if (n) {
		if (m->misses)
			m->misses = 0;
		c->memo_hits++;
		return n;
	}
	k = m->misses;
	m->misses = k + 1;
	if (!log || (m->sp && !memo_refill(k)))
		return walk(h, start, out, depth, flags, hash, (struct walk_log *)0, end);
	log->n = 0;
	log->used_bp = 0;
	n = walk(h, start, out, depth, flags, hash, log, end);
	if (!(*flags & SHM_EVF_MISS))
		memo_put(m, start, gen, depth, out, n, *flags, *hash, log);
	return n;
}

/* The tool's id of the stack with this hash and depth (| SHM_STACK_TRUNC
 * for a walk cut at the depth); -1 if it has none. */
static int64_t stack_id(const struct shm_hdr *h, uint64_t hash, uint32_t n)
{
	const struct shm_stack *t = (const void *)((const char *)h + SHM_OFF_STACKS);

	for (int i = 0; i < SHM_STACK_PROBES; i++) {
		const struct shm_stack *e = &t[(hash + i) & (SHM_NSTACKS - 1)];
		uint64_t eh = *(volatile const uint64_t *)&e->hash;

		if (!eh)
			return -1;
		barrier();	/* the tool wrote hash last */
		if (eh == hash && e->nframes == n)
			return e->id;
	}
	return -1;
}

/*
 * Copy up to len bytes of our own stack from sp into dst. process_vm_readv
 * stops at the end of the mapping instead of faulting. It is given our own
 * thread id, valid in our PID namespace, and live: the process id names the
 * leader, which has no memory left once it called pthread_exit. Returns the
 * bytes copied; 0 if refused (then later misses skip the copy).
 */
static uint32_t stack_copy(struct shm_hdr *h, void *dst, uint64_t sp, uint32_t len)
{
	struct {
		uint64_t base, len;
	} local = { (uint64_t)dst, len }, remote = { sp, len };
	long rc, self = sys6(NR_GETTID, 0, 0, 0, 0, 0, 0);

	rc = sys6(NR_PROCESS_VM_READV, self > 0 ? self : h->target_pid, (long)&local, 1,
		  (long)&remote, 1, 0);
	if (rc == -EPERM || rc == -ENOSYS || rc == -EACCES)
		h->no_stack_copy = 1;
	return rc > 0 ? (uint32_t)rc : 0;
}

/* The counter of the stack an allocator was entered on (entry_sp = &f->ret). */
static struct shm_counter *counter_of(struct shm_hdr *h, uint64_t entry_sp)
{
	return counter_at(h, slot_of(entry_sp));
}

/*
 * Re-arm counter c after a sampled call: the distance from the end of this
 * allocation to the next marked byte is a fresh exponential draw (the marks
 * form a Poisson process, which is memoryless), so the counter is set to
 * one gap, whatever it had run down to. Adding gaps until it turns
 * positive would be the same in law, but a huge allocation would need
 * hundreds of them. Each counter has its own xorshift generator (state in
 * its line, seeded by the tool).
 */
static void rearm(struct shm_hdr *h, struct shm_counter *c)
{
	uint64_t x = c->rng ? c->rng : 0x9e3779b97f4a7c15ULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	__atomic_store_n(&c->left, (int64_t)shm_exp_gap(x, h->gap_mul), __ATOMIC_RELAXED);
}

/*
 * ---- live sampled pointers ----
 * Bucket s holds the sampled pointers of slot s in SHM_LIVE_WAYS words (0 =
 * empty). A pointer that finds no empty way is not entered: bit 0 of the
 * last word (pointers are aligned) then marks the bucket overflowed for
 * good, and its event says SHM_EVF_UNTABLED. A pointer once entered is
 * never dropped, so the tool can take its absence for its free; the frees
 * of pointers not entered are reported as events (any free of the slot not
 * found in an overflowed bucket). Bit s of the trampolines' bitmap is set
 * while the bucket holds anything, the overflow mark included. One cache
 * line per operation.
 */
static uint64_t *bucket_at(struct shm_hdr *h, uint32_t slot)
{
	return (uint64_t *)((char *)h + SHM_OFF_LIVE) + (size_t)slot * SHM_LIVE_WAYS;
}

static int bucket_busy(const uint64_t *w)
{
	for (int i = 0; i < SHM_LIVE_WAYS; i++)
		if (*(const volatile uint64_t *)&w[i])
			return 1;
	return 0;
}

static void bit_set(struct shm_hdr *h, uint32_t slot)
{
	uint8_t *byte = (uint8_t *)h + SHM_OFF_BITS + (slot >> 3);
	uint8_t mask = (uint8_t)(1u << (slot & 7));

	if (!(*(volatile uint8_t *)byte & mask))
		__atomic_fetch_or(byte, mask, __ATOMIC_SEQ_CST);
}

/*
 * Clear bit slot, the bucket w having emptied. Checked again after the
 * write: a thread that filled a way meanwhile may have set the bit before
 * we cleared it, and then the bit must stay.
 */
static void bit_clear(struct shm_hdr *h, uint32_t slot, const uint64_t *w)
{
	uint8_t *byte = (uint8_t *)h + SHM_OFF_BITS + (slot >> 3);
	uint8_t mask = (uint8_t)(1u << (slot & 7));

	__atomic_fetch_and(byte, (uint8_t)~mask, __ATOMIC_SEQ_CST);
	if (bucket_busy(w))
		__atomic_fetch_or(byte, mask, __ATOMIC_SEQ_CST);
}

/* Enter ptr in its bucket; 0 if it overflowed (then marked so). */
static int live_add(struct shm_hdr *h, uint64_t ptr)
{
	uint32_t slot = shm_bloom_slot(ptr);
	uint64_t *w = bucket_at(h, slot);
	int entered = 0;

	for (int i = 0; i < SHM_LIVE_WAYS && !entered; i++) {
		uint64_t v = *(volatile uint64_t *)&w[i];

		/* a failed cmpxchg reloads v: retried while only the overflow
		 * mark changed under us */
		while (!(v & ~SHM_LIVE_OVERFLOW) && !entered)
			entered = __atomic_compare_exchange_n(&w[i], &v, ptr | v, 0,
							      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	}
	if (!entered)
		__atomic_fetch_or(&w[SHM_LIVE_WAYS - 1], SHM_LIVE_OVERFLOW, __ATOMIC_SEQ_CST);
	bit_set(h, slot);
	return entered;
}

/*
 * Take ptr out of its bucket. Returns 1 if its free must be reported: it
 * is not there and the bucket overflowed (it may be a sampled pointer that
 * was never entered). A free found in the table is not reported: the tool
 * reads the table itself.
 */
static int live_del(struct shm_hdr *h, uint64_t ptr)
{
	uint32_t slot = shm_bloom_slot(ptr);
	uint64_t *w = bucket_at(h, slot);

	for (int i = 0; i < SHM_LIVE_WAYS; i++) {
		uint64_t v = *(volatile uint64_t *)&w[i];

		/* retried while only the overflow mark changed under us */
		while ((v & ~SHM_LIVE_OVERFLOW) == ptr) {
			if (__atomic_compare_exchange_n(&w[i], &v, v & SHM_LIVE_OVERFLOW, 0,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				if (!bucket_busy(w))
					bit_clear(h, slot, w);
				return 0;
			}
		}
	}
	return *(volatile uint64_t *)&w[SHM_LIVE_WAYS - 1] & SHM_LIVE_OVERFLOW;
}

/* A call made from our code or from inside the hooked allocator itself
 * (its ranges read as they are: the target can write them). */
static inline int nested_call(const struct shm_hdr *h, uint64_t ip)
{
	uint32_t n = *(const volatile uint32_t *)&h->nest_n;

	if (ip - h->code_remote < h->code_size)
		return 1;
	if (n > SHM_NEST_RANGES)
		n = SHM_NEST_RANGES;
	for (uint32_t i = 0; i < n; i++)
		if (ip - h->nest[i].lo < h->nest[i].hi - h->nest[i].lo)
			return 1;
	return 0;
}

/* Bytes of the string at s with its terminator, in units of unit bytes (1 or 2). */
static uint64_t str_bytes(uint64_t s, unsigned unit)
{
	uint64_t n = 0;

	if (unit == 2)
		while (((const volatile uint16_t *)s)[n])
			n++;
	else
		while (((const volatile uint8_t *)s)[n])
			n++;
	return (n + 1) * unit;
}

/*
 * The block a call made, from its frame: *size and the pointer (0: none).
 * For the size classes of SLOW-only hooks (AGENT_SZ_POST and above) the
 * size of a string is read only once the call is known not to be nested:
 * *str is then the unit of its characters. *inplace: the block kept its
 * address (its old record is freed first).
 */
static uint64_t call_block(const struct agent_frame *f, unsigned sz, uint64_t *size,
			   unsigned *str, int *inplace)
{
	*size = 0;
	*str = 0;
	*inplace = 0;
	switch (sz) {
	case AGENT_SZ_MUL:
		*size = f->rdi * f->rsi;
		return f->rax;
	case AGENT_SZ_RSI:
		*size = f->rsi;
		return f->rax;
	case AGENT_SZ_PM:
		*size = f->rdx;
		return f->rax || !f->rdi ? 0 : *(const uint64_t *)f->rdi;
	case AGENT_SZ_RDX:
	case AGENT_SZ_PUSHED:
		*size = f->rdx;		/* PUSHED: the slot holds the size */
		return f->rax;
	case AGENT_SZ_MUL12:
		*size = f->rsi * f->rdx;
		return f->rax;
	case AGENT_SZ_ARR:
		*size = f->rsi * f->rdx;
		return f->rax || !f->rdi ? 0 : *(const uint64_t *)f->rdi;
	case AGENT_SZ_XALLOCX:
		*size = f->rax;
		*inplace = 1;
		return f->rax >= f->rsi ? f->rdi : 0;
	case AGENT_SZ_EXPAND:
		*size = f->rsi;
		*inplace = 1;
		return f->rax ? f->rdi : 0;
	case AGENT_SZ_STR:
	case AGENT_SZ_WSTR:
		*str = sz == AGENT_SZ_WSTR ? 2 : 1;
		return f->rax;
	case AGENT_SZ_PATH1:
	case AGENT_SZ_PATH2:
		*str = 1;
		return (sz == AGENT_SZ_PATH1 ? f->rsi : f->rdx) ? 0 : f->rax;
	case AGENT_SZ_ENV:
		*str = 1;
		return f->rax || !f->rdi ? 0 : *(const uint64_t *)f->rdi;
	default:
		*size = f->rdi;
		return f->rax;
	}
}

static void free_block(uint64_t ptr, struct shm_hdr *h);

#include "agent_py.h"

/* ---- the agent's scratch (shm.h, scratch[]) ---- */

/*
 * What a sampled call works with, in the DATA view, so that its use of
 * the target's stack stays small whatever the depth (the Makefile bounds
 * each function's frame). busy: claimed by a call (cmpxchg), first the
 * slot of its stack's counter, then the next ones: a call finds another
 * thread of its slot, or itself under a signal handler, there. With all
 * of them busy the call is recorded without a walk ([truncated]).
 */
struct scratch {
	volatile uint32_t busy;
	uint32_t pad;
	struct frame_regs regs;
	struct frame_regs end;		/* where a walk missed */
	struct walk_log log;
	uint64_t py[SHM_PY_MAX_FRAMES + 1];
	uint64_t frames[SHM_MAX_DEPTH];
};

_Static_assert(sizeof(struct scratch) <= SHM_SCRATCH_SIZE, "a scratch fits its slot");

/* A scratch no one holds, from the slot of the stack at sp on (then ours); NULL if none. */
static struct scratch *scratch_claim(struct shm_hdr *h, uint64_t sp)
{
	unsigned first = slot_of(sp);

	for (unsigned i = 0; i < SHM_NCOUNTERS; i++) {
		struct scratch *sc = (struct scratch *)((char *)h + SHM_OFF_SCRATCH +
			((first + i) & (SHM_NCOUNTERS - 1)) * (uint64_t)SHM_SCRATCH_SIZE);
		uint32_t idle = 0;

		if (!sc->busy && __atomic_compare_exchange_n(&sc->busy, &idle, 1, 0,
							     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return sc;
	}
	return (struct scratch *)0;
}

static void scratch_release(struct scratch *sc)
{
	__atomic_store_n(&sc->busy, 0, __ATOMIC_RELEASE);
}

static void record_alloc(struct agent_frame *f, struct shm_hdr *h, struct shm_counter *c,
			 uint64_t ptr, uint64_t size, struct scratch *sc);

/*
 * Called by the ALLOC/REALLOC trampolines after a sampled call returned.
 * The walk takes as many frames as the header's depth says (bounded
 * here, since the target can write the header), into a scratch.
 */
HIDDEN void agent_alloc(struct agent_frame *f, struct shm_hdr *h)
{
	uint32_t info = (uint32_t)f->info;
	struct shm_counter *c;
	struct scratch *sc;
	uint64_t size, ptr;
	unsigned str;
	int inplace;

	ptr = call_block(f, AGENT_INFO_SZ(info), &size, &str, &inplace);
	if (!ptr)
		return;
	c = counter_of(h, (uint64_t)&f->ret);
	if (nested_call(h, f->ret)) {
		c->nested++;
		return;
	}
	if (AGENT_INFO_SZ(info) >= AGENT_SZ_POST) {
		/* every call comes here: the fast path's work is ours */
		if (str)
			size = str_bytes(ptr, str);
		if (inplace)
			free_block(ptr, h);
		if (!(h->flags & SHM_F_EXACT) &&
		    __atomic_sub_fetch(&c->left, (int64_t)size, __ATOMIC_RELAXED) > 0)
			return;
	}
	if (!(h->flags & SHM_F_EXACT)) {
		rearm(h, c);
		/* its bucket is a likely cache miss: fetch it during the walk */
		__asm__ __volatile__("prefetchw %0" :: "m"(*bucket_at(h, shm_bloom_slot(ptr))));
	}
	if (!tool_here(h))
		return;		/* no one to take a fault: no walk, and no one reads */
	sc = scratch_claim(h, (uint64_t)&f->ret);
	record_alloc(f, h, c, ptr, size, sc);
	if (sc)
		scratch_release(sc);
}

/*
 * Walk a sampled call's stack into sc and send its event (or account it,
 * exact mode). With no scratch: no walk, an event of no frames cut at 0.
 */
static NOINLINE void record_alloc(struct agent_frame *f, struct shm_hdr *h,
						   struct shm_counter *c, uint64_t ptr,
						   uint64_t size, struct scratch *sc)
{
	unsigned depth = 0, pymax = 0, npy = 0, n = 0;
	uint64_t *frames = (uint64_t *)0, *pywords = (uint64_t *)0, tsc, hash;
	uint32_t flags, len, stack_len = 0;
	struct frame_regs *regs = (struct frame_regs *)0;
	struct shm_ev_alloc *ev;
	int64_t id = -1;

	flags = AGENT_INFO_HOOK((uint32_t)f->info) << SHM_EVF_HOOK_SHIFT;
	if (sc) {
		depth = shm_depth(*(volatile uint32_t *)&h->max_depth);
		pymax = h->py.kind ? h->py.max_frames : 0;
		if (pymax > SHM_PY_MAX_FRAMES)
			pymax = SHM_PY_MAX_FRAMES;
		frames = sc->frames;
		pywords = sc->py;
		regs = &sc->regs;
		agent_frame_regs(f, regs);
		n = walk_memo(h, c, regs, frames, depth, &flags, &hash, &sc->log, &sc->end);
		if ((flags & (SHM_EVF_MISS | SHM_EVF_HOP)) == (SHM_EVF_MISS | SHM_EVF_HOP)) {
			/* the goroutine's stack: the tool goes on from there */
			regs = &sc->end;
			n--;
		}
		if (!(flags & SHM_EVF_MISS))
			flags &= ~SHM_EVF_HOP;	/* complete: nothing to tell */
	} else {
		flags |= SHM_EVF_TRUNC;
		hash = shm_stack_hash_end(0, SHM_STACK_TRUNC);
	}
	c->walks++;
	if (!(flags & SHM_EVF_MISS))
		id = stack_id(h, hash, n | (flags & SHM_EVF_TRUNC ? SHM_STACK_TRUNC : 0));
	if (id >= 0) {
		/* exact mode, a known stack: accounted here, no event */
		if ((h->flags & (SHM_F_EXACT | SHM_F_XACCT)) == (SHM_F_EXACT | SHM_F_XACCT) &&
		    !pymax && xacct_alloc(h, (uint64_t)&f->ret, ptr, id, size))
			return;
		flags |= SHM_EVF_STACKID;
		n = 0;
	}
	if (pymax) {
		npy = py_walk(h, c, pywords, pymax);
		flags |= npy << SHM_EVF_PY_SHIFT;
	}
	len = sizeof(*ev) + (n + npy) * 8;
	if (flags & SHM_EVF_MISS) {
		c->walk_misses++;
		len += sizeof(struct frame_regs);
		if (h->no_stack_copy)
			;	/* refused: never a copy, not a cut */
		else if ((h->flags & SHM_F_EXACT) || ring_fill(h, ring_of((uint64_t)&f->ret)) <=
			 SHM_COPY_FILL(h->ring_size))
			len += SHM_STACK_COPY;
		else
			flags |= SHM_EVF_NOCOPY;
	}
	ev = (struct shm_ev_alloc *)ring_reserve(h, ring_of((uint64_t)&f->ret), len, &tsc);
	if (!ev)
		return;
	ev->kind = SHM_EV_ALLOC;
	ev->nframes = (uint16_t)n;
	ev->tsc = tsc;
	ev->size = size;
	ev->ptr = ptr;
	for (unsigned i = 0; i < n; i++)
		ev->frames[i] = frames[i];
	for (unsigned i = 0; i < npy; i++)
		ev->frames[n + i] = pywords[i];
	if (flags & SHM_EVF_MISS) {
		struct frame_regs *r = (struct frame_regs *)&ev->frames[n + npy];

		*r = *regs;
		if (len > sizeof(*ev) + (n + npy) * 8 + sizeof(*r))
			stack_len = stack_copy(h, r + 1, regs->sp, SHM_STACK_COPY);
	}
	if (stack_len)
		flags |= SHM_EVF_STACK;
	if (id >= 0)
		ev->stack_id = (uint32_t)id;
	else
		ev->stack_len = stack_len;
	/* entered before the commit: the event says whether it was */
	if (!(h->flags & SHM_F_EXACT) && !live_add(h, ptr))
		flags |= SHM_EVF_UNTABLED;
	ev->flags = flags;
	commit(ev, len);
}

/*
 * Take ptr out of the live table if it was sampled; report its free in
 * exact mode, or if the table cannot tell (an overflowed bucket).
 */
static void free_block(uint64_t ptr, struct shm_hdr *h)
{
	struct shm_ev_free *ev;
	uint64_t tsc;

	if (!(h->flags & SHM_F_EXACT) && !live_del(h, ptr))
		return;
	if ((h->flags & (SHM_F_EXACT | SHM_F_XACCT)) == (SHM_F_EXACT | SHM_F_XACCT) &&
	    xacct_free(h, (uint64_t)&tsc, ptr))
		return;
	ev = (struct shm_ev_free *)ring_reserve(h, ring_of((uint64_t)&tsc), sizeof(*ev), &tsc);
	if (!ev)
		return;
	ev->kind = SHM_EV_FREE;
	ev->pad = 0;
	ev->tsc = tsc;
	ev->ptr = ptr;
	commit(ev, sizeof(*ev));
}

/*
 * Called by the FREE/REALLOC trampolines on a bit hit, before the real
 * call (and by reallocarr's on every call, with *p).
 */
HIDDEN void agent_free(uint64_t ptr, struct shm_hdr *h)
{
	if (ptr)	/* free(NULL): the trampoline does not test for it */
		free_block(ptr, h);
}
