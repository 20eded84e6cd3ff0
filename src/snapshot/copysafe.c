/* Whether a snapshot may copy or stop its target now: a vfork in flight, the memory cgroup's room for the copy, the time a stopped read would take. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "implant/forkchild.h"
#include "model/proc.h"
#include "snapshot/copysafe.h"

#define CHILDREN_MAX 4096       /* children of one thread looked at */
#define KIB 1024ULL

/* Without kcmp: whether thread tid of pid waits in vfork, or in a clone
 * with CLONE_VFORK (or clone3, whose flags are in memory), by
 * /proc/PID/task/TID/syscall ("NR ARG0 ..." while blocked). */
static int waits_in_vfork(pid_t pid, pid_t tid)
{
	char path[64], *buf = NULL, *end;
	size_t len;
	long nr;
	unsigned long long flags = 0;
	int yes = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (proc_read_file(path, &buf, &len))
		return 0;
	nr = strtol(buf, &end, 10);
	if (end != buf && *end == ' ')
		flags = strtoull(end + 1, NULL, 16);
	yes = nr == SYS_clone && (flags & CLONE_VFORK);
#ifdef SYS_vfork
	yes |= nr == SYS_vfork;
#endif
#ifdef SYS_clone3
	yes |= nr == SYS_clone3;
#endif
	free(buf);
	return yes;
}

/* Whether child (of thread tid of pid) uses pid's memory. */
static int shares(pid_t pid, pid_t tid, pid_t child)
{
	int r = forkchild_separate_memory(pid, child);

	if (r == 0)
		return 1;
	if (r == -ENOSYS)
		return waits_in_vfork(pid, tid);
	return 0;	/* its own memory; gone (-ESRCH); not ours to read (-EPERM: it exec'd) */
}

int copysafe_vfork(pid_t pid, pid_t *tid, pid_t *child)
{
	pid_t *tids = NULL;
	size_t n = 0;
	int rc = proc_tasks_read(pid, &tids, &n), found = 0;

	if (rc)
		return rc;
	for (size_t i = 0; i < n && !found; i++) {
		char path[80], *buf = NULL, *p;
		size_t len;
		unsigned k = 0;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tids[i]);
		if (proc_read_file(path, &buf, &len))
			continue;	/* the thread exited meanwhile */
		for (p = buf; *p && k < CHILDREN_MAX && !found; k++) {
			char *end;
			long c = strtol(p, &end, 10);

			if (end == p || c <= 0)
				break;
			p = end;
			if (proc_tracer((pid_t)c) != getpid() && shares(pid, tids[i], (pid_t)c)) {
				*tid = tids[i];
				*child = (pid_t)c;
				found = 1;
			}
		}
		free(buf);
	}
	free(tids);
	return found;
}

/* "Key:   123 kB" of status text in bytes; 0 if absent. */
static uint64_t status_kib(const char *text, const char *key)
{
	char val[64];

	if (proc_status_get(text, key, val, sizeof(val)))
		return 0;
	return strtoull(val, NULL, 10) * KIB;
}

int copysafe_copy_cost(pid_t pid, uint64_t *cost, uint64_t *anon)
{
	char path[64], *buf = NULL;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	rc = proc_read_file(path, &buf, &len);
	if (rc)
		return rc;
	*anon = status_kib(buf, "RssAnon") + status_kib(buf, "VmSwap");
	*cost = *anon + *anon / 512;
	free(buf);
	return 0;
}

int copysafe_memcg_fits(const struct memcg_info *cg, uint64_t cost, char *why, size_t len)
{
	char room[32], need[32];

	if (!cg->version || cg->avail == MEMCG_NONE || cost <= cg->avail)
		return 1;
	snprintf(why, len, "its memory cgroup %s has %s free, a copy could need %s", cg->tight,
		 memcg_fmt(cg->avail, room, sizeof(room)), memcg_fmt(cost, need, sizeof(need)));
	return 0;
}

uint64_t copysafe_read_ns(uint64_t anon)
{
	return (uint64_t)((double)anon / (double)COPYSAFE_READ_BYTES_PER_S * 1e9);
}
