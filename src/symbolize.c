/* Address to function, offset and file:line through the target's ELF files, cached per object. */
/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "debugfile.h"
#include "elfobj.h"
#include "perfmap.h"
#include "symbolize.h"
#include "tfile.h"
#include "xmalloc.h"

/*
 * One cache entry per mapped file (path + inode): its ELF, the separate debug
 * file if any, a libdw handle for line numbers, the load bias, and a table of
 * function symbols sorted by link-time address for binary search. Each
 * mapping of the caller's maps points to its entry once looked up, so a
 * repeated lookup costs a binary search over the maps, one over the symbols,
 * and (with DWARF) libdw's own cached CU and line table search.
 */

struct fsym {
	uint64_t addr, size;
	const char *name;       /* owned by an elfobj */
	char *demangled;        /* lazily; NULL if not tried or not C++ */
	int tried;
};

struct symobj {
	char *path;
	uint64_t inode;
	struct elfobj *elf, *dbg;
	struct debugfile_dwarf dwarf;
	Dwarf *dw;                      /* dwarf.dw, or NULL */
	uint64_t bias;
	int have_bias;
	struct fsym *syms;
	size_t nsyms;
};

struct symbolizer {
	pid_t pid;
	const struct proc_maps *maps;
	struct symobj **by_map;         /* per mapping index; NULL if not looked up */
	unsigned char *tried;           /* per mapping index */
	struct symobj **objs;
	size_t nobjs, capobjs;
	int root;                       /* the target's root (tfile_root), or -errno */
	const struct perfmap *jit;      /* names for code in no ELF object, or NULL */
};

/* ---- demangling: libstdc++'s __cxa_demangle (C linkage), loaded on demand ---- */

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn get_demangler(void)
{
	static demangle_fn fn;
	static int tried;

	if (!tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		tried = 1;
		if (h)
			fn = (demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return fn;
}

/* The demangled form of a "_Z" name (malloc'd), or NULL. */
static char *demangle(const char *name)
{
	demangle_fn fn;
	int status = 0;
	char *r;

	if (strncmp(name, "_Z", 2) || !(fn = get_demangler()))
		return NULL;
	r = fn(name, NULL, NULL, &status);
	if (status) {
		free(r);
		return NULL;
	}
	return r;
}

/* ---- per-object tables ---- */

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* at one address the bigger symbol first, it is kept */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return 0;
}

/* Append e's defined function symbols to o's table (cap: its capacity). */
static void add_syms(struct symobj *o, const struct elfobj *e, size_t *cap)
{
	const struct elfobj_sym *s;
	size_t n;

	if (!e)
		return;
	s = elfobj_syms(e, &n);
	for (size_t i = 0; i < n; i++) {
		if (s[i].shndx == SHN_UNDEF || !s[i].value ||
		    (s[i].type != STT_FUNC && s[i].type != STT_GNU_IFUNC))
			continue;
		if (o->nsyms == *cap) {
			*cap = *cap ? *cap * 2 : 1024;
			o->syms = xrealloc(o->syms, *cap * sizeof(*o->syms));
		}
		o->syms[o->nsyms++] = (struct fsym) {
			.addr = s[i].value, .size = s[i].size, .name = s[i].name,
		};
	}
}

/* Sort the function table and keep one symbol per address. */
static void build_table(struct symobj *o)
{
	size_t cap = 0, j = 0;

	add_syms(o, o->elf, &cap);
	add_syms(o, o->dbg, &cap);
	if (!o->nsyms)
		return;
	qsort(o->syms, o->nsyms, sizeof(*o->syms), cmp_fsym);
	for (size_t i = 1; i < o->nsyms; i++)
		if (o->syms[i].addr != o->syms[j].addr)
			o->syms[++j] = o->syms[i];
	o->nsyms = j + 1;
}

/* Lowest mapping of the same file as m. */
static const struct proc_map *first_map(const struct proc_maps *maps, const struct proc_map *m)
{
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && maps->v[i].inode == m->inode &&
		    !strcmp(maps->v[i].path, m->path))
			return &maps->v[i];
	return m;
}

/* Load the file behind m (a file mapping) into a new cache entry. */
static struct symobj *load_obj(struct symbolizer *s, const struct proc_map *m)
{
	const struct proc_map *first = first_map(s->maps, m);
	struct symobj *o = xcalloc(1, sizeof(*o));
	struct elfobj *dwelf = NULL;
	char *where = NULL;

