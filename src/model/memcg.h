/* The target's memory cgroup: its limit and room (v1 and v2). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMCG_H
#define HEAPATTACH_MEMCG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MEMCG_PATH_MAX 512
#define MEMCG_NONE UINT64_MAX   /* no limit */

/*
 * Where the target's memory is charged and how much room is left there.
 * The room of one level is limit - usage + its file pages (page cache,
 * which the kernel reclaims before it OOM-kills); every level from the
 * target's cgroup up to the hierarchy's root counts, the tightest wins.
 * With cgroup v2 the limit is the lower of memory.max and memory.high
 * (above memory.high the target is throttled hard).
 */
struct memcg_info {
	int version;                    /* 1 or 2; 0: no memory cgroup found */
	char dir[MEMCG_PATH_MAX];       /* the target's memory cgroup, in our mounts */
	char tight[MEMCG_PATH_MAX];     /* the level with the least room */
	uint64_t limit;                 /* its limit, MEMCG_NONE if no level has one */
	uint64_t usage;
	uint64_t reclaimable;
	uint64_t avail;                 /* its room, MEMCG_NONE if no level has a limit */
};

/*
 * Pure: from the text of /proc/PID/cgroup and of /proc/self/mountinfo, the
 * target's memory cgroup directory (out->dir, out->version) and the mount
 * point above which the walk stops (top). 0, or -ENOENT when the target's
 * memory cgroup is not mounted where we can see it.
 */
int memcg_locate(const char *cgroup, const char *mountinfo, struct memcg_info *out,
		 char *top, size_t toplen);
/* Read the levels from out->dir up to top (which must contain it). 0 or -errno. */
int memcg_measure(struct memcg_info *out, const char *top);
/* Both, for process pid. 0, or -errno (then out->version is 0). */
int memcg_read(pid_t pid, struct memcg_info *out);

/* "512 KiB", "1.5 MiB", "3 GiB" into buf. */
const char *memcg_fmt(uint64_t bytes, char *buf, size_t len);

#endif
