/* Walks of the stack copies the agent sends: the frame table where it has rules, libunwind for the rest. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_COPYWALK_H
#define HEAPATTACH_COPYWALK_H

#include <stddef.h>
#include <stdint.h>

#include "framewalk.h"

struct unwinder;
struct ownframes;

/* Walks that passed through heapattach's own code (ownframes.h). */
struct copywalk_stats {
	uint64_t own;		/* walked through it to a frame of the program */
	uint64_t own_stuck;	/* ended in it (no rule, or the copy's end) */
};

/* What a walk of a copy uses: all of it the tool's (the table is read as
 * the agent reads it, framewalk.h). */
struct copywalk {
	struct unwinder *unw;
	const struct shm_frame *table;
	struct walk_fp fp;		/* our copy of the frame-pointer ranges */
	unsigned depth;			/* frames at most */
	const struct ownframes *own;	/* heapattach's code in the target, or NULL */
	struct copywalk_stats *st;	/* or NULL */
};

/*
 * Walk the copy copy[0..len) (the bytes that were at copy_sp) from start
 * with the frame table, as the agent would have: up to max frames into
 * pcs, SHM_EVF_TRUNC or SHM_EVF_MISS ORed into *flags (cleared first); on
 * a miss, the state of the frame it missed in goes to *end (if not NULL).
 */
unsigned copywalk_table(const struct copywalk *cw, const struct frame_regs *start,
			const uint8_t *copy, uint32_t len, uint64_t copy_sp, uint64_t *pcs,
			unsigned max, uint32_t *flags, struct frame_regs *end);

/*
 * Walk on from the frame the table missed in (*at; the walk so far in
 * pcs[0..n), at's frame last): libunwind steps the frames the table has
 * no rule for, the table the others (libunwind costs a lock, with two
 * syscalls, per step). Frames in all (*trunc: cut short, at cw->depth or
 * at the copy's end), or < 0. The table tracks rsp and rbp only: libunwind
 * starts from the other callee-saved registers as the allocator's return
 * left them (or as its last steps restored them), which a CFA computed
 * from rbx or r12-r15 would need (hand-written code; compilers base the
 * CFA on rsp or rbp).
 *
 * A signal frame may lead into heapattach's own code (cw->own), where a
 * signal interrupted a trampoline or the agent: its rules (ownframes.h)
 * lead on to the program's frame that made the hooked call, or into the
 * hooked function itself (where libunwind goes on). Those frames are not
 * the program's: they stand in the stack as one frame of the hooked call
 * that was in progress, its function's entry + 1 (a return address where
 * the profile names the function), or as none when a frame of the hooked
 * function precedes them (a callee of the trampoline). A walk that ends
 * in that code ends at its interrupted ip (no unwind information: the
 * stack's last frame is unwalkable).
 */
int copywalk_mixed(const struct copywalk *cw, const struct frame_regs *at, const uint8_t *copy,
		   uint32_t len, uint64_t copy_sp, uint64_t *pcs, size_t n, int *trunc);

#endif