	o->path = xstrdup(m->path);
	o->inode = m->inode;
	o->elf = elfobj_open_fd(proc_open_mapped(s->pid, first));
	if (!o->elf)
		return o;
	o->have_bias = !elfobj_load_bias(o->elf, first, &o->bias) ||
		       !elfobj_load_bias(o->elf, m, &o->bias);
	if (elfobj_has_debug_info(o->elf)) {
		dwelf = o->elf;
		where = xstrdup(m->path);
	} else if ((o->dbg = debugfile_open(o->elf, s->root, m->path, &where)) &&
		   elfobj_has_debug_info(o->dbg)) {
		dwelf = o->dbg;
	}
	if (dwelf && !debugfile_dwarf_begin(&o->dwarf, dwelf, s->root, where))
		o->dw = o->dwarf.dw;
	free(where);
	build_table(o);
	return o;
}

static void free_obj(struct symobj *o)
{
	for (size_t i = 0; i < o->nsyms; i++)
		free(o->syms[i].demangled);
	free(o->syms);
	debugfile_dwarf_end(&o->dwarf);
	elfobj_free(o->dbg);
	elfobj_free(o->elf);
	free(o->path);
	free(o);
}

/* The cache entry for mapping m, loading it on first use; NULL for
 * anonymous and special ([vdso], [heap]) mappings. */
static struct symobj *obj_for(struct symbolizer *s, const struct proc_map *m)
{
	size_t idx = m - s->maps->v;
	struct symobj *o = NULL;

	if (s->tried[idx])
		return s->by_map[idx];
	s->tried[idx] = 1;
	if (!m->path || m->path[0] != '/')
		return NULL;
	for (size_t i = 0; i < s->nobjs && !o; i++)
		if (s->objs[i]->inode == m->inode && !strcmp(s->objs[i]->path, m->path))
			o = s->objs[i];
	if (!o) {
		o = load_obj(s, m);
		if (s->nobjs == s->capobjs) {
			s->capobjs = s->capobjs ? s->capobjs * 2 : 16;
			s->objs = xrealloc(s->objs, s->capobjs * sizeof(*s->objs));
		}
		s->objs[s->nobjs++] = o;
	}
	s->by_map[idx] = o;
	return o;
}

/* The function symbol holding link-time address a, or NULL. */
static struct fsym *find_sym(struct symobj *o, uint64_t a)
{
	size_t lo = 0, hi = o->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first symbol above a; look back past small nested symbols */
	for (size_t k = 0; k < 8 && lo > 0; k++, lo--) {
		struct fsym *f = &o->syms[lo - 1];

		if (!f->size || a < f->addr + f->size)
			return f;
	}
	return NULL;
}

/* Code in no ELF object (anonymous, a memfd, not mapped when the maps were
 * read): the perf map's name, if any. */
static int jit_lookup(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	const char *name = perfmap_lookup(s->jit, addr, &out->offset);

	if (!name)
		return -ENOENT;
	out->function = name;
	out->system_name = name;
	return 0;
}

/* ---- API ---- */

struct symbolizer *symbolizer_new(pid_t pid, const struct proc_maps *maps)
{
	struct symbolizer *s;

	if (!maps)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->pid = pid;
	s->maps = maps;
	s->by_map = xcalloc(maps->n ? maps->n : 1, sizeof(*s->by_map));
	s->tried = xcalloc(maps->n ? maps->n : 1, 1);
	s->root = tfile_root(pid);
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobjs; i++)
		free_obj(s->objs[i]);
	free(s->objs);
	if (s->root >= 0)
		close(s->root);
	free(s->by_map);
	free(s->tried);
	free(s);
}

int symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	const struct proc_map *m = proc_maps_find(s->maps, addr);
	struct symobj *o;
	struct fsym *f;
	uint64_t a;

	memset(out, 0, sizeof(*out));
	out->map = m;
	if (!m || !(o = obj_for(s, m)) || !o->have_bias)
		return jit_lookup(s, addr, out);
	a = addr - o->bias;
	f = find_sym(o, a);
	if (f) {
		if (!f->tried) {
			f->demangled = demangle(f->name);
			f->tried = 1;
		}
		out->function = f->demangled ? f->demangled : f->name;
		out->system_name = f->name;
		out->offset = a - f->addr;
	}
	if (o->dw) {
		Dwarf_Die cu;
		Dwarf_Line *line;

		if (dwarf_addrdie(o->dw, a, &cu) && (line = dwarf_getsrc_die(&cu, a))) {
			int lineno = 0;

			out->file = dwarf_linesrc(line, NULL, NULL);
			if (!dwarf_lineno(line, &lineno))
				out->line = lineno;
		}
	}
	return f || out->file ? 0 : -ENOENT;
}

void symbolizer_set_perfmap(struct symbolizer *s, const struct perfmap *pm)
{
	s->jit = pm;
}

const char *symbolizer_build_id(struct symbolizer *s, const struct proc_map *map)
{
	struct symobj *o;

	if (!map || map < s->maps->v || map >= s->maps->v + s->maps->n)
		return NULL;
	o = obj_for(s, map);
	return o && o->elf ? elfobj_build_id(o->elf) : NULL;
}
