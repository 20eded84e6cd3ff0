/* The frame-rule walk (x86-64): one step rule for the in-target agent and the tool. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_FRAMEWALK_H
#define HEAPATTACH_ARCH_FRAMEWALK_H

/*
 * Freestanding: the agent walks its own stack with it, the tool a stack
 * copy the agent sent (fast/records.c), so that a stack the tool walks is
 * the stack the agent would have walked. A rule (shm.h, struct
 * shm_frame) gives the caller's frame of a return address ip: CFA =
 * rsp|rbp + K, the return address at CFA - 8, the caller's rbp kept or
 * saved at CFA + off (the kernel's ORC unwinder works the same way). Every
 * word is read through a window of the target's memory that the caller
 * vouches for; anything out of it, or a CFA that does not move up the
 * stack, ends the walk as a miss.
 */
#include <stdint.h>

#include "frame_regs.h"
#include "shm.h"

/*
 * What a walk depended on (the agent's walk memo, shm.h struct shm_memo):
 * each word it read, as its offset from the window's lo and its value, in
 * order (the first SHM_MEMO_READS; n counts them all), and whether it used
 * the start rbp before a read replaced it.
 */
struct walk_log {
	uint32_t n;
	uint32_t used_bp;
	uint32_t off[SHM_MEMO_READS];
	uint64_t val[SHM_MEMO_READS];
};

/* Memory the walk may read: the target's [lo, hi) is at base in ours;
 * log, if not NULL, records every word read through it; ctx is WALK_LOAD's.
 * direct: base is lo, the target's memory is ours (the agent's walk), so
 * a hop to a goroutine's stack (walk_hop) may read beyond the window. */
struct walk_window {
	const uint8_t *base;
	uint64_t lo, hi;
	struct walk_log *log;
	const void *ctx;
	int direct;
};

typedef uint64_t __attribute__((may_alias, aligned(1))) walk_word_t;

/* How the word at p is read through window w: 0 or -1. The agent reads
 * its target's stack through a load the tool recovers from (agent.c,
 * guest_page_ld); the tool walks copies in its own memory. */
#ifndef WALK_LOAD
#define WALK_LOAD(w, p, v)	(*(v) = *(const walk_word_t *)(p), 0)
#endif

/* Read the word at the target's addr through w: 0, or -1 outside it
 * (addr comes from the stack: no sum may wrap). */
static inline int walk_read(const struct walk_window *w, uint64_t addr, uint64_t *v)
{
	if (addr < w->lo || w->hi - w->lo < 8 || addr - w->lo > w->hi - w->lo - 8 ||
	    WALK_LOAD(w, w->base + (addr - w->lo), v))
		return -1;
	if (w->log) {
		if (w->log->n < SHM_MEMO_READS) {
			w->log->off[w->log->n] = (uint32_t)(addr - w->lo);
			w->log->val[w->log->n] = *v;
		}
		w->log->n++;
	}
	return 0;
}

/*
 * The rule for ip, copied out of the table (the target can rewrite it:
 * what is checked is the copy). The tool publishes ip last (frametab.c).
 * 0, or -1 if the table has none within SHM_FRAME_PROBES slots.
 */
static inline int walk_rule(const struct shm_frame *table, uint64_t ip, struct shm_frame *out)
{
	uint32_t slot = shm_frame_slot(ip);

	for (int i = 0; i < SHM_FRAME_PROBES; i++) {
		const struct shm_frame *f = &table[(slot + i) & (SHM_NFRAMES - 1)];
		uint64_t fip = *(volatile const uint64_t *)&f->ip;

		if (fip == ip) {
			shm_barrier();
			*out = *(volatile const struct shm_frame *)f;
			return out->ip == ip ? 0 : -1;
		}
		if (!fip)
			return -1;
	}
	return -1;
}

/* Ranges of code walked by its frame pointer (shm_hdr.fp): v may be NULL. */
struct walk_fp {
	const struct shm_range *v;
	uint32_t n;
};

/* Whether ip lies in one of fp's ranges (read once each: the target can
 * rewrite them). */
static inline int walk_fp_has(const struct walk_fp *fp, uint64_t ip)
{
	uint32_t n = fp && fp->v ? fp->n : 0;

	if (n > SHM_FP_RANGES)
		n = SHM_FP_RANGES;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t lo = *(volatile const uint64_t *)&fp->v[i].lo;
		uint64_t hi = *(volatile const uint64_t *)&fp->v[i].hi;

		if (ip >= lo && ip < hi)
			return 1;
	}
	return 0;
}

