/* Where a process's resident memory is, by kind of mapping (from /proc/PID/smaps). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/satmath.h"
#include "base/xmalloc.h"
#include "model/proc.h"
#include "model/rss.h"

/*
 * Two passes: the mappings are read into a small array, then each is
 * classified with its neighbours in view (a thread stack is the
 * anonymous mapping right above its guard; a glibc arena is a 64
 * MiB-aligned anonymous mapping followed by the rest of its reservation,
 * which belongs to it too). Classification goes by what the kernel says
 * (protection, name, address); the allocator's own statistics, where the
 * session has them, say how much of this memory is in use.
 */

#define ARENA_ALIGN (64ULL << 20)  /* glibc's HEAP_MAX_SIZE on 64-bit */
#define GUARD_MAX (1ULL << 20)     /* larger reservations are not a stack's guard */

enum name_kind { N_ANON, N_FILE, N_BRK, N_STACK, N_SPECIAL, N_SHM, N_OURS };

struct smap {
	uint64_t start, end;
	uint64_t rss, swap;
	unsigned r : 1, w : 1, x : 1, shared : 1;
	unsigned name : 3;
};

static const char *const kind_names[RSS_NKINDS] = {
	[RSS_BRK] = "brk", [RSS_ARENA] = "arena", [RSS_STACK] = "stack",
	[RSS_ANON] = "anon", [RSS_CODE] = "code", [RSS_FILE_DATA] = "data",
	[RSS_FILE] = "file", [RSS_SHMEM] = "shmem", [RSS_OURS] = "heapattach",
};

const char *rss_kind_name(enum rss_kind k)
{
	return (unsigned)k < RSS_NKINDS ? kind_names[k] : "?";
}

static enum name_kind name_of(const char *path)
{
	if (!*path)
		return N_ANON;
	if (!strcmp(path, "[heap]"))
		return N_BRK;
	if (!strcmp(path, "[stack]") || !strncmp(path, "[stack:", 7))
		return N_STACK;
	if (!strncmp(path, "/memfd:heapattach", 17))
		return N_OURS;
	if (!strncmp(path, "/memfd:", 7) || !strncmp(path, "/dev/shm/", 9) ||
	    !strncmp(path, "/SYSV", 5) || !strncmp(path, "/dev/zero", 9))
		return N_SHM;
	if (path[0] == '[')
		return N_SPECIAL;       /* [vdso], [vvar], [vsyscall], [anon:...] */
	return N_FILE;
}

/* A mapping's header line (a maps line, proc.c's parser); 0, or -EINVAL
 * if it is not one. */
static int parse_header(const char *line, struct smap *m)
{
	struct proc_map pm;

	if (proc_maps_parse_line(line, line + strcspn(line, "\n"), &pm))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->start = pm.start;
	m->end = pm.end;
	m->r = !!(pm.prot & PROC_MAP_R);
	m->w = !!(pm.prot & PROC_MAP_W);
	m->x = !!(pm.prot & PROC_MAP_X);
	m->shared = !!(pm.prot & PROC_MAP_SHARED);
	m->name = name_of(pm.path ? pm.path : "");
	if (m->name == N_SPECIAL && !strncmp(pm.path, "[anon", 5))
		m->name = N_ANON;
	free(pm.path);
	return 0;
}

/* "Key:   123 kB" -> bytes, if line is that key. */
static int kb_field(const char *line, const char *key, uint64_t *bytes)
{
	size_t k = strlen(key);
	unsigned long long kb;

	if (strncmp(line, key, k) || sscanf(line + k, " %llu kB", &kb) != 1)
		return 0;
	*bytes = kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
	return 1;
}

static int anon_private(const struct smap *m)
{
	return m->name == N_ANON && !m->shared;
}

static int is_reservation(const struct smap *m)
{
	return anon_private(m) && !m->r && !m->w && !m->x;
}

/* v[i] is the usable part of a glibc heap (an arena's memory): anonymous,
 * writable, at a 64 MiB boundary, followed by the rest of its reservation
 * (---p) unless it fills all 64 MiB. */
