/* What generic code asks of machine code (x86-64, capstone): PLT stubs, direct branches and data references. */
/* SPDX-License-Identifier: MIT */
#include <capstone/capstone.h>

#include "disasm.h"

/* A capstone handle with instruction details, opened once. 0 or -1. */
static int handle(csh *cs)
{
	static csh h;
	static int state;	/* 0: not tried, 1: open, -1: failed */

	if (!state) {
		state = cs_open(CS_ARCH_X86, CS_MODE_64, &h) == CS_ERR_OK ? 1 : -1;
		if (state > 0)
			cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	}
	*cs = h;
	return state > 0 ? 0 : -1;
}

uint64_t disasm_plt_slot(const uint8_t *code, size_t len, uint64_t vaddr)
{
	uint64_t slot = 0;
	cs_insn *insn;
	size_t n;
	csh cs;

	if (handle(&cs))
		return 0;
	n = cs_disasm(cs, code, len, vaddr, 2, &insn);
	for (size_t i = 0; i < n; i++) {
		cs_x86 *x = &insn[i].detail->x86;

		if (insn[i].id == X86_INS_ENDBR64)
			continue;
		if (insn[i].id == X86_INS_JMP && x->op_count == 1 &&
		    x->operands[0].type == X86_OP_MEM &&
		    x->operands[0].mem.base == X86_REG_RIP)
			slot = insn[i].address + insn[i].size + x->operands[0].mem.disp;
		break;
	}
	if (n)
		cs_free(insn, n);
	return slot;
}

size_t disasm_branches(const uint8_t *code, size_t len, uint64_t vaddr,
		       struct disasm_branch *out, size_t max)
{
	size_t n, found = 0;
	cs_insn *insn;
	csh cs;

	if (handle(&cs))
		return 0;
	n = cs_disasm(cs, code, len, vaddr, 0, &insn);
	for (size_t i = 0; i < n && found < max; i++) {
		cs_x86 *x = &insn[i].detail->x86;
		int call = insn[i].id == X86_INS_CALL;

		if ((insn[i].id != X86_INS_JMP && !call) || x->op_count != 1 ||
		    x->operands[0].type != X86_OP_IMM)
			continue;
		out[found++] = (struct disasm_branch){ insn[i].address,
						      (uint64_t)x->operands[0].imm, call };
	}
	if (n)
		cs_free(insn, n);
	return found;
}

size_t disasm_data_refs(const uint8_t *code, size_t len, uint64_t vaddr,
			struct disasm_ref *out, size_t max)
{
	size_t n, found = 0;
	cs_insn *insn;
	csh cs;

	if (handle(&cs))
		return 0;
	n = cs_disasm(cs, code, len, vaddr, 0, &insn);
	for (size_t i = 0; i < n && found < max; i++) {
		cs_x86 *x = &insn[i].detail->x86;
		int lea = insn[i].id == X86_INS_LEA;

		for (unsigned k = 0; k < x->op_count && found < max; k++) {
			const cs_x86_op *op = &x->operands[k];

			if (op->type != X86_OP_MEM || op->mem.base != X86_REG_RIP ||
			    op->mem.index != X86_REG_INVALID)
				continue;
			out[found++] = (struct disasm_ref){
				insn[i].address, insn[i].address + insn[i].size + op->mem.disp,
				lea ? 0 : op->size };
		}
	}
	if (n)
		cs_free(insn, n);
	return found;
}
