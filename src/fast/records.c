/* The agent link's records: the rings' events checked, their stacks walked, queued for the profile. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>
#include "base/clock.h"
#include "fast/link_priv.h"
#include "fast/stackids.h"
#include "framewalk.h"
#include "python/pyframes.h"
#include "stacks/copywalk.h"
#include "stacks/frametab.h"

/* Hand the queued events to the profile (they are recorded in batches). */
void records_flush(struct agent_link *l)
{
	profile_record_batch(l->p.prof, l->rec.ops, l->rec.nops);
	l->rec.nops = 0;
}

/* Queue an event for the profile; a full batch is handed over at once. */
static void queue_op(struct agent_link *l, uint32_t kind, uint32_t stack, uint64_t size,
		     uint64_t ptr, unsigned shift)
{
	l->rec.ops[l->rec.nops++] = (struct profile_op){ kind, stack, size, ptr, shift };
	if (l->rec.nops == OP_BATCH)
		records_flush(l);
}

/* The agent keeps its live table itself: only the profile to update. */
static void on_free(struct agent_link *l, const struct shm_ev_free *e)
{
	l->p.stats->events++;
	l->nfrees++;
	queue_op(l, PROFILE_OP_FREE, 0, 0, e->ptr, 0);
}

#define EVF_KNOWN (SHM_EVF_STACK | SHM_EVF_TRUNC | SHM_EVF_MISS | SHM_EVF_UNTABLED | \
		   SHM_EVF_STACKID | SHM_EVF_NOCOPY | SHM_EVF_HOP | (0xffu << SHM_EVF_HOOK_SHIFT) | \
		   (0xffu << SHM_EVF_PY_SHIFT))

/*
 * Whether an allocation record of len bytes (our copy) is one the agent
 * writes: at most our depth of frames, exactly our depth if the walk was
 * cut there, or none if there was no walk (cut at 0: every scratch held;
 * never on a miss), at most the Python words we allow, its length exactly
 * what its frames, registers and copy take (agent_alloc; NOCOPY only on a
 * miss of sampled mode, with no copy), a stack id is one we gave out, and
 * its pointer and size are user-space figures of a call that succeeded.
 */
static int alloc_ok(const struct agent_link *l, const struct shm_ev_alloc *e, uint32_t len)
{
	uint32_t f = e->flags;
	size_t base = sizeof(*e) + ((size_t)e->nframes + SHM_EVF_PY(f)) * 8;

	if (e->nframes > l->depth || SHM_EVF_PY(f) > l->py_max || (f & ~EVF_KNOWN) || !e->ptr ||
	    e->ptr >= SHM_ADDR_LIMIT || e->size >= SHM_ADDR_LIMIT)
		return 0;
	/* cut at the depth, or at 0: a call with no scratch free, not walked */
	if ((f & SHM_EVF_TRUNC) &&
	    ((f & SHM_EVF_MISS) ||
	     (!(f & SHM_EVF_STACKID) && e->nframes != l->depth && e->nframes)))
		return 0;
	if ((f & SHM_EVF_NOCOPY) && (l->exact || !(f & SHM_EVF_MISS) || (f & SHM_EVF_STACK)))
		return 0;
	/* a hop's miss: the frames before the one it missed in, the hop's at least */
	if ((f & SHM_EVF_HOP) && (!(f & SHM_EVF_MISS) || !e->nframes || e->nframes >= l->depth))
		return 0;
	if (f & SHM_EVF_STACKID)
		return !e->nframes && !(f & (SHM_EVF_MISS | SHM_EVF_STACK)) && len == base &&
		       e->stack_id < profile_nstacks(l->p.prof);
	if (!(f & SHM_EVF_MISS))
		return !(f & SHM_EVF_STACK) && !e->stack_len && len == base;
	base += sizeof(struct frame_regs);
	if (f & SHM_EVF_STACK)
		return e->stack_len && e->stack_len <= SHM_STACK_COPY &&
		       len == base + SHM_STACK_COPY;
	if (f & SHM_EVF_NOCOPY)
		return !e->stack_len && len == base;
	return !e->stack_len && (len == base || len == base + SHM_STACK_COPY);
}

