/* Trap-mode trampolines: one per hook, around the relocated prologue (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_TRAMP_H
#define HEAPATTACH_ARCH_TRAMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#include "bkpt.h"
#include "reloc.h"

/*
 * Layout (offsets in bytes from the trampoline's address T; RELOC is the
 * relocated prologue from reloc_prologue(), encoded for T + reloc_off, which
 * ends with a jmp back into the original function; TRAP is the 15-byte trap
 * sequence of bkpt.h, whose syscall-stop the tool handles):
 *
 * TRAMP_ALLOC (malloc, calloc, posix_memalign, memalign/aligned_alloc,
 * valloc, pvalloc, operator new):
 *	 0  57		push %rdi
 *	 1  56		push %rsi
 *	 2  52		push %rdx
 *	 3  e8 rel32	call RELOC
 *	 8  5a		pop %rdx
 *	 9  5e		pop %rsi
 *	10  5f		pop %rdi
 *	11  TRAP		<- exit trap (its syscall at 20)
 *	26  c3		ret
 *	27  RELOC
 *   Entry rsp == 8 (mod 16); after three pushes and the call, the function
 *   sees rsp == 8 (mod 16) as the ABI wants.  At the exit trap, once
 *   tramp_trap_regs() undid the trap's pushes, rsp equals the entry rsp,
 *   [rsp] is the caller's return address, rax the result, rdi/rsi/rdx the
 *   original arguments, callee-saved registers as at entry.
 *
 * TRAMP_REALLOC (realloc, reallocarray):
 *	 0  TRAP		<- entry trap (its syscall at 9; registers as at entry)
 *	15  the TRAMP_ALLOC sequence: exit trap's syscall at 35, RELOC at 42
 *
 * TRAMP_FREE (free, cfree, operator delete):
 *	 0  TRAP		<- entry trap (its syscall at 9; registers as at entry)
 *	15  e9 00000000	jmp RELOC	(a rel32 slot the tracer may retarget)
 *	20  RELOC
 *
 * Without a tracer (or resumed with PTRACE_CONT) a trap is a getpid that
 * changes nothing: the trampolines run on their own. The syscall-stop of
 * the trap whose syscall is at offset k reports rip == T + k + 2 (bkpt.h).
 */
enum tramp_class {
	TRAMP_ALLOC,
	TRAMP_REALLOC,
	TRAMP_FREE,
};

enum tramp_trap {
	TRAMP_TRAP_ENTRY,
	TRAMP_TRAP_EXIT,
};

#define TRAMP_ALLOC_PREFIX	27
#define TRAMP_MAX_SIZE		(BKPT_SEQ_LEN + TRAMP_ALLOC_PREFIX + RELOC_MAX_CODE)

/*
 * A trampoline's frame at each offset, for a walk of a stack whose thread
 * a signal interrupted in it (ownframes.c): from offset off on, until the
 * next entry, TRAMP_FR_STACK: the trampoline has pushed `words` words
 * since its entry (the CFA is rsp + 8 * (words + 1), the caller's return
 * address just below it, every callee-saved register the caller's);
 * TRAMP_FR_RELOC: the relocated prologue, whose state at each instruction
 * is the hooked function's at the instruction it was copied from.
 */
enum tramp_frame_kind {
	TRAMP_FR_STACK,
	TRAMP_FR_RELOC,
};

struct tramp_frame {
	uint16_t off;
	uint8_t kind;		/* enum tramp_frame_kind */
	uint8_t words;
};

#define TRAMP_FRAMES_MAX	40

struct tramp_layout {
	size_t size;		/* total bytes written */
	size_t reloc_off;	/* where RELOC starts */
	int entry_trap;		/* offset of the entry trap's syscall, or -1 */
	int exit_trap;		/* offset of the exit trap's syscall, or -1 */
	unsigned nframes;	/* entries of frames[], by offset (0: none, trap mode's) */
	struct tramp_frame frames[TRAMP_FRAMES_MAX];
};

/*
 * Offset of RELOC in a trampoline of class cls: relocate the prologue for
 * T + tramp_reloc_offset(cls) before calling tramp_emit().  Returns the
 * offset, or -EINVAL for an unknown class.
 */
int tramp_reloc_offset(enum tramp_class cls);

/*
 * Write the trampoline of class cls that will live at address `at` into
 * buf (bufsz bytes, TRAMP_MAX_SIZE is always enough), around the
 * relocated prologue r, which must have been encoded for at + reloc offset.
 * Fills *lay.  Returns 0, -EINVAL (unknown class or r encoded for another
 * address) or -ENOSPC.
 */
int tramp_emit(enum tramp_class cls, uint64_t at, const struct reloc_result *r,
	       uint8_t *buf, size_t bufsz, struct tramp_layout *lay);

/*
 * Which trap of the trampoline at `at` a syscall-stop at rip `ip` comes
 * from: TRAMP_TRAP_ENTRY or TRAMP_TRAP_EXIT, or -ENOENT if neither.
 */
int tramp_trap_kind(const struct tramp_layout *lay, uint64_t at, uint64_t ip);

/*
 * The registers r of a thread stopped at a trap, as they were before the
 * trap sequence: saved holds the BKPT_SAVED words at r->rsp.
 */
void tramp_trap_regs(struct user_regs_struct *r, const uint64_t saved[3]);

/*
 * How the frame of code at offset off of a trampoline laid out as lay is
 * stepped: TRAMP_FR_STACK with *rule (CFA = rsp + K, rbp kept: shm.h
 * struct shm_frame, ip left 0), TRAMP_FR_RELOC (reloc_map_back finds where
 * in the hooked function), or -ENOENT (off past the end, or no map).
 */
struct shm_frame;
int tramp_frame_rule(const struct tramp_layout *lay, uint64_t off, struct shm_frame *rule);

#endif
