/* Allocator entry points: which definitions the dynamic linker binds the target's calls to. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/hooks.h"
#include "model/hooks_int.h"

/*
 * Resolution models the dynamic linker's global scope: the executable, then
 * LD_PRELOAD objects, then the libraries in load (breadth-first) order, which
 * is exactly the order of the link_map list hanging off r_debug. The first
 * object whose .dynsym defines a name wins. A static executable only has
 * itself, and its .symtab is then the source of names.
 */

/* A name of jemalloc's API, also with the prefixes of builds that keep the
 * system's names free: je_ (--with-jemalloc-prefix, Redis) and _rjem_
 * (Rust's tikv-jemallocator). */
#define JE(name, kind, nargs) \
	{ name, kind, nargs, 0 }, { "je_" name, kind, nargs, 0 }, { "_rjem_" name, kind, nargs, 0 }
/* A standard name jemalloc also exports prefixed. */
#define JE_STD(name, kind, nargs) \
	{ "je_" name, kind, nargs, 0 }, { "_rjem_" name, kind, nargs, 0 }

/*
 * Every allocating or freeing entry point of glibc, jemalloc, tcmalloc
 * (gperftools) and mimalloc, with its kind and how many integer arguments
 * it takes. Queries (malloc_usable_size, nallocx, sallocx, mi_usable_size)
 * are not listed. Aliases at one address are folded into one entry.
 */