/* The walks of stack copies with our copy of what the agent walks with. */
static struct copywalk copywalk_of(struct agent_link *l)
{
	return (struct copywalk){
		.unw = l->p.unw,
		.table = (const struct shm_frame *)(data_of(l) + SHM_OFF_FRAMES),
		.fp = { l->want->fp, l->want->fp_n },
		.depth = l->depth,
		.own = l->own,
		.st = &l->rec.cwst,
	};
}

/*
 * Walk a stack copy (copy_len bytes from copy_sp) from *at with the frame
 * table, learning the rule of each frame it misses in and going on from
 * there: libunwind reads no .debug_frame, all the CFI Go's code has, nor an
 * .eh_frame without .eh_frame_hdr (Go's static links). At most max frames
 * into pcs; *trunc when a frame has no rule, or the copy or max ends.
 */
static unsigned learn_walk(struct agent_link *l, const struct frame_regs *at0, uint64_t copy_sp,
			   const uint8_t *copy, uint32_t copy_len, uint64_t *pcs, unsigned max,
			   int *trunc)
{
	struct copywalk cw = copywalk_of(l);
	struct frame_regs at = *at0, miss;
	uint64_t last_sp = 0;
	unsigned n = 0;

	*trunc = 1;
	while (n < max) {
		uint32_t flags = 0;

		miss = at;
		n += copywalk_table(&cw, &at, copy, copy_len, copy_sp, pcs + n, max - n, &flags,
				    &miss);
		if (!(flags & SHM_EVF_MISS)) {
			*trunc = !!(flags & SHM_EVF_TRUNC);
			break;
		}
		/* a rule for the frame it missed in, and not there before */
		if (miss.sp == last_sp || frametab_learn(l->ftab, miss.ip) != 1)
			break;
		last_sp = miss.sp;
		at = miss;
		n--;	/* walked again from there */
	}
	return n;
}

/*
 * After neither walk of a stack copy got past pcs[nt - 1] (the frame the
 * table missed in, miss): if the table, learning as it goes (learn_walk),
 * reaches a cgo call (a SHM_BASE_CGO rule: the goroutine's stack is not in
 * the copy), that stack cut there, and the agent hops from now on; the
 * frame is no root. Its length (at most max), or 0.
 */
static int cgo_cut(struct agent_link *l, const struct frame_regs *regs, const uint8_t *copy,
		   uint32_t copy_len, uint64_t *pcs, size_t nt, unsigned max,
		   const struct frame_regs *miss)
{
	uint64_t more[PROFILE_MAX_FRAMES];
	const struct shm_frame *r;
	unsigned k;
	int trunc;

	if (!nt || nt > max || pcs[nt - 1] != miss->ip)
		return 0;
	k = learn_walk(l, miss, regs->sp, copy, copy_len, more, max - (unsigned)nt + 1, &trunc);
	if (k < 2 || !(r = frametab_lookup((const struct shm_frame *)(data_of(l) + SHM_OFF_FRAMES),
					   more[k - 1])) || r->base != SHM_BASE_CGO)
		return 0;
	memcpy(pcs + nt - 1, more, k * sizeof(*pcs));
	return (int)(nt - 1 + k);
}

/*
 * After the frame table missed in a stack copy (its walk in pcs[0..nt)),
 * walk the copy with libunwind; both walks are cut before the first
 * return address that is no code (a frame chain that was none). Where
 * libunwind gets no further than the table and did not run out of the
 * copy, the last frame is one that neither unwind info nor a frame chain
 * leads past: for code without CFI the table makes it an end
 * (frametab_set_unwalkable), so that the agent's next walks through it
 * need no copy, and the stack ends in PROFILE_PC_UNWALKABLE (*unwalk); a
 * frame with CFI there is a root if libunwind ended there too, else (a
 * rule the table had not learnt yet) the stack is cut short. At most max
 * frames into pcs (*trunc: cut short), or <= 0 when libunwind failed.
 */
