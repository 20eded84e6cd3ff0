/* Allocator entry points: which definitions the dynamic linker binds the target's calls to. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "base/log.h"
#include "base/xmalloc.h"
#include "disasm.h"
#include "model/elfobj.h"
#include "model/hooks.h"
#include "model/target.h"
#include "model/tfile.h"
#include "model/tmem.h"

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

/* One object in lookup order. */
struct obj {
	const struct proc_map *map;     /* its lowest mapping */
	struct elfobj *elf;             /* NULL if it could not be opened */
	int shared;                     /* elf is the target's (target_object) */
	uint64_t bias;
	int have_bias;
};

struct objlist {
	struct obj *v;
	size_t n, cap;
	struct target *t;               /* whose objects to share, or NULL */
};

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

/* ---- target memory ---- */

/* Read len bytes at addr in pid (tmem_read: the one reader of target
 * memory). 0 or -errno. */
static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return tmem_read(pid, addr, buf, len);
}

/* ---- the object list ---- */

/* Lowest mapping of the file that holds addr's mapping (same path), or NULL. */
static const struct proc_map *first_map_of(const struct proc_maps *maps, const struct proc_map *m)
{
	if (!m || !m->path || m->path[0] != '/')
		return NULL;
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && maps->v[i].inode == m->inode &&
		    !strcmp(maps->v[i].path, m->path))
			return &maps->v[i];
	return m;
}

static int objlist_has(const struct objlist *l, const struct proc_map *m)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].map == m || (l->v[i].map->inode == m->inode &&
					 !strcmp(l->v[i].map->path, m->path)))
			return 1;
	return 0;
}

/*
 * The target's object (with symbols) for m when t's maps hold the same
 * mapping, shared with the symbolizer (a big executable is read once);
 * else NULL. The maps are not read again here (target_maps): no change of
 * the target's code, which would free its objects, can happen meanwhile.
 */
static struct elfobj *shared_object(struct target *t, const struct proc_map *m)
{
	const struct proc_maps *tm = t ? target_maps(t) : NULL;
	const struct proc_map *same = tm ? proc_maps_find(tm, m->start) : NULL;

	if (!same || !proc_map_same(same, m))
		return NULL;
	return target_object(t, same, TARGET_OBJ_SYMS, NULL);
}

/* Append the object behind m (a mapping of it) unless listed already; open it
 * through the target's view of the file system. */
static void objlist_add(struct objlist *l, pid_t pid, const struct proc_maps *maps,
			const struct proc_map *m)
{
	struct obj *o;
	int fd;

	m = first_map_of(maps, m);
	if (!m || objlist_has(l, m))
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	o = &l->v[l->n++];
	memset(o, 0, sizeof(*o));
	o->map = m;
	o->elf = shared_object(l->t, m);
	o->shared = o->elf != NULL;
	if (!o->elf) {
		fd = proc_open_mapped(pid, m);
		if (fd < 0) {
			pr_warn("cannot open %s of %d: %s", m->path, (int)pid, strerror(-fd));
			return;
		}
		o->elf = elfobj_open_fd_named(fd, 0, m->path);
	}
	if (o->elf && !elfobj_load_bias(o->elf, m, &o->bias))
		o->have_bias = 1;
}

static void objlist_free(struct objlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (!l->v[i].shared)
			elfobj_free(l->v[i].elf);
	free(l->v);
}

/* Runtime address of the dynamic linker's r_debug, from the executable's
 * DT_DEBUG or ld.so's _r_debug symbol; 0 if neither works. */
static uint64_t find_r_debug(pid_t pid, const struct proc_maps *maps, const struct obj *exe)
{
	uint64_t vaddr, ptr = 0, base;
	const struct proc_map *m;
	struct objlist ld = { 0 };

	if (exe->elf && exe->have_bias && !elfobj_dt_debug_vaddr(exe->elf, &vaddr) &&
	    !read_mem(pid, exe->bias + vaddr, &ptr, sizeof(ptr)) && ptr)
		return ptr;
	base = proc_auxv_get(pid, AT_BASE);
	m = base ? proc_maps_find(maps, base) : NULL;
	if (!m)
		return 0;
	objlist_add(&ld, pid, maps, m);
	if (ld.n && ld.v[0].elf && ld.v[0].have_bias) {
		const struct elfobj_sym *s = elfobj_lookup(ld.v[0].elf, "_r_debug", 0);

		if (s)
			ptr = ld.v[0].bias + s->value;
	}
	objlist_free(&ld);
	return ptr;
}