static const struct {
	const char *name;
	enum hook_kind kind;
	int nargs;
	int cxx;                /* C++ operator: only listed outside libstdc++ */
} hook_names[] = {
	{ "malloc", HOOK_ALLOC, 1, 0 },
	{ "free", HOOK_FREE, 1, 0 },
	{ "calloc", HOOK_CALLOC, 2, 0 },
	{ "realloc", HOOK_REALLOC, 2, 0 },
	{ "reallocarray", HOOK_REALLOCARRAY, 3, 0 },
	{ "posix_memalign", HOOK_POSIX_MEMALIGN, 3, 0 },
	{ "aligned_alloc", HOOK_ALIGNED, 2, 0 },
	{ "memalign", HOOK_ALIGNED, 2, 0 },
	{ "valloc", HOOK_ALLOC, 1, 0 },
	{ "pvalloc", HOOK_ALLOC, 1, 0 },
	{ "cfree", HOOK_FREE, 1, 0 },
	{ "free_sized", HOOK_FREE, 2, 0 },              /* C23 */
	{ "free_aligned_sized", HOOK_FREE, 3, 0 },
	{ "reallocf", HOOK_REALLOC, 2, 0 },             /* BSD, mimalloc */
	{ "reallocarr", HOOK_REALLOCARR, 3, 0 },        /* NetBSD, mimalloc */
	{ "vfree", HOOK_FREE, 1, 0 },
	{ "_aligned_malloc", HOOK_ALLOC, 2, 0 },        /* (size, align), mimalloc */
	/* glibc's own names, also defined by allocators that replace it */
	{ "__libc_malloc", HOOK_ALLOC, 1, 0 },
	{ "__libc_free", HOOK_FREE, 1, 0 },
	{ "__libc_calloc", HOOK_CALLOC, 2, 0 },
	{ "__libc_realloc", HOOK_REALLOC, 2, 0 },
	{ "__libc_memalign", HOOK_ALIGNED, 2, 0 },
	{ "__libc_valloc", HOOK_ALLOC, 1, 0 },
	{ "__libc_pvalloc", HOOK_ALLOC, 1, 0 },
	{ "__libc_cfree", HOOK_FREE, 1, 0 },
	{ "__posix_memalign", HOOK_POSIX_MEMALIGN, 3, 0 },
	/* jemalloc: the non-standard API; sdallocx's size is only a hint */
	JE("mallocx", HOOK_ALLOC, 2),                   /* flags may ask for alignment, zero */
	JE("rallocx", HOOK_REALLOC, 3),
	JE("xallocx", HOOK_XALLOCX, 4),
	JE("sdallocx", HOOK_FREE, 3),
	JE("dallocx", HOOK_FREE, 2),
	JE_STD("malloc", HOOK_ALLOC, 1),
	JE_STD("free", HOOK_FREE, 1),
	JE_STD("calloc", HOOK_CALLOC, 2),
	JE_STD("realloc", HOOK_REALLOC, 2),
	JE_STD("posix_memalign", HOOK_POSIX_MEMALIGN, 3),
	JE_STD("aligned_alloc", HOOK_ALIGNED, 2),
	JE_STD("memalign", HOOK_ALIGNED, 2),
	JE_STD("valloc", HOOK_ALLOC, 1),
	JE_STD("pvalloc", HOOK_ALLOC, 1),
	JE_STD("free_sized", HOOK_FREE, 2),
	JE_STD("free_aligned_sized", HOOK_FREE, 3),
	/* tcmalloc (gperftools): tc_* are what the standard names alias */
	{ "tc_malloc", HOOK_ALLOC, 1, 0 },
	{ "tc_malloc_skip_new_handler", HOOK_ALLOC, 1, 0 },
	{ "tc_free", HOOK_FREE, 1, 0 },
	{ "tc_free_sized", HOOK_FREE, 2, 0 },
	{ "tc_realloc", HOOK_REALLOC, 2, 0 },
	{ "tc_calloc", HOOK_CALLOC, 2, 0 },
	{ "tc_cfree", HOOK_FREE, 1, 0 },
	{ "tc_memalign", HOOK_ALIGNED, 2, 0 },
	{ "tc_posix_memalign", HOOK_POSIX_MEMALIGN, 3, 0 },
	{ "tc_valloc", HOOK_ALLOC, 1, 0 },
	{ "tc_pvalloc", HOOK_ALLOC, 1, 0 },
	{ "tc_new", HOOK_ALLOC, 1, 0 },
	{ "tc_new_nothrow", HOOK_ALLOC, 2, 0 },
	{ "tc_newarray", HOOK_ALLOC, 1, 0 },
	{ "tc_newarray_nothrow", HOOK_ALLOC, 2, 0 },
	{ "tc_new_aligned", HOOK_ALLOC, 2, 0 },
	{ "tc_new_aligned_nothrow", HOOK_ALLOC, 3, 0 },
	{ "tc_newarray_aligned", HOOK_ALLOC, 2, 0 },
	{ "tc_newarray_aligned_nothrow", HOOK_ALLOC, 3, 0 },
	{ "tc_delete", HOOK_FREE, 1, 0 },
	{ "tc_delete_sized", HOOK_FREE, 2, 0 },
	{ "tc_delete_nothrow", HOOK_FREE, 2, 0 },
	{ "tc_deletearray", HOOK_FREE, 1, 0 },
	{ "tc_deletearray_sized", HOOK_FREE, 2, 0 },
	{ "tc_deletearray_nothrow", HOOK_FREE, 2, 0 },
	{ "tc_delete_aligned", HOOK_FREE, 2, 0 },
	{ "tc_delete_sized_aligned", HOOK_FREE, 3, 0 },
	{ "tc_delete_aligned_nothrow", HOOK_FREE, 3, 0 },
	{ "tc_deletearray_aligned", HOOK_FREE, 2, 0 },
	{ "tc_deletearray_sized_aligned", HOOK_FREE, 3, 0 },
	{ "tc_deletearray_aligned_nothrow", HOOK_FREE, 3, 0 },
	/* mimalloc */
	{ "mi_malloc", HOOK_ALLOC, 1, 0 },
	{ "mi_zalloc", HOOK_ALLOC, 1, 0 },
	{ "mi_malloc_small", HOOK_ALLOC, 1, 0 },
	{ "mi_zalloc_small", HOOK_ALLOC, 1, 0 },
	{ "mi_malloc_aligned", HOOK_ALLOC, 2, 0 },
	{ "mi_malloc_aligned_at", HOOK_ALLOC, 3, 0 },
	{ "mi_zalloc_aligned", HOOK_ALLOC, 2, 0 },
	{ "mi_zalloc_aligned_at", HOOK_ALLOC, 3, 0 },
	{ "mi_valloc", HOOK_ALLOC, 1, 0 },
	{ "mi_pvalloc", HOOK_ALLOC, 1, 0 },
	{ "mi_new", HOOK_ALLOC, 1, 0 },
	{ "mi_new_nothrow", HOOK_ALLOC, 1, 0 },
	{ "mi_new_aligned", HOOK_ALLOC, 2, 0 },
	{ "mi_new_aligned_nothrow", HOOK_ALLOC, 2, 0 },
	{ "mi_calloc", HOOK_CALLOC, 2, 0 },
	{ "mi_mallocn", HOOK_CALLOC, 2, 0 },
	{ "mi_calloc_aligned", HOOK_CALLOC, 3, 0 },
	{ "mi_calloc_aligned_at", HOOK_CALLOC, 4, 0 },
	{ "mi_new_n", HOOK_CALLOC, 2, 0 },
	{ "mi_memalign", HOOK_ALIGNED, 2, 0 },
	{ "mi_aligned_alloc", HOOK_ALIGNED, 2, 0 },
	{ "mi_posix_memalign", HOOK_POSIX_MEMALIGN, 3, 0 },
	{ "mi_realloc", HOOK_REALLOC, 2, 0 },
	{ "mi_reallocf", HOOK_REALLOC, 2, 0 },
	{ "mi_rezalloc", HOOK_REALLOC, 2, 0 },
	{ "mi_realloc_aligned", HOOK_REALLOC, 3, 0 },
	{ "mi_realloc_aligned_at", HOOK_REALLOC, 4, 0 },
	{ "mi_rezalloc_aligned", HOOK_REALLOC, 3, 0 },
	{ "mi_rezalloc_aligned_at", HOOK_REALLOC, 4, 0 },
	{ "mi_new_realloc", HOOK_REALLOC, 2, 0 },
	{ "mi_reallocn", HOOK_REALLOCARRAY, 3, 0 },
	{ "mi_recalloc", HOOK_REALLOCARRAY, 3, 0 },
	{ "mi_reallocarray", HOOK_REALLOCARRAY, 3, 0 },
	{ "mi_recalloc_aligned", HOOK_REALLOCARRAY, 4, 0 },
	{ "mi_recalloc_aligned_at", HOOK_REALLOCARRAY, 5, 0 },
	{ "mi_aligned_recalloc", HOOK_REALLOCARRAY, 4, 0 },
	{ "mi_aligned_offset_recalloc", HOOK_REALLOCARRAY, 5, 0 },
	{ "mi_new_reallocn", HOOK_REALLOCARRAY, 3, 0 },
	{ "mi_reallocarr", HOOK_REALLOCARR, 3, 0 },
	{ "mi_expand", HOOK_EXPAND, 2, 0 },
	{ "mi__expand", HOOK_EXPAND, 2, 0 },
	{ "mi_strdup", HOOK_STRDUP, 1, 0 },
	{ "mi_strndup", HOOK_STRDUP, 2, 0 },
	{ "mi_mbsdup", HOOK_STRDUP, 1, 0 },
	{ "mi_wcsdup", HOOK_WCSDUP, 1, 0 },
	{ "mi_realpath", HOOK_REALPATH, 2, 0 },
	{ "mi_dupenv_s", HOOK_DUPENV, 3, 0 },
	{ "mi_free", HOOK_FREE, 1, 0 },
	{ "mi_cfree", HOOK_FREE, 1, 0 },
	{ "mi_free_size", HOOK_FREE, 2, 0 },
	{ "mi_free_aligned", HOOK_FREE, 2, 0 },
	{ "mi_free_size_aligned", HOOK_FREE, 3, 0 },
	{ "mi_heap_malloc", HOOK_HEAP_ALLOC, 2, 0 },
	{ "mi_heap_zalloc", HOOK_HEAP_ALLOC, 2, 0 },
	{ "mi_heap_malloc_small", HOOK_HEAP_ALLOC, 2, 0 },
	{ "mi_heap_malloc_aligned", HOOK_HEAP_ALLOC, 3, 0 },
	{ "mi_heap_malloc_aligned_at", HOOK_HEAP_ALLOC, 4, 0 },
	{ "mi_heap_zalloc_aligned", HOOK_HEAP_ALLOC, 3, 0 },
	{ "mi_heap_zalloc_aligned_at", HOOK_HEAP_ALLOC, 4, 0 },
	{ "mi_heap_alloc_new", HOOK_HEAP_ALLOC, 2, 0 },
	{ "mi_heap_calloc", HOOK_HEAP_CALLOC, 3, 0 },
	{ "mi_heap_mallocn", HOOK_HEAP_CALLOC, 3, 0 },
	{ "mi_heap_calloc_aligned", HOOK_HEAP_CALLOC, 4, 0 },
	{ "mi_heap_calloc_aligned_at", HOOK_HEAP_CALLOC, 5, 0 },
	{ "mi_heap_alloc_new_n", HOOK_HEAP_CALLOC, 3, 0 },
	{ "mi_heap_realloc", HOOK_HEAP_REALLOC, 3, 0 },
	{ "mi_heap_reallocf", HOOK_HEAP_REALLOC, 3, 0 },
	{ "mi_heap_rezalloc", HOOK_HEAP_REALLOC, 3, 0 },
	{ "mi_heap_realloc_aligned", HOOK_HEAP_REALLOC, 4, 0 },
	{ "mi_heap_realloc_aligned_at", HOOK_HEAP_REALLOC, 5, 0 },
	{ "mi_heap_rezalloc_aligned", HOOK_HEAP_REALLOC, 4, 0 },
	{ "mi_heap_rezalloc_aligned_at", HOOK_HEAP_REALLOC, 5, 0 },
	{ "mi_heap_reallocn", HOOK_HEAP_REALLOCN, 4, 0 },
	{ "mi_heap_recalloc", HOOK_HEAP_REALLOCN, 4, 0 },
	{ "mi_heap_recalloc_aligned", HOOK_HEAP_REALLOCN, 5, 0 },
	{ "mi_heap_recalloc_aligned_at", HOOK_HEAP_REALLOCN, 6, 0 },
	{ "mi_heap_strdup", HOOK_STRDUP, 2, 0 },
	{ "mi_heap_strndup", HOOK_STRDUP, 3, 0 },
	{ "mi_heap_realpath", HOOK_HEAP_REALPATH, 3, 0 },
	/* operator new / new[]: size first whatever follows */
	{ "_Znwm", HOOK_ALLOC, 1, 1 },
	{ "_Znam", HOOK_ALLOC, 1, 1 },
	{ "_ZnwmRKSt9nothrow_t", HOOK_ALLOC, 2, 1 },
	{ "_ZnamRKSt9nothrow_t", HOOK_ALLOC, 2, 1 },
	{ "_ZnwmSt11align_val_t", HOOK_ALLOC, 2, 1 },
	{ "_ZnamSt11align_val_t", HOOK_ALLOC, 2, 1 },
	{ "_ZnwmSt11align_val_tRKSt9nothrow_t", HOOK_ALLOC, 3, 1 },
	{ "_ZnamSt11align_val_tRKSt9nothrow_t", HOOK_ALLOC, 3, 1 },
	/* operator delete / delete[]: pointer first whatever follows */
	{ "_ZdlPv", HOOK_FREE, 1, 1 },
	{ "_ZdaPv", HOOK_FREE, 1, 1 },
	{ "_ZdlPvm", HOOK_FREE, 2, 1 },
	{ "_ZdaPvm", HOOK_FREE, 2, 1 },
	{ "_ZdlPvRKSt9nothrow_t", HOOK_FREE, 2, 1 },
	{ "_ZdaPvRKSt9nothrow_t", HOOK_FREE, 2, 1 },
	{ "_ZdlPvSt11align_val_t", HOOK_FREE, 2, 1 },
	{ "_ZdaPvSt11align_val_t", HOOK_FREE, 2, 1 },
	{ "_ZdlPvmSt11align_val_t", HOOK_FREE, 3, 1 },
	{ "_ZdaPvmSt11align_val_t", HOOK_FREE, 3, 1 },
	{ "_ZdlPvSt11align_val_tRKSt9nothrow_t", HOOK_FREE, 3, 1 },
	{ "_ZdaPvSt11align_val_tRKSt9nothrow_t", HOOK_FREE, 3, 1 },
};
#define NHOOK_NAMES (sizeof(hook_names) / sizeof(hook_names[0]))

