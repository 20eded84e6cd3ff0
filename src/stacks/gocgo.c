/* Go's cgo calls in one object: where runtime.asmcgocall and runtime.cgocall lie, and the hop rule. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <gelf.h>
#include <stddef.h>
#include <string.h>

#include "disasm.h"
#include "model/elfobj.h"
#include "stacks/gocgo.h"

#define GOCGO_CODE_MAX 4096	/* asmcgocall is some 200 bytes */

int gocgo_is_go(const struct elfobj *e)
{
	Elf *elf = elfobj_elf(e);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return 0;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".note.go.buildid") || !strcmp(name, ".go.buildinfo")))
			return 1;
	}
	return 0;
}

/* The range of function symbol name in e: 0, or -ENOENT (none, or one no
 * rule can carry: empty, or longer than a u16). */
static int func_range(const struct elfobj *e, const char *name, uint64_t *lo, uint64_t *hi)
{
	const struct elfobj_sym *s = elfobj_lookup(e, name, 0);

	if (!s || s->type != STT_FUNC || !s->size || s->size > UINT16_MAX ||
	    s->value > UINT64_MAX - s->size)
		return -ENOENT;
	*lo = s->value;
	*hi = s->value + s->size;
	return 0;
}

int gocgo_find(const struct elfobj *e, struct gocgo *g)
{
	memset(g, 0, sizeof(*g));
	if (func_range(e, "runtime.asmcgocall.abi0", &g->asm_lo, &g->asm_hi) &&
	    func_range(e, "runtime.asmcgocall", &g->asm_lo, &g->asm_hi))
		return -ENOENT;
	if (func_range(e, "runtime.cgocall", &g->call_lo, &g->call_hi)) {
		memset(g, 0, sizeof(*g));
		return -ENOENT;
	}
	return 0;
}

size_t gocgo_returns(const struct elfobj *e, const struct gocgo *g, uint64_t *out, size_t max)
{
	uint8_t code[GOCGO_CODE_MAX];
	size_t len = g->asm_hi - g->asm_lo;

	if (!len || len > sizeof(code) || elfobj_read(e, g->asm_lo, code, len))
		return 0;
	return disasm_call_returns(code, len, g->asm_lo, out, max);
}

int gocgo_rule(const struct gocgo *g, uint64_t ip, uint64_t bias, struct shm_frame *out)
{
	uint64_t pc = ip - 1 - bias;	/* the call instruction, link-time */
	int64_t off = (int64_t)(g->call_lo + bias - ip);

	if (!g->asm_hi || pc < g->asm_lo || pc >= g->asm_hi || off < INT32_MIN || off > INT32_MAX)
		return -ENOENT;
	memset((char *)out + offsetof(struct shm_frame, cfa_off), 0,
	       sizeof(*out) - offsetof(struct shm_frame, cfa_off));
	out->base = SHM_BASE_CGO;
	out->cfa_off = (int32_t)off;
	out->rbp_off = (int16_t)(uint16_t)(g->call_hi - g->call_lo);
	return 0;
}
