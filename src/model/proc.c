/* /proc parsing: memory maps, thread lists and status fields, from a path or a buffer. */
/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/xmalloc.h"
#include "model/proc.h"
#include "model/tfile.h"

#define DELETED_SUFFIX " (deleted)"

/* ---- whole-file reading ---- */

/*
 * Read all of path into a NUL-terminated buffer (procfs files report size 0,
 * so read until EOF). *buf is the caller's to free. 0 or -errno.
 */
static int read_file(const char *path, char **buf, size_t *len)
{
	size_t cap = 8192, n = 0;
	char *p = NULL;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	p = xmalloc(cap);
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			cap *= 2;
			p = xrealloc(p, cap);
		}
		r = read(fd, p + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += r;
	}
	p[n] = '\0';
	*buf = p;
	*len = n;
	p = NULL;
out:
	free(p);
	close(fd);
	return ret;
}

/* ---- maps ---- */

/* Parse hex digits at *s (at most 16), advancing *s. 0 or -EINVAL if none. */
static int parse_hex(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int digits = 0;

	for (; p < end; p++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (digits >= 16)
			return -EINVAL;
		x = x << 4 | d;
		digits++;
	}
	if (!digits)
		return -EINVAL;
	*s = p;
	*v = x;
	return 0;
}

/* Parse decimal digits at *s, advancing *s. 0 or -EINVAL if none. */
static int parse_dec(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	if (p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++)
		x = x * 10 + (*p - '0');
	*s = p;
	*v = x;
	return 0;
}

/* Consume the character c at *s. 0 or -EINVAL if something else is there. */
static int expect_char(const char **s, const char *end, char c)
{
	if (*s >= end || **s != c)
		return -EINVAL;
	(*s)++;
	return 0;
}

static void skip_blanks(const char **s, const char *end)
{
	while (*s < end && (**s == ' ' || **s == '\t'))
		(*s)++;
}

/*
 * Parse one maps line [s, end) (no newline) into m. The path is everything
 * after the blanks following the inode, so it may hold spaces; a trailing
 * " (deleted)" is stripped and flagged. 0 or -EINVAL.
 */
int proc_maps_parse_line(const char *s, const char *end, struct proc_map *m)
{
	uint64_t major, minor;
	const char *perm;
	size_t plen;

	memset(m, 0, sizeof(*m));
	if (parse_hex(&s, end, &m->start) || expect_char(&s, end, '-') ||
	    parse_hex(&s, end, &m->end) || expect_char(&s, end, ' '))
		return -EINVAL;
	if (end - s < 5)
		return -EINVAL;
	perm = s;
	if ((perm[0] != 'r' && perm[0] != '-') || (perm[1] != 'w' && perm[1] != '-') ||
	    (perm[2] != 'x' && perm[2] != '-') || (perm[3] != 's' && perm[3] != 'p'))
		return -EINVAL;
	m->prot = (perm[0] == 'r' ? PROC_MAP_R : 0) | (perm[1] == 'w' ? PROC_MAP_W : 0) |
		  (perm[2] == 'x' ? PROC_MAP_X : 0) | (perm[3] == 's' ? PROC_MAP_SHARED : 0);
	s += 4;
	if (expect_char(&s, end, ' ') || parse_hex(&s, end, &m->offset) ||
	    expect_char(&s, end, ' ') || parse_hex(&s, end, &major) ||
	    expect_char(&s, end, ':') || parse_hex(&s, end, &minor) ||
	    expect_char(&s, end, ' ') || parse_dec(&s, end, &m->inode))
		return -EINVAL;
	if (m->end < m->start || major > 0xffffffffu || minor > 0xffffffffu)
		return -EINVAL;
	m->dev_major = major;
	m->dev_minor = minor;
	if (s < end && *s != ' ' && *s != '\t')
		return -EINVAL;
	skip_blanks(&s, end);
	plen = end - s;
	if (!plen)
		return 0;
	if (plen > strlen(DELETED_SUFFIX) &&
	    !memcmp(end - strlen(DELETED_SUFFIX), DELETED_SUFFIX, strlen(DELETED_SUFFIX))) {
		m->deleted = 1;
		plen -= strlen(DELETED_SUFFIX);
	}
	m->path = xmalloc(plen + 1);
	memcpy(m->path, s, plen);
	m->path[plen] = '\0';
	return 0;
}

int proc_maps_parse(const char *buf, size_t len, struct proc_maps *out)
{
	const char *s = buf, *end = buf + len;
	size_t cap = 0;
	int ret;

	out->v = NULL;
	out->n = 0;
	while (s < end) {
		const char *nl = memchr(s, '\n', end - s);
		const char *le = nl ? nl : end;

		if (le > s && le[-1] == '\r')
			le--;
		if (le > s) {
			if (out->n == cap) {
				cap = cap ? cap * 2 : 64;
				out->v = xrealloc(out->v, cap * sizeof(*out->v));
			}
			ret = proc_maps_parse_line(s, le, &out->v[out->n]);
			if (ret)
				goto err;
			out->n++;
		}
		s = nl ? nl + 1 : end;
	}
	return 0;
err:
	proc_maps_free(out);
	return ret;
}

int proc_maps_load(const char *path, struct proc_maps *out)
{
	char *buf;
	size_t len;
	int ret;

	ret = read_file(path, &buf, &len);
	if (ret)
		return ret;
	ret = proc_maps_parse(buf, len, out);
	free(buf);
	return ret;
}