int hooks_no_r_debug;

const char *hook_kind_name(enum hook_kind kind)
{
	static const char *const names[] = {
		[HOOK_ALLOC] = "alloc", [HOOK_CALLOC] = "calloc",
		[HOOK_REALLOC] = "realloc", [HOOK_REALLOCARRAY] = "reallocarray",
		[HOOK_POSIX_MEMALIGN] = "posix_memalign", [HOOK_ALIGNED] = "aligned",
		[HOOK_FREE] = "free", [HOOK_HEAP_ALLOC] = "heap_alloc",
		[HOOK_HEAP_CALLOC] = "heap_calloc", [HOOK_HEAP_REALLOC] = "heap_realloc",
		[HOOK_HEAP_REALLOCN] = "heap_reallocn", [HOOK_XALLOCX] = "xallocx",
		[HOOK_EXPAND] = "expand", [HOOK_STRDUP] = "strdup", [HOOK_WCSDUP] = "wcsdup",
		[HOOK_REALPATH] = "realpath", [HOOK_HEAP_REALPATH] = "heap_realpath",
		[HOOK_DUPENV] = "dupenv", [HOOK_REALLOCARR] = "reallocarr",
	};

	if ((unsigned)kind >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[kind];
}

int hook_kind_of(const char *name)
{
	for (size_t i = 0; i < NHOOK_NAMES; i++)
		if (!strcmp(hook_names[i].name, name))
			return hook_names[i].kind;
	return -ENOENT;
}

/* ---- resolution ---- */

static int is_libstdcxx(const char *path)
{
	const char *b = strrchr(path, '/');

	return !strncmp(b ? b + 1 : path, "libstdc++", 9);
}

/* Add name's definition to set, folding it into an entry at the same address. */
static void set_add(struct hook_set *set, size_t *cap, const struct proc_maps *maps,
		    const struct obj *o, const struct elfobj_sym *s, size_t ti)
{
	uint64_t addr = o->bias + s->value;
	struct hook *h = NULL;

	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].addr == addr)
			h = &set->v[i];
	if (h) {
		for (size_t j = 0; j < h->nnames; j++)
			if (h->names[j] == hook_names[ti].name)
				return;
		if (h->kind != hook_names[ti].kind)
			pr_warn("%s and %s share 0x%" PRIx64 " but differ in kind",
				h->names[0], hook_names[ti].name, addr);
		if (h->nnames < HOOK_MAX_NAMES)
			h->names[h->nnames++] = hook_names[ti].name;
		if (s->size > h->size)
			h->size = s->size;
		if (hook_names[ti].nargs > h->nargs)
			h->nargs = hook_names[ti].nargs;
		return;
	}
	if (set->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		set->v = xrealloc(set->v, *cap * sizeof(*set->v));
	}
	h = &set->v[set->n++];
	memset(h, 0, sizeof(*h));
	h->kind = hook_names[ti].kind;
	h->nargs = hook_names[ti].nargs;
	h->addr = addr;
	h->size = s->size;
	h->names[h->nnames++] = hook_names[ti].name;
	h->map = proc_maps_find(maps, addr);
	h->path = xstrdup(o->map->path);
	h->unsupported = s->type == STT_GNU_IFUNC;
	if (h->unsupported)
		pr_warn("%s in %s is an IFUNC: not supported", hook_names[ti].name, h->path);
}

