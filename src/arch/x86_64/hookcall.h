/* What a hooked call frees and allocates, from its registers at the traps of trap mode (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_HOOKCALL_H
#define HEAPATTACH_ARCH_HOOKCALL_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "model/hooks.h"

/* The block a call made. */
struct hook_call {
	uint64_t ptr;		/* 0: none (failed, or made nothing) */
	uint64_t size;		/* the request (hooks.h) */
	int inplace;		/* ptr kept its address: its old record is freed first */
};

/* Longest string whose copy is measured in the target (trap mode): a
 * longer one counts as this many bytes. */
#define HOOK_CALL_STR_MAX	(1u << 20)

/*
 * The pointer a call of kind frees before it runs, from the registers r of
 * thread tid at the entry trap (free, realloc, reallocarr's *p); 0 if none.
 */
uint64_t hook_call_freed(pid_t tid, enum hook_kind kind, const struct user_regs_struct *r);

/*
 * The block a call of kind made, from the registers r (as at entry, rax the
 * result) of thread tid at the exit trap. Reads the target for results
 * behind a pointer and for the length of a string copy.
 */
void hook_call_made(pid_t tid, enum hook_kind kind, const struct user_regs_struct *r,
		    struct hook_call *c);

#endif
