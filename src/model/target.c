/* The traced process as heapattach knows it: one maps cache with a generation, one memory reader, one object cache. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/target.h"
#include "model/tfile.h"
#include "model/tmem.h"

#define TARGET_VDSO_MAX (64u << 10)	/* a vDSO is 8 KiB; we copy no more */

struct tobj {
	char *path;		/* as in the maps ("[vdso]" for the vDSO) */
	unsigned dev_major, dev_minor;
	uint64_t inode;
	unsigned flags;		/* TARGET_OBJ_* it was opened with */
	int err;		/* 0, or -errno: cached failure */
	struct elfobj *elf;
};

struct listener {
	target_change_fn fn;
	void *arg;
	enum target_listener who;
	uint64_t seq;                   /* registration order within one kind */
};

struct target {
	pid_t pid, reader;
	struct proc_maps maps;
	uint64_t gen;			/* of the code mappings */
	uint64_t version;		/* of the maps array */
	uint64_t maps_ns;		/* when the maps were last read */
	int slow;			/* process_vm_readv refused */
	struct tobj **objs;
	size_t nobjs, cap;
	struct listener ls[TARGET_MAX_LISTENERS];
	uint64_t ls_seq;
	struct target_stats st;
};

struct target *target_new(pid_t pid, pid_t reader)
{
	struct target *t;

	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	t = xcalloc(1, sizeof(*t));
	t->pid = pid;
	t->reader = reader > 0 ? reader : pid;
	return t;
}

static void tobj_free(struct tobj *o)
{
	elfobj_free(o->elf);
	free(o->path);
	free(o);
}

void target_free(struct target *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nobjs; i++)
		tobj_free(t->objs[i]);
	free(t->objs);
	proc_maps_free(&t->maps);
	free(t);
}

pid_t target_pid(const struct target *t)
{
	return t->pid;
}

pid_t target_reader(const struct target *t)
{
	return t->reader;
}

void target_set_reader(struct target *t, pid_t tid)
{
	t->reader = tid > 0 ? tid : t->pid;
}

void target_get_stats(const struct target *t, struct target_stats *st)
{
	*st = t->st;
}

/* ---- maps ---- */

/* Code from a file (or the vDSO): what unwind tables, frame rules and
 * names are derived from. Not a memfd (no ELF: our own trampolines, whose
 * coming and going at attach and detach must cost no flush, or a JIT's
 * double mapping). */
static int is_code(const struct proc_map *m)
{
	return (m->prot & PROC_MAP_X) && m->path &&
	       ((m->path[0] == '/' && strncmp(m->path, "/memfd:", 7)) ||
		!strcmp(m->path, "[vdso]"));
}

/* The next code mapping of maps from index *i on, or NULL. */
static const struct proc_map *next_code(const struct proc_maps *maps, size_t *i)
{
	for (; *i < maps->n; (*i)++)
		if (is_code(&maps->v[*i]))
			return &maps->v[(*i)++];
	return NULL;
}

/* 1 if a and b hold the same code mappings. Anonymous memory, data and
 * permission changes of anonymous code (a JIT's W^X flips) come and go
 * all the time and change nothing derived. */
static int same_code(const struct proc_maps *a, const struct proc_maps *b)
{
	size_t i = 0, j = 0;

	for (;;) {
		const struct proc_map *x = next_code(a, &i), *y = next_code(b, &j);

		if (!x || !y)
			return !x && !y;
		if (!proc_map_same(x, y))
			return 0;
	}
}

static int obj_is(const struct tobj *o, const struct proc_map *m)
{
	return m->path && o->dev_major == m->dev_major && o->dev_minor == m->dev_minor &&
	       o->inode == m->inode && !strcmp(o->path, m->path);
}

/* Free the objects no mapping of the current maps holds. The vDSO is kept
 * only while a mapping of that name is at the same place: the kernel may
 * map another image after exec. */
static void prune_objects(struct target *t)
{
	size_t j = 0;

	for (size_t i = 0; i < t->nobjs; i++) {
		struct tobj *o = t->objs[i];
		int held = 0;

		for (size_t k = 0; k < t->maps.n && !held; k++)
			held = obj_is(o, &t->maps.v[k]);
		if (held && strcmp(o->path, "[vdso]"))
			t->objs[j++] = o;
		else
			tobj_free(o);
	}
	t->nobjs = j;
}

/* The one dispatcher of a change: each kind of listener in its order
 * (enum target_listener), several of a kind in registration order. */
static void dispatch_change(struct target *t, const struct proc_maps *old)
{
	for (int who = 0; who < TARGET_LISTENER_KINDS; who++) {
		uint64_t done = 0;

		for (;;) {	/* the next of this kind by registration */
			struct listener *next = NULL;

			for (size_t i = 0; i < TARGET_MAX_LISTENERS; i++) {
				struct listener *l = &t->ls[i];

				if (l->fn && (int)l->who == who && l->seq > done &&
				    (!next || l->seq < next->seq))
					next = l;
			}
			if (!next)
				break;
			done = next->seq;
			next->fn(next->arg, old);
		}
	}
}