static int copy_unwind(struct agent_link *l, const struct frame_regs *regs, const uint8_t *copy,
		       uint32_t copy_len, uint64_t *pcs, size_t nt, unsigned max,
		       const struct frame_regs *miss, int *trunc, int *unwalk)
{
	struct copywalk cw = copywalk_of(l);
	uint64_t upcs[PROFILE_MAX_FRAMES];
	size_t nu;
	int n, ret;

	if (!nt)
		return 0;
	cw.depth = max;
	memcpy(upcs, pcs, nt * sizeof(*pcs));
	n = copywalk_mixed(&cw, miss, copy, copy_len, regs->sp, upcs, nt, trunc);
	if (n <= 0)
		return n;
	nu = frametab_code_prefix(l->ftab, upcs, (size_t)n);
	frametab_learn_many(l->ftab, upcs, nu);
	nt = frametab_code_prefix(l->ftab, pcs, nt);
	if (nu > nt || (*trunc && nu == (size_t)n)) {
		/* libunwind went further: to the root, to the copy's end, or
		 * to junk after upcs[nu - 1] */
		memcpy(pcs, upcs, nu * sizeof(*pcs));
		if (nu < (size_t)n) {
			*trunc = 0;
			*unwalk = 1;
			frametab_set_unwalkable(l->ftab, pcs[nu - 1]);
		} else if (!*trunc) {
			/* the root, or a frame without CFI libunwind could not
			 * step either (over a budget: decided by a later copy) */
			ret = frametab_set_unwalkable(l->ftab, pcs[n - 1]);
			if (ret == 1)
				*unwalk = 1;
			else if (ret == 0)
				frametab_set_end(l->ftab, pcs[n - 1]);
		}
		return (int)nu;
	}
	/* neither got past pcs[nt - 1] */
	ret = cgo_cut(l, regs, copy, copy_len, pcs, nt, max, miss);
	if (ret > 0) {
		*trunc = 1;
		return ret;
	}
	*trunc = 0;
	frametab_learn_many(l->ftab, pcs, nt);
	ret = frametab_set_unwalkable(l->ftab, pcs[nt - 1]);
	if (ret)
		*unwalk = 1;	/* an end now, or (over a budget) for this stack */
	else if (nu == (size_t)n && upcs[n - 1] == pcs[nt - 1])
		frametab_set_end(l->ftab, pcs[nt - 1]);	/* its CFI ends the stack */
	else
		*trunc = 1;	/* its CFI goes on: the table has the rule now */
	return (int)nt;
}

/* The bytes one sample of size bytes taken at rate << shift stands for
 * (for --interval). */
static uint64_t unsampled_bytes(const struct agent_link *l, uint64_t size, unsigned shift)
{
	double rate = (double)(l->p.rate << shift);

	if (l->exact || !size)
		return size;
	return (uint64_t)((double)size / -expm1(-(double)size / rate));
}

/*
 * An allocation record (our copy, checked by alloc_ok). A stack cut short
 * (the agent's walk at the depth, or a walk of its stack copy at the depth
 * or at the copy's end) ends in PROFILE_PC_TRUNCATED, one whose last frame
 * nothing leads past (copy_unwind) in PROFILE_PC_UNWALKABLE.
 */
/*
 * The stack of an event with Python frames: the native stack (by its id)
 * with the event's Python frames in place of the eval loop's frames; a
 * native stack cut short stays so (its mark last).
 */
