/* Undoing what a heapattach that died left behind, as far as it can be proven. */
/* SPDX-License-Identifier: MIT */
/*
 * A leftover is a claim of the target: the memfd's contents and the
 * target's text are the target's to write. What counts as proof:
 *
 *  - the mapping: /proc/PID/maps (the kernel) names it exactly
 *    "/memfd:heapattach (deleted)" on the kernel's internal shmem mount
 *    (the device of a memfd of our own), shared, and every mapping of that
 *    inode maps the whole file from offset 0; when we may open it through
 *    map_files, fstat agrees (inode, device, size) and F_GET_SEALS answers;
 *  - its header (read from the file): the magic and version of this
 *    heapattach, its size, and code_remote naming one of its r-x views;
 *  - an entry point to restore: discovery finds it now (hooks_resolve), its
 *    bytes are a jmp rel32 into the code part of such a leftover, and the
 *    bytes written back are read from the object's file as the target maps
 *    it, never from the target's memory or the memfd.
 *
 * The header's patch records are only used to keep a leftover mapped while
 * some address they name still jumps into it; nothing is written from them.
 * Only proven leftovers are unmapped, and only if the maps still show them
 * unchanged once the target's threads are out of them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "base/log.h"
#include "base/sys_compat.h"
#include "base/xmalloc.h"
#include "implant/forkchild.h"
#include "implant/implant.h"
#include "implant/recover.h"
#include "model/elfobj.h"
#include "model/tmem.h"

#define LEFT_PATH "/memfd:heapattach"	/* memfd_create("heapattach") in inject.c */
#define LEFT_MAX_VIEWS 4		/* ours has 1 (trap mode) or 2 (fast mode) */
#define ENTRY_PEEK (RELOC_SKIP_MAX + RELOC_JMP_LEN)	/* a landing pad, then our jmp */

struct leftover {
	uint64_t ino;
	uint64_t lo[LEFT_MAX_VIEWS], hi[LEFT_MAX_VIEWS];
	unsigned prot[LEFT_MAX_VIEWS];
	size_t nviews;
	int bad;                /* a mapping of it is not a whole-file view */
	int proven;             /* ours to undo (see the top of this file) */
	int in_use;             /* some address still jumps into it: keep it */
	struct shm_hdr hdr;     /* private copy, proven or not */
};

struct leftovers {
	struct leftover v[IMPLANT_MAX_REGIONS];
	size_t n;
};

/* What recovery works on: the target as discovered, and our implant-to-be. */
struct rec {
	struct implant *im;
	pid_t pid;
	pid_t proc_tid;
	struct proc_maps *maps;
	struct hook_set *hooks;
};

/* Named exactly as inject.c's memfd: the name alone proves nothing. */
static int named_ours(const struct proc_map *m)
{
	return m->path && m->deleted && !strcmp(m->path, LEFT_PATH);
}

/* The device of the kernel's internal shmem mount, where every memfd lives;
 * 0 or -errno. */
static int shm_dev(dev_t *dev)
{
	static dev_t cached;
	static int known;
	struct stat st;
	int fd;

	if (!known) {
		fd = memfd_create("heapattach-probe", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0) {
			close(fd);
			return -errno;
		}
		close(fd);
		cached = st.st_dev;
		known = 1;
	}
	*dev = cached;
	return 0;
}

/*
 * Close the memfds a heapattach killed between creating one in the target
 * and closing it there left open: named exactly like ours, a memfd (on the
 * shmem mount, F_GET_SEALS answers) that nothing maps (a mapped one is a
 * region leftover, handled below). Returns how many.
 */
