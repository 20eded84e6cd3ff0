/* Where a snapshot's conservative scan starts: threads' registers and stacks, TLS, each object's data by symbol, other anonymous memory. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/target.h"
#include "snapshot/globals.h"
#include "snapshot/roots.h"
#include "stacks/symbolize.h"

#define RED_ZONE 128
#define TLS_BELOW (64u << 10)   /* the static TLS blocks under the thread pointer, at most */
#define TLS_ABOVE (4u << 10)    /* the thread's control block above it */

static void add(struct snaproots *r, uint64_t lo, uint64_t hi, uint32_t name)
{
	if (hi <= lo)
		return;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n++] = (struct snaproot){ lo, hi, name };
}

void snaproots_free(struct snaproots *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

void snaproots_cut(struct snaproots *r, const struct hg_span *cut, size_t n)
{
	struct snaproots out = { 0 };

	if (!n)
		return;
	for (size_t i = 0; i < r->n; i++) {
		uint64_t lo = r->v[i].lo, hi = r->v[i].hi;
		size_t a = 0, b = n;

		while (a < b) {	/* the first span ending after lo */
			size_t mid = a + (b - a) / 2;

			if (cut[mid].addr + cut[mid].len <= lo)
				a = mid + 1;
			else
				b = mid;
		}
		for (; a < n && cut[a].addr < hi && lo < hi; a++) {
			add(&out, lo, cut[a].addr, r->v[i].name);
			if (cut[a].addr + cut[a].len > lo)
				lo = cut[a].addr + cut[a].len;
		}
		add(&out, lo, hi, r->v[i].name);
	}
	snaproots_free(r);
	*r = out;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "?";
}

static int cmp_sym(const void *a, const void *b)
{
	const struct elfobj_sym *x = *(const struct elfobj_sym *const *)a;
	const struct elfobj_sym *y = *(const struct elfobj_sym *const *)b;

	return (x->value > y->value) - (x->value < y->value);
}

/* The last object's declarations of globals: one DWARF read per object. */
struct decls {
	const struct elfobj *e;
	struct snapglobals *g;
};

/* [lo, hi) of object file (its mapping fm, to find it and its bias): a
 * root per data symbol inside, named by where DWARF says it is declared
 * ("g_cache (cache.c:41)", else by the file), the gaps a root "data of FILE". */
static void data_roots(struct target *t, const struct proc_map *fm, uint64_t lo, uint64_t hi,
		       struct snapnames *names, struct snaproots *out, struct decls *dc)
{
	char decl[160], *dm;
	const char *file = base_name(fm->path);
	uint32_t rest = snapnames_idf(names, "data of %s", file);
	const struct elfobj_sym *syms, **in = NULL;
	struct elfobj *e = t ? target_object(t, fm, TARGET_OBJ_SYMS, NULL) : NULL;
	uint64_t bias, at = lo;
	size_t n = 0, k = 0;

	if (!e || target_map_bias(t, fm, e, &bias)) {
		add(out, lo, hi, rest);
		return;
	}
	if (dc->e != e) {
		snapglobals_free(dc->g);
		dc->g = snapglobals_new(e);
		dc->e = e;
	}
	syms = elfobj_syms(e, &n);
	in = xcalloc(n + 1, sizeof(*in));
	for (size_t i = 0; i < n; i++)
		if (syms[i].type == STT_OBJECT && syms[i].size && syms[i].shndx != SHN_UNDEF &&
		    syms[i].value + bias < hi && syms[i].value + bias + syms[i].size > lo)
			in[k++] = &syms[i];	/* one begun before lo too: .bss past a page */
	qsort(in, k, sizeof(*in), cmp_sym);
	for (size_t i = 0; i < k; i++) {
		uint64_t s = in[i]->value + bias, end = s + in[i]->size;

		if (s < lo && end > lo && at == lo)
			s = lo;		/* its part in [lo, hi) */
		if (s < at)
			continue;	/* an alias, or overlapping the one before */
		if (end > hi)
			end = hi;
		add(out, at, s, rest);
		if (snapglobals_decl(dc->g, in[i]->value, decl, sizeof(decl)))
			snprintf(decl, sizeof(decl), "%s", file);
		dm = symbolize_demangle(in[i]->name);
		add(out, s, end, snapnames_idf(names, "%s (%s)", dm ? dm : in[i]->name, decl));
		free(dm);
		at = end;
	}
	add(out, at, hi, rest);
	free(in);
}

/*
 * Where object file fm's writable data ends in memory (its .bss, page
 * aligned: the end of its highest writable PT_LOAD segment), so that an
 * anonymous mapping after its data is taken as its .bss only that far
 * (another allocator's arena may be mapped right after it). 0: unknown.
 */
static uint64_t data_end(struct target *t, const struct proc_map *fm)
{
	struct elfobj *e = t ? target_object(t, fm, 0, NULL) : NULL;
	const struct elfobj_segment *sg;
	uint64_t bias, end = 0;
	size_t n;

	if (!e || target_map_bias(t, fm, e, &bias))
		return 0;
	sg = elfobj_segments(e, &n);
	for (size_t i = 0; i < n; i++)
		if ((sg[i].flags & PF_W) && bias + sg[i].vaddr + sg[i].memsz > end)
			end = bias + sg[i].vaddr + sg[i].memsz;
	return (end + 4095) & ~4095ULL;
}

/* The mapping of maps holding addr, or NULL. */
static const struct proc_map *map_of(const struct proc_maps *maps, uint64_t addr)
{
	return proc_maps_find(maps, addr);
}

#define ARENA_ALIGN (64ULL << 20)       /* glibc's other arenas' heaps start so */

/* Whether m is one of glibc's heaps, whose memory between blocks is the
 * allocator's (free chunks): never a root. */
static int glibc_heap(const struct proc_map *m)
{
	return (m->path && !strcmp(m->path, "[heap]")) ||
	       (!m->path && m->start % ARENA_ALIGN == 0);
}

/* [lo, hi) as root name, but for the blocks of g inside it (the kernel
 * merges a block glibc mmapped with the anonymous mappings beside it). */
static void add_between(struct snaproots *out, const struct heapgraph *g, uint64_t lo,
			uint64_t hi, uint32_t name)
{
	long in = heapgraph_find(g, lo);
	size_t b;

	if (in >= 0)
		lo = g->addr[in] + heapgraph_size(g, (size_t)in);
	for (b = heapgraph_first_from(g, lo); b < g->n && g->addr[b] < hi && lo < hi; b++) {
		add(out, lo, g->addr[b], name);
		lo = g->addr[b] + heapgraph_size(g, b);
	}
	if (lo < hi)
		add(out, lo, hi, name);
}

/* The name of anonymous memory [lo, hi) as a root. */
static uint32_t anon_name(struct snapnames *names, uint64_t lo, uint64_t hi)
{
	return snapnames_idf(names, "anonymous mapping at %#llx (%llu KiB)", (unsigned long long)lo,
			     (unsigned long long)((hi - lo) >> 10));
}

void snaproots_build(struct target *t, const struct proc_maps *maps, const struct heapgraph *g,
		     const struct snapthread *th, size_t nth, struct snapnames *names,
		     struct snaproots *out)
{
	uint8_t *taken = xcalloc(maps->n + 1, 1);	/* mappings already roots */
	struct decls dc = { NULL, NULL };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < nth; i++) {
		const struct proc_map *m = map_of(maps, th[i].sp);
		const struct proc_map *f = map_of(maps, th[i].fs_base);
		uint32_t name;

		if (m) {
			uint64_t lo = th[i].sp - RED_ZONE < m->start ? m->start : th[i].sp - RED_ZONE;

			name = snapnames_idf(names, SNAP_THREAD_ROOT, (int)th[i].tid);
			add(out, lo, m->end, name);
			taken[m - maps->v] = 1;
		}
		if (f && f != m && !glibc_heap(f)) {
			uint64_t lo = th[i].fs_base - f->start > TLS_BELOW ? th[i].fs_base - TLS_BELOW :
									     f->start;
			uint64_t hi = f->end - th[i].fs_base > TLS_ABOVE ? th[i].fs_base + TLS_ABOVE :
									   f->end;

			add_between(out, g, lo, hi, snapnames_idf(names, "TLS of thread %d",
								  (int)th[i].tid));
		}
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i], *prev = i ? &maps->v[i - 1] : NULL;
		int rw = (m->prot & (PROC_MAP_R | PROC_MAP_W)) == (PROC_MAP_R | PROC_MAP_W);
		uint64_t bss;

		if (taken[i] || !rw || (m->prot & PROC_MAP_SHARED))
			continue;
		if (m->path && m->path[0] == '/') {
			data_roots(t, m, m->start, m->end, names, out, &dc);
		} else if (!m->path && prev && prev->end == m->start && prev->path &&
			   prev->path[0] == '/' &&
			   (prev->prot & (PROC_MAP_R | PROC_MAP_W)) == (PROC_MAP_R | PROC_MAP_W) &&
			   (bss = data_end(t, prev)) > m->start) {
			/* its .bss; what follows it is someone's anonymous memory */
			data_roots(t, prev, m->start, bss < m->end ? bss : m->end, names, out, &dc);
			if (bss < m->end)
				add_between(out, g, bss, m->end, anon_name(names, bss, m->end));
		} else if ((!m->path || !strncmp(m->path, "[anon", 5) || !strcmp(m->path, "[stack]")) &&
			   !glibc_heap(m)) {
			add_between(out, g, m->start, m->end, m->path && m->path[0] == '[' ?
				    snapnames_idf(names, "[stack] of no thread at %#llx",
						  (unsigned long long)m->start) :
				    anon_name(names, m->start, m->end));
		}
	}
	snapglobals_free(dc.g);
	free(taken);
}