/*
 * Walk the link_map list (struct link_map: l_addr, l_name, l_ld, l_next, l_prev)
 * and add each object, identified by the mapping that holds its l_ld.
 * 0 if at least the list head was read, else -errno.
 */
static int add_link_map(struct objlist *l, pid_t pid, const struct proc_maps *maps,
			uint64_t r_debug)
{
	uint64_t lm, words[4];
	int32_t version;
	int count = 0;

	/* struct r_debug: int r_version; r_map at 8; r_brk at 16; r_state at 24 */
	for (int tries = 0;; tries++) {
		int32_t state;

		if (read_mem(pid, r_debug, &version, sizeof(version)) || version < 1 ||
		    read_mem(pid, r_debug + 8, &lm, sizeof(lm)) ||
		    read_mem(pid, r_debug + 24, &state, sizeof(state)))
			return -EFAULT;
		/* RT_CONSISTENT; else a dlopen/dlclose is editing the list */
		if (state == 0 || tries >= 100)
			break;
		usleep(1000);
	}
	if (!lm)
		return -ENOENT;   /* ld.so has not filled it in yet */
	while (lm && count++ < 65536) {
		const struct proc_map *m;

		if (read_mem(pid, lm, words, sizeof(words)))
			return l->n ? 0 : -EFAULT;
		/* words: l_addr, l_name, l_ld, l_next */
		m = proc_maps_find(maps, words[2]);
		if (m && m->path && m->path[0] == '/')
			objlist_add(l, pid, maps, m);
		lm = words[3];
	}
	return 0;
}

/*
 * The mapping of the file that the LD_PRELOAD entry tok names, or NULL. A
 * path is compared by inode through the target's root (it may be a symlink
 * to the versioned file that maps shows); a bare name, which the dynamic
 * linker searched for, by file name or its versioned form ("NAME.x.y").
 */
static const struct proc_map *preload_map(pid_t pid, const struct proc_maps *maps, const char *tok)
{
	size_t tlen = strlen(tok);
	int have_st = 0, root;
	struct stat st;

	if (strchr(tok, '/') && (root = tfile_root(pid)) >= 0) {
		have_st = !tfile_stat(root, tok, &st, pid);
		close(root);
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const char *base;

		if (!m->path || m->path[0] != '/')
			continue;
		if (have_st) {
			if (m->inode == st.st_ino && m->dev_major == major(st.st_dev) &&
			    m->dev_minor == minor(st.st_dev))
				return m;
			if (!strcmp(m->path, tok))
				return m;
			continue;
		}
		base = strrchr(m->path, '/') + 1;
		if (!strchr(tok, '/') && !strncmp(base, tok, tlen) &&
		    (base[tlen] == '\0' || base[tlen] == '.'))
			return m;
	}
	return NULL;
}

/* Add the LD_PRELOAD objects named in the target's environment, in order. */
static void add_preload(struct objlist *l, pid_t pid, const struct proc_maps *maps)
{
	char path[64], *env, *p;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (proc_read_file(path, &env, &len))
		return;
	for (p = env; p < env + len; p += strlen(p) + 1) {
		char *save = NULL, *tok;

		if (strncmp(p, "LD_PRELOAD=", 11))
			continue;
		for (tok = strtok_r(p + 11, ": \t", &save); tok; tok = strtok_r(NULL, ": \t", &save)) {
			const struct proc_map *m = preload_map(pid, maps, tok);

			if (m)
				objlist_add(l, pid, maps, m);
			else
				pr_debug("LD_PRELOAD entry %s is not mapped", tok);
		}
		break;
	}
	free(env);
}

/* The executable's mapping: the one holding AT_ENTRY, else /proc/PID/exe's path. */
static const struct proc_map *find_exe_map(pid_t pid, const struct proc_maps *maps)
{
	uint64_t entry = proc_auxv_get(pid, AT_ENTRY);
	const struct proc_map *m = entry ? proc_maps_find(maps, entry) : NULL;
	char path[64], target[PATH_MAX];
	ssize_t n;

	if (m && m->path)
		return m;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = '\0';
	if (n > 10 && !strcmp(target + n - 10, " (deleted)"))
		target[n - 10] = '\0';
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && !strcmp(maps->v[i].path, target))
			return &maps->v[i];
	return NULL;
}

