/* Relocate the instructions a 5-byte jmp rel32 overwrites (capstone, x86-64). */
/* SPDX-License-Identifier: MIT */
/*
 * Two passes over the overwritten region.  The first decodes whole
 * instructions from the patch address until 5 bytes are covered and
 * classifies each one: copied as is, copied with its RIP-relative disp32
 * adjusted, or a direct branch re-emitted in its rel32 form (jmp, jcc, and
 * call when allowed).  Everything else that depends on where it runs or
 * that a live thread could be parked after (syscall, call) is refused.  The
 * second pass lays the copies out, maps branch targets that fall inside the
 * region to their copies, and encodes everything for the new address.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <capstone/capstone.h>

#include "reloc.h"

enum insn_kind {
	K_COPY,		/* position independent: copy the bytes */
	K_RIPREL,	/* copy, then rewrite disp32 */
	K_JMP,		/* jmp rel8/rel32 -> jmp rel32 */
	K_JCC,		/* jcc rel8/rel32 -> jcc rel32 */
	K_CALL,		/* call rel32 -> call rel32 */
};

struct plan {
	uint32_t off;		/* from patch_addr */
	uint8_t len;
	uint8_t kind;
	uint8_t cc;		/* condition code of a jcc (low nibble) */
	uint8_t disp_pos;	/* K_RIPREL: offset of disp32 in the insn */
	uint64_t target;	/* branch target or RIP-relative effective address */
	uint32_t new_off;
	uint8_t new_len;
};

static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* Format "+0xOFF: reason" into out->why; returns err. */
static int refuse(struct reloc_result *out, uint64_t addr, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(out->why, sizeof(out->why), "+0x%llx: ",
		     (unsigned long long)(addr - out->from));
	if (n < 0 || (size_t)n >= sizeof(out->why))
		return err;
	va_start(ap, fmt);
	vsnprintf(out->why + n, sizeof(out->why) - n, fmt, ap);
	va_end(ap);
	return err;
}

static bool fits_rel32(int64_t d)
{
	return d >= INT32_MIN && d <= INT32_MAX;
}

static void put_le32(uint8_t *p, int32_t v)
{
	uint32_t u = (uint32_t)v;

	p[0] = u;
	p[1] = u >> 8;
	p[2] = u >> 16;
	p[3] = u >> 24;
}

static int32_t get_le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

int reloc_encode_jmp(uint8_t buf[RELOC_JMP_LEN], uint64_t at, uint64_t target)
{
	int64_t d = (int64_t)(target - (at + RELOC_JMP_LEN));

	if (!fits_rel32(d))
		return -ERANGE;
	buf[0] = 0xe9;
	put_le32(buf + 1, (int32_t)d);
	return 0;
}

int reloc_decode_jmp(const uint8_t buf[RELOC_JMP_LEN], uint64_t at, uint64_t *target)
{
	int32_t d;

	if (buf[0] != 0xe9)
		return -EINVAL;
	memcpy(&d, buf + 1, sizeof(d));
	*target = at + RELOC_JMP_LEN + (uint64_t)(int64_t)d;
	return 0;
}

size_t reloc_patch_skip(const uint8_t *code, size_t avail)
{
	return avail >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)) ?
	       sizeof(endbr64) : 0;
}

/*
 * Offset of the first opcode byte after legacy and REX prefixes, or -1 if
 * none is left.  *opsize is set when a 0x66 prefix was seen.
 */
static int opcode_pos(const uint8_t *b, size_t len, bool *opsize)
{
	size_t i;

	*opsize = false;
	for (i = 0; i < len; i++) {
		switch (b[i]) {
		case 0x66:
			*opsize = true;
			/* fall through */
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64:
		case 0x65: case 0x67: case 0xf0: case 0xf2: case 0xf3:
			continue;
		}
		if ((b[i] & 0xf0) == 0x40)
			continue;
		return (int)i;
	}
	return -1;
}

/*
 * Position of the disp32 of a RIP-relative operand with displacement disp:
 * right after the ModRM byte (RIP-relative addressing has no SIB).  Falls
 * back to a unique match of "ModRM 00 reg 101 + disp32" in the bytes.
 * Returns the position or -1.
 */
static int riprel_disp_pos(const cs_insn *insn, int64_t disp)
{
	const uint8_t *b = insn->bytes;
	int mo = insn->detail->x86.encoding.modrm_offset;
	int found = -1;

	if (mo > 0 && mo + 5 <= insn->size && (b[mo] & 0xc7) == 0x05 &&
	    get_le32(b + mo + 1) == (int32_t)disp)
		return mo + 1;
	for (int i = 1; i + 5 <= insn->size; i++) {
		if ((b[i] & 0xc7) != 0x05 || get_le32(b + i + 1) != (int32_t)disp)
			continue;
		if (found >= 0)
			return -1;
		found = i + 1;
	}
	return found;
}

