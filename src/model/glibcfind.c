/* Where glibc's malloc keeps its state in the target: main_arena and mp_'s counters, from symbols or from mallinfo2's code. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "disasm.h"
#include "model/debugfile.h"
#include "model/elfobj.h"
#include "model/glibcfind.h"
#include "model/target.h"
#include "model/tfile.h"

/*
 * main_arena and mp_ are static in malloc/malloc.c: only a .symtab names
 * them (a static executable's, or a distribution's debug file found by
 * build id). Their sizes tell the layouts apart: struct malloc_state is
 * 2200 bytes with fast bins (2.27 to 2.42) and 2112 without (2.43 on);
 * struct malloc_par puts n_mmaps and mmapped_mem at 40 and 56 in 112
 * bytes (2.33, 2.34), at 60 and 80 in 136 bytes (2.35 to 2.42: the huge
 * page fields before them) and at 68 and 88 in 144 bytes (2.43: thp_mode
 * too). Without them the exported mallinfo2 names both in its code: it
 * takes main_arena's address to start its loop over the arenas, and its
 * per-arena helper (a call, or inlined) loads mp_.n_mmaps (an int) and
 * mp_.mmapped_mem (a word) 16 (2.33, 2.34) or 20 bytes further. Each
 * candidate is taken only once the target's memory holds what it should
 * there.
 */

#define CODE_MAX        4096    /* bytes of mallinfo2's body read, and of each callee */
#define REFS_MAX        256
#define CALLS_MAX       16
#define PAGE_SZ         4096ULL

/* mp_'s counters by the size of struct malloc_par. */
static const struct {
	uint64_t size;
	uint32_t n_mmaps, mmapped_mem;
} par_layouts[] = {
	{ 112, 40, 56 },        /* 2.33, 2.34 */
	{ 136, 60, 80 },        /* 2.35 to 2.42 */
	{ 144, 68, 88 },        /* 2.43 */
};

int glibc_find_no_symbols;

int glibc_target_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	return target_read(arg, addr, buf, len);
}

int glibc_is_malloc(const struct elfobj *e)
{
	return e && elfobj_lookup(e, "mallinfo2", 0) && elfobj_lookup(e, "__libc_malloc", 0);
}

/* The layout whose struct malloc_state has size bytes, or NULL. */
static const struct glibc_layout *layout_of_size(uint64_t size)
{
	if (size == glibc_layout_fast.size)
		return &glibc_layout_fast;
	if (size == glibc_layout_nofast.size)
		return &glibc_layout_nofast;
	return NULL;
}

/*
 * Whether the target holds mp_'s counters at n_at (n_mmaps, then
 * n_mmaps_max and max_n_mmaps) and mm_at (mmapped_mem, then
 * max_mmapped_mem): counts that agree with each other.
 */
static int par_ok(struct target *t, uint64_t n_at, uint64_t mm_at)
{
	int32_t n[3];
	uint64_t mm[2];

	if (target_read(t, n_at, n, sizeof(n)) || target_read(t, mm_at, mm, sizeof(mm)))
		return 0;
	return n[0] >= 0 && n[1] >= 0 && n[2] >= n[0] && (n[0] == 0) == (mm[0] == 0) &&
	       mm[0] <= mm[1] && mm[1] < (1ULL << 57) && mm[0] >= (uint64_t)n[0] * PAGE_SZ;
}

/* main_arena and mp_ from a .symtab (e's, or its debug file's): 0 or -ENOENT. */
static int from_symbols(struct target *t, const struct elfobj *e, uint64_t bias,
			struct glibc_state *g)
{
	const struct elfobj_sym *a = elfobj_lookup(e, "main_arena", 0);
	const struct elfobj_sym *p = elfobj_lookup(e, "mp_", 0);

	if (!a || a->type != STT_OBJECT || !(g->lay = layout_of_size(a->size)))
		return -ENOENT;
	g->main_arena = bias + a->value;
	g->n_mmaps = g->mmapped_mem = 0;
	for (size_t i = 0; p && p->type == STT_OBJECT &&
	     i < sizeof(par_layouts) / sizeof(par_layouts[0]); i++) {
		if (p->size != par_layouts[i].size)
			continue;
		if (par_ok(t, bias + p->value + par_layouts[i].n_mmaps,
			   bias + p->value + par_layouts[i].mmapped_mem)) {
			g->n_mmaps = bias + p->value + par_layouts[i].n_mmaps;
			g->mmapped_mem = bias + p->value + par_layouts[i].mmapped_mem;
		}
	}
	return 0;
}

/* 1 if link-time address v lies in a writable PT_LOAD of e. */
static int in_data(const struct elfobj *e, uint64_t v)
{
	const struct elfobj_segment *seg;
	size_t n;

	seg = elfobj_segments(e, &n);
	for (size_t i = 0; i < n; i++)
		if ((seg[i].flags & PF_W) && v >= seg[i].vaddr && v - seg[i].vaddr < seg[i].memsz)
			return 1;
	return 0;
}

/* Append the data references of the code at link-time address v (at most
 * len bytes, less near the end of its segment) to refs. */