static int close_leftover_fds(struct rec *s)
{
	char dir[64], path[320], link[64];
	struct dirent *d;
	struct stat st;
	int closed = 0, fd;
	dev_t dev;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", s->proc_tid);
	if (shm_dev(&dev) || !(dp = opendir(dir)))
		return 0;
	while ((d = readdir(dp))) {
		ssize_t n;
		int skip = 0;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, LEFT_PATH " (deleted)") || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		if (fstat(fd, &st) || st.st_dev != dev || fcntl(fd, F_GET_SEALS) < 0)
			skip = 1;	/* not a memfd: not ours */
		close(fd);
		for (size_t i = 0; i < s->maps->n && !skip; i++)
			skip = s->maps->v[i].inode == st.st_ino && named_ours(&s->maps->v[i]);
		if (!skip && implant_close_remote(s->im, atoi(d->d_name)) == 0)
			closed++;
	}
	closedir(dp);
	if (closed)
		pr_warn("closed %d memfd(s) a killed heapattach left open in %d", closed, s->pid);
	return closed;
}

/* Group the mappings named like ours that live on the shmem mount, by inode. */
static void collect(const struct proc_maps *maps, dev_t dev, struct leftovers *L)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		struct leftover *l = NULL;

		if (!named_ours(m) || m->dev_major != major(dev) || m->dev_minor != minor(dev))
			continue;
		for (size_t k = 0; k < L->n && !l; k++)
			if (L->v[k].ino == m->inode)
				l = &L->v[k];
		if (!l) {
			if (L->n == IMPLANT_MAX_REGIONS)
				continue;
			l = &L->v[L->n++];
			l->ino = m->inode;
		}
		if (l->nviews == LEFT_MAX_VIEWS || m->offset || !(m->prot & PROC_MAP_SHARED)) {
			l->bad = 1;
			continue;
		}
		l->lo[l->nviews] = m->start;
		l->hi[l->nviews] = m->end;
		l->prot[l->nviews] = m->prot;
		l->nviews++;
	}
}

/* Read the header of l through map_files, checking the file there is the
 * memfd the maps show; without the right to open it (no CAP_SYS_ADMIN),
 * from the target's view. 0 or -errno. */
static int read_header(pid_t pid, struct leftover *l, dev_t dev)
{
	uint64_t size = l->hi[0] - l->lo[0];
	char path[96];
	struct stat st;
	int fd, rc = 0;

	if (size < REGION_CODE + sizeof(l->hdr))
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 l->lo[0], l->hi[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != EPERM && errno != EACCES)
			return -errno;
		return tmem_read(pid, l->lo[0] + REGION_CODE, &l->hdr, sizeof(l->hdr));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != l->ino ||
	    st.st_dev != dev || (uint64_t)st.st_size != size || fcntl(fd, F_GET_SEALS) < 0 ||
	    pread(fd, &l->hdr, sizeof(l->hdr), REGION_CODE) != (ssize_t)sizeof(l->hdr))
		rc = -EINVAL;
	close(fd);
	return rc;
}

/* 1 if l is a whole memfd of this heapattach's making (as far as anything
 * the target cannot forge and our own header format tell). */
static int prove(pid_t pid, struct leftover *l, dev_t dev)
{
	const struct shm_hdr *h = &l->hdr;
	int code_view = 0;

	if (l->bad || !l->nviews)
		return 0;
	for (size_t i = 1; i < l->nviews; i++)
		if (l->hi[i] - l->lo[i] != l->hi[0] - l->lo[0])
			return 0;
	if (read_header(pid, l, dev))
		return 0;
	if (h->magic != SHM_MAGIC || h->version != SHM_VERSION ||
	    h->total_size != l->hi[0] - l->lo[0] || h->code_size != REGION_CODE)
		return 0;
	for (size_t i = 0; i < l->nviews; i++)
		if (l->lo[i] == h->code_remote &&
		    (l->prot[i] & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_X)) == (PROC_MAP_R | PROC_MAP_X))
			code_view = 1;
	return code_view;
}

/* The proven leftover whose code part holds addr, or NULL. */
static struct leftover *code_owner(struct leftovers *L, uint64_t addr)
{
	for (size_t i = 0; i < L->n; i++) {
		struct leftover *l = &L->v[i];

		if (l->proven && addr >= l->hdr.code_remote &&
		    addr < l->hdr.code_remote + REGION_CODE)
			return l;
	}
	return NULL;
}

