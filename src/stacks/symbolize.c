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
#include "base/xmalloc.h"
#include "model/debugfetch.h"
#include "model/debugfile.h"
#include "model/elfobj.h"
#include "model/perfmap.h"
#include "model/target.h"
#include "model/tfile.h"
#include "stacks/symbolize.h"

/*
 * One cache entry per object of the target (target_object, opened with its
 * symbols): the separate debug file if any, a libdw handle for line
 * numbers, and a table of function symbols sorted by link-time address for
 * binary search. The files are opened first (hold_obj: that takes the
 * target, its root and its access), read on the first lookup (load_obj:
 * that takes only the files, so it works after the target is gone). Each
 * mapping of the target's maps points to its entry and has its own load
 * bias (a file may be mapped twice at unrelated addresses), found once
 * per maps version, so a repeated lookup costs a binary search over the
 * maps, one over the symbols, and (with DWARF) libdw's own cached CU and
 * line table search. When the target's code mappings change, the entries
 * of objects no longer mapped go. What the disk lacks (the DWARF of an
 * object with a build id, a dwz alt file) is asked of debuginfod
 * (debugfetch) once per object, only while the session allows it
 * (symbolizer_allow_fetch) and only before the object is read: names once
 * given out are never taken back.
 */

struct fsym {
	uint64_t addr, size;
	const char *name;       /* owned by an elfobj */
	char *demangled;        /* lazily; NULL if not tried or not C++ */
	int tried;
};

struct symobj {
	struct elfobj *elf;             /* the target's */
	struct elfobj *dbg;
	struct elfobj *dwelf;           /* elf or dbg: the one with .debug_info, or NULL */
	struct elfobj *alt;             /* dwelf's dwz alt file until loaded, or NULL */
	int loaded;                     /* dwarf and syms read */
	int want_fetch;                 /* its DWARF or alt file may come from debuginfod */
	struct debugfile_dwarf dwarf;
	Dwarf *dw;                      /* dwarf.dw, or NULL */
	struct fsym *syms;
	size_t nsyms;
};

struct mapsym {
	struct symobj *o;               /* NULL: none */
	uint64_t bias;
	int tried, have_bias;
};

/* Names of code that is gone (symbolizer_retire), copied. */
struct retired {
	uint64_t addr;                  /* as looked up: the return address - 1 */
	char *function, *system_name, *file;
	int line;
	uint64_t offset;
};

struct symbolizer {
	struct target *t;
	struct retired *ret;            /* stand-in k names ret[k] */
	size_t nret, capret;
	uint64_t *ret_idx;              /* pc -> k + 1 for the change ret_gen; 0 empty */
	uint64_t *ret_pc;               /* the pc of each ret_idx slot */
	size_t ret_idx_cap;
	uint64_t ret_gen;
	struct mapsym *by_map;          /* per mapping index of maps version ver */
	size_t nby_map;
	uint64_t ver;
	struct symobj **objs;
	size_t nobjs, capobjs;
	int root;                       /* the target's root (tfile_root), or -errno */
	const struct perfmap *jit;      /* names for code in no ELF object, or NULL */
	symbolize_namer_fn namer;       /* names of pseudo-PCs, or NULL */
	const void *namer_arg;
	int fetch_ok;                   /* debuginfod may be asked now */
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

char *symbolize_demangle(const char *name)
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

/* A cache entry for object e, the file behind m, with the files it
 * takes opened (its debug file, that one's alt file), none read yet. */
static struct symobj *hold_obj(struct symbolizer *s, const struct proc_map *m,
			       struct elfobj *e)
{
	struct symobj *o = xcalloc(1, sizeof(*o));
	char *where = NULL;