/* 1 if name is one of the C++ operators of hook_names. */
int hooks_name_cxx(const char *name)
{
	for (size_t i = 0; i < NHOOK_NAMES; i++)
		if (!strcmp(hook_names[i].name, name))
			return hook_names[i].cxx;
	return 0;
}

/* The index of name in hook_names, through the sorted index; -1 if absent. */
static int name_index(const uint16_t *sorted, const char *name)
{
	size_t lo = 0, hi = NHOOK_NAMES;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, hook_names[sorted[mid]].name);

		if (!c)
			return sorted[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(hook_names[*(const uint16_t *)a].name, hook_names[*(const uint16_t *)b].name);
}

/*
 * present[i * NHOOK_NAMES + ti]: object i defines a symbol called
 * hook_names[ti] (one pass over each object's symbols, so that a large
 * .symtab is read once, not once per name). Returns the array.
 */
static uint8_t *names_present(const struct objlist *l)
{
	/* the rows of shared objects (elfobj_shared), kept for the
	 * sessions a run over several processes forks after reading them */
	static struct {
		const struct elfobj *e;
		uint8_t row[NHOOK_NAMES];
	} memo[32];
	static size_t nmemo;
	uint8_t *present = xcalloc(l->n ? l->n : 1, NHOOK_NAMES);
	uint16_t sorted[NHOOK_NAMES];

	for (size_t ti = 0; ti < NHOOK_NAMES; ti++)
		sorted[ti] = (uint16_t)ti;
	qsort(sorted, NHOOK_NAMES, sizeof(sorted[0]), cmp_names);
	for (size_t i = 0; i < l->n; i++) {
		const struct elfobj *e = l->v[i].elf;
		uint8_t *row = present + i * NHOOK_NAMES;
		const struct elfobj_sym *syms;
		size_t n, m;

		if (!e || !l->v[i].have_bias)
			continue;
		for (m = 0; m < nmemo && memo[m].e != e; m++)
			;
		if (m < nmemo) {
			memcpy(row, memo[m].row, NHOOK_NAMES);
			continue;
		}
		syms = elfobj_syms(e, &n);
		for (size_t k = 0; k < n; k++) {
			int ti;

			if (syms[k].shndx == SHN_UNDEF)
				continue;
			ti = name_index(sorted, syms[k].name);
			if (ti >= 0)
				row[ti] = 1;
		}
		if (elfobj_shared(e) && nmemo < sizeof(memo) / sizeof(memo[0])) {
			memo[nmemo].e = e;
			memcpy(memo[nmemo++].row, row, NHOOK_NAMES);
		}
	}
	return present;
}

