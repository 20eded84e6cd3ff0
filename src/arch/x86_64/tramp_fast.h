/* Trap-free trampolines: decide in the target whether to sample, call the agent (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_TRAMP_FAST_H
#define HEAPATTACH_ARCH_TRAMP_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "reloc.h"
#include "tramp.h"

/*
 * Layout (offsets in bytes from the trampoline's address T; RELOC is the
 * relocated prologue encoded for T + tramp_fast_reloc_offset(), ending
 * with a jmp back into the function; COUNTERS, BLOOM and DATA are
 * addresses in the DATA view, reached rip-relative (within +-2 GB);
 * agent_alloc and agent_free are in the CODE view, see agent.h).
 *
 * ALLOC sequence, size register SZ = rdi (malloc, valloc, pvalloc, new),
 * rsi (aligned_alloc, memalign, realloc), rdx (posix_memalign), rdi * rsi
 * (calloc); nothing is padded, so its length depends on the hook:
 *	49 89 fb		mov %rdi,%r11		(calloc only)
 *	4c 0f af de		imul %rsi,%r11		(calloc only)
 *	48 89 e0		mov %rsp,%rax
 *	48 c1 e8 0f		shr $15,%rax
 *	25 c0 0f 00 00		and $0xfc0,%eax		counter (rsp >> 21) & 63, * 64
 *	48 8d 0d rel32		lea COUNTERS(%rip),%rcx
 *	f0			lock			(only without env->plain_sub)
 *	48|4c 29 xx 01		sub SZ,(%rcx,%rax,1)	(SZ: rdi, rsi, rdx or r11)
 *	0f 8e rel32		jle SLOW
 *	e9 rel32		jmp CALLTHRU		(memalign family, posix_memalign)
 *	48 85 ff		test %rdi,%rdi		(realloc: only realloc(NULL, n)
 *	0f 84 rel32		je CALLTHRU		 is sure to call malloc)
 *	RELOC			(code_len bytes; the fast path falls into it)
 *   SLOW = RELOC + code_len:
 *	 +0  57 56 52		push %rdi; push %rsi; push %rdx
 *	 +3  e8 rel32		call RELOC		(real call: shadow stack ok)
 *	 +8  50 53 55		push %rax; push %rbx; push %rbp
 *	+11  41 54 .. 41 57	push %r12; push %r13; push %r14; push %r15
 *	+19  68 imm32		push $AGENT_INFO(size class, hook kind)
 *	+24  48 89 e7		mov %rsp,%rdi		struct agent_frame *
 *	+27  48 8d 35 rel32	lea DATA(%rip),%rsi
 *	+34  e8 rel32		call agent_alloc
 *	+39  48 8b 44 24 38	mov 0x38(%rsp),%rax	the result
 *	+44  48 83 c4 58	add $0x58,%rsp
 *	+48  c3			ret
 *   CALLTHRU = SLOW + 49 (hooks that may nest: realloc, memalign and
 *   aligned_alloc, posix_memalign), with rcx + rax the counter:
 *	 +0  4c 8d 1c 01	lea (%rcx,%rax,1),%r11
 *	 +4  41 53		push %r11
 *	 +6  41 ff 33		push (%r11)		the value the outer call left
 *	 +9  49 c7 03 imm32	movq $0x7fffffff,(%r11)	inner calls never reach 0
 *	+16  41 53		push %r11		(alignment)
 *	+18  e8 rel32		call RELOC
 *	+23  59 59		pop %rcx; pop %rcx
 *	+25  41 5b		pop %r11
 *	+27  49 89 0b		mov %rcx,(%r11)		the inner calls' sizes forgotten
 *	+30  c3			ret
 *   Entry rsp E == 8 (mod 16): the function sees E - 32 (three pushes and
 *   the call), the agent is called with rsp == E - 88 == 0 (mod 16).
 *   Clobbers rax, rcx, r11 (free at an allocator's entry: at most three
 *   arguments). env->plain_sub drops the lock (what agentlink.c does: a locked
 *   sub measured ~3% slower with two busy threads): then a sub racing with
 *   another thread whose stack maps to the same counter (or with the
 *   agent's re-arm, or CALLTHRU's restore) can lose an update, which only
 *   shifts a sampling point (an extra or a late sample), never a crash.
 *
 * Nested calls (realloc(NULL, n) calling malloc, aligned_alloc tail-jumping
 * into malloc) cost nothing on the fast path: CALLTHRU keeps them from
 * counting, and on a slow path the agent sees the return address in the
 * CODE view or in the allocator's own text and only counts them. A return
 * address in the CODE view is always a hooked call's: ours, or a call
 * among the relocated first bytes of a hooked function (implant.c lets
 * reloc.c move one), which is as nested as the rest of its body.
 *
 * TRAMP_FREE (free, cfree, operator delete*), FREE check (slot = the
 * pointer's page, shm_bloom_slot):
 *	 0  48 89 f8		mov %rdi,%rax
 *	 3  48 c1 e8 11		shr $17,%rax
 *	 7  25 ff 07 00 00	and $0x7ff,%eax		the slot's dword in the bitmap
 *	12  4c 8d 1d rel32	lea BITS(%rip),%r11	(8 KiB)
 *	19  41 8b 04 83		mov (%r11,%rax,4),%eax
 *	23  89 f9		mov %edi,%ecx
 *	25  c1 e9 0c		shr $12,%ecx
 *	28  0f a3 c8		bt %ecx,%eax		(bit slot mod 32)
 *	31  73 rel8		jnc RELOC
 *	33  57 56 52		push %rdi; push %rsi; push %rdx	(sized/aligned delete)
 *	36  48 8d 35 rel32	lea DATA(%rip),%rsi
 *	43  e8 rel32		call agent_free		(rdi = ptr; rsp == 0 mod 16)
 *	48  5a 5e 5f		pop %rdx; pop %rsi; pop %rdi
 *	51  RELOC		(a tail: the caller's return address is untouched)
 * free(NULL) is not tested for: slot 0's bit is almost never set, and
 * agent_free returns at once for 0.
 * rcx (a fourth argument no hooked free has) and r11 are clobbered.
 *
 * TRAMP_REALLOC: the FREE check (its jnc to 51) then the ALLOC sequence
 * on rsi at 51.
 *
 * Exact mode needs no other code: the tool keeps counters <= 0 (the agent
 * does not re-arm them) and fills the bitmap with 0xff.
 *
 * The other hook kinds (hooks.h) use the same sequences on other
 * registers, the size class (agent.h) telling the agent where to look:
 * - size in another argument (mi_heap_malloc: rsi; mi_heap_realloc: rdx),
 *   or a product of two (rsi * rdx, rdx * rcx) computed into r11 as
 *   calloc's; when the agent cannot find the factors in its frame (rcx),
 *   SLOW pushes r11 in rdx's place (41 53, SLOW one byte longer);
 * - the pointer a realloc frees in rsi (mi_heap_realloc*): the FREE check
 *   reads rsi (48 89 f0, 89 f1) and moves it to rdi for agent_free
 *   (48 89 f7); CALLTHRU's NULL test is on rsi;
 * - functions of 4 and more arguments keep rcx, r8 and r9: r10 replaces
 *   rcx as scratch (lea COUNTERS(%rip),%r10; sub SZ,(%r10,%rax,1);
 *   mov %edi,%r10d; shr $12,%r10d; bt %r10d,%eax), the FREE check saves
 *   rcx, r8, r9 and r10 (for alignment) around agent_free, and CALLTHRU
 *   starts with lea (%r10,%rax,1),%r11;
 * - a hook whose code calls another listed entry point (hook->calls) takes
 *   CALLTHRU on every unsampled call, as the memalign family does (a
 *   realloc only if it calls another realloc: one that calls malloc or free
 *   does so for NULL or 0 only);
 * - SLOW only, for kinds whose size is known only after the call (string
 *   copies, in-place resizes) or whose old pointer is behind an argument
 *   (reallocarr): the entry goes straight to SLOW (RELOC follows it) and
 *   the agent subtracts the size from the counter itself; reallocarr first
 *   calls agent_free on *rdi (test %rdi,%rdi; je; three pushes;
 *   mov (%rdi),%rdi; lea DATA; call agent_free; three pops).
 */