/* Build the lookup order into l. *is_static: the executable has no PT_INTERP. */
static int build_order(struct objlist *l, pid_t pid, const struct proc_maps *maps, int *is_static)
{
	const struct proc_map *exe = find_exe_map(pid, maps);
	uint64_t r_debug;

	if (!exe)
		return -ENOENT;
	objlist_add(l, pid, maps, exe);
	if (!l->n || !l->v[0].elf) {
		pr_err("cannot read the executable %s of %d", exe->path, (int)pid);
		return -ENOEXEC;
	}
	*is_static = !elfobj_has_interp(l->v[0].elf);
	if (*is_static) {
		const struct elfobj_sym *rd = elfobj_lookup(l->v[0].elf, "_r_debug", 1);
		struct objlist run = { .t = l->t };

		/* "ld.so PROGRAM": the kernel ran the dynamic linker, whose
		 * list starts with the real program */
		if (!rd || !l->v[0].have_bias)
			return 0;
		if (add_link_map(&run, pid, maps, l->v[0].bias + rd->value) || !run.n) {
			objlist_free(&run);
			return 0;
		}
		objlist_free(l);
		*l = run;
		*is_static = 0;
		return 0;
	}
	r_debug = hooks_no_r_debug ? 0 : find_r_debug(pid, maps, &l->v[0]);
	if (r_debug && !add_link_map(l, pid, maps, r_debug))
		return 0;
	pr_debug("no r_debug list in %d, using LD_PRELOAD and maps order", (int)pid);
	add_preload(l, pid, maps);
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && maps->v[i].path[0] == '/' && maps->v[i].offset == 0)
			objlist_add(l, pid, maps, &maps->v[i]);
	return 0;
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

/* ---- wrappers that only tail-call another entry point ---- */

#define WRAPPER_MAX_SIZE 64         /* C entry points: tail-jump wrappers only */
#define CXX_WRAPPER_MAX_SIZE 512    /* C++ operators: any call into the C entries */
#define SCAN_MAX_SIZE 4096          /* bytes of a body searched for calls into entries */

/* 1 if name is one of the C++ operators of hook_names. */
static int is_cxx_name(const char *name)
{
	for (size_t i = 0; i < NHOOK_NAMES; i++)
		if (!strcmp(hook_names[i].name, name))
			return hook_names[i].cxx;
	return 0;
}

/* The GOT slot (link-time address) that the PLT stub at vaddr of e jumps
 * through; 0 if the code there is not a stub. */
static uint64_t plt_slot(const struct elfobj *e, uint64_t vaddr)
{
	uint8_t code[16];

	if (elfobj_read(e, vaddr, code, sizeof(code)))
		return 0;
	return disasm_plt_slot(code, sizeof(code), vaddr);
}

/* The entry of set other than h that is bound to name, or NULL. */
static const struct hook *entry_named(const struct hook_set *set, const struct hook *h,
				      const char *name)
{
	for (size_t k = 0; k < set->n; k++) {
		const struct hook *o = &set->v[k];

		if (o == h || o->unsupported)
			continue;
		for (size_t j = 0; j < o->nnames; j++)
			if (!strcmp(o->names[j], name))
				return o;
	}
	return NULL;
}

/* The entry of set other than h that the branch to link-time address target
 * of e reaches: directly (static executables) or through a PLT slot bound
 * to its name. NULL if none. */
static const struct hook *branch_entry(const struct elfobj *e, uint64_t bias,
				       const struct hook *h, const struct hook_set *set,
				       uint64_t target)
{
	uint64_t slot;
	const char *name;

	for (size_t k = 0; k < set->n; k++)
		if (&set->v[k] != h && !set->v[k].unsupported && set->v[k].addr == target + bias)
			return &set->v[k];
	slot = plt_slot(e, target);
	name = slot ? elfobj_got_symbol(e, slot) : NULL;
	return name ? entry_named(set, h, name) : NULL;
}

