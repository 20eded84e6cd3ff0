/* What generic code asks of machine code (x86-64, capstone): PLT stubs, direct branches, data references, whether a call's result is returned. */
/* SPDX-License-Identifier: MIT */
#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>

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

/* The instructions of code[0..len) from vaddr, at most max (0: all), into
 * *insn (cs_free it): how many, 0 if none or no handle. */
static size_t decode(const uint8_t *code, size_t len, uint64_t vaddr, size_t max, cs_insn **insn)
{
	csh cs;

	if (handle(&cs))
		return 0;
	return cs_disasm(cs, code, len, vaddr, max, insn);
}

uint64_t disasm_plt_slot(const uint8_t *code, size_t len, uint64_t vaddr)
{
	uint64_t slot = 0;
	cs_insn *insn;
	size_t n;

	n = decode(code, len, vaddr, 2, &insn);
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

	n = decode(code, len, vaddr, 0, &insn);
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

size_t disasm_call_returns(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *out,
			   size_t max)
{
	size_t n, found = 0;
	cs_insn *insn;

	n = decode(code, len, vaddr, 0, &insn);
	for (size_t i = 0; i < n && found < max; i++)
		if (insn[i].id == X86_INS_CALL)
			out[found++] = insn[i].address + insn[i].size;
	if (n)
		cs_free(insn, n);
	return found;
}

size_t disasm_data_refs(const uint8_t *code, size_t len, uint64_t vaddr,
			struct disasm_ref *out, size_t max)
{
	size_t n, found = 0;
	cs_insn *insn;

	n = decode(code, len, vaddr, 0, &insn);
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

/* ---- does a call's result reach the return? ---- */

#define FLOW_INSNS 256          /* instructions decoded over all paths */
#define FLOW_PATHS 32           /* pending branches at most */

/* The general register (0 rax .. 15 r15) that reg is part of, or -1. */
static int gpr_of(csh cs, unsigned reg)
{
	static const char *const alias[16] = {
		" rax eax ax al ah ", " rcx ecx cx cl ch ", " rdx edx dx dl dh ",
		" rbx ebx bx bl bh ", " rsp esp sp spl ", " rbp ebp bp bpl ", " rsi esi si sil ",
		" rdi edi di dil ", " r8 r8d r8w r8b ", " r9 r9d r9w r9b ", " r10 r10d r10w r10b ",
		" r11 r11d r11w r11b ", " r12 r12d r12w r12b ", " r13 r13d r13w r13b ",
		" r14 r14d r14w r14b ", " r15 r15d r15w r15b ",
	};
	const char *name = cs_reg_name(cs, reg);
	char word[16];

	if (!name || strlen(name) > 8)
		return -1;
	snprintf(word, sizeof(word), " %s ", name);
	for (int i = 0; i < 16; i++)
		if (strstr(alias[i], word))
			return i;
	return -1;
}

#define RAX 1u
/* rbx, rsp, rbp, r12-r15: what a call leaves as it was (System V) */
#define CALLEE_SAVED ((1u << 3) | (1u << 4) | (1u << 5) | (0xfu << 12))

struct flow_path {
	uint64_t at;
	unsigned holders;       /* registers holding the result, bit per gpr_of */
};

/* One instruction's effect on the registers that hold the result:
 * a 64-bit register copy moves it, any other write drops it. */
static unsigned flow_step(csh cs, const cs_insn *in, unsigned holders)
{
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && x->operands[0].size == 8) {
		int d = gpr_of(cs, x->operands[0].reg), s = gpr_of(cs, x->operands[1].reg);

		if (d >= 0 && s >= 0)
			return (holders & ~(1u << d)) | ((holders >> s & 1u) << d);
	}
	if (in->id == X86_INS_CALL)
		return holders & CALLEE_SAVED;
	if (cs_regs_access(cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return 0;
	for (unsigned k = 0; k < nwr; k++) {
		int g = gpr_of(cs, wr[k]);

		if (g >= 0)
			holders &= ~(1u << g);
	}
	return holders;
}

/* A "test R, R" of a register holding the result: the next jump's
 * equal branch sees it NULL. */
static int tests_holder(csh cs, const cs_insn *in, unsigned holders)
{
	const cs_x86 *x = &in->detail->x86;
	int g;

	if (in->id != X86_INS_TEST || x->op_count != 2 || x->operands[0].type != X86_OP_REG ||
	    x->operands[1].type != X86_OP_REG || x->operands[0].reg != x->operands[1].reg ||
	    x->operands[0].size != 8)
		return 0;
	g = gpr_of(cs, x->operands[0].reg);
	return g >= 0 && (holders >> g & 1u);
}

int disasm_returns_result(const uint8_t *code, size_t len, uint64_t vaddr)
{
	struct flow_path todo[FLOW_PATHS];
	size_t ntodo = 1, budget = FLOW_INSNS;
	cs_insn *in;
	csh cs;
	int ok = 1;

	if (handle(&cs))
		return 0;
	in = cs_malloc(cs);
	if (!in)
		return 0;
	todo[0] = (struct flow_path){ vaddr, RAX };
	while (ntodo && ok) {
		struct flow_path p = todo[--ntodo];
		int tested = 0;

		for (;;) {
			const uint8_t *c;
			size_t left;
			uint64_t a = p.at;
			const cs_x86 *x;

			if (p.at < vaddr || p.at - vaddr >= len || !budget--) {
				ok = 0;
				break;
			}
			c = code + (p.at - vaddr);
			left = len - (p.at - vaddr);
			if (!cs_disasm_iter(cs, &c, &left, &a, in)) {
				ok = 0;
				break;
			}
			x = &in->detail->x86;
			p.at = a;
			if (in->id == X86_INS_RET) {
				ok = (p.holders & RAX) != 0;
				break;
			}
			if (in->id == X86_INS_UD2 || in->id == X86_INS_HLT || in->id == X86_INS_INT3)
				break;	/* this path never returns */
			if (cs_insn_group(cs, in, X86_GRP_JUMP)) {
				uint64_t to;

				if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM) {
					ok = 0;	/* indirect: a tail call or a table */
					break;
				}
				to = (uint64_t)x->operands[0].imm;
				if (in->id == X86_INS_JMP) {
					p.at = to;
				} else if (tested && in->id == X86_INS_JE) {
					;	/* taken when NULL: that path may do anything */
				} else if (tested && in->id == X86_INS_JNE) {
					p.at = to;	/* falls through when NULL */
				} else if (ntodo < FLOW_PATHS) {
					todo[ntodo++] = (struct flow_path){ to, p.holders };
				} else {
					ok = 0;
					break;
				}
				tested = 0;
				continue;
			}
			tested = tests_holder(cs, in, p.holders);
			p.holders = flow_step(cs, in, p.holders);
			if (!p.holders) {
				ok = 0;
				break;
			}
		}
	}
	cs_free(in, 1);
	return ok;
}
