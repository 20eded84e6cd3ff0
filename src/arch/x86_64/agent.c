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

/*
 * One translation unit (the Makefile builds and checks one object and
 * extracts one blob), in pieces of static code that this file includes
 * in order: agent_guest.h (the loads the tool recovers from, the frame
 * walk), agent_sys.h (system calls, atomics, clocks), agent_counter.h
 * (the sampling counters), agent_ring.h (records reserved and committed
 * in the ring, waiting for room), agent_xacct.h (exact mode's
 * accounting), agent_walk.h (the walk of our own stack, its memo, the
 * tool's stack ids, the stack copy), agent_live.h (the live sampled
 * pointers) and agent_py.h (Python frames). Here: what a hooked call did,
 * the scratch, and the entry points.
 */
#include "agent_guest.h"
#include "agent_sys.h"
#include "agent_counter.h"
#include "agent_ring.h"
#include "agent_xacct.h"
#include "agent_walk.h"
#include "agent_live.h"

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
