/* Where a global variable is declared (file:line from DWARF), to name the roots that hold memory. */
/* SPDX-License-Identifier: MIT */
#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "snapshot/globals.h"

#define MAX_VARS (1u << 20)     /* variables kept at most */
#define MAX_DEPTH 8             /* namespaces and classes looked into */

struct gvar {
	uint64_t addr;
	char *file;
	int line;
};

struct snapglobals {
	struct gvar *v;
	size_t n, cap;
};

/* The static address of variable die (DW_AT_location: DW_OP_addr), 0 if none. */
static uint64_t var_addr(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr(die, DW_AT_location, &at) || dwarf_getlocation(&at, &ops, &nops) ||
	    nops != 1 || ops[0].atom != DW_OP_addr)
		return 0;
	return ops[0].number;
}

/* The variables under die (a unit, a namespace, a class), depth levels down. */
static void walk(struct snapglobals *g, Dwarf_Die *parent, unsigned depth)
{
	Dwarf_Die die;

	if (depth > MAX_DEPTH || dwarf_child(parent, &die))
		return;
	do {
		int tag = dwarf_tag(&die);

		if (tag == DW_TAG_variable) {
			uint64_t a = var_addr(&die);
			const char *f = dwarf_decl_file(&die);
			int line = 0;

			if (!a || !f || dwarf_decl_line(&die, &line) || g->n == MAX_VARS)
				continue;
			if (g->n == g->cap) {
				g->cap = g->cap ? 2 * g->cap : 256;
				g->v = xrealloc(g->v, g->cap * sizeof(*g->v));
			}
			g->v[g->n++] = (struct gvar){ a, xstrdup(strrchr(f, '/') ? strrchr(f, '/') + 1 : f),
						      line };
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_structure_type ||
			   tag == DW_TAG_class_type) {
			walk(g, &die, depth + 1);
		}
	} while (dwarf_siblingof(&die, &die) == 0);
}

static int cmp_var(const void *a, const void *b)
{
	const struct gvar *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

struct snapglobals *snapglobals_new(struct elfobj *e)
{
	struct Dwarf *dw = elfobj_dwarf_begin(e);
	struct snapglobals *g;
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (!dw)
		return NULL;
	g = xcalloc(1, sizeof(*g));
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			walk(g, &cu, 0);
		off = next;
	}
	dwarf_end(dw);
	if (g->n)
		qsort(g->v, g->n, sizeof(*g->v), cmp_var);
	return g;
}

void snapglobals_free(struct snapglobals *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].file);
	free(g->v);
	free(g);
}

int snapglobals_decl(const struct snapglobals *g, uint64_t vaddr, char *buf, size_t len)
{
	size_t lo = 0, hi = g ? g->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->v[mid].addr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!g || lo == g->n || g->v[lo].addr != vaddr)
		return -ENOENT;
	snprintf(buf, len, "%s:%d", g->v[lo].file, g->v[lo].line);
	return 0;
}