/*
 * Scan the code of h (defined in e, loaded at bias), at most SCAN_MAX_SIZE
 * bytes: *calls gets 1 << kind of every other entry of set it branches
 * to. If h is a wrapper of another entry, return that entry's name. A C
 * entry point is a wrapper only if it is at most WRAPPER_MAX_SIZE bytes
 * and the branch is a tail "jmp", so that a real allocator that falls back
 * to malloc on one path is never taken for a wrapper (glibc's reallocarray
 * is "jmp realloc@plt"). A C++ operator is one if it calls a C entry point
 * anywhere in its first CXX_WRAPPER_MAX_SIZE bytes: libstdc++'s operator
 * new loops around "call malloc", and a statically linked libstdc++ is not
 * called libstdc++.
 */
static const char *scan_body(const struct elfobj *e, uint64_t bias,
			     const struct hook *h, const struct hook_set *set, uint32_t *calls)
{
	uint64_t value = h->addr - bias, len = h->size;
	int cxx = is_cxx_name(h->names[0]);
	struct disasm_branch *br;
	const char *fwd = NULL;
	uint8_t *code;
	size_t n;

	*calls = 0;
	if (!len)
		return NULL;
	if (len > SCAN_MAX_SIZE)
		len = SCAN_MAX_SIZE;
	code = xmalloc(len);
	br = xmalloc(len / 2 * sizeof(*br));	/* a branch is at least 2 bytes */
	n = elfobj_read(e, value, code, len) ? 0 :
	    disasm_branches(code, len, value, br, len / 2);
	for (size_t i = 0; i < n; i++) {
		const struct hook *o;

		if (br[i].to >= value && br[i].to < value + h->size)
			continue;
		o = branch_entry(e, bias, h, set, br[i].to);
		if (!o)
			continue;
		*calls |= 1u << o->kind;
		if (fwd)
			continue;
		if (cxx ? br[i].at - value < CXX_WRAPPER_MAX_SIZE &&
			  /* a C++ operator calling another C++ operator is not enough */
			  !(br[i].call && is_cxx_name(o->names[0])) :
			  !br[i].call && h->size <= WRAPPER_MAX_SIZE)
			fwd = o->names[0];
	}
	free(br);
	free(code);
	return fwd;
}

/* Mark the entries of set that are wrappers of other entries, and what the
 * others call. */
static void mark_forwards(struct hook_set *set, const struct objlist *l)
{
	for (size_t i = 0; i < set->n; i++) {
		struct hook *h = &set->v[i];

		for (size_t k = 0; k < l->n && !h->unsupported; k++) {
			const struct obj *o = &l->v[k];

			if (o->elf && o->have_bias && !strcmp(o->map->path, h->path)) {
				h->forwards = scan_body(o->elf, o->bias, h, set, &h->calls);
				break;
			}
		}
		if (h->forwards)
			pr_debug("%s in %s forwards to %s", h->names[0], h->path, h->forwards);
		else if (h->calls)
			pr_debug("%s in %s calls entry points of kinds %#x", h->names[0], h->path,
				 h->calls);
	}
}

/* ---- the allocator's own code around each entry point ---- */

#define OWN_MAX (4u << 20)          /* the most code one extent takes */

/* A function of an object, by its start; own: the allocator's (own_extent). */
struct fn_sym {
	uint64_t value, end;
	int own;
};

static int cmp_fn_sym(const void *a, const void *b)
{
	const struct fn_sym *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

/* Names of allocator functions that are not entry points we hook (their
 * public API beside them, and glibc's and jemalloc's prefixed ones). */
static int allocator_name(const char *name)
{
	static const char *const prefixes[] = {
		"malloc", "mallinfo", "mallopt", "__libc_", "__malloc", "_int_", "mi_", "_mi_",
		"je_", "tc_", "tcmalloc", "MallocExtension", "sdallocx", "nallocx", "dallocx",
		"sallocx", "rallocx", "xallocx", "mallctl", "cfree",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* Whether a hook of set in path sits at addr (runtime). */
static int hooked_at(const struct hook_set *set, const char *path, uint64_t addr)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].addr == addr && !strcmp(set->v[i].path, path))
			return 1;
	return 0;
}

/*
 * h's extent in o (struct hook, own_lo/own_hi): its function, then its
 * neighbours in address order as long as they are the allocator's: hooked
 * too, local (a static or hidden helper: the object's own) or named as an
 * allocator's function, never past another global function (the code of
 * whoever linked the allocator in with malloc and free placed apart). The
 * code between two such functions is taken with them. Nothing if h's
 * function is not among the symbols.
 */
