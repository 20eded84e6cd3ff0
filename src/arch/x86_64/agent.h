/* ABI between the fast trampolines and the in-target agent blob (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_AGENT_H
#define HEAPATTACH_ARCH_AGENT_H

/*
 * Freestanding: included by agent.c, which is built without libc.
 *
 * Both entry points are System V functions living in the CODE view; the
 * trampolines reach them with call rel32 and pass the DATA view (the
 * struct shm_hdr) in rsi, found by a rip-relative lea:
 *
 *	void agent_alloc(struct agent_frame *f, struct shm_hdr *h);
 *	void agent_free(uint64_t ptr, struct shm_hdr *h);
 *
 * agent_alloc runs after the real allocator returned (f->rax is its
 * result); agent_free runs before the real free/realloc.
 */
#include <stdint.h>

#include "frame_regs.h"

/* How the requested size and the result pointer are found. */
#define AGENT_SZ_RDI	0	/* size = rdi, ptr = rax: malloc, valloc, pvalloc, new */
#define AGENT_SZ_MUL	1	/* size = rdi * rsi, ptr = rax: calloc */
#define AGENT_SZ_RSI	2	/* size = rsi, ptr = rax: realloc, aligned_alloc, memalign */
#define AGENT_SZ_PM	3	/* size = rdx, ptr = *rdi if rax == 0: posix_memalign */
#define AGENT_SZ_RDX	4	/* size = rdx, ptr = rax: mi_heap_realloc */
#define AGENT_SZ_MUL12	5	/* size = rsi * rdx, ptr = rax: reallocarray, mi_heap_calloc */
#define AGENT_SZ_PUSHED	6	/* size = the word SLOW pushed in rdx's place (r11, the
				 * size it computed), ptr = rax: mi_heap_reallocn */
/*
 * SLOW only: the trampoline calls the agent on every call, which takes
 * the size off the counter itself (AGENT_SZ_POST and above).
 */
#define AGENT_SZ_POST	7
#define AGENT_SZ_ARR	7	/* size = rsi * rdx, ptr = *rdi if rax == 0: reallocarr */
#define AGENT_SZ_XALLOCX 8	/* in place: ptr = rdi, size = rax if rax >= rsi */
#define AGENT_SZ_EXPAND	9	/* in place: ptr = rdi, size = rsi if rax != 0 */
#define AGENT_SZ_STR	10	/* ptr = rax, size = strlen(rax) + 1 */
#define AGENT_SZ_WSTR	11	/* ptr = rax, size = 2 * (16-bit length + 1) */
#define AGENT_SZ_PATH1	12	/* ptr = rax if rsi == 0, size = strlen + 1: realpath */
#define AGENT_SZ_PATH2	13	/* ptr = rax if rdx == 0, size = strlen + 1: mi_heap_realpath */
#define AGENT_SZ_ENV	14	/* ptr = *rdi if rax == 0, size = strlen + 1: dupenv_s */

/* The word the trampoline pushes: size class and the hook's kind
 * (enum hook_kind, reported in the event's flags, see SHM_EVF_HOOK). */
#define AGENT_INFO(sz, hook)	((uint32_t)(sz) | (uint32_t)(hook) << 8)
#define AGENT_INFO_SZ(info)	((uint32_t)(info) & 0xff)
#define AGENT_INFO_HOOK(info)	(((uint32_t)(info) >> 8) & 0xff)

/*
 * The frame an ALLOC/REALLOC trampoline's slow path builds, lowest
 * address first: &f->ret is the rsp the allocator was entered with,
 * callee-saved registers are pushed after the real call returned, when
 * they hold their entry values again.
 */
struct agent_frame {
	uint64_t info;		/* AGENT_INFO(), pushed last */
	uint64_t r15, r14, r13, r12, rbp, rbx;
	uint64_t rax;		/* the allocator's result */
	uint64_t rdx, rsi, rdi;	/* arguments at entry */
	uint64_t ret;		/* the caller's return address */
};

/*
 * What one hooked call adds to the stack of the thread that made it,
 * whatever the depth (docs/threat-model.md, "the agent as a guest"): the
 * trampoline's frame (AGENT_STACK_TRAMP: three words and a return address
 * under the hooked function, which so runs 32 bytes deeper, then struct
 * agent_frame and the call into the agent) and the agent's deepest chain
 * of frames (AGENT_STACK_BLOB: the Makefile computes it from gcc's call
 * graph, agent_stack.awk, and fails the build above it). The frames a
 * walk gathers are in the shared area (agent.c, struct scratch).
 */
#define AGENT_STACK_TRAMP	128
#define AGENT_STACK_BLOB	672
#define AGENT_STACK		(AGENT_STACK_TRAMP + AGENT_STACK_BLOB)

/* The state right after the allocator returned to its caller (ip = the
 * return address, sp = entry rsp + 8), from its trampoline's frame. */
static inline void agent_frame_regs(const struct agent_frame *f, struct frame_regs *r)
{
	r->ip = f->ret;
	r->sp = (uint64_t)&f->ret + 8;
	r->bp = f->rbp;
	r->bx = f->rbx;
	r->r12 = f->r12;
	r->r13 = f->r13;
	r->r14 = f->r14;
	r->r15 = f->r15;
}

#endif