/*
 * The hop out of Go's runtime.asmcgocall (rule r, SHM_BASE_CGO) from ip,
 * the return address of its call of a C function, with *sp just above it
 * (asmcgocall's SP then). asmcgocall saved there the goroutine's g at
 * *sp + 48 and the depth, g.stack.hi minus the goroutine's SP at its
 * entry, at *sp + 40; the word at that SP is the return address into
 * runtime.cgocall, which r places at [ip + cfa_off, + (uint16_t)rbp_off).
 * g is 0 when asmcgocall was entered on a system stack: *sp + 40 then
 * holds that SP, above *sp in w. The goroutine's {g.stack.lo, hi} is
 * g's first field; only a direct window can read g and that stack, and
 * then *w becomes the goroutine's stack [SP, hi), not logged (a walk
 * memo rereads its words in the window it started in: one that hopped
 * is never kept, its log made too long). 1 (to the goroutine's stack)
 * or 0 (on the same stack) with *next, the return address, and *sp past
 * it; -1 if a word does not check out (g.stack.lo <= SP < hi, the return
 * address in runtime.cgocall) or cannot be read; -2 if the goroutine's
 * stack is out of reach (a window that is not direct: a stack copy).
 */
static inline int walk_hop(const struct shm_frame *r, uint64_t ip, struct walk_window *w,
			   uint64_t *sp, uint64_t *next)
{
	uint64_t g, depth, lo, hi, gsp, call = ip + (uint64_t)(int64_t)r->cfa_off;
	struct walk_window gw = *w;

	if (walk_read(w, *sp + 48, &g) || walk_read(w, *sp + 40, &depth))
		return -1;
	if (!g) {
		if (depth <= *sp || (depth & 7) || walk_read(w, depth, next))
			return -1;
		*sp = depth + 8;
		return 0;
	}
	if (!w->direct)
		return -2;
	if (g > UINT64_MAX - 16)
		return -1;
	gw.base = (const uint8_t *)(uintptr_t)g;
	gw.lo = g;
	gw.hi = g + 16;
	gw.log = (struct walk_log *)0;
	if (walk_read(&gw, g, &lo) || walk_read(&gw, g + 8, &hi) || depth > hi)
		return -1;
	gsp = hi - depth;
	if (gsp < lo || gsp >= hi || (gsp & 7))
		return -1;
	gw.base = (const uint8_t *)(uintptr_t)gsp;
	gw.lo = gsp;
	gw.hi = hi;
	if (walk_read(&gw, gsp, next) || *next - call >= (uint16_t)r->rbp_off)
		return -1;
	if (w->log)
		w->log->n = SHM_MEMO_READS + 1;
	*w = gw;
	*sp = gsp + 8;
	return 1;
}

/*
 * Walk from start (ip the first return address, sp just above it, bp as
 * the frame left it): out[] gets up to max return addresses, leaf first,
 * and *hash their shm_stack_hash. Returns the count; ORs SHM_EVF_MISS
 * (the last frame has no usable rule, or it leads out of the window) or
 * SHM_EVF_TRUNC (max reached with frames left; the hash is then finished
 * with max | SHM_STACK_TRUNC, see struct shm_stack) into *flags. An END rule
 * or a return address of 0 ends a complete walk. A return address with no
 * rule in one of fp's ranges is stepped by its frame pointer, if the
 * chain is sane: rbp in the window at or above sp, aligned, the caller's
 * frame above it (CFA = rbp + 16, the return address at rbp + 8, the
 * caller's rbp at rbp). A CGO rule hops to the goroutine's stack
 * (walk_hop; SHM_EVF_HOP into *flags), ends a complete walk where the
 * hop does not check out, and cuts one (SHM_EVF_TRUNC) that cannot reach
 * the goroutine's stack.
 * walk_frames_to also gives, on a miss, the state
 * of the frame it missed in (*end, if not NULL: ip that frame's return
 * address, sp and bp as the walk had them, other registers as at start).
 */