/* A definition of an entry point that can be hooked (not data). */
static int is_code(const struct elfobj_sym *s)
{
	return s && (s->type == STT_FUNC || s->type == STT_GNU_IFUNC);
}

int hooks_resolve(pid_t pid, const struct proc_maps *maps, struct hook_set *set)
{
	return hooks_resolve_target(NULL, pid, maps, set);
}

int hooks_resolve_target(struct target *t, pid_t pid, const struct proc_maps *maps,
			 struct hook_set *set)
{
	struct objlist l = { .t = t };
	uint8_t *present = NULL;
	size_t cap = 0;
	int is_static = 0, ret;

	set->v = NULL;
	set->n = 0;
	ret = hooks_order_build(&l, pid, maps, &is_static);
	if (ret)
		goto out;
	present = names_present(&l);
	for (size_t ti = 0; ti < NHOOK_NAMES; ti++) {
		/* the definition the dynamic linker binds the name to */
		for (size_t i = 0; i < l.n; i++) {
			const struct obj *o = &l.v[i];
			const struct elfobj_sym *s;

			if (!present[i * NHOOK_NAMES + ti])
				continue;
			s = elfobj_lookup(o->elf, hook_names[ti].name, !is_static);
			if (!is_code(s))
				continue;
			/* libstdc++'s operators only forward to malloc/free */
			if (!(hook_names[ti].cxx && is_libstdcxx(o->map->path)))
				set_add(set, &cap, maps, o, s, ti);
			break;
		}
		/* definitions an object keeps to itself: its own calls reach them */
		for (size_t i = 0; i < l.n && !is_static; i++) {
			const struct obj *o = &l.v[i];
			const struct elfobj_sym *s;

			if (!present[i * NHOOK_NAMES + ti] ||
			    elfobj_lookup(o->elf, hook_names[ti].name, 1))
				continue;
			s = elfobj_lookup(o->elf, hook_names[ti].name, 0);
			if (is_code(s) && !(hook_names[ti].cxx && is_libstdcxx(o->map->path)))
				set_add(set, &cap, maps, o, s, ti);
		}
	}
	hooks_mark_forwards(set, &l);
	hooks_mark_own(set, &l);
	ret = set->n ? 0 : -ENOENT;
	if (ret && is_static)
		pr_err("static executable %s has no symbol table (stripped?)", l.v[0].map->path);
out:
	free(present);
	hooks_order_free(&l);
	if (ret)
		hooks_free(set);
	return ret;
}