static bool is_id(unsigned int id, const unsigned int *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Instructions never relocated, whatever their encoding. */
static const unsigned int refused_ids[] = {
	X86_INS_SYSCALL, X86_INS_SYSENTER, X86_INS_INT, X86_INS_INT1,
	X86_INS_INT3, X86_INS_INTO, X86_INS_LOOP, X86_INS_LOOPE,
	X86_INS_LOOPNE, X86_INS_JRCXZ, X86_INS_JECXZ, X86_INS_JCXZ,
	X86_INS_XBEGIN, X86_INS_RET, X86_INS_RETF, X86_INS_RETFQ,
	X86_INS_IRET, X86_INS_IRETD, X86_INS_IRETQ, X86_INS_HLT,
	X86_INS_UD2, X86_INS_UD0,
};

/*
 * Classify one decoded instruction into *p.  Returns 0, or a refusal
 * (-EINVAL with out->why set).
 */
static int classify(csh cs, const cs_insn *insn, unsigned int flags,
		    struct plan *p, struct reloc_result *out)
{
	const cs_x86 *x = &insn->detail->x86;
	uint64_t next = insn->address + insn->size;
	bool opsize;
	int op;

	p->len = insn->size;
	p->kind = K_COPY;
	if (is_id(insn->id, refused_ids, sizeof(refused_ids) / sizeof(refused_ids[0])) ||
	    cs_insn_group(cs, insn, CS_GRP_INT) || cs_insn_group(cs, insn, CS_GRP_RET) ||
	    cs_insn_group(cs, insn, CS_GRP_IRET))
		return refuse(out, insn->address, -EINVAL, "%s%s%s in patched bytes",
			      insn->mnemonic, *insn->op_str ? " " : "", insn->op_str);

	op = opcode_pos(insn->bytes, insn->size, &opsize);
	if (op < 0)
		return refuse(out, insn->address, -EINVAL, "no opcode byte");
	if (cs_insn_group(cs, insn, CS_GRP_JUMP) || cs_insn_group(cs, insn, CS_GRP_CALL)) {
		const uint8_t *b = insn->bytes + op;
		bool is_call = cs_insn_group(cs, insn, CS_GRP_CALL);

		if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
			return refuse(out, insn->address, -EINVAL, "indirect %s",
				      is_call ? "call" : "jmp");
		if (opsize)
			return refuse(out, insn->address, -EINVAL,
				      "16-bit operand size branch");
		p->target = (uint64_t)x->operands[0].imm;
		if (b[0] == 0xeb || b[0] == 0xe9) {
			p->kind = K_JMP;
		} else if ((b[0] & 0xf0) == 0x70) {
			p->kind = K_JCC;
			p->cc = b[0] & 0x0f;
		} else if (b[0] == 0x0f && op + 1 < insn->size && (b[1] & 0xf0) == 0x80) {
			p->kind = K_JCC;
			p->cc = b[1] & 0x0f;
		} else if (b[0] == 0xe8) {
			if (!(flags & RELOC_ALLOW_CALL))
				return refuse(out, insn->address, -EINVAL,
					      "call in patched bytes (a thread may return into them)");
			/* "call 1f; 1: pop" reads its own address: not movable */
			if (p->target == insn->address + insn->size)
				return refuse(out, insn->address, -EINVAL,
					      "call to the next instruction in patched bytes");
			p->kind = K_CALL;
		} else {
			return refuse(out, insn->address, -EINVAL,
				      "unsupported branch %s %s", insn->mnemonic, insn->op_str);
		}
		return 0;
	}

	for (int i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];
		int pos;

		if (o->type != X86_OP_MEM || o->mem.base != X86_REG_RIP)
			continue;
		if (o->mem.index != X86_REG_INVALID)
			return refuse(out, insn->address, -EINVAL, "RIP-relative with index");
		pos = riprel_disp_pos(insn, o->mem.disp);
		if (pos < 0)
			return refuse(out, insn->address, -EINVAL,
				      "cannot locate disp32 of %s %s", insn->mnemonic, insn->op_str);
		p->kind = K_RIPREL;
		p->disp_pos = pos;
		p->target = next + o->mem.disp;
		break;
	}
	return 0;
}

/*
 * Pass 1: decode and classify from patch_addr until RELOC_JMP_LEN bytes
 * are covered.  Fills plan[] and out->covered / out->n_insns.
 */