	o->elf = e;
	if (elfobj_has_debug_info(o->elf)) {
		o->dwelf = o->elf;
		where = xstrdup(m->path);
	} else if ((o->dbg = debugfile_open(o->elf, s->root, target_reader(s->t), m->path,
					    &where)) &&
		   elfobj_has_debug_info(o->dbg)) {
		o->dwelf = o->dbg;
	}
	if (o->dwelf)
		o->alt = debugfile_alt_open(o->dwelf, s->root, target_reader(s->t), where);
	free(where);
	o->want_fetch = o->dwelf ? o->alt == NULL && elfobj_altlink(o->dwelf, NULL) != NULL :
			elfobj_build_id(o->elf) != NULL;
	return o;
}

/*
 * What o lacks on disk from debuginfod, when the session allows it now and
 * o is not read yet: its debug file (kept if it has DWARF), then the dwz
 * alt file its DWARF names if no disk has it (debugfile_alt_open). Once
 * per object, unless a fetch was put off (-EAGAIN: the next call asks).
 */
static void fetch_obj(struct symbolizer *s, struct symobj *o)
{
	const char *alt_id = NULL;
	struct elfobj *d;
	int rc;

	if (!o->want_fetch || !s->fetch_ok || o->loaded)
		return;
	if (!o->dwelf) {
		rc = debugfetch_debuginfo(elfobj_build_id(o->elf), &d);
		if (rc == -EAGAIN)
			return;
		if (rc || !elfobj_has_debug_info(d)) {
			elfobj_free(d);
			o->want_fetch = 0;
			return;
		}
		elfobj_free(o->dbg);
		o->dbg = o->dwelf = d;
		o->alt = debugfile_alt_open(d, s->root, target_reader(s->t), NULL);
	}
	o->want_fetch = 0;
	if (!o->alt && elfobj_altlink(o->dwelf, &alt_id) && alt_id &&
	    debugfetch_debuginfo(alt_id, &o->alt) == -EAGAIN)
		o->want_fetch = 1;	/* the alt file, later */
}

/* Read what o's names take from its files: libdw over its DWARF (tens of
 * milliseconds for a big object, many times that on a loaded machine)
 * and the function table, after what debuginfod may add (fetch_obj).
 * Returns o. */
static struct symobj *load_obj(struct symbolizer *s, struct symobj *o)
{
	if (o->loaded)
		return o;
	fetch_obj(s, o);
	o->loaded = 1;
	if (o->dwelf && !debugfile_dwarf_begin_alt(&o->dwarf, o->dwelf, o->alt))
		o->dw = o->dwarf.dw;
	o->alt = NULL;	/* the dwarf's now, or freed */
	build_table(o);
	return o;
}

static void free_obj(struct symobj *o)
{
	for (size_t i = 0; i < o->nsyms; i++)
		free(o->syms[i].demangled);
	free(o->syms);
	debugfile_dwarf_end(&o->dwarf);
	elfobj_free(o->alt);
	elfobj_free(o->dbg);
	free(o);
}

static struct symobj *symobj_of(struct symbolizer *s, const struct proc_map *m,
				struct elfobj *e);

/* The per-mapping entries, made anew for each version of the maps. */
static struct mapsym *map_entries(struct symbolizer *s, const struct proc_maps *maps)
{
	if (s->ver != target_maps_version(s->t)) {
		free(s->by_map);
		s->nby_map = maps->n;
		s->by_map = xcalloc(maps->n ? maps->n : 1, sizeof(*s->by_map));
		s->ver = target_maps_version(s->t);
	}
	return s->by_map;
}

/* The cache entry for mapping m of maps (and its bias in *ms), its files
 * opened on first use (not read: load_obj); none for anonymous and
 * special ([vdso], [heap]) mappings. */
static struct mapsym *obj_for(struct symbolizer *s, const struct proc_maps *maps,
			      const struct proc_map *m)
{
	struct mapsym *ms = &map_entries(s, maps)[m - maps->v];
	struct elfobj *e;

	if (ms->tried)
		return ms;
	ms->tried = 1;
	if (!m->path || m->path[0] != '/')
		return ms;
	e = target_object(s->t, m, TARGET_OBJ_SYMS, NULL);
	if (!e)
		return ms;
	ms->o = symobj_of(s, m, e);
	ms->have_bias = !target_map_bias(s->t, m, e, &ms->bias);
	return ms;
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

/* target_on_change listener: forget the mappings, and the objects no
 * longer mapped (the target frees those next). */
static void on_maps_change(void *arg, const struct proc_maps *old)
{
	struct symbolizer *s = arg;
	size_t j = 0;

	(void)old;
	s->ver = 0;	/* versions start at 1 */
	for (size_t i = 0; i < s->nobjs; i++) {
		if (target_object_held(s->t, s->objs[i]->elf))
			s->objs[j++] = s->objs[i];
		else
			free_obj(s->objs[i]);
	}
	s->nobjs = j;
}

struct symbolizer *symbolizer_new(struct target *t)
{
	struct symbolizer *s;

	if (!t)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->t = t;
	if (target_on_change(t, TARGET_ON_SYMBOLS, on_maps_change, s)) {
		free(s);
		return NULL;
	}
	s->root = tfile_root(target_reader(t));
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	target_off_change(s->t, on_maps_change, s);
	for (size_t i = 0; i < s->nobjs; i++)
		free_obj(s->objs[i]);
	free(s->objs);
	for (size_t i = 0; i < s->nret; i++) {
		free(s->ret[i].function);
		free(s->ret[i].system_name);
		free(s->ret[i].file);
	}
	free(s->ret);
	free(s->ret_idx);
	free(s->ret_pc);
	if (s->root >= 0)
		close(s->root);
	free(s->by_map);
	free(s);
}

/* Name link-time address a of object o into out (its map and addr set).
 * 0 or -ENOENT. */
static int name_in(struct symobj *o, uint64_t a, struct sym_info *out)
{
	struct fsym *f = find_sym(o, a);

	if (f) {
		if (!f->tried) {
			f->demangled = symbolize_demangle(f->name);
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

/* A stand-in's names (addr: the stand-in - 1). 0 or -ENOENT. */
static int retired_lookup(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	uint64_t k = (addr - SYMBOLIZE_RETIRED_BASE) >> 4;
	const struct retired *r;

	if (k >= s->nret)
		return -ENOENT;
	r = &s->ret[k];
	out->addr = r->addr;
	out->function = r->function;
	out->system_name = r->system_name;
	out->file = r->file;
	out->line = r->line;
	out->offset = r->offset;
	return r->function || r->file ? 0 : -ENOENT;
}

int symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	const struct proc_maps *maps = target_maps(s->t);
	const struct proc_map *m;
	struct mapsym *ms;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	if (addr >= SYMBOLIZE_RETIRED_BASE)
		return retired_lookup(s, addr, out);
	if (addr >= SYMBOLIZE_NAMED_BASE)
		return s->namer ? s->namer(s->namer_arg, addr, out) : -ENOENT;
	m = maps ? proc_maps_find(maps, addr) : NULL;
	out->map = m;
	if (!m || !(ms = obj_for(s, maps, m)) || !ms->o || !ms->have_bias)
		return jit_lookup(s, addr, out);
	return name_in(load_obj(s, ms->o), addr - ms->bias, out);
}

int symbolizer_hold(struct symbolizer *s, uint64_t addr)
{
	const struct proc_maps *maps = target_maps(s->t);
	const struct proc_map *m = maps ? proc_maps_find(maps, addr) : NULL;
	struct mapsym *ms = m ? obj_for(s, maps, m) : NULL;

	if (!ms || !ms->o)
		return -ENOENT;
	fetch_obj(s, ms->o);
	return s->fetch_ok && ms->o->want_fetch && !ms->o->loaded;
}

void symbolizer_allow_fetch(struct symbolizer *s, int on)
{
	if (s)
		s->fetch_ok = on;
}

/* The cache entry for object e (the file behind m), its files opened if new. */
static struct symobj *symobj_of(struct symbolizer *s, const struct proc_map *m,
				struct elfobj *e)
{
	struct symobj *o;

	for (size_t i = 0; i < s->nobjs; i++)
		if (s->objs[i]->elf == e)
			return s->objs[i];
	o = hold_obj(s, m, e);
	if (s->nobjs == s->capobjs) {
		s->capobjs = s->capobjs ? s->capobjs * 2 : 16;
		s->objs = xrealloc(s->objs, s->capobjs * sizeof(*s->objs));
	}
	s->objs[s->nobjs++] = o;
	return o;
}

/* The slot of pc in the stand-ins of this change (ret_idx), grown as needed. */
static size_t retire_slot(struct symbolizer *s, uint64_t pc)
{
	size_t mask, i;

	if (s->ret_gen != target_generation(s->t) || !s->ret_idx_cap) {
		free(s->ret_idx);
		free(s->ret_pc);
		s->ret_idx_cap = 256;
		s->ret_idx = xcalloc(s->ret_idx_cap, sizeof(*s->ret_idx));
		s->ret_pc = xcalloc(s->ret_idx_cap, sizeof(*s->ret_pc));
		s->ret_gen = target_generation(s->t);
	}
	mask = s->ret_idx_cap - 1;
	for (i = (pc * 0x9e3779b97f4a7c15ULL >> 20) & mask; s->ret_idx[i] && s->ret_pc[i] != pc;
	     i = (i + 1) & mask)
		;
	return i;
}

/* Remember stand-in k for pc in this change. */
static void retire_put(struct symbolizer *s, size_t slot, uint64_t pc, size_t k)
{
	s->ret_idx[slot] = k + 1;
	s->ret_pc[slot] = pc;
	if (s->nret * 2 > s->ret_idx_cap) {
		uint64_t *idx = s->ret_idx, *pcs = s->ret_pc;
		size_t cap = s->ret_idx_cap;

		s->ret_idx_cap *= 2;
		s->ret_idx = xcalloc(s->ret_idx_cap, sizeof(*s->ret_idx));
		s->ret_pc = xcalloc(s->ret_idx_cap, sizeof(*s->ret_pc));
		for (size_t i = 0; i < cap; i++)
			if (idx[i]) {
				size_t j = retire_slot(s, pcs[i]);

				s->ret_idx[j] = idx[i];
				s->ret_pc[j] = pcs[i];
			}
		free(idx);
		free(pcs);
	}
}

static char *dup_or_null(const char *p)
{
	return p ? xstrdup(p) : NULL;
}

uint64_t symbolizer_retire(struct symbolizer *s, const struct proc_maps *old, uint64_t pc)
{
	const struct proc_map *m = pc && pc < SYMBOLIZE_RETIRED_BASE ?
				   proc_maps_find(old, pc - 1) : NULL;
	struct sym_info si = { 0 };
	struct elfobj *e;
	struct retired *r;
	uint64_t bias;
	size_t slot;

	if (!m || !m->path || m->path[0] != '/')
		return pc;
	slot = retire_slot(s, pc);
	if (s->ret_idx[slot])
		return SYMBOLIZE_RETIRED_BASE + ((s->ret_idx[slot] - 1) << 4) + 1;
	if (s->nret >= SYMBOLIZE_MAX_RETIRED)
		return pc;
	e = target_object(s->t, m, TARGET_OBJ_SYMS, NULL);
	if (e && !elfobj_load_bias(e, m, &bias))
		name_in(load_obj(s, symobj_of(s, m, e)), pc - 1 - bias, &si);
	if (s->nret == s->capret) {
		s->capret = s->capret ? s->capret * 2 : 64;
		s->ret = xrealloc(s->ret, s->capret * sizeof(*s->ret));
	}
	r = &s->ret[s->nret];
	*r = (struct retired){
		.addr = pc - 1,
		.function = dup_or_null(si.function),
		.system_name = dup_or_null(si.system_name),
		.file = dup_or_null(si.file),
		.line = si.line,
		.offset = si.offset,
	};
	retire_put(s, slot, pc, s->nret);
	return SYMBOLIZE_RETIRED_BASE + ((uint64_t)s->nret++ << 4) + 1;
}

void symbolizer_set_perfmap(struct symbolizer *s, const struct perfmap *pm)
{
	s->jit = pm;
}

void symbolizer_set_namer(struct symbolizer *s, symbolize_namer_fn namer, const void *arg)
{
	s->namer = namer;
	s->namer_arg = arg;
}

const char *symbolizer_build_id(struct symbolizer *s, const struct proc_map *map)
{
	const struct proc_maps *maps = target_maps(s->t);
	struct mapsym *ms;

	if (!maps || !map || map < maps->v || map >= maps->v + maps->n)
		return NULL;
	ms = obj_for(s, maps, map);
	return ms->o ? elfobj_build_id(ms->o->elf) : NULL;
}
