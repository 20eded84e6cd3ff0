/* The agent's walk of its own thread's Python frames (issue 15), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_PY_H
#define HEAPATTACH_AGENT_PY_H

/*
 * Freestanding, as agent.c (no libc, no data). The layout of the shared
 * header's py block and of the packed words is in shm.h. Reads of
 * other threads' data (the state holding the GIL may be another
 * thread's, and be freed under us) go through process_vm_readv on our
 * own thread id, so a stale pointer costs an error, never a fault; our
 * own frames through guest_ld (agent.c), whose fault the tool takes: a
 * frame whose previous is wild ends the walk there.
 */

/* Read len bytes at addr into dst without faulting; 0 or -1. */
static int py_peek(long tid, void *dst, uint64_t addr, uint64_t len)
{
	struct {
		uint64_t base, len;
	} local = { (uint64_t)dst, len }, remote = { addr, len };

	if (addr < 4096 || addr >= SHM_ADDR_LIMIT)
		return -1;
	return sys6(NR_PROCESS_VM_READV, tid, (long)&local, 1, (long)&remote, 1, 0) ==
	       (long)len ? 0 : -1;
}

static inline uint64_t py_self(void)
{
	uint64_t self;

	self = guest_fs0();
	return self;
}

/*
 * Our own thread state, or 0: the one holding the GIL if it is ours
 * (the usual case: Python allocates with the GIL held), else (unless
 * holder_only) the one of the main interpreter's list whose thread_id is
 * our pthread_self.
 */
static uint64_t py_own_state(const struct shm_py *p, long tid, int holder_only)
{
	uint64_t self = py_self(), ts = 0, id = 0;

	if (p->holder >= 4096 && p->holder < SHM_ADDR_LIMIT && guest_ld(p->holder, &ts))
		ts = 0;
	if (ts && !py_peek(tid, &id, ts + p->ts_thread_id, 8) && id == self)
		return ts;
	if (holder_only || py_peek(tid, &ts, p->threads_head, 8))
		return 0;
	for (int i = 0; ts && i < SHM_PY_MAX_STATES; i++) {
		if (py_peek(tid, &id, ts + p->ts_thread_id, 8))
			return 0;
		if (id == self)
			return ts;
		if (py_peek(tid, &ts, ts + p->ts_next, 8))
			return 0;
	}
	return 0;
}

/* A pointer of our own thread's Python data that we may load from. */
static inline int py_ok(uint64_t v)
{
	return v >= 4096 && v < SHM_ADDR_LIMIT && !(v & 7);
}

/* The word at base + off; 0 where it cannot be read. */
static inline uint64_t py_ld(const struct shm_hdr *h, uint64_t base, uint32_t off)
{
	uint64_t v;

	return guest_page_ld(h, base + off, &v) ? 0 : v;
}

/* The byte at base + off; 0 where it cannot be read. */
static inline uint8_t py_ld8(const struct shm_hdr *h, uint64_t base, uint32_t off)
{
	uint64_t a = base + off, w;

	return guest_page_ld(h, a & ~7ULL, &w) ? 0 : (uint8_t)(w >> ((a & 7) * 8));
}

/* The int at base + off; INT32_MAX where it cannot be read. */
static inline int32_t py_ld32(const struct shm_hdr *h, uint64_t base, uint32_t off)
{
	uint64_t a = base + off, w;

	if (a & 3)
		return guest_page_ld(h, a, &w) ? 0x7fffffff : (int32_t)w;
	return guest_page_ld(h, a & ~7ULL, &w) ? 0x7fffffff : (int32_t)(w >> ((a & 4) * 8));
}

/* The packed word of a frame: code, instruction index (code units), end bit. */
static inline uint64_t py_word(uint64_t code, int64_t idx, int end)
{
	if (idx < 0 || idx >= SHM_PY_INSTR_UNKNOWN)
		idx = SHM_PY_INSTR_UNKNOWN;
	return (code & SHM_PY_CODE_MASK) | (uint64_t)idx << SHM_PY_INSTR_SHIFT |
	       (end ? SHM_PY_WORD_END : 0);
}

