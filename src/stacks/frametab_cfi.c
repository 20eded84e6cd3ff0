/* Frame-rule table: DWARF CFI rows (libdw) compiled into the rules the agent walks with. */
/* SPDX-License-Identifier: MIT */
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model/elfobj.h"
#include "stacks/frametab.h"
#include "stacks/frametab_priv.h"
#include "stacks/gocgo.h"

#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

/* ---- CFI to rule ---- */

/* The CFI row for link-time address addr: .eh_frame first, then .debug_frame.
 * 0 with *frame to free(), or -ENOENT. */
int ft_find_frame(struct ft_obj *o, uint64_t addr, Dwarf_Frame **frame)
{
	if (o->eh && dwarf_cfi_addrframe(o->eh, addr, frame) == 0)
		return 0;
	if (!o->dbg_tried) {
		o->dbg_tried = 1;
		o->dw = elfobj_dwarf_begin(o->elf);
		if (o->dw)
			o->dbg = dwarf_getcfi(o->dw);
	}
	if (o->dbg && dwarf_cfi_addrframe(o->dbg, addr, frame) == 0)
		return 0;
	return -ENOENT;
}

/*
 * Match a location "CFA + off" as libdw spells the offset(N) rule:
 * [DW_OP_call_frame_cfa] or [DW_OP_call_frame_cfa, DW_OP_plus_uconst N]
 * (N two's complement for negative offsets); also accepts
 * [DW_OP_call_frame_cfa, DW_OP_consts N, DW_OP_plus]. 1 on a match.
 */
static int cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return 0;
	if (nops == 1) {
		*off = 0;
		return 1;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) &&
	    ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return 0;
}

/* CFA = register + off with register rsp or rbp: 0, or -ENOENT. */
static int cfa_rule(Dwarf_Frame *fr, uint8_t *base, int64_t *off)
{
	Dwarf_Op *ops;
	size_t nops;
	unsigned reg;

	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1)
		return -ENOENT;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		*off = (int64_t)ops[0].number;
	} else if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		*off = (int64_t)ops[0].number2;
	} else {
		return -ENOENT;
	}
	if (reg == DWARF_REG_RSP)
		*base = SHM_BASE_RSP;
	else if (reg == DWARF_REG_RBP)
		*base = SHM_BASE_RBP;
	else
		return -ENOENT;
	return 0;
}

/* Translate one CFI row into *out (ip untouched): 0, or -ENOENT. */
static int compile_rule(Dwarf_Frame *fr, struct shm_frame *out)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t cfa_off, ra_off, rbp_off;
	uint8_t base;
	bool signal = false;

	memset((char *)out + offsetof(struct shm_frame, cfa_off), 0,
	       sizeof(*out) - offsetof(struct shm_frame, cfa_off));
	/* The caller of a signal frame is interrupted code: its pc is exact,
	 * which the agent cannot tell from a return address. */
	if (dwarf_frame_info(fr, NULL, NULL, &signal) < 0 || signal)
		return -ENOENT;
	if (dwarf_frame_register(fr, DWARF_REG_RA, mem, &ops, &nops))
		return -ENOENT;
	if (nops == 0 && ops == mem) {
		/* return address undefined: outermost frame */
		out->base = SHM_BASE_END;
		return 0;
	}
	if (!cfa_plus(ops, nops, &ra_off) || ra_off != -8)
		return -ENOENT;
	if (cfa_rule(fr, &base, &cfa_off) || cfa_off < INT32_MIN || cfa_off > INT32_MAX)
		return -ENOENT;
	out->base = base;
	out->cfa_off = (int32_t)cfa_off;
	if (dwarf_frame_register(fr, DWARF_REG_RBP, mem, &ops, &nops))
		return -ENOENT;
	/* "same value" (ops NULL) or "undefined" (ops == mem): rbp is left as is */
	if (nops == 0)
		return 0;
	if (!cfa_plus(ops, nops, &rbp_off) || rbp_off < INT16_MIN || rbp_off > INT16_MAX)
		return -ENOENT;
	out->rbp_saved = 1;
	out->rbp_off = (int16_t)rbp_off;
	return 0;
}

/* The hop rule (gocgo_rule) for return address ip: 0 with *out, or
 * -ENOENT (not a return address in a Go object's asmcgocall), or
 * resolve's error. */
int ft_go_hop(struct frametab *ft, uint64_t ip, struct shm_frame *out)
{
	struct ft_obj *o;
	uint64_t bias;
	int ret = ft_resolve(ft, ip - 1, &o, &bias);

	if (ret)
		return ret;
	return o->go > 0 ? gocgo_rule(&o->go_cgo, ip, bias, out) : -ENOENT;
}

int frametab_rule(struct frametab *ft, uint64_t ip, unsigned flags, struct shm_frame *out)
{
	uint64_t pc = (flags & FRAMETAB_IP_EXACT) ? ip : ip - 1;
	Dwarf_Frame *fr = NULL;
	struct ft_obj *o;
	uint64_t bias;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!ip)
		return -ENOENT;
	ret = ft_resolve(ft, pc, &o, &bias);
	if (ret)
		return ret;
	/* Go's asmcgocall: its CFI does not see it switch stacks */
	if (o->go > 0 && !(flags & FRAMETAB_IP_EXACT) && !gocgo_rule(&o->go_cgo, ip, bias, out))
		return 0;
	ret = ft_find_frame(o, pc - bias, &fr);
	if (ret) {
		/* code of an object whose CFI does not cover it (node's
		 * builtins): a frame-pointer frame, as libunwind would take it
		 * (CFA = rbp + 16, the caller's rbp at CFA - 16) */
		*out = (struct shm_frame){ .base = SHM_BASE_RBP, .cfa_off = 16, .rbp_saved = 1,
					   .rbp_off = -16 };
		ft->st.fp_frames++;
		return 0;
	}
	ret = compile_rule(fr, out);
	free(fr);
	return ret;
}

int frametab_rule_elf(struct elfobj *e, uint64_t addr, struct shm_frame *out)
{
	struct ft_obj o = { .elf = e, .eh = dwarf_getcfi_elf(elfobj_elf(e)) };
	Dwarf_Frame *fr = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = ft_find_frame(&o, addr, &fr);
	if (!ret) {
		ret = compile_rule(fr, out);
		free(fr);
	}
	if (o.dw)
		dwarf_end(o.dw);
	if (o.eh)
		dwarf_cfi_end(o.eh);
	return ret;
}
