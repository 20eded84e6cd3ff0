/* A process's descendants, read from /proc/PID/task/TID/children. */
/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "model/proc.h"
#include "model/proctree.h"

/* Append the children named in one children file (a space-separated list
 * of pids) to out, skipping any already there. 0 or -ENOSPC. */
static int add_children(const char *path, pid_t *out, size_t max, size_t *n)
{
	char *buf = NULL, *p, *end;
	size_t len;
	int rc = 0;

	if (proc_read_file(path, &buf, &len))
		return 0;	/* the thread ended meanwhile */
	for (p = buf; p < buf + len; p = end) {
		long v = strtol(p, &end, 10);
		size_t i;

		if (end == p)
			break;
		if (v <= 0 || v > 0x3fffffff)
			continue;
		for (i = 0; i < *n && out[i] != (pid_t)v; i++)
			;
		if (i < *n)
			continue;
		if (*n == max) {
			rc = -ENOSPC;
			break;
		}
		out[(*n)++] = (pid_t)v;
	}
	free(buf);
	return rc;
}

/* The children of every thread of pid appended to out. 0, -ENOENT (pid
 * gone), -ENOTSUP (no children files) or -ENOSPC. */
static int children_of(pid_t pid, pid_t *out, size_t max, size_t *n)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int rc = 0, seen = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while (!rc && (de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, de->d_name);
		if (stat(path, &st))
			continue;
		seen = 1;
		rc = add_children(path, out, max, n);
	}
	closedir(d);
	if (!rc && !seen && access("/proc/self/task", F_OK) == 0) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
		if (access(path, F_OK))
			rc = -ENOTSUP;
	}
	return rc;
}

int proctree_descendants(pid_t root, pid_t *out, size_t max, size_t *n)
{
	int rc;

	*n = 0;
	rc = children_of(root, out, max, n);
	/* out is its own queue: each process found is asked for its children */
	for (size_t i = 0; !rc && i < *n; i++) {
		rc = children_of(out[i], out, max, n);
		if (rc == -ENOENT)
			rc = 0;	/* exited since its parent named it */
	}
	return rc;
}

int proctree_image(pid_t pid, struct proctree_image *img)
{
	char path[64], *buf = NULL, *p;
	struct stat st;
	size_t len;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return -errno;
	img->dev = st.st_dev;
	img->ino = st.st_ino;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (proc_read_file(path, &buf, &len))
		return -ENOENT;
	/* after the command's closing parenthesis, field 3 on */
	p = memrchr(buf, ')', len);
	img->start = 0;
	for (field = 2; p && p < buf + len && field < 22; p++)
		if (*p == ' ')
			field++;
	if (p && field == 22)
		img->start = strtoull(p, NULL, 10);
	free(buf);
	return img->start ? 0 : -EINVAL;
}