static int decode_region(csh cs, const uint8_t *code, size_t len, unsigned int flags,
			 struct plan *plan, struct reloc_result *out)
{
	cs_insn *insn;
	const uint8_t *p = code;
	size_t left = len;
	uint64_t addr = out->patch_addr;
	size_t n = 0;
	int ret = 0;

	insn = cs_malloc(cs);
	if (!insn)
		return refuse(out, addr, -ENOMEM, "capstone: out of memory");
	while (out->covered < RELOC_JMP_LEN) {
		if (!cs_disasm_iter(cs, &p, &left, &addr, insn)) {
			ret = refuse(out, addr, -EINVAL, left < 15 ?
				     "cannot decode (function shorter than 5 bytes?)" :
				     "cannot decode instruction");
			goto out;
		}
		if (n == RELOC_MAX_INSNS) {
			ret = refuse(out, insn->address, -EINVAL, "too many instructions");
			goto out;
		}
		plan[n].off = out->covered;
		ret = classify(cs, insn, flags, &plan[n], out);
		if (ret)
			goto out;
		out->covered += insn->size;
		n++;
		if (plan[n - 1].kind == K_JMP && out->covered < RELOC_JMP_LEN) {
			ret = refuse(out, insn->address, -EINVAL,
				     "jmp ends the function before 5 bytes");
			goto out;
		}
	}
	out->n_insns = n;
out:
	cs_free(insn, 1);
	return ret;
}

/* Pass 2: lay out the copies; fills new_off/new_len and out->map. */
static int layout(struct plan *plan, struct reloc_result *out)
{
	uint32_t off = 0;

	for (size_t i = 0; i < out->n_insns; i++) {
		struct plan *p = &plan[i];

		switch (p->kind) {
		case K_JMP:
		case K_CALL:
			p->new_len = 5;
			break;
		case K_JCC:
			p->new_len = 6;
			break;
		default:
			p->new_len = p->len;
		}
		p->new_off = off;
		out->map[i].orig_off = p->off;
		out->map[i].reloc_off = off;
		off += p->new_len;
	}
	if (off + RELOC_JMP_LEN > RELOC_MAX_CODE)
		return refuse(out, out->patch_addr, -EINVAL, "relocated code too long");
	out->code_len = off + RELOC_JMP_LEN;
	return 0;
}

/*
 * Final target of a branch: a target inside the overwritten bytes becomes
 * the matching instruction of the copy.  Returns 0 or -EINVAL.
 */
static int map_target(const struct plan *plan, uint64_t at, struct reloc_result *out,
		      uint64_t *target)
{
	uint64_t t = *target;

	if (t < out->patch_addr || t >= out->patch_addr + out->covered)
		return 0;
	for (size_t i = 0; i < out->n_insns; i++) {
		if (out->patch_addr + plan[i].off == t) {
			*target = out->to + plan[i].new_off;
			return 0;
		}
	}
	return refuse(out, at, -EINVAL, "branch into the middle of an instruction");
}

/* Pass 3: write the code for address out->to. */
static int emit(const uint8_t *code, const struct plan *plan, struct reloc_result *out)
{
	uint8_t *c = out->code;
	int ret;

	for (size_t i = 0; i < out->n_insns; i++) {
		const struct plan *p = &plan[i];
		uint64_t at = out->to + p->new_off;
		uint64_t orig = out->patch_addr + p->off;
		uint64_t t = p->target;
		int64_t d;

		switch (p->kind) {
		case K_COPY:
			memcpy(c + p->new_off, code + p->off, p->len);
			break;
		case K_RIPREL:
			memcpy(c + p->new_off, code + p->off, p->len);
			d = (int64_t)(t - (at + p->len));
			if (!fits_rel32(d))
				return refuse(out, orig, -ERANGE,
					      "RIP-relative target 0x%llx out of +-2 GB",
					      (unsigned long long)t);
			put_le32(c + p->new_off + p->disp_pos, (int32_t)d);
			break;
		case K_CALL:
			if (t >= out->patch_addr && t < out->patch_addr + out->covered)
				return refuse(out, orig, -EINVAL, "call into patched bytes");
			/* fall through */
		case K_JMP:
		case K_JCC:
			ret = map_target(plan, orig, out, &t);
			if (ret)
				return ret;
			d = (int64_t)(t - (at + p->new_len));
			if (!fits_rel32(d))
				return refuse(out, orig, -ERANGE,
					      "branch target 0x%llx out of +-2 GB",
					      (unsigned long long)t);
			if (p->kind == K_JCC) {
				c[p->new_off] = 0x0f;
				c[p->new_off + 1] = 0x80 | p->cc;
			} else {
				c[p->new_off] = p->kind == K_JMP ? 0xe9 : 0xe8;
			}
			put_le32(c + p->new_off + p->new_len - 4, (int32_t)d);
			break;
		}
	}
	if (reloc_encode_jmp(c + out->code_len - RELOC_JMP_LEN,
			     out->to + out->code_len - RELOC_JMP_LEN,
			     out->patch_addr + out->covered))
		return refuse(out, out->patch_addr, -ERANGE,
			      "relocated copy at 0x%llx out of +-2 GB",
			      (unsigned long long)out->to);
	return 0;
}

