/* Walks of the stack copies the agent sends: the frame table where it has rules, libunwind for the rest. */
/* SPDX-License-Identifier: MIT */
#include "stacks/copywalk.h"
#include "stacks/frametab.h"
#include "stacks/ownframes.h"
#include "stacks/unwind.h"

/* Frames of heapattach's code on one stack at most: the agent's deepest
 * chain (agent.h, AGENT_STACK_BLOB) and a trampoline's. */
#define OWN_STEPS_MAX 32

unsigned copywalk_table(const struct copywalk *cw, const struct frame_regs *start,
			const uint8_t *copy, uint32_t len, uint64_t copy_sp, uint64_t *pcs,
			unsigned max, uint32_t *flags, struct frame_regs *end)
{
	struct walk_window w = { copy, copy_sp, copy_sp + len, NULL, NULL, 0 };
	uint64_t hash;

	*flags = 0;
	return walk_frames_to(cw->table, &cw->fp, start, &w, pcs, max, flags, &hash, end);
}

/* unwind_copy_steps' resume: the frame table walks on from a return
 * address it has a rule for, or in code it walks by frame pointer; we
 * walk heapattach's own code, where the ip may be exact (after a signal
 * frame). */
static int table_walks(void *arg, uint64_t ip, int exact)
{
	const struct copywalk *cw = arg;

	if (ownframes_has(cw->own, ip))
		return 1;
	return !exact && (frametab_lookup(cw->table, ip) || walk_fp_has(&cw->fp, ip));
}

/* Whether stepping *s by r reads past the copy (w's end): the return
 * address at CFA - 8, the caller's rbp where r saved it. */
static int past_copy(const struct shm_frame *r, const struct frame_regs *s,
		     const struct walk_window *w)
{
	uint64_t cfa = (r->base == SHM_BASE_RBP ? s->bp : s->sp) + (uint64_t)(int64_t)r->cfa_off;

	return cfa > w->hi ||
	       (r->rbp_saved && cfa + (uint64_t)(int64_t)r->rbp_off + 8 > w->hi);
}

/*
 * Step *fr (*exact: the thread was interrupted there) through the frames
 * of heapattach's code in copy window w, to the first frame that is not
 * ours: the trampoline's caller (a return address: *exact cleared) or the
 * hooked function, where the relocated prologue stands for it (its state
 * there, *exact kept). Appends the frame that stands for ours
 * (copywalk.h) to pcs[*n..max). 0; -1 when a frame has no rule, -2 when
 * the copy ended (*fr at the frame it stopped in).
 */
static int own_walk(const struct copywalk *cw, struct frame_regs *fr, int *exact,
		    const struct walk_window *w, uint64_t *pcs, size_t max, size_t *n)
{
	int interrupted = *exact, steps = 0;
	uint64_t entry = 0, e, moved;
	struct shm_frame r;

	while (ownframes_has(cw->own, fr->ip)) {
		struct frame_regs next = *fr;
		int k = ownframes_rule(cw->own, fr->ip, *exact, &r, &moved, &e);

		if (k < 0 || ++steps > OWN_STEPS_MAX)
			return -1;
		if (!entry)
			entry = e;
		if (k == OWNFRAMES_MOVED) {
			fr->ip = moved;
			break;
		}
		if (walk_step(&r, &next, w))
			return past_copy(&r, fr, w) ? -2 : -1;
		*fr = next;
		*exact = 0;
	}
	if (interrupted && entry && *n < max)
		pcs[(*n)++] = entry + 1;
	return 0;
}

int copywalk_mixed(const struct copywalk *cw, const struct frame_regs *at, const uint8_t *copy,
		   uint32_t len, uint64_t copy_sp, uint64_t *pcs, size_t n, int *trunc)
{
	struct walk_window w = { copy, copy_sp, copy_sp + len, NULL, NULL, 0 };
	struct frame_regs fr = *at;
	struct unwind_regs ur;
	uint32_t flags;
	int k, more, exact = 0;

	for (;;) {
		ur = (struct unwind_regs){
			.ip = fr.ip, .sp = fr.sp, .bp = fr.bp, .bx = fr.bx,
			.r12 = fr.r12, .r13 = fr.r13, .r14 = fr.r14, .r15 = fr.r15,
			.flags = exact ? UNWIND_IP_EXACT : 0,
		};
		k = unwind_copy_steps(cw->unw, &ur, copy, len, copy_sp, pcs + n, cw->depth - n,
				      table_walks, (void *)cw, &more);
		if (k < 0)
			return k;
		n += (size_t)k;
		if (!more) {
			*trunc = unwind_truncated(cw->unw);
			return (int)n;
		}
		fr = (struct frame_regs){ ur.ip, ur.sp, ur.bp, ur.bx, ur.r12, ur.r13, ur.r14, ur.r15 };
		exact = !!(ur.flags & UNWIND_IP_EXACT);
		if (ownframes_has(cw->own, fr.ip)) {
			k = own_walk(cw, &fr, &exact, &w, pcs, cw->depth, &n);
			if (k < 0) {
				if (cw->st)
					cw->st->own_stuck++;
				if (n < cw->depth)
					pcs[n++] = fr.ip;
				*trunc = k == -2;
				return (int)n;
			}
			if (cw->st)
				cw->st->own++;
			if (exact)
				continue;	/* in the hooked function: libunwind */
		}
		n += copywalk_table(cw, &fr, copy, len, copy_sp, pcs + n, cw->depth - (unsigned)n,
				    &flags, &fr);
		if (!(flags & SHM_EVF_MISS)) {
			*trunc = !!(flags & SHM_EVF_TRUNC);
			return (int)n;
		}
		exact = 0;
	}
}
