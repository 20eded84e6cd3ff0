/* The agent's loads of memory it did not make, which the tool recovers from if they fault (x86-64), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_GUEST_H
#define HEAPATTACH_AGENT_GUEST_H

/*
 * guest_ld(addr, &v): 0 and the word at addr (any alignment), or -1 if
 * reading it faulted. guest_fs0(): the word at %fs:0, 0 if that faulted.
 * The tool finds each faulting load and its fixup by the symbols
 * agent_guest_*_at and agent_guest_*_fix (gen/agent_syms.h): a fault at
 * _at resumes at _fix. Nothing but these instructions may sit at _at.
 * Their CFI (nothing pushed) is for the tool's walks of a stack whose
 * thread a signal interrupted in them (agent_cfi.awk).
 */
__attribute__((visibility("hidden"))) int guest_ld(uint64_t addr, uint64_t *v);
__attribute__((visibility("hidden"))) uint64_t guest_fs0(void);
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl guest_ld\n.hidden guest_ld\n.type guest_ld, @function\n"
	"guest_ld:\n"
	".cfi_startproc\n"
	".globl agent_guest_ld_at\n.hidden agent_guest_ld_at\n"
	"agent_guest_ld_at:\n"
	"\tmovq (%rdi), %rax\n"
	"\tmovq %rax, (%rsi)\n"
	"\txorl %eax, %eax\n"
	"\tret\n"
	".globl agent_guest_ld_fix\n.hidden agent_guest_ld_fix\n"
	"agent_guest_ld_fix:\n"
	"\tmovl $-1, %eax\n"
	"\tret\n"
	".cfi_endproc\n"
	".size guest_ld, . - guest_ld\n"
	".globl guest_fs0\n.hidden guest_fs0\n.type guest_fs0, @function\n"
	"guest_fs0:\n"
	".cfi_startproc\n"
	".globl agent_guest_fs0_at\n.hidden agent_guest_fs0_at\n"
	"agent_guest_fs0_at:\n"
	"\tmovq %fs:0, %rax\n"
	"\tret\n"
	".globl agent_guest_fs0_fix\n.hidden agent_guest_fs0_fix\n"
	"agent_guest_fs0_fix:\n"
	"\txorl %eax, %eax\n"
	"\tret\n"
	".cfi_endproc\n"
	".size guest_fs0, . - guest_fs0\n"
	".popsection\n");

/*
 * guest_ld, for the walks: a page that faulted in this frame table's
 * generation is not read again (its read fails at once), so a wild
 * pointer costs one stop in the tool, not one per walk.
 */
static inline int guest_page_ld(const struct shm_hdr *hc, uint64_t addr, uint64_t *v)
{
	struct shm_hdr *h = (struct shm_hdr *)hc;
	uint64_t page = addr >> 12, gen = h->walk_gen & 0xfffffffULL;
	unsigned i = (unsigned)((page * SHM_HASH_MUL) >> 60) & (SHM_BAD_PAGES - 1);
	uint64_t e = (page << 28) | gen;

	if (h->bad_pages[i] == e)
		return -1;
	if (!guest_ld(addr, v))
		return 0;
	h->bad_pages[i] = e;
	return -1;
}

/* Whether the tool is there to take a guest_ld's fault. */
static inline int tool_here(const struct shm_hdr *h)
{
	return shm_tool_here(h->tool_alive);
}

/* framewalk.h's reads of the stack, through guest_page_ld (w->ctx: the header). */
#define WALK_LOAD(w, p, v)	guest_page_ld((const struct shm_hdr *)(w)->ctx, (uint64_t)(p), (v))
#include "framewalk.h"

#endif