static inline unsigned walk_frames_to(const struct shm_frame *table, const struct walk_fp *fp,
				      const struct frame_regs *start, const struct walk_window *w,
				      uint64_t *out, unsigned max, uint32_t *flags, uint64_t *hash,
				      struct frame_regs *end)
{
	uint64_t ip = start->ip, sp = start->sp, bp = start->bp, hs = 0;
	unsigned n = 0;
	int bp_read = 0;	/* bp came from a read, not from start */
	struct walk_window cur = *w;	/* the goroutine's stack after a hop */

	while (ip) {
		struct shm_frame r;
		uint64_t cfa;

		if (n == max) {
			*flags |= SHM_EVF_TRUNC;
			*hash = shm_stack_hash_end(hs, n | SHM_STACK_TRUNC);
			return n;
		}
		out[n++] = ip;
		hs = shm_stack_hash_step(hs, ip);
		if (walk_rule(table, ip, &r)) {
			if (!walk_fp_has(fp, ip))
				goto miss;
			if (cur.log && !bp_read)
				cur.log->used_bp = 1;
			if (bp < sp || (bp & 7) || walk_read(&cur, bp + 8, &ip) || walk_read(&cur, bp, &cfa))
				goto miss;
			sp = bp + 16;
			bp = cfa;
			bp_read = 1;
			continue;
		}
		if (r.base == SHM_BASE_END)
			break;
		if (r.base == SHM_BASE_CGO) {
			int hop = walk_hop(&r, ip, &cur, &sp, &ip);

			if (hop == -2) {
				/* frames beyond, not in reach: cut */
				*flags |= SHM_EVF_TRUNC;
				*hash = shm_stack_hash_end(hs, n | SHM_STACK_TRUNC);
				return n;
			}
			if (hop < 0)
				break;
			if (hop)
				*flags |= SHM_EVF_HOP;
			continue;
		}
		if (r.base == SHM_BASE_RSP) {
			cfa = sp + (uint64_t)(int64_t)r.cfa_off;
		} else if (r.base == SHM_BASE_RBP) {
			if (cur.log && !bp_read)
				cur.log->used_bp = 1;
			cfa = bp + (uint64_t)(int64_t)r.cfa_off;
		} else {
			goto miss;
		}
		if (cfa <= sp || (cfa & 7) || walk_read(&cur, cfa - 8, &ip))
			goto miss;
		if (r.rbp_saved) {
			if (walk_read(&cur, cfa + (uint64_t)(int64_t)r.rbp_off, &bp))
				goto miss;
			bp_read = 1;
		}
		sp = cfa;
	}
	*hash = shm_stack_hash_end(hs, n);
	return n;
miss:
	*flags |= SHM_EVF_MISS;
	*hash = shm_stack_hash_end(hs, n);
	if (end) {
		*end = *start;
		end->ip = out[n - 1];	/* ip may hold a half-read step */
		end->sp = sp;
		end->bp = bp;
	}
	return n;
}

/*
 * One step by rule r (not an END) from the frame whose registers are *s:
 * its caller's ip, sp (the CFA) and bp into *s, the others left as they
 * are. 0, or -1 when the CFA does not move up the stack or a read leaves
 * w. (The tool's walks through its own code, copywalk.c; walk_frames_to
 * steps the same way.)
 */
static inline int walk_step(const struct shm_frame *r, struct frame_regs *s,
			    const struct walk_window *w)
{
	uint64_t cfa, ip, bp = s->bp;

	if (r->base == SHM_BASE_RSP)
		cfa = s->sp + (uint64_t)(int64_t)r->cfa_off;
	else if (r->base == SHM_BASE_RBP)
		cfa = s->bp + (uint64_t)(int64_t)r->cfa_off;
	else
		return -1;
	if (cfa <= s->sp || (cfa & 7) || walk_read(w, cfa - 8, &ip))
		return -1;
	if (r->rbp_saved && walk_read(w, cfa + (uint64_t)(int64_t)r->rbp_off, &bp))
		return -1;
	s->ip = ip;
	s->sp = cfa;
	s->bp = bp;
	return 0;
}

static inline unsigned walk_frames(const struct shm_frame *table, const struct walk_fp *fp,
				   const struct frame_regs *start, const struct walk_window *w,
				   uint64_t *out, unsigned max, uint32_t *flags, uint64_t *hash)
{
	return walk_frames_to(table, fp, start, w, out, max, flags, hash, (struct frame_regs *)0);
}

#endif