/* Where the jmp rel32 at addr in the target leads, if it is one: 0 or -errno. */
static int jump_at(pid_t pid, uint64_t addr, uint64_t *to)
{
	uint8_t b[RELOC_JMP_LEN];
	int rc = tmem_read(pid, addr, b, sizeof(b));

	return rc ? rc : reloc_decode_jmp(b, addr, to);
}

/*
 * Copy len bytes of h's object file at h's address, read from the very file
 * the target maps: through map_files, else through the target's root if
 * the file there is still that inode. 0 or -errno.
 */
static int file_bytes(struct rec *s, const struct hook *h, uint8_t *buf, size_t len)
{
	const struct proc_map *m = h->map;
	struct elfobj *e;
	struct stat st;
	char path[96];
	uint64_t bias;
	int fd, rc;

	if (!m || !m->path)
		return -ENOENT;
	/* its lowest mapping: the load bias is unambiguous there */
	for (size_t i = 0; i < s->maps->n; i++)
		if (s->maps->v[i].path && s->maps->v[i].inode == m->inode &&
		    !strcmp(s->maps->v[i].path, m->path)) {
			m = &s->maps->v[i];
			break;
		}
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)s->proc_tid,
		 m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fd = proc_open_mapped(s->proc_tid, m);
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0 || st.st_ino != m->inode ||
		    major(st.st_dev) != m->dev_major || minor(st.st_dev) != m->dev_minor) {
			close(fd);
			return -ESTALE;
		}
	}
	e = elfobj_open_fd_named(fd, ELFOBJ_OPEN_NO_SYMS, m->path);
	if (!e)
		return -ENOEXEC;
	rc = elfobj_load_bias(e, m, &bias);
	if (!rc)
		rc = elfobj_read(e, h->addr - bias, buf, len);
	elfobj_free(e);
	return rc;
}

/*
 * If the discovered entry point h holds a jmp into a proven leftover's
 * code, write back the bytes its file has there. 1 if restored, 0 if there
 * was nothing of ours, -errno if ours could not be undone.
 */
static int restore_entry(struct rec *s, struct leftovers *L, const struct hook *h)
{
	uint8_t cur[ENTRY_PEEK], orig[ENTRY_PEEK];
	uint64_t at, to;
	size_t skip;
	int rc;

	if (tmem_read(s->proc_tid, h->addr, cur, sizeof(cur)))
		return 0;
	skip = reloc_patch_skip(cur, sizeof(cur));
	at = h->addr + skip;
	if (reloc_decode_jmp(cur + skip, at, &to) || !code_owner(L, to))
		return 0;
	rc = file_bytes(s, h, orig, skip + RELOC_JMP_LEN);
	if (rc) {
		pr_warn("%s at %#" PRIx64 " jumps into an old heapattach mapping, but its "
			"original bytes cannot be read from %s: %s", h->names[0], at, h->path,
			strerror(-rc));
		return rc;
	}
	/* the bytes before the patch address were never ours to change */
	if (memcmp(cur, orig, skip))
		return -EINVAL;
	rc = tmem_write(s->proc_tid, at, orig + skip, RELOC_JMP_LEN);
	if (!rc && (rc = tmem_read(s->proc_tid, at, cur, RELOC_JMP_LEN)) == 0 &&
	    memcmp(cur, orig + skip, RELOC_JMP_LEN))
		rc = -EIO;
	return rc ? rc : 1;
}

/* The mapping named like ours that holds addr, or NULL. */
static const struct proc_map *named_at(const struct proc_maps *maps, uint64_t addr)
{
	const struct proc_map *m = proc_maps_find(maps, addr);

	return m && named_ours(m) ? m : NULL;
}

/*
 * After restoring: a discovered entry point that still jumps into anything
 * named like ours cannot be hooked over (-EBUSY); a leftover that some
 * address named in any header still jumps into stays mapped (in_use).
 */