static uint32_t py_stack(struct agent_link *l, const struct shm_ev_alloc *e, uint32_t native)
{
	uint64_t in[PROFILE_MAX_FRAMES], out[PROFILE_MAX_FRAMES], py[SHM_PY_MAX_FRAMES];
	uint8_t ends[SHM_PY_MAX_FRAMES];
	size_t n, npy = SHM_EVF_PY(e->flags), m;
	const uint64_t *pcs = profile_stack_pcs(l->p.prof, native, &n);
	int trunc;

	if (!pcs || !l->p.pyframes)
		return native;
	if (n > PROFILE_MAX_FRAMES)
		n = PROFILE_MAX_FRAMES;
	memcpy(in, pcs, n * sizeof(*in));	/* pcs moves as the profile grows */
	trunc = n && profile_mark_name(in[n - 1]);	/* cut short, or unwalkable */
	npy = pyframes_decode(l->p.pyframes, e->frames + e->nframes, npy, py, ends);
	m = pymerge(&l->p.pymerge, in, n - trunc, py, ends, npy, out,
		    PROFILE_MAX_FRAMES - trunc);
	if (trunc)
		out[m++] = in[n - 1];
	return profile_stack_id(l->p.prof, out, m);
}

/* Whether the agent's live table no longer holds ptr, a pointer it entered
 * (it never drops one: see shm.h). */
int records_freed_in_table(uint64_t ptr, void *arg)
{
	struct agent_link *l = arg;
	const uint64_t *w = (const uint64_t *)(data_of(l) + SHM_OFF_LIVE) +
			    (size_t)shm_bloom_slot(ptr) * SHM_LIVE_WAYS;

	for (int i = 0; i < SHM_LIVE_WAYS; i++)
		if ((__atomic_load_n(&w[i], __ATOMIC_ACQUIRE) & ~(uint64_t)SHM_LIVE_OVERFLOW) == ptr)
			return 0;
	return 1;
}

/*
 * The profile's op for an allocation event: KEPT if the agent could not
 * enter its pointer in the live table (its free comes as an event); in
 * sampled mode GONE if the pointer already left the table (freed before we
 * read the event: it would be live only until the next sweep took it out,
 * and most sampled blocks of an allocation storm die that young); else
 * ALLOC. The pointer was entered before the event was committed.
 */
static uint32_t alloc_op(struct agent_link *l, const struct shm_ev_alloc *e)
{
	if (e->flags & SHM_EVF_UNTABLED)
		return PROFILE_OP_ALLOC_KEPT;
	if (!l->exact && records_freed_in_table(e->ptr, l))
		return PROFILE_OP_ALLOC_GONE;
	return PROFILE_OP_ALLOC;
}

