/* What a snapshot's blocks hold: a C++ object's class by its vtable pointer, else its size class. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/target.h"
#include "snapshot/types.h"
#include "stacks/symbolize.h"

struct vtable {
	uint64_t lo, hi;        /* a vtable's words past the first (offset to top) */
	uint32_t name;
};

struct vtables {
	struct vtable *v;
	size_t n, cap;
};

static int cmp_vt(const void *a, const void *b)
{
	const struct vtable *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The vtables of object e (loaded with bias) into vt. */
static void object_vtables(struct elfobj *e, uint64_t bias, struct snapnames *names,
			   struct vtables *vt)
{
	size_t n;
	const struct elfobj_sym *s = elfobj_syms(e, &n);

	for (size_t i = 0; i < n; i++) {
		char *d;
		const char *cls;

		if (strncmp(s[i].name, "_ZTV", 4) || s[i].size <= 8 || !s[i].value)
			continue;
		d = symbolize_demangle(s[i].name);
		cls = d && !strncmp(d, "vtable for ", 11) ? d + 11 : d ? d : s[i].name;
		if (vt->n == vt->cap) {
			vt->cap = vt->cap ? 2 * vt->cap : 256;
			vt->v = xrealloc(vt->v, vt->cap * sizeof(*vt->v));
		}
		vt->v[vt->n++] = (struct vtable){ bias + s[i].value + 8, bias + s[i].value + s[i].size,
						  snapnames_id(names, cls) };
		free(d);
	}
}

/* Every object's vtables, each object once (its first mapping). */
static void all_vtables(struct target *t, const struct proc_maps *maps, struct snapnames *names,
			struct vtables *vt)
{
	const struct elfobj **seen = xcalloc(maps->n + 1, sizeof(*seen));
	size_t nseen = 0;

	for (size_t i = 0; t && i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		struct elfobj *e;
		uint64_t bias;
		size_t k;

		if (!m->path || m->path[0] != '/' || !(m->prot & PROC_MAP_X))
			continue;
		e = target_object(t, m, TARGET_OBJ_SYMS, NULL);
		if (!e || target_map_bias(t, m, e, &bias))
			continue;
		for (k = 0; k < nseen && seen[k] != e; k++)
			;
		if (k < nseen)
			continue;
		seen[nseen++] = e;
		object_vtables(e, bias, names, vt);
	}
	free(seen);
	if (vt->n)
		qsort(vt->v, vt->n, sizeof(*vt->v), cmp_vt);
}

/* The vtable holding w, or NULL. */
static const struct vtable *vtable_of(const struct vtables *vt, uint64_t w)
{
	size_t lo = 0, hi = vt->n;

	while (lo < hi) {	/* the first vtable starting above w */
		size_t mid = lo + (hi - lo) / 2;

		if (vt->v[mid].lo <= w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && w < vt->v[lo - 1].hi ? &vt->v[lo - 1] : NULL;
}

#define NCLASSES 41                     /* 16 B << 0 .. 40 */

/* "[N B]": the size class of a block of size usable bytes, its name made
 * once per class (ids[], UINT32_MAX where not yet). */
static uint32_t size_class(struct snapnames *names, uint64_t size, uint32_t *ids)
{
	uint64_t c = 16;
	unsigned k = 0;

	while (c < size && k + 1 < NCLASSES) {
		c <<= 1;
		k++;
	}
	if (ids[k] != UINT32_MAX)
		return ids[k];
	if (c >= 1 << 20)
		ids[k] = snapnames_idf(names, "[%llu MiB]", (unsigned long long)(c >> 20));
	else if (c >= 1 << 10)
		ids[k] = snapnames_idf(names, "[%llu KiB]", (unsigned long long)(c >> 10));
	else
		ids[k] = snapnames_idf(names, "[%llu B]", (unsigned long long)c);
	return ids[k];
}

size_t snaptypes_classify(struct target *t, const struct proc_maps *maps, struct heapgraph *g,
			  struct snapnames *names)
{
	static struct hg_span spans[HG_BATCH];
	static uint64_t first[HG_BATCH];
	struct vtables vt = { 0 };
	uint32_t ids[NCLASSES];
	size_t classed = 0;

	memset(ids, 0xff, sizeof(ids));
	all_vtables(t, maps, names, &vt);
	for (size_t at = 0; at < g->n; at += HG_BATCH) {
		size_t n = g->n - at < HG_BATCH ? g->n - at : HG_BATCH;
		int ok;

		for (size_t i = 0; i < n; i++)
			spans[i] = (struct hg_span){ g->addr[at + i], 8 };
		ok = vt.n && g->read(g->read_arg, spans, n, (uint8_t *)first) == 0;
		for (size_t i = 0; i < n; i++) {
			const struct vtable *v = ok && g->size[at + i] >= 8 ? vtable_of(&vt, first[i]) :
									       NULL;

			g->type[at + i] = v ? v->name : size_class(names, heapgraph_size(g, at + i), ids);
			classed += v != NULL;
		}
	}
	free(vt.v);
	return classed;
}