static void own_extent(const struct obj *o, const struct hook_set *set, struct hook *h)
{
	size_t n, m = 0, k = 0, at = 0, lo, hi;
	const struct elfobj_sym *syms = elfobj_syms(o->elf, &n);
	struct fn_sym *v = xcalloc(n ? n : 1, sizeof(*v));
	uint64_t want = h->addr - o->bias;
	int found = 0;

	for (size_t i = 0; i < n; i++) {
		const struct elfobj_sym *s = &syms[i];

		if ((s->type != STT_FUNC && s->type != STT_GNU_IFUNC) || s->shndx == SHN_UNDEF)
			continue;
		v[m].value = s->value;
		v[m].end = s->value + s->size;
		v[m].own = s->bind == STB_LOCAL || allocator_name(s->name) ||
			   hooked_at(set, h->path, o->bias + s->value);
		m++;
	}
	qsort(v, m, sizeof(*v), cmp_fn_sym);
	/* aliases at one address: one function, the allocator's if any name says so */
	for (size_t i = 0; i < m; i++) {
		if (k && v[k - 1].value == v[i].value) {
			v[k - 1].own |= v[i].own;
			if (v[i].end > v[k - 1].end)
				v[k - 1].end = v[i].end;
		} else {
			v[k++] = v[i];
		}
	}
	m = k;
	for (size_t i = 0; i < m && !found; i++)
		if (v[i].value == want) {
			at = i;
			found = 1;
		}
	if (found) {
		uint64_t end = v[at].end > want + h->size ? v[at].end : want + h->size;

		for (lo = at; lo > 0 && v[lo - 1].own && end - v[lo - 1].value <= OWN_MAX; lo--)
			;
		for (hi = at; hi + 1 < m && v[hi + 1].own && v[hi + 1].end - v[lo].value <= OWN_MAX;
		     hi++)
			if (v[hi + 1].end > end)
				end = v[hi + 1].end;
		h->own_lo = o->bias + v[lo].value;
		h->own_hi = o->bias + end;
	}
	free(v);
}

/* Each hook's own extent (own_extent), in the object that defines it. */
static void mark_own(struct hook_set *set, const struct objlist *l)
{
	for (size_t i = 0; i < set->n; i++) {
		struct hook *h = &set->v[i];

		for (size_t k = 0; k < l->n; k++) {
			const struct obj *o = &l->v[k];

			if (o->elf && o->have_bias && !strcmp(o->map->path, h->path)) {
				own_extent(o, set, h);
				break;
			}
		}
		if (h->own_hi)
			pr_debug("%s in %s: the allocator's own code around it is %#" PRIx64
				 "-%#" PRIx64, h->names[0], h->path, h->own_lo, h->own_hi);
	}
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
	uint8_t *present = xcalloc(l->n ? l->n : 1, NHOOK_NAMES);
	uint16_t sorted[NHOOK_NAMES];

	for (size_t ti = 0; ti < NHOOK_NAMES; ti++)
		sorted[ti] = (uint16_t)ti;
	qsort(sorted, NHOOK_NAMES, sizeof(sorted[0]), cmp_names);
	for (size_t i = 0; i < l->n; i++) {
		const struct elfobj_sym *syms;
		size_t n;

		if (!l->v[i].elf || !l->v[i].have_bias)
			continue;
		syms = elfobj_syms(l->v[i].elf, &n);
		for (size_t k = 0; k < n; k++) {
			int ti;

			if (syms[k].shndx == SHN_UNDEF)
				continue;
			ti = name_index(sorted, syms[k].name);
			if (ti >= 0)
				present[i * NHOOK_NAMES + ti] = 1;
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
	ret = build_order(&l, pid, maps, &is_static);
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
	mark_forwards(set, &l);
	mark_own(set, &l);
	ret = set->n ? 0 : -ENOENT;
	if (ret && is_static)
		pr_err("static executable %s has no symbol table (stripped?)", l.v[0].map->path);
out:
	free(present);
	objlist_free(&l);
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
	ret = build_order(&l, pid, maps, &is_static);
	for (size_t i = 0; !ret && i < l.n; i++) {
		const struct obj *o = &l.v[i];
		const struct elfobj_sym *s = o->elf ? elfobj_lookup(o->elf, name, !is_static) : NULL;

		if (!s || !o->have_bias)
			continue;
		*addr = o->bias + s->value;
		*map = o->map;
		break;
	}
	objlist_free(&l);
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