static void on_alloc(struct agent_link *l, const struct shm_ev_alloc *e)
{
	uint64_t pcs[PROFILE_MAX_FRAMES];
	const uint64_t *stack_pcs = e->frames;
	const struct frame_regs *regs =
		(const struct frame_regs *)(e->frames + e->nframes + SHM_EVF_PY(e->flags));
	size_t nframes = e->nframes;
	/* a copy the agent held back (its ring past half): cut, and marked so */
	int trunc = !!(e->flags & (SHM_EVF_TRUNC | SHM_EVF_NOCOPY)), unwalk = 0;
	size_t pre = 0;		/* the agent's frames before a hop's copy */
	uint32_t stack;
	unsigned shift = l->iv.nshifts ? interval_shift_at(l, e->tsc) : 0;
	int n;

	l->p.stats->events++;
	l->nallocs++;
	if (l->p.count_bytes)
		l->p.stats->bytes += unsampled_bytes(l, e->size, shift);
	if (e->flags & SHM_EVF_STACKID) {
		stack = e->stack_id;
		goto python;
	}
	if (e->flags & SHM_EVF_HOP) {
		/* the agent's frames, then the goroutine's from its copy */
		pre = e->nframes;
		memcpy(pcs, e->frames, pre * sizeof(*pcs));
		trunc = 1;	/* unless its copy walks on */
	}
	if ((e->flags & (SHM_EVF_HOP | SHM_EVF_STACK)) == (SHM_EVF_HOP | SHM_EVF_STACK)) {
		/* the goroutine's stack: from the frame the agent missed in */
		nframes = pre + learn_walk(l, regs, regs->sp, (const uint8_t *)(regs + 1),
					   e->stack_len, pcs + pre, l->depth - (unsigned)pre, &trunc);
		stack_pcs = pcs;
		goto record;
	}
	if (e->flags & SHM_EVF_STACK) {
		const uint8_t *copy = (const uint8_t *)(regs + 1);
		struct copywalk cw = copywalk_of(l);
		struct frame_regs miss = *regs;
		uint32_t flags;
		unsigned nt = copywalk_table(&cw, regs, copy, e->stack_len, regs->sp, pcs + pre,
					     l->depth - (unsigned)pre, &flags, &miss);

		if (nt && !(flags & SHM_EVF_MISS)) {
			trunc = !!(flags & SHM_EVF_TRUNC);
			stack_pcs = pcs;
			nframes = pre + nt;
			goto record;
		}
		n = copy_unwind(l, regs, copy, e->stack_len, pcs + pre, nt, l->depth - (unsigned)pre,
				&miss, &trunc, &unwalk);
		if (n > 0) {
			stack_pcs = pcs;
			nframes = pre + (size_t)n;
		} else {
			l->p.stats->unwind_errors++;
		}
	}
	if (e->flags & SHM_EVF_HOP)
		fpranges_missed(l, regs->ip);
	else if ((e->flags & SHM_EVF_MISS) && e->nframes)
		fpranges_missed(l, e->frames[e->nframes - 1]);
	if ((e->flags & SHM_EVF_MISS) && !unwalk && (stack_pcs == e->frames || trunc)) {
		/* No copy (refused), or none that unwinds to the root: teach
		 * what we can from the frames the agent walked (the last is
		 * the one it had no rule for, or junk a frame chain led to),
		 * and keep them if they go further. */
		size_t k = frametab_code_prefix(l->ftab, e->frames, e->nframes);

		frametab_learn_many(l->ftab, e->frames, k);
		if ((e->flags & SHM_EVF_NOCOPY) && k < nframes)
			nframes = k;	/* not the junk a frame chain led to */
		if (k > nframes) {
			stack_pcs = e->frames;
			nframes = k;
		}
	}
record:
	if (trunc || unwalk ||
	    (nframes && frametab_unwalkable(l->ftab, stack_pcs[nframes - 1]))) {
		if (stack_pcs != pcs)
			memcpy(pcs, stack_pcs, nframes * sizeof(*pcs));
		/* nframes <= l->depth before */
		pcs[nframes++] = trunc ? PROFILE_PC_TRUNCATED : PROFILE_PC_UNWALKABLE;
		stack_pcs = pcs;
	}
	stack = profile_stack_id(l->p.prof, stack_pcs, nframes);
	/* a complete walk of the agent's: from now on it sends the id */
	if (!(e->flags & SHM_EVF_MISS))
		stackids_publish((struct shm_stack *)(data_of(l) + SHM_OFF_STACKS),
				 e->frames, e->nframes, !!(e->flags & SHM_EVF_TRUNC), stack);
python:
	if (SHM_EVF_PY(e->flags))
		stack = py_stack(l, e, stack);
	queue_op(l, alloc_op(l, e), stack, e->size, e->ptr, shift);
}

/* ring_fn: one record (our copy). Non-zero stops the drain: a record the
 * agent cannot have written, or the drain's time is up. */
int records_on_record(void *arg, const void *rec, uint32_t len)
{
	struct agent_link *l = arg;
	uint16_t kind = ((const struct shm_ev_free *)rec)->kind;

	if (kind == SHM_EV_FREE && len == sizeof(struct shm_ev_free)) {
		on_free(l, rec);
	} else if (kind == SHM_EV_ALLOC && len >= sizeof(struct shm_ev_alloc) &&
		   alloc_ok(l, rec, len)) {
		on_alloc(l, rec);
	} else {
		hdrcheck_hostile(l, "a record no agent writes");
		return 1;
	}
	if (--l->drain_left)
		return 0;
	l->drain_left = DRAIN_CLOCK_EVERY;
	return clock_ns(CLOCK_MONOTONIC) > l->drain_deadline;
}