int hooks_binding(struct target *t, pid_t pid, const struct proc_maps *maps, const char *name,
		  uint64_t *addr, const struct proc_map **map)
{
	struct objlist l = { .t = t };
	int is_static = 0, ret;

	*addr = 0;
	*map = NULL;
	ret = hooks_order_build(&l, pid, maps, &is_static);
	for (size_t i = 0; !ret && i < l.n; i++) {
		const struct obj *o = &l.v[i];
		const struct elfobj_sym *s = o->elf ? elfobj_lookup(o->elf, name, !is_static) : NULL;

		if (!s || !o->have_bias)
			continue;
		*addr = o->bias + s->value;
		*map = o->map;
		break;
	}
	hooks_order_free(&l);
	if (!ret && !*map)
		ret = -ENOENT;
	return ret;
}

void hooks_free(struct hook_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->v[i].path);
	free(set->v);
	set->v = NULL;
	set->n = 0;
}

int hooks_print(FILE *f, const struct hook_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct hook *h = &set->v[i];

		if (h->unsupported)
			fputs("# unsupported ifunc ", f);
		else if (h->forwards)
			fprintf(f, "# forwards to %s ", h->forwards);
		fprintf(f, "0x%" PRIx64 " ", h->addr);
		for (size_t j = 0; j < h->nnames; j++)
			fprintf(f, "%s%s", j ? "=" : "", h->names[j]);
		fprintf(f, " %s\n", h->path);
	}
	return ferror(f) ? -EIO : 0;
}