int proc_maps_read(pid_t pid, struct proc_maps *out)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	return proc_maps_load(path, out);
}

void proc_maps_free(struct proc_maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Maps are sorted by start, as the kernel lists them: binary search. */
int proc_map_same(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->prot == b->prot && a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->deleted == b->deleted &&
	       !a->path == !b->path && (!a->path || !strcmp(a->path, b->path));
}

const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct proc_map *p = &m->v[mid];

		if (addr < p->start)
			hi = mid;
		else if (addr >= p->end)
			lo = mid + 1;
		else
			return p;
	}
	return NULL;
}

/* ---- tasks ---- */

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

int proc_tasks_load(const char *task_dir, pid_t **tids, size_t *n)
{
	size_t cap = 16, cnt = 0;
	struct dirent *de;
	pid_t *v;
	DIR *d;

	d = opendir(task_dir);
	if (!d)
		return -errno;
	v = xmalloc(cap * sizeof(*v));
	while ((de = readdir(d))) {
		char *e;
		long t = strtol(de->d_name, &e, 10);

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *e || t <= 0)
			continue;
		if (cnt == cap) {
			cap *= 2;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[cnt++] = (pid_t)t;
	}
	closedir(d);
	qsort(v, cnt, sizeof(*v), cmp_pid);
	*tids = v;
	*n = cnt;
	return 0;
}

int proc_tasks_read(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	return proc_tasks_load(path, tids, n);
}

/* ---- status ---- */

int proc_status_get(const char *buf, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);
	const char *s = buf;

	while (s && *s) {
		const char *nl = strchr(s, '\n');

		if (!strncmp(s, key, klen) && s[klen] == ':') {
			const char *v = s + klen + 1, *e = nl ? nl : v + strlen(v);
			size_t n;

			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
				e--;
			if (!outlen)
				return -ENOSPC;
			n = (size_t)(e - v);
			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		s = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

int proc_status_read(pid_t pid, const char *key, char *out, size_t outlen)
{
	char path[64], *buf;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ret = read_file(path, &buf, &len);
	if (ret)
		return ret;
	ret = proc_status_get(buf, key, out, outlen);
	free(buf);
	return ret;
}

pid_t proc_tracer(pid_t tid)
{
	char val[32];

	return proc_status_read(tid, "TracerPid", val, sizeof(val)) ? -1 : (pid_t)atol(val);
}

void proc_comm_read(pid_t pid, char *out, size_t len)
{
	char path[64], *buf;
	size_t n;

	if (!len)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_file(path, &buf, &n)) {
		snprintf(out, len, "?");
		return;
	}
	buf[strcspn(buf, "\n")] = 0;
	for (char *c = buf; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	snprintf(out, len, "%s", buf);
	free(buf);
}

/* ---- files as the target sees them ---- */

int proc_no_map_files;

int proc_open_mapped(pid_t pid, const struct proc_map *m)
{
	char path[64];
	int fd, root;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 (int)pid, m->start, m->end);
	/* the mapped file itself (the kernel maps only what the target could
	 * open, or exec), read with our access: map_files asks CAP_SYS_ADMIN */
	fd = proc_no_map_files ? -ENOENT : tfile_open(TFILE_HOST, path, NULL, TFILE_SELF);
	/* a path that fails to open now will not do better */
	if (fd >= 0 || fd == -EINVAL)
		return fd;
	/* A deleted file's path now names another file, or none. */
	if (!m->path || m->path[0] != '/' || m->deleted)
		return -ENOENT;
	/* The target's root may be another mount namespace's view. */
	root = tfile_root(pid);
	if (root < 0)
		return root;
	/* by now the path may name another file: the target must be able to read it */
	fd = tfile_open(root, m->path, NULL, pid);
	close(root);
	return fd;
}

int proc_read_file(const char *path, char **buf, size_t *len)
{
	return read_file(path, buf, len);
}

uint64_t proc_auxv_get(pid_t pid, uint64_t type)
{
	char path[64], *buf;
	uint64_t val = 0;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	if (proc_read_file(path, &buf, &len))
		return 0;
	for (size_t i = 0; i + 16 <= len; i += 16) {
		uint64_t t, v;

		memcpy(&t, buf + i, 8);
		memcpy(&v, buf + i + 8, 8);
		if (t == type) {
			val = v;
			break;
		}
		if (t == AT_NULL)
			break;
	}
	free(buf);
	return val;
}

int proc_ns_tgid(pid_t tid, pid_t *out)
{
	char v[256], *last, *end;
	long n;
	int rc;

	/* NStgid (Linux 4.1): the thread group's id in each pid namespace, the
	 * target's own last; the host's Tgid when the kernel has no NStgid */
	rc = proc_status_read(tid, "NStgid", v, sizeof(v));
	if (rc == -ENOENT)
		rc = proc_status_read(tid, "Tgid", v, sizeof(v));
	if (rc)
		return rc;
	last = strrchr(v, '\t');
	last = last ? last + 1 : v;
	if (strrchr(last, ' '))
		last = strrchr(last, ' ') + 1;
	if (*last < '0' || *last > '9')
		return -EINVAL;
	errno = 0;
	n = strtol(last, &end, 10);
	if (errno || *end || n < 1 || n > INT_MAX)
		return -EINVAL;
	*out = (pid_t)n;
	return 0;
}
