/* The target's resource limits and what it uses of them: RLIMIT_AS, _STACK, _MEMLOCK, its mappings and vm.max_map_count, from /proc. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/proc_limits.h"

#define CAP_IPC_LOCK_BIT 14

void proc_limits_init(struct proc_limits *out)
{
	out->as = out->stack = out->memlock = PROC_LIMIT_NONE;
	out->vm_size = out->vm_locked = PROC_LIMIT_NONE;
	out->ipc_lock = 0;
	out->maps = out->stack_size = out->max_map_count = PROC_LIMIT_NONE;
}

/* The soft limit on the line of text that starts with name (a limits
 * file's "Max address space   1048576   unlimited   bytes"): 0 or -EINVAL. */
static int soft_limit(const char *text, const char *name, uint64_t *out)
{
	size_t nl = strlen(name);
	unsigned long long v;
	char word[32];

	for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
		if (strncmp(s, name, nl) || s[nl] != ' ')
			continue;
		if (sscanf(s + nl, " %31s", word) != 1)
			return -EINVAL;
		if (!strcmp(word, "unlimited")) {
			*out = PROC_LIMIT_NONE;
			return 0;
		}
		if (sscanf(word, "%llu", &v) != 1)
			return -EINVAL;
		*out = v;
		return 0;
	}
	return -EINVAL;
}

int proc_limits_parse(const char *text, struct proc_limits *out)
{
	int rc = 0;

	rc |= soft_limit(text, "Max address space", &out->as);
	rc |= soft_limit(text, "Max stack size", &out->stack);
	rc |= soft_limit(text, "Max locked memory", &out->memlock);
	return rc ? -EINVAL : 0;
}

/* A status field of kB ("VmSize:    3892 kB") in bytes: 0 or -EINVAL. */
static int status_kb(const char *text, const char *key, uint64_t *out)
{
	unsigned long long kb;
	char v[64];

	if (proc_status_get(text, key, v, sizeof(v)) || sscanf(v, "%llu kB", &kb) != 1)
		return -EINVAL;
	*out = kb * 1024;
	return 0;
}

int proc_limits_parse_status(const char *text, struct proc_limits *out)
{
	unsigned long long caps;
	char v[64];
	int rc = 0;

	rc |= status_kb(text, "VmSize", &out->vm_size);
	rc |= status_kb(text, "VmLck", &out->vm_locked);
	if (!proc_status_get(text, "CapEff", v, sizeof(v)) && sscanf(v, "%llx", &caps) == 1)
		out->ipc_lock = !!(caps & (1ULL << CAP_IPC_LOCK_BIT));
	else
		rc = -EINVAL;
	return rc ? -EINVAL : 0;
}

void proc_limits_count_maps(const struct proc_maps *m, struct proc_limits *out)
{
	out->maps = 0;
	out->stack_size = 0;
	for (size_t i = 0; i < m->n; i++) {
		const char *p = m->v[i].path;

		if (p && !strcmp(p, "[vsyscall]"))
			continue;	/* the gate page: no mapping of the process */
		out->maps++;
		if (p && !strcmp(p, "[stack]"))
			out->stack_size = m->v[i].end - m->v[i].start;
	}
}

/* Read path and hand its text to parse; 0 or -errno. */
static int read_parse(const char *path, struct proc_limits *out,
		      int (*parse)(const char *, struct proc_limits *))
{
	char *buf = NULL;
	size_t len;
	int rc = proc_read_file(path, &buf, &len);

	if (!rc)
		rc = parse(buf, out);
	free(buf);
	return rc;
}

int proc_limits_read(pid_t pid, struct proc_limits *out)
{
	struct proc_maps maps = { 0 };
	unsigned long long max;
	char path[64];
	int rc, first = 0;
	FILE *f;

	proc_limits_init(out);
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	rc = read_parse(path, out, proc_limits_parse);
	first = first ? first : rc;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	rc = read_parse(path, out, proc_limits_parse_status);
	first = first ? first : rc;
	rc = proc_maps_read(pid, &maps);
	if (!rc)
		proc_limits_count_maps(&maps, out);
	proc_maps_free(&maps);
	first = first ? first : rc;
	f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f && fscanf(f, "%llu", &max) == 1)
		out->max_map_count = max;
	else
		first = first ? first : (f ? -EINVAL : -errno);
	if (f)
		fclose(f);
	return first;
}
