/* libFuzzer target: DWARF through libdw as heapattach reads it: line lookups (symbolize.c), CFI rules (frametab.c), alt files (debugfile.c), compressed sections (zsection.c). */
/* SPDX-License-Identifier: MIT */
#include <dwarf.h>
#include <elf.h>
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "model/debugfile.h"
#include "model/elfobj.h"
#include "stacks/frametab.h"
#include "shm.h"
#include "model/zsection.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ADDRS 48

/* What symbolizer_lookup asks libdw for one address. */
static void line_of(Dwarf *dw, uint64_t a)
{
	Dwarf_Attribute at;
	Dwarf_Line *line;
	Dwarf_Die cu;
	int lineno;

	if (!dwarf_addrdie(dw, a, &cu))
		return;
	dwarf_diename(&cu);
	dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at));
	line = dwarf_getsrc_die(&cu, a);
	if (line) {
		dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &lineno);
	}
}

/* Once libdw has begun on e, no section it would read may still be
 * compressed: zsection inflated or emptied every one. */
static void check_inflated(const struct elfobj *e)
{
	Elf *elf = elfobj_elf(e);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_ALLOC))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)) &&
		    (sh.sh_flags & SHF_COMPRESSED))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct elfobj_segment *seg;
	const struct elfobj_sym *syms;
	struct debugfile_dwarf dd;
	uint64_t addrs[MAX_ADDRS];
	struct elfobj *e;
	size_t n = 0, ns, nseg;
	struct shm_frame r;

	/* no budget for the whole run: every input may inflate (its sections
	 * declare at most 1032 times its size) */
	zsection_total_max = UINT64_MAX;
	zsection_section_max = 64ULL << 20;
	e = elfobj_open_mem(data, size);
	if (!e)
		return 0;
	/* addresses: segment starts, function symbols, one from the input's tail */
	seg = elfobj_segments(e, &nseg);
	for (size_t i = 0; i < nseg && n < MAX_ADDRS / 4; i++) {
		addrs[n++] = seg[i].vaddr;
		addrs[n++] = seg[i].vaddr + seg[i].memsz / 2;
	}
	syms = elfobj_syms(e, &ns);
	for (size_t i = 0; i < ns && n < MAX_ADDRS - 1; i++)
		if (syms[i].type == STT_FUNC && syms[i].value)
			addrs[n++] = syms[i].value + syms[i].size / 2;
	if (size >= 8)
		memcpy(&addrs[n++], data + size - 8, 8);
	if (debugfile_dwarf_begin(&dd, e, -1, TFILE_SELF, NULL) == 0) {
		check_inflated(e);
		for (size_t i = 0; i < n; i++)
			line_of(dd.dw, addrs[i]);
		debugfile_dwarf_end(&dd);
	}
	for (size_t i = 0; i < n; i++)
		frametab_rule_elf(e, addrs[i], &r);
	elfobj_free(e);
	return 0;
}