/*
 * Append our thread's Python frames to out (at most max words, leaf
 * first); returns their number. c is the counter line of our stack. Frames that have not started (3.11+:
 * incomplete) and shim frames give none; a shim marks the frame before
 * it as the end of its eval-loop call.
 */
#define PY_NONE_SKIP 63	/* samples of a thread without Python skipped before a new look */

static NOINLINE unsigned py_walk(struct shm_hdr *h, struct shm_counter *c, uint64_t *out,
				unsigned max)
{
	struct shm_py *p = &h->py;
	uint32_t kind = p->kind;
	uint64_t ts, f, code, first;
	unsigned n = 0, guard;
	long tid;
	int skip;

	if (!kind || kind > SHM_PY_313 || h->no_stack_copy)
		return 0;
	if (max > p->max_frames)
		max = p->max_frames;
	if (max > SHM_PY_MAX_FRAMES)
		max = SHM_PY_MAX_FRAMES;
	if (!max || (p->ts_next | p->ts_thread_id | p->ts_frame | p->cf_current_frame |
		     p->fr_back | p->fr_code | p->fr_lasti | p->fr_owner | p->fr_is_entry |
		     p->co_code_adaptive | p->co_firsttraceable) >= SHM_PY_MAX_OFF)
		return 0;
	/* a thread found without Python (a C++ worker) walks the list again
	 * only every PY_NONE_SKIP + 1 samples (it costs a syscall per state);
	 * the GIL's holder is looked at each time: a thread made in C gets a
	 * state when it calls into Python, and holds the GIL while it runs it */
	skip = c->py_none_self == py_self() && c->py_none_left;
	if (skip)
		c->py_none_left--;
	tid = sys6(NR_GETTID, 0, 0, 0, 0, 0, 0);
	ts = tid > 0 ? py_own_state(p, tid, skip) : 0;
	if (!ts || !py_ok(ts)) {
		lock_inc(&p->not_found);
		if (!skip) {
			c->py_none_self = py_self();
			c->py_none_left = PY_NONE_SKIP;
		}
		return 0;
	}
	if (c->py_none_self == py_self())
		c->py_none_self = 0;
	lock_inc(&p->found);
	f = py_ld(h, ts, p->ts_frame);
	if ((kind == SHM_PY_311 || kind == SHM_PY_312) && py_ok(f))
		f = py_ld(h, f, p->cf_current_frame);
	/* a chain longer than this is a loop */
	for (guard = 0; py_ok(f) && n < max && guard < 4 * SHM_PY_MAX_FRAMES; guard++,
	     f = py_ld(h, f, p->fr_back)) {
		int64_t idx;
		uint8_t owner = 0;
		int entry;

		code = py_ld(h, f, p->fr_code);
		if (kind >= SHM_PY_311) {
			owner = py_ld8(h, f, p->fr_owner);
			if (owner == SHM_PY_OWNED_BY_CSTACK) {
				if (n)
					out[n - 1] |= SHM_PY_WORD_END;
				continue;
			}
		}
		if (!py_ok(code)) {
			if (kind == SHM_PY_311 && n && py_ld8(h, f, p->fr_is_entry))
				out[n - 1] |= SHM_PY_WORD_END;
			continue;
		}
		if (kind <= SHM_PY_310) {
			idx = py_ld32(h, f, p->fr_lasti);
			if (kind == SHM_PY_38 && idx >= 0)
				idx /= 2;
			out[n++] = py_word(code, idx, 1);
			continue;
		}
		first = code + p->co_code_adaptive;
		idx = ((int64_t)py_ld(h, f, p->fr_lasti) - (int64_t)first) / 2;
		entry = kind == SHM_PY_311 && py_ld8(h, f, p->fr_is_entry);
		if (owner != SHM_PY_OWNED_BY_GENERATOR &&
		    idx < py_ld32(h, code, p->co_firsttraceable)) {
			if (entry && n)		/* not started: no line yet */
				out[n - 1] |= SHM_PY_WORD_END;
			continue;
		}
		out[n++] = py_word(code, idx, entry);
	}
	if (n)
		out[n - 1] |= SHM_PY_WORD_END;
	return n;
}

#endif