/* Take fresh as the maps (owned from now on). 1 if the code changed, else 0. */
static int take_maps(struct target *t, struct proc_maps *fresh)
{
	int same = t->gen && same_code(&t->maps, fresh);
	struct proc_maps old = t->maps;

	t->maps_ns = clock_ns(CLOCK_MONOTONIC);
	t->st.maps_reads++;
	t->maps = *fresh;
	t->version++;
	if (same || ++t->gen == 1) {
		/* the first read: nothing was derived yet */
		proc_maps_free(&old);
		return 0;
	}
	t->st.changes++;
	dispatch_change(t, &old);
	proc_maps_free(&old);
	prune_objects(t);
	return 1;
}

int target_maps_reload(struct target *t)
{
	struct proc_maps fresh = { 0 };
	int ret = proc_maps_read(t->reader, &fresh);

	if (ret)
		return ret;
	return take_maps(t, &fresh);
}

int target_maps_set(struct target *t, const char *buf, size_t len)
{
	struct proc_maps fresh = { 0 };
	int ret = proc_maps_parse(buf, len, &fresh);

	if (ret)
		return ret;
	return take_maps(t, &fresh);
}

const struct proc_maps *target_maps(struct target *t)
{
	if (!t->gen && target_maps_reload(t) < 0)
		return NULL;
	return &t->maps;
}

uint64_t target_generation(const struct target *t)
{
	return t->gen;
}

uint64_t target_maps_version(const struct target *t)
{
	return t->version;
}

int target_find(struct target *t, uint64_t addr, const struct proc_map **m)
{
	int ret;

	if (!t->gen && (ret = target_maps_reload(t)) < 0)
		return ret;
	*m = proc_maps_find(&t->maps, addr);
	if (*m)
		return 0;
	if (clock_ns(CLOCK_MONOTONIC) - t->maps_ns < TARGET_MAPS_GAP_NS)
		return -EAGAIN;
	ret = target_maps_reload(t);
	if (ret < 0)
		return ret;
	*m = proc_maps_find(&t->maps, addr);
	return *m ? 0 : -ENOENT;
}

void target_maps_expire(struct target *t)
{
	t->maps_ns = 0;
}

const struct proc_map *target_map_at(struct target *t, uint64_t addr)
{
	const struct proc_map *m = NULL;

	return target_find(t, addr, &m) ? NULL : m;
}

int target_on_change(struct target *t, enum target_listener who, target_change_fn fn, void *arg)
{
	for (size_t i = 0; i < TARGET_MAX_LISTENERS; i++)
		if (!t->ls[i].fn) {
			t->ls[i] = (struct listener){ fn, arg, who, ++t->ls_seq };
			return 0;
		}
	return -ENOSPC;
}

void target_off_change(struct target *t, target_change_fn fn, void *arg)
{
	for (size_t i = 0; i < TARGET_MAX_LISTENERS; i++)
		if (t->ls[i].fn == fn && t->ls[i].arg == arg)
			t->ls[i].fn = NULL;
}

/* ---- memory ---- */

ssize_t target_read_some(struct target *t, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { .iov_base = buf, .iov_len = len };
	struct iovec r = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	size_t done = 0;
	ssize_t n;
	int err = -EFAULT;

	t->st.mem_reads++;
	if (!len)
		return 0;
	if (!t->slow && !tmem_ptrace_only) {
		n = process_vm_readv(t->reader, &l, 1, &r, 1, 0);
		if (n > 0)
			return n;
		if (n < 0 && errno != EPERM && errno != ENOSYS)
			return -errno;
		t->slow = n < 0;
	}
	/* /proc/PID/mem, then PEEKDATA, word by word up to the first hole */
	while (done < len) {
		size_t k = len - done < sizeof(long) ? len - done : sizeof(long);

		err = tmem_read(t->reader, addr + done, (char *)buf + done, k);
		if (err)
			break;
		done += k;
	}
	return done ? (ssize_t)done : err;
}

int target_read(struct target *t, uint64_t addr, void *buf, size_t len)
{
	t->st.mem_reads++;
	return tmem_read(t->reader, addr, buf, len);
}

int target_write(struct target *t, uint64_t addr, const void *buf, size_t len)
{
	return tmem_write(t->reader, addr, buf, len);
}

int target_reads_slow(const struct target *t)
{
	return t->slow || tmem_ptrace_only;
}

/* ---- objects ---- */

/* The vDSO's image, copied out of the target. NULL on failure (*err set). */
static struct elfobj *open_vdso(struct target *t, const struct proc_map *m, int *err)
{
	size_t len = m->end - m->start;
	struct elfobj *e = NULL;
	char *buf;
	ssize_t n;

