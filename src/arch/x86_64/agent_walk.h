/* The agent's walk of its own stack by the frame table, the walk memo, the tool's stack ids and the stack copy (x86-64), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_WALK_H
#define HEAPATTACH_AGENT_WALK_H

#define STACK_REACH		(8ULL << 20)	/* CFA at most this far above entry sp */

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

#endif
