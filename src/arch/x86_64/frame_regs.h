/* The registers a stack walk needs (x86-64): the one register struct of the tool and the agent. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_FRAME_REGS_H
#define HEAPATTACH_ARCH_FRAME_REGS_H

/*
 * Freestanding (the agent includes it). Unwind information never needs
 * more than these to find a caller on x86-64: the instruction and stack
 * pointers and the callee-saved registers. The agent writes one into an
 * event whose walk missed (shm.h), the unwinder starts from one
 * (unwind.h), frame rules step one (framewalk.h); user registers become
 * one in arch code only (unwind_regs.c).
 */
#include <stdint.h>

struct frame_regs {
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
};

#endif