	if (!len || len > TARGET_VDSO_MAX) {
		*err = -ENOENT;
		return NULL;
	}
	buf = xmalloc(len);
	n = target_read_some(t, m->start, buf, len);
	if (n < 0)
		*err = (int)n;
	else if (!(e = elfobj_open_mem(buf, (size_t)n)))
		*err = -ENOENT;
	free(buf);
	return e;
}

/*
 * The file of m, a mapping of maps older than the current ones: its range
 * may hold another file by now (map_files would open that one), so its
 * path is opened inside the target's root with its access, and kept only
 * if it is still the file that was mapped there (its inode). An fd or
 * -errno.
 */
static int open_gone(struct target *t, const struct proc_map *m)
{
	struct stat st;
	int root, fd;

	if (m->deleted)
		return -ENOENT;
	root = tfile_root(t->reader);
	if (root < 0)
		return root;
	fd = tfile_open(root, m->path, &st, t->reader);
	close(root);
	if (fd >= 0 && st.st_ino != m->inode) {
		close(fd);
		fd = -ESTALE;
	}
	return fd;
}

/* 1 if m points into the current maps. */
static int is_current(const struct target *t, const struct proc_map *m)
{
	return m >= t->maps.v && m < t->maps.v + t->maps.n;
}

/* Open the object of o (described from m) with o->flags. */
static void tobj_open(struct target *t, struct tobj *o, const struct proc_map *m)
{
	int fd;

	o->err = 0;
	if (!strcmp(m->path, "[vdso]")) {
		o->elf = is_current(t, m) ? open_vdso(t, m, &o->err) : NULL;
		if (!o->elf && !o->err)
			o->err = -ENOENT;
		return;
	}
	fd = is_current(t, m) ? proc_open_mapped(t->reader, m) : open_gone(t, m);
	if (fd < 0)
		o->err = fd;
	else if (!(o->elf = elfobj_open_fd_named(fd, o->flags & TARGET_OBJ_SYMS ? 0 :
						 ELFOBJ_OPEN_NO_SYMS, m->path)))
		o->err = -ENOENT;
	if (!o->err)
		t->st.objects++;
}

struct elfobj *target_object(struct target *t, const struct proc_map *m, unsigned flags,
			     int *err)
{
	struct tobj *o = NULL;

	if (!m->path || (m->path[0] != '/' && strcmp(m->path, "[vdso]"))) {
		if (err)
			*err = -ENOENT;
		return NULL;
	}
	for (size_t i = 0; i < t->nobjs && !o; i++)
		if (obj_is(t->objs[i], m))
			o = t->objs[i];
	if (o && (flags & ~o->flags) && o->elf) {
		/*
		 * Wanted with symbols, opened without. Users keep pointers to
		 * the old one until the next generation bump: keep it and add
		 * the richer one first in the list, where lookups find it.
		 */
		o = NULL;
	}
	if (!o) {
		o = xcalloc(1, sizeof(*o));
		o->path = xstrdup(m->path);
		o->dev_major = m->dev_major;
		o->dev_minor = m->dev_minor;
		o->inode = m->inode;
		o->flags = flags;
		tobj_open(t, o, m);
		if (t->nobjs == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 16;
			t->objs = xrealloc(t->objs, t->cap * sizeof(*t->objs));
		}
		memmove(t->objs + 1, t->objs, t->nobjs * sizeof(*t->objs));
		t->objs[0] = o;
		t->nobjs++;
	}
	if (err)
		*err = o->err;
	return o->elf;
}

int target_object_held(const struct target *t, const struct elfobj *e)
{
	for (size_t i = 0; i < t->nobjs; i++) {
		const struct tobj *o = t->objs[i];

		if (o->elf != e || !strcmp(o->path, "[vdso]"))
			continue;
		for (size_t k = 0; k < t->maps.n; k++)
			if (obj_is(o, &t->maps.v[k]))
				return 1;
	}
	return 0;
}

int target_map_bias(struct target *t, const struct proc_map *m, struct elfobj *e,
		    uint64_t *bias)
{
	const struct proc_maps *maps = &t->maps;

	if (!elfobj_load_bias(e, m, bias))
		return 0;
	/* e.g. a file mapping past every segment's file part: the file's
	 * lowest mapping tells where the object was loaded */
	for (size_t i = 0; i < maps->n; i++)
		if (&maps->v[i] != m && maps->v[i].path && m->path &&
		    maps->v[i].inode == m->inode && maps->v[i].dev_major == m->dev_major &&
		    maps->v[i].dev_minor == m->dev_minor && !strcmp(maps->v[i].path, m->path))
			return elfobj_load_bias(e, &maps->v[i], bias);
	return -ENOENT;
}
