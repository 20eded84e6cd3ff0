/* The objects of a process in the dynamic linker's lookup order: the executable, LD_PRELOAD, then r_debug's link_map list. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/hooks.h"
#include "model/hooks_int.h"
#include "model/target.h"
#include "model/tfile.h"
#include "model/tmem.h"

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

void hooks_order_free(struct objlist *l)
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
	hooks_order_free(&ld);
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
int hooks_order_build(struct objlist *l, pid_t pid, const struct proc_maps *maps, int *is_static)
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
			hooks_order_free(&run);
			return 0;
		}
		hooks_order_free(l);
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