static int still_jumped_into(struct rec *s, struct leftovers *L)
{
	const struct hook *first = NULL;
	int stuck = 0;

	for (size_t i = 0; i < s->hooks->n; i++) {
		const struct hook *h = &s->hooks->v[i];
		uint8_t cur[ENTRY_PEEK];
		uint64_t at, to;

		if (tmem_read(s->proc_tid, h->addr, cur, sizeof(cur)))
			continue;
		at = h->addr + reloc_patch_skip(cur, sizeof(cur));
		if (reloc_decode_jmp(cur + (at - h->addr), at, &to) || !named_at(s->maps, to))
			continue;
		first = first ? first : h;
		stuck++;
	}
	if (stuck)
		pr_err("%d entry point(s) of %d (%s at %#" PRIx64 " first) jump into a mapping "
		       "named like heapattach's that cannot be proven ours or undone",
		       stuck, s->pid, first->names[0], first->addr);
	for (size_t i = 0; i < L->n; i++) {
		const struct shm_hdr *h = &L->v[i].hdr;

		for (uint32_t k = 0; L->v[i].proven && k < h->npatches && k < SHM_MAX_PATCHES; k++) {
			struct leftover *l;
			uint64_t to;

			if (jump_at(s->proc_tid, h->patches[k].addr, &to) || !(l = code_owner(L, to)))
				continue;
			if (!l->in_use)
				pr_warn("%#" PRIx64 ", named in the header of the heapattach "
					"mapping at %#" PRIx64 ", jumps into it but is no entry "
					"point we hook: leaving that mapping in place",
					(uint64_t)h->patches[k].addr, (uint64_t)l->hdr.code_remote);
			l->in_use = 1;
		}
	}
	return stuck ? -EBUSY : 0;
}

/*
 * 1 if h says it was made for another process that shares the target's
 * address space (a clone(CLONE_VM) child or parent): undoing it here would
 * pull the trampolines from under that process, which we do not trace.
 * A claim, used only to refuse.
 */
static int made_for_sharer(pid_t pid, const struct shm_hdr *h)
{
	return h->target_pid > 0 && h->target_pid != pid &&
	       forkchild_separate_memory(pid, h->target_pid) == 0;
}

/* The view [lo, hi) of leftover l, unchanged in the fresh maps? */
static int view_still_there(const struct proc_maps *fresh, const struct leftover *l,
			    uint64_t lo, uint64_t hi)
{
	const struct proc_map *m = proc_maps_find(fresh, lo);

	return m && m->start == lo && m->end == hi && m->inode == l->ino && named_ours(m) &&
	       !m->offset;
}

/* Unmap the proven leftovers nothing jumps into, once the maps show them
 * unchanged (the target's threads ran meanwhile). 0 or -errno. */
static int unmap_leftovers(struct rec *s, struct leftovers *L)
{
	struct proc_maps fresh = { 0 };
	int rc = proc_maps_read(s->proc_tid, &fresh);

	for (size_t i = 0; i < L->n && !rc; i++) {
		const struct leftover *l = &L->v[i];
		size_t code = 0;

		while (code + 1 < l->nviews && l->lo[code] != l->hdr.code_remote)
			code++;
		for (size_t j = 1; l->proven && !l->in_use && j <= l->nviews; j++) {
			/* the code view last: a kill meanwhile leaves it proving the rest ours */
			size_t k = (code + j) % l->nviews;
			int err;

			if (!view_still_there(&fresh, l, l->lo[k], l->hi[k])) {
				pr_warn("the old mapping at %#" PRIx64 " changed meanwhile: left alone",
					l->lo[k]);
				continue;
			}
			err = implant_unmap_remote(s->im, l->lo[k], l->hi[k] - l->lo[k]);
			if (err)
				pr_warn("could not unmap the old mapping at %#" PRIx64 ": %s",
					l->lo[k], strerror(-err));
		}
	}
	proc_maps_free(&fresh);
	return rc;
}