static size_t code_refs(const struct elfobj *e, uint64_t v, size_t len, struct disasm_ref *refs,
			size_t n)
{
	uint8_t code[CODE_MAX];

	if (len > sizeof(code))
		len = sizeof(code);
	while (len >= 64 && elfobj_read(e, v, code, len))
		len /= 2;
	if (len < 64)
		return n;
	return n + disasm_data_refs(code, len, v, refs + n, REFS_MAX - n);
}

/* main_arena and mp_'s counters from mallinfo2's code: 0, -ENODATA, -ENOENT. */
static int from_code(struct target *t, const struct elfobj *e, uint64_t bias,
		     struct glibc_state *g)
{
	const struct elfobj_sym *s = elfobj_lookup(e, "mallinfo2", 0);
	static struct disasm_ref refs[REFS_MAX];
	struct disasm_branch calls[CALLS_MAX];
	uint8_t code[CODE_MAX];
	size_t len, nrefs, nown, ncalls;
	int unset = 0;

	if (!s || !s->size)
		return -ENOENT;
	len = s->size < sizeof(code) ? s->size : sizeof(code);
	if (elfobj_read(e, s->value, code, len))
		return -ENOENT;
	nrefs = nown = disasm_data_refs(code, len, s->value, refs, REFS_MAX);
	ncalls = disasm_branches(code, len, s->value, calls, CALLS_MAX);
	for (size_t i = 0; i < ncalls; i++)
		if (calls[i].call)
			nrefs = code_refs(e, calls[i].to, CODE_MAX, refs, nrefs);

	/* main_arena: an address mallinfo2 itself takes, in the data, that
	 * holds an arena of one of the layouts */
	g->lay = NULL;
	for (size_t i = 0; i < nown && !g->lay; i++) {
		static const struct glibc_layout *const lays[] = {
			&glibc_layout_fast, &glibc_layout_nofast,
		};

		if (refs[i].size || !in_data(e, refs[i].to))
			continue;
		for (size_t k = 0; k < 2 && !g->lay; k++) {
			int r = glibc_arena_check(lays[k], bias + refs[i].to, glibc_target_read, t);

			if (!r) {
				g->lay = lays[k];
				g->main_arena = bias + refs[i].to;
			}
			unset |= r == -ENODATA;
		}
	}
	if (!g->lay)
		return unset ? -ENODATA : -ENOENT;

	/* mp_: an int and a word loaded 16 or 20 bytes apart that hold
	 * counts in agreement; only when exactly one pair does */
	g->n_mmaps = g->mmapped_mem = 0;
	for (size_t i = 0; i < nrefs; i++) {
		for (size_t k = 0; k < nrefs; k++) {
			uint64_t d = refs[k].to - refs[i].to;

			if (refs[i].size != 4 || refs[k].size != 8 || (d != 16 && d != 20) ||
			    !in_data(e, refs[i].to) ||
			    !par_ok(t, bias + refs[i].to, bias + refs[k].to))
				continue;
			if (g->n_mmaps && g->n_mmaps != bias + refs[i].to) {
				g->n_mmaps = g->mmapped_mem = 0;	/* two candidates: neither */
				return 0;
			}
			g->n_mmaps = bias + refs[i].to;
			g->mmapped_mem = bias + refs[k].to;
		}
	}
	return 0;
}

int glibc_find(struct target *t, const struct proc_map *m, struct glibc_state *g,
	       const char **how, char *why, size_t whylen)
{
	struct elfobj *e = target_object(t, m, TARGET_OBJ_SYMS, NULL), *dbg = NULL;
	uint64_t bias;
	int root, ret;

	memset(g, 0, sizeof(*g));
	*how = NULL;
	if (!e || target_map_bias(t, m, e, &bias)) {
		log_say(why, whylen, "cannot read %s", m->path ? m->path : "glibc");
		return -ENOENT;
	}
	if (!glibc_is_malloc(e)) {
		log_say(why, whylen, "glibc before 2.33 (no mallinfo2)");
		return -ENOENT;
	}
	ret = glibc_find_no_symbols ? -ENOENT : from_symbols(t, e, bias, g);
	if (!ret) {
		*how = "symbols";
	} else if (!glibc_find_no_symbols && (root = tfile_root(target_reader(t))) >= 0) {
		dbg = debugfile_open(e, root, target_reader(t), m->path, NULL);
		close(root);
		if (dbg && !(ret = from_symbols(t, dbg, bias, g)))
			*how = "debug file";
		elfobj_free(dbg);
	}
	if (!ret) {
		ret = glibc_arena_check(g->lay, g->main_arena, glibc_target_read, t);
		if (ret == -ENODATA)
			return ret;
		if (ret) {
			log_say(why, whylen, "glibc's main_arena, from its %s, does not hold an arena "
			    "of the %s layout", *how, g->lay->name);
			return -ENOENT;
		}
		return 0;
	}
	ret = from_code(t, e, bias, g);
	if (!ret)
		*how = "mallinfo2's code";
	else if (ret == -ENOENT)
		log_say(why, whylen, "glibc's main_arena not found (no symbols, and mallinfo2's code "
		    "names no arena of a known layout)");
	return ret;
}
