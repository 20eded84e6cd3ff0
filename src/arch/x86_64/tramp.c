/* Emit the trap-mode trampolines described in tramp.h (x86-64). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "bkpt.h"
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
		return 1 + TRAMP_ALLOC_PREFIX;
	case TRAMP_FREE:
		return 1 + RELOC_JMP_LEN;
	}
	return -EINVAL;
}

static void put_rel32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, sizeof(v));	/* x86 is little endian */
}

/*
 * The ALLOC sequence at p (trampoline offset base), calling RELOC at
 * trampoline offset reloc.  Returns the offset of its int3 within p.
 */
static int emit_alloc(uint8_t *p, int base, int reloc)
{
	int n = 0;

	p[n++] = PUSH_RDI;
	p[n++] = PUSH_RSI;
	p[n++] = PUSH_RDX;
	p[n++] = CALL_REL32;
	put_rel32(p + n, reloc - (base + n + 4));
	n += 4;
	p[n++] = POP_RDX;
	p[n++] = POP_RSI;
	p[n++] = POP_RDI;
	p[n++] = BKPT_INSN;
	p[n++] = RET;
	return n - 2;
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
		buf[0] = BKPT_INSN;
		lay->entry_trap = 0;
		lay->exit_trap = 1 + emit_alloc(buf + 1, 1, reloc);
		break;
	case TRAMP_FREE:
		buf[0] = BKPT_INSN;
		lay->entry_trap = 0;
		buf[1] = JMP_REL32;
		put_rel32(buf + 2, reloc - (1 + RELOC_JMP_LEN));
		break;
	}
	memcpy(buf + reloc, r->code, r->code_len);
	lay->reloc_off = reloc;
	lay->size = reloc + r->code_len;
	return 0;
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
