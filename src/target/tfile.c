/* Opening files the target names: inside its root, never blocking, regular files only. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tfile.h"

int tfile_root(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* An O_PATH fd for path (see tfile_open for root), or -errno. */
static int open_path(int root, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (!path || !*path)
		return -ENOENT;
	if (root == TFILE_HOST)
		fd = open(path, O_PATH | O_CLOEXEC);
	else if (root < 0)
		return -EBADF;
	else
		fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

int tfile_stat(int root, const char *path, struct stat *st)
{
	int fd = open_path(root, path), ret = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st))
		ret = -errno;
	close(fd);
	return ret;
}

int tfile_open(int root, const char *path, struct stat *st)
{
	struct stat sb;
	char self[64];
	int pfd, fd;

	if (!st)
		st = &sb;
	pfd = open_path(root, path);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, st)) {
		fd = -errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		fd = -EINVAL;
		goto out;
	}
	/* the very inode pfd holds, whatever the path names by now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		goto out;
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		fd = -EINVAL;
	}
out:
	close(pfd);
	return fd;
}
