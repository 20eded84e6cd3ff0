/* The target's memory cgroup: its limit and room (v1 and v2). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/memcg.h"
#include "model/proc.h"

#define V1_UNLIMITED (1ULL << 62)	/* v1 shows "no limit" as PAGE_COUNTER_MAX pages */

/* ---- locating the cgroup (pure) ---- */

/* Whether the comma-separated list s[0..len) has the item word. */
static int list_has(const char *s, size_t len, const char *word)
{
	size_t wl = strlen(word);

	while (len) {
		const char *comma = memchr(s, ',', len);
		size_t l = comma ? (size_t)(comma - s) : len;

		if (l == wl && !memcmp(s, word, wl))
			return 1;
		if (!comma)
			break;
		len -= l + 1;
		s = comma + 1;
	}
	return 0;
}

/* The cgroup path of the v1 memory controller (version 1) or of the v2
 * hierarchy (version 2) in /proc/PID/cgroup text, into path. 0 or -ENOENT. */
static int cgroup_path(const char *text, int version, char *path, size_t len)
{
	for (const char *s = text; s && *s;) {
		const char *nl = strchr(s, '\n'), *c1 = strchr(s, ':'), *c2;
		size_t l = nl ? (size_t)(nl - s) : strlen(s);

		c2 = c1 && c1 < s + l ? memchr(c1 + 1, ':', (size_t)(s + l - c1 - 1)) : NULL;
		if (c2 && ((version == 1 && list_has(c1 + 1, (size_t)(c2 - c1 - 1), "memory")) ||
			   (version == 2 && c1 == s + 1 && s[0] == '0' && c2 == c1 + 1))) {
			if (snprintf(path, len, "%.*s", (int)(s + l - c2 - 1), c2 + 1) >= (int)len)
				return -ENAMETOOLONG;
			return 0;
		}
		s = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* Copy a mountinfo field, undoing its octal escapes (\040 for a space). */
static void unescape(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < outlen; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3') {
			out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

/* The n-th space-separated field of line [s, end): start and length. */
static const char *field(const char *s, const char *end, int n, size_t *len)
{
	for (int i = 0; s < end; i++) {
		const char *sp = memchr(s, ' ', (size_t)(end - s));
		const char *fe = sp ? sp : end;

		if (i == n) {
			*len = (size_t)(fe - s);
			return s;
		}
		s = fe + 1;
	}
	return NULL;
}

/* The root and mount point of the next memory cgroup mount of this version
 * in mountinfo text, from *from on (then past it). 0 or -ENOENT. */
static int cgroup_mount(const char **from, int version, char *root, size_t rlen, char *mnt,
			size_t mlen)
{
	for (const char *line = *from; line && *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sep = memmem(line, (size_t)(end - line), " - ", 3), *f;
		size_t l;
		int ours;

		if (sep) {
			f = field(sep + 3, end, 0, &l);	/* fs type */
			ours = f && ((version == 1 && l == 6 && !memcmp(f, "cgroup", 6)) ||
				     (version == 2 && l == 7 && !memcmp(f, "cgroup2", 7)));
			if (ours && version == 1)	/* super options name the controllers */
				ours = (f = field(sep + 3, end, 2, &l)) && list_has(f, l, "memory");
			if (ours && (f = field(line, sep, 3, &l))) {
				unescape(f, l, root, rlen);
				if ((f = field(line, sep, 4, &l))) {
					unescape(f, l, mnt, mlen);
					*from = nl ? nl + 1 : NULL;
					return 0;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

int memcg_locate(const char *cgroup, const char *mountinfo, struct memcg_info *out,
		 char *top, size_t toplen)
{
	char path[MEMCG_PATH_MAX], root[MEMCG_PATH_MAX], mnt[MEMCG_PATH_MAX];
	const char *rel;
	size_t rl;

	memset(out, 0, sizeof(*out));
	out->limit = out->avail = MEMCG_NONE;
	for (int v = 1; v <= 2; v++) {
		const char *from = mountinfo;
		int rc = cgroup_path(cgroup, v, path, sizeof(path));

		if (rc && rc != -ENOENT)
			return rc;
		if (rc || strstr(path, "/.."))	/* outside our cgroup namespace */
			continue;
		/* the path is relative to our cgroup namespace, a mount to its root:
		 * the first mount whose root holds the path */
		do {
			if (cgroup_mount(&from, v, root, sizeof(root), mnt, sizeof(mnt))) {
				rl = SIZE_MAX;
				break;
			}
			rl = strcmp(root, "/") ? strlen(root) : 0;
		} while (strncmp(path, root, rl) || (path[rl] && path[rl] != '/'));
		if (rl == SIZE_MAX)
			continue;
		rel = path + rl;
		if (snprintf(out->dir, sizeof(out->dir), "%s%s", mnt, strcmp(rel, "/") ? rel : "") >=
		    (int)sizeof(out->dir))
			return -ENAMETOOLONG;
		snprintf(top, toplen, "%s", mnt);
		out->version = v;
		return 0;
	}
	return -ENOENT;
}

/* ---- measuring (files) ---- */

/* The number in dir/name; MEMCG_NONE for "max" or a v1 "no limit". 0 or -errno. */
static int read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[MEMCG_PATH_MAX + 64], *buf;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = proc_read_file(path, &buf, &len);
	if (rc)
		return rc;
	if (!strncmp(buf, "max", 3))
		*v = MEMCG_NONE;
	else if (sscanf(buf, "%" SCNu64, v) != 1)
		rc = -EINVAL;
	else if (*v >= V1_UNLIMITED)
		*v = MEMCG_NONE;
	free(buf);
	return rc;
}

/* The sum of keys (a NULL-ended list) in dir/memory.stat; 0 if unreadable. */
static uint64_t stat_sum(const char *dir, const char *const *keys)
{
	char path[MEMCG_PATH_MAX + 64], *buf, *line;
	uint64_t sum = 0, v;
	size_t len;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	if (proc_read_file(path, &buf, &len))
		return 0;
	for (line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		for (const char *const *k = keys; *k; k++) {
			size_t kl = strlen(*k);

			if (!strncmp(line, *k, kl) && line[kl] == ' ' &&
			    sscanf(line + kl + 1, "%" SCNu64, &v) == 1)
				sum += v;
		}
	free(buf);
	return sum;
}

/* One level: its limit, usage and file pages; 0 if it has no limit. */
static int level(int version, const char *dir, uint64_t *limit, uint64_t *usage, uint64_t *recl)
{
	static const char *const v1_keys[] = { "total_active_file", "total_inactive_file", NULL };
	static const char *const v2_keys[] = { "active_file", "inactive_file", NULL };
	uint64_t high = MEMCG_NONE;

	if (version == 1) {
		if (read_u64(dir, "memory.limit_in_bytes", limit) ||
		    read_u64(dir, "memory.usage_in_bytes", usage))
			return 0;
	} else {
		if (read_u64(dir, "memory.max", limit) || read_u64(dir, "memory.current", usage))
			return 0;
		if (!read_u64(dir, "memory.high", &high) && high < *limit)
			*limit = high;
	}
	if (*limit == MEMCG_NONE)
		return 0;
	*recl = stat_sum(dir, version == 1 ? v1_keys : v2_keys);
	return 1;
}

int memcg_measure(struct memcg_info *out, const char *top)
{
	char cur[MEMCG_PATH_MAX];
	size_t tl = strlen(top);

	if (strncmp(out->dir, top, tl) || (out->dir[tl] && out->dir[tl] != '/'))
		return -EINVAL;
	snprintf(cur, sizeof(cur), "%s", out->dir);
	for (;;) {
		uint64_t limit, usage, recl, room;
		char *slash;

		if (level(out->version, cur, &limit, &usage, &recl)) {
			uint64_t used = usage > recl ? usage - recl : 0;

			room = used >= limit ? 0 : limit - used;
			if (out->avail == MEMCG_NONE || room < out->avail) {
				out->avail = room;
				out->limit = limit;
				out->usage = usage;
				out->reclaimable = recl;
				snprintf(out->tight, sizeof(out->tight), "%s", cur);
			}
		}
		if (strlen(cur) <= tl)
			break;
		slash = strrchr(cur, '/');
		if (!slash || (size_t)(slash - cur) < tl)
			break;
		*slash = '\0';
	}
	return 0;
}

int memcg_read(pid_t pid, struct memcg_info *out)
{
	char path[64], top[MEMCG_PATH_MAX], *cg = NULL, *mi = NULL;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	out->limit = out->avail = MEMCG_NONE;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	rc = proc_read_file(path, &cg, &len);
	if (!rc)
		rc = proc_read_file("/proc/self/mountinfo", &mi, &len);
	if (!rc)
		rc = memcg_locate(cg, mi, out, top, sizeof(top));
	if (!rc)
		rc = memcg_measure(out, top);
	if (rc)
		out->version = 0;
	free(cg);
	free(mi);
	return rc;
}

/* ---- sizes in words ---- */

const char *memcg_fmt(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	if (bytes == MEMCG_NONE) {
		snprintf(buf, len, "no limit");
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v >= 100 || v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}
