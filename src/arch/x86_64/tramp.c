/* Emit the trap-mode trampolines described in tramp.h (x86-64). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "bkpt.h"
#include "shm.h"
#include "tramp.h"

#define PUSH_RDI	0x57
#define PUSH_RSI	0x56
#define PUSH_RDX	0x52
#define POP_RDX		0x5a
#define POP_RSI		0x5e
#define POP_RDI		0x5f
#define CALL_REL32	0xe8
#define JMP_REL32	0xe9
#define RET		0xc3

int tramp_reloc_offset(enum tramp_class cls)
{
	switch (cls) {
	case TRAMP_ALLOC:
		return TRAMP_ALLOC_PREFIX;
	case TRAMP_REALLOC:
		return BKPT_SEQ_LEN + TRAMP_ALLOC_PREFIX;
	case TRAMP_FREE:
		return BKPT_SEQ_LEN + RELOC_JMP_LEN;
	}
	return -EINVAL;
}

static void put_rel32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, sizeof(v));	/* x86 is little endian */
}

/* The trap sequence (bkpt.h) at p; returns the offset of its syscall. */
static int emit_trap(uint8_t *p)
{
	static const uint8_t seq[BKPT_SEQ_LEN] = BKPT_SEQ_BYTES;

	memcpy(p, seq, sizeof(seq));
	return BKPT_SYSCALL_OFF;
}

/*
 * The ALLOC sequence at p (trampoline offset base), calling RELOC at
 * trampoline offset reloc.  Returns the offset of its trap's syscall
 * within p.
 */
static int emit_alloc(uint8_t *p, int base, int reloc)
{
	int n = 0, trap;

	p[n++] = PUSH_RDI;
	p[n++] = PUSH_RSI;
	p[n++] = PUSH_RDX;
	p[n++] = CALL_REL32;
	put_rel32(p + n, reloc - (base + n + 4));
	n += 4;
	p[n++] = POP_RDX;
	p[n++] = POP_RSI;
	p[n++] = POP_RDI;
	trap = n + emit_trap(p + n);
	n += BKPT_SEQ_LEN;
	p[n++] = RET;
	return trap;
}

int tramp_emit(enum tramp_class cls, uint64_t at, const struct reloc_result *r,
	       uint8_t *buf, size_t bufsz, struct tramp_layout *lay)
{
	int reloc = tramp_reloc_offset(cls);

	if (reloc < 0 || r->to != at + (uint64_t)reloc || !r->code_len)
		return -EINVAL;
	if ((size_t)reloc + r->code_len > bufsz)
		return -ENOSPC;

	lay->entry_trap = -1;
	lay->exit_trap = -1;
	switch (cls) {
	case TRAMP_ALLOC:
		lay->exit_trap = emit_alloc(buf, 0, reloc);
		break;
	case TRAMP_REALLOC:
		lay->entry_trap = emit_trap(buf);
		lay->exit_trap = BKPT_SEQ_LEN + emit_alloc(buf + BKPT_SEQ_LEN, BKPT_SEQ_LEN, reloc);
		break;
	case TRAMP_FREE:
		lay->entry_trap = emit_trap(buf);
		buf[BKPT_SEQ_LEN] = JMP_REL32;
		put_rel32(buf + BKPT_SEQ_LEN + 1, reloc - (BKPT_SEQ_LEN + RELOC_JMP_LEN));
		break;
	}
	memcpy(buf + reloc, r->code, r->code_len);
	lay->reloc_off = reloc;
	lay->size = reloc + r->code_len;
	lay->nframes = 0;	/* trap mode's stacks are walked from the trap */
	return 0;
}

void tramp_trap_regs(struct user_regs_struct *r, const uint64_t saved[3])
{
	r->r11 = saved[0];
	r->rcx = saved[1];
	r->rax = saved[2];
	r->rsp += BKPT_SAVED * 8;
}

int tramp_trap_kind(const struct tramp_layout *lay, uint64_t at, uint64_t ip)
{
	uint64_t trap = bkpt_addr_from_ip(ip);

	if (lay->entry_trap >= 0 && trap == at + lay->entry_trap)
		return TRAMP_TRAP_ENTRY;
	if (lay->exit_trap >= 0 && trap == at + lay->exit_trap)
		return TRAMP_TRAP_EXIT;
	return -ENOENT;
}

int tramp_frame_rule(const struct tramp_layout *lay, uint64_t off, struct shm_frame *rule)
{
	const struct tramp_frame *f = NULL;

	if (off >= lay->size)
		return -ENOENT;
	for (unsigned i = 0; i < lay->nframes && i < TRAMP_FRAMES_MAX && lay->frames[i].off <= off; i++)
		f = &lay->frames[i];
	if (!f)
		return -ENOENT;
	if (f->kind == TRAMP_FR_RELOC)
		return TRAMP_FR_RELOC;
	memset(rule, 0, sizeof(*rule));
	rule->base = SHM_BASE_RSP;
	rule->cfa_off = 8 * ((int32_t)f->words + 1);
	return TRAMP_FR_STACK;
}