#define TRAMP_FAST_ALLOC_MAX	39	/* longest ALLOC sequence of the glibc kinds (realloc, locked) */
#define TRAMP_FAST_SLOW_LEN	49	/* SLOW, after RELOC */
#define TRAMP_FAST_CALLTHRU_LEN	31	/* CALLTHRU, after SLOW */
#define TRAMP_FAST_FREE_LEN	51	/* FREE check on rdi, up to 3 arguments */
#define TRAMP_FAST_CHECKS_MAX	128	/* longest checks before RELOC, any kind */
#define TRAMP_FAST_MAX_SIZE	(TRAMP_FAST_CHECKS_MAX + RELOC_MAX_CODE + \
				 TRAMP_FAST_SLOW_LEN + 1 + TRAMP_FAST_CALLTHRU_LEN)

/* Where a fast trampoline finds the shared data and the agent. */
struct tramp_fast_env {
	uint64_t data;		/* DATA view (struct shm_hdr) in the target */
	uint64_t agent_alloc;	/* agent entry points in the CODE view */
	uint64_t agent_free;
	uint64_t fault_at[2];	/* the agent's loads that may fault (guest_ld, guest_fs0) */
	uint64_t fault_fix[2];	/* and where each resumes if it did */
	int plain_sub;		/* 1: sub without lock on the counter (see above) */
};

struct hook;

/*
 * Offset of RELOC in the fast trampoline of hook h (its kind, nargs and
 * calls) of class cls built with env: relocate the prologue for T + this.
 * Returns it, or -EINVAL if cls does not fit h's kind.
 */
int tramp_fast_reloc_offset(enum tramp_class cls, const struct hook *h,
			    const struct tramp_fast_env *env);

/*
 * Write the fast trampoline for hook h (its class must be cls) that will
 * live at `at`, around r (encoded for at + reloc offset), into buf. Fills
 * *lay (entry_trap = exit_trap = -1). Returns 0, -EINVAL (bad class/kind
 * or r encoded elsewhere), -ENOSPC, or -ERANGE (DATA or the agent out of
 * rel32 reach).
 */
int tramp_fast_emit(enum tramp_class cls, const struct hook *h, uint64_t at,
		    const struct reloc_result *r, const struct tramp_fast_env *env,
		    uint8_t *buf, size_t bufsz, struct tramp_layout *lay);

/* Bytes of the agent blob (tramp_fast_agent_install's buf must hold them). */
size_t tramp_fast_agent_size(void);

/*
 * Copy the agent blob into buf, which the target will see at `at` (64-byte
 * aligned, in the CODE view), and set env->agent_alloc/agent_free.
 * Returns 0, -EINVAL (at misaligned) or -ENOSPC.
 */
int tramp_fast_agent_install(uint8_t *buf, size_t bufsz, uint64_t at,
			     struct tramp_fast_env *env);

/*
 * Where a thread that faulted at ip resumes: the fixup of the agent's
 * load at ip (the load then returns its failure), or 0 if ip is not one
 * of them (env as tramp_fast_agent_install set it).
 */
uint64_t tramp_fast_fault_fix(const struct tramp_fast_env *env, uint64_t ip);

#endif