/* Find, check and undo; the implant's leftover ranges are set for the wait.
 * 0 (nothing unmapped), 1 (maps re-read, hooks resolved again) or -errno. */
static int recover(struct rec *s, struct leftovers *L)
{
	size_t nviews = 0, nleft = 0;
	int restored = 0, busy = 0, rc;
	int32_t tool = 0;
	dev_t dev;

	rc = shm_dev(&dev);
	if (rc)
		return 0;	/* no memfd here: nothing can be proven ours */
	collect(s->maps, dev, L);
	for (size_t i = 0; i < L->n; i++) {
		L->v[i].proven = prove(s->proc_tid, &L->v[i], dev);
		if (!L->v[i].proven)
			pr_debug("mapping of inode %" PRIx64 " is named like ours but is not a "
				 "heapattach leftover: left alone", L->v[i].ino);
		else if (made_for_sharer(s->pid, &L->v[i].hdr)) {
			pr_err("%d shares its memory with %d, for which heapattach %d mapped its "
			       "trampolines: attach to %d instead", s->pid, L->v[i].hdr.target_pid,
			       L->v[i].hdr.tool_pid, L->v[i].hdr.target_pid);
			return -EBUSY;
		}
	}
	for (size_t i = 0; i < s->hooks->n; i++) {
		if (s->hooks->v[i].unsupported)
			continue;
		rc = restore_entry(s, L, &s->hooks->v[i]);
		restored += rc > 0;
	}
	rc = still_jumped_into(s, L);
	if (rc)
		return rc;
	for (size_t i = 0; i < L->n; i++) {
		struct leftover *l = &L->v[i];

		if (!l->proven)
			continue;
		tool = l->hdr.tool_pid;
		if (nviews + l->nviews > IMPLANT_MAX_REGIONS)
			l->in_use = 1;	/* no room to watch it in the wait: next time */
		nleft += !l->in_use;
		for (size_t k = 0; k < l->nviews && !l->in_use; k++, nviews++)
			implant_add_leftover(s->im, l->lo[k], l->hi[k]);
	}
	if (!restored && !nleft)
		return 0;
	if (restored)
		pr_warn("%d was left patched by heapattach %d, which is gone: restored %d entry "
			"point(s) from their files, removing %zu old mapping(s)", s->pid, tool,
			restored, nviews);
	else
		pr_warn("%d holds %zu mapping(s) of heapattach %d, which is gone, and nothing "
			"jumps into them: removing them", s->pid, nviews, tool);
	if (!nviews)
		return 0;
	rc = implant_wait_quiet(s->im, &busy);
	if (rc) {
		pr_err("%d thread(s) still run in the old trampolines; try again later", busy);
		return rc;
	}
	rc = unmap_leftovers(s, L);
	if (rc)
		return rc;
	proc_maps_free(s->maps);
	rc = proc_maps_read(s->proc_tid, s->maps);
	if (rc)
		return rc;
	/* Hook addresses point into the old maps array: resolve again. */
	hooks_free(s->hooks);
	rc = hooks_resolve(s->proc_tid, s->maps, s->hooks);
	return rc ? rc : 1;
}

int recover_leftovers(struct implant *im, pid_t pid, pid_t proc_tid, struct proc_maps *maps,
		      struct hook_set *hooks)
{
	struct rec s = { im, pid, proc_tid, maps, hooks };
	struct leftovers *L;
	int rc, any = 0;

	implant_clear_leftovers(im);
	close_leftover_fds(&s);
	for (size_t i = 0; i < maps->n && !any; i++)
		any = named_ours(&maps->v[i]);
	if (!any)
		return 0;
	L = xcalloc(1, sizeof(*L));
	rc = recover(&s, L);
	if (rc >= 0)	/* a killed run's fd of a region just unmapped: nothing maps it now */
		close_leftover_fds(&s);
	free(L);
	implant_clear_leftovers(im);
	return rc;
}
