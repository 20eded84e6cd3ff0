/* A process's descendants, read from /proc/PID/task/TID/children. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PROCTREE_H
#define HEAPATTACH_PROCTREE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The descendants of root (not root itself) into out[0..*n), at most max,
 * breadth first: the children of every thread of each process found, then
 * theirs. A process that exits while read is skipped. 0, -ENOENT when root
 * is gone, -ENOSPC when more than max were found (out holds max of them),
 * or -errno (the kernel lacks CONFIG_PROC_CHILDREN: -ENOTSUP).
 */
int proctree_descendants(pid_t root, pid_t *out, size_t max, size_t *n);

/* The identity of pid's program image: the device and inode of
 * /proc/PID/exe and the process's start time (field 22 of its stat), so
 * that an exec (new image) or a reused pid (new start) reads as a change.
 * 0 or -errno. */
struct proctree_image {
	unsigned long long dev, ino, start;
};
int proctree_image(pid_t pid, struct proctree_image *img);

#endif