static int arena_rw(const struct smap *v, size_t n, size_t i)
{
	const struct smap *m = &v[i];

	if (!anon_private(m) || !m->w || m->start % ARENA_ALIGN ||
	    m->end - m->start > ARENA_ALIGN)
		return 0;
	if (m->end - m->start == ARENA_ALIGN)
		return 1;
	return i + 1 < n && v[i + 1].start == m->end && is_reservation(&v[i + 1]) &&
	       v[i + 1].end - m->start <= ARENA_ALIGN;
}

static int arena_tail(const struct smap *v, size_t n, size_t i)
{
	return is_reservation(&v[i]) && i > 0 && v[i - 1].end == v[i].start &&
	       arena_rw(v, n, i - 1);
}

/* v[i] is a thread stack's guard: a small reservation with the stack
 * (anonymous, writable) right above it. */
static int stack_guard(const struct smap *v, size_t n, size_t i)
{
	return is_reservation(&v[i]) && !arena_tail(v, n, i) &&
	       v[i].end - v[i].start <= GUARD_MAX && i + 1 < n &&
	       v[i + 1].start == v[i].end && anon_private(&v[i + 1]) && v[i + 1].w &&
	       !arena_rw(v, n, i + 1);
}

static enum rss_kind classify(const struct smap *v, size_t n, size_t i, int *arena_start)
{
	const struct smap *m = &v[i];

	*arena_start = 0;
	switch (m->name) {
	case N_BRK:
		return RSS_BRK;
	case N_STACK:
		return RSS_STACK;
	case N_OURS:
		return RSS_OURS;
	case N_SHM:
		return RSS_SHMEM;
	case N_SPECIAL:
		return RSS_CODE;
	case N_FILE:
		if (m->shared)
			return RSS_SHMEM;
		return m->x ? RSS_CODE : m->w ? RSS_FILE_DATA : RSS_FILE;
	default:
		break;
	}
	if (m->shared)
		return RSS_SHMEM;
	if (arena_rw(v, n, i)) {
		*arena_start = 1;
		return RSS_ARENA;
	}
	if (arena_tail(v, n, i))
		return RSS_ARENA;
	if (stack_guard(v, n, i) || (m->w && i > 0 && stack_guard(v, n, i - 1)))
		return RSS_STACK;
	return RSS_ANON;
}

static void add(struct rss_sum *s, const struct smap *m)
{
	s->rss = sat_add(s->rss, m->rss);
	s->swap = sat_add(s->swap, m->swap);
	s->size = sat_add(s->size, m->end - m->start);
	s->maps++;
}

int rss_smaps_parse(FILE *f, struct rss_smaps *out)
{
	struct smap *v = NULL, *cur = NULL;
	size_t n = 0, cap = 0;
	char line[512];
	int ret = 0;

	memset(out, 0, sizeof(*out));
	while (fgets(line, sizeof(line), f)) {
		struct smap m;
		size_t len = strlen(line);
		int whole = len && line[len - 1] == '\n';

		if (cur && kb_field(line, "Rss:", &cur->rss))
			;
		else if (cur && kb_field(line, "Swap:", &cur->swap))
			;
		else if (((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) &&
			 parse_header(line, &m) == 0) {
			if (n == RSS_MAX_MAPS) {
				ret = -E2BIG;
				break;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				v = xrealloc(v, cap * sizeof(*v));
			}
			v[n] = m;
			cur = &v[n++];
		}
		/* skip the rest of an overlong line (a long path) */
		while (!whole && fgets(line, sizeof(line), f)) {
			len = strlen(line);
			whole = len && line[len - 1] == '\n';
		}
	}
	if (ferror(f) && !ret)
		ret = -EIO;
	for (size_t i = 0; i < n; i++) {
		int arena_start;
		enum rss_kind k = classify(v, n, i, &arena_start);

		add(&out->kind[k], &v[i]);
		add(&out->total, &v[i]);
		if (k == RSS_BRK || arena_start)
			out->arenas++;
	}
	free(v);
	return ret;
}

int rss_smaps_read(pid_t pid, struct rss_smaps *out)
{
	char path[64];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ret = rss_smaps_parse(f, out);
	fclose(f);
	return ret;
}