int reloc_prologue_flags(const uint8_t *code, size_t avail, uint64_t from, uint64_t to,
			 unsigned int flags, struct reloc_result *out)
{
	struct plan plan[RELOC_MAX_INSNS];
	csh cs;
	int ret;

	memset(out, 0, sizeof(*out));
	memset(plan, 0, sizeof(plan));
	out->from = from;
	out->to = to;
	out->skipped = reloc_patch_skip(code, avail);
	out->patch_addr = from + out->skipped;
	if (avail < out->skipped + RELOC_JMP_LEN)
		return refuse(out, out->patch_addr, -EINVAL, "function shorter than 5 bytes");

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return refuse(out, from, -ENOMEM, "capstone: cannot open");
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);

	ret = decode_region(cs, code + out->skipped, avail - out->skipped, flags, plan, out);
	if (ret)
		goto out;
	ret = layout(plan, out);
	if (ret)
		goto out;
	ret = emit(code + out->skipped, plan, out);
out:
	cs_close(&cs);
	if (ret)
		out->code_len = 0;
	return ret;
}

int reloc_prologue(const uint8_t *code, size_t avail, uint64_t from, uint64_t to,
		   struct reloc_result *out)
{
	return reloc_prologue_flags(code, avail, from, to, 0, out);
}

/* Direct branch target of insn into *t; false if insn is not one. */
static bool direct_target(csh cs, const cs_insn *insn, uint64_t *t)
{
	const cs_x86 *x = &insn->detail->x86;

	if (!cs_insn_group(cs, insn, CS_GRP_JUMP) && !cs_insn_group(cs, insn, CS_GRP_CALL) &&
	    !cs_insn_group(cs, insn, CS_GRP_BRANCH_RELATIVE) && insn->id != X86_INS_XBEGIN &&
	    insn->id != X86_INS_LOOP && insn->id != X86_INS_LOOPE &&
	    insn->id != X86_INS_LOOPNE)
		return false;
	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	*t = (uint64_t)x->operands[0].imm;
	return true;
}

int reloc_branch_into(const uint8_t *code, size_t size, uint64_t from,
		      uint64_t lo, uint64_t hi, uint64_t *where)
{
	const uint8_t *p = code;
	uint64_t addr = from;
	cs_insn *insn = NULL;
	size_t left = size;
	uint64_t t;
	csh cs;
	int ret = 0;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	if (!insn) {
		ret = -ENOMEM;
		goto out;
	}
	while (left) {
		if (!cs_disasm_iter(cs, &p, &left, &addr, insn)) {
			*where = addr;
			ret = -EINVAL;
			goto out;
		}
		if (direct_target(cs, insn, &t) && t > lo && t < hi) {
			*where = insn->address;
			ret = 1;
			goto out;
		}
	}
out:
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return ret;
}

int reloc_map_ip(const struct reloc_result *r, uint64_t ip, uint64_t *new_ip)
{
	if (ip <= r->patch_addr || ip >= r->patch_addr + r->covered)
		return -ENOENT;
	for (size_t i = 0; i < r->n_insns; i++) {
		if (r->patch_addr + r->map[i].orig_off == ip) {
			*new_ip = r->to + r->map[i].reloc_off;
			return 0;
		}
	}
	return -EINVAL;
}

int reloc_map_back(const struct reloc_result *r, uint64_t ip, uint64_t *orig)
{
	if (ip < r->to || ip - r->to >= r->code_len)
		return -ENOENT;
	if (ip - r->to == r->code_len - RELOC_JMP_LEN) {
		*orig = r->patch_addr + r->covered;	/* the jmp back */
		return 0;
	}
	for (size_t i = 0; i < r->n_insns && i < RELOC_MAX_INSNS; i++) {
		if (r->to + r->map[i].reloc_off == ip) {
			*orig = r->patch_addr + r->map[i].orig_off;
			return 0;
		}
	}
	return -EINVAL;
}
