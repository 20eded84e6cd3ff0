/* Opening files the target names: inside its root, with its access, never blocking, regular files only. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "model/tcred.h"
#include "model/tfile.h"

int tfile_root(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int tfile_opath(int root, const char *path)
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

/* What an open or a stat is asked, and what it answers (fn of tcred_run). */
struct tfile_req {
	int root;
	const char *path;
	struct stat *st;
};

/* tfile_stat's work, in the thread that wears the opener's credentials. */
static int stat_req(void *arg)
{
	struct tfile_req *r = arg;
	int fd = tfile_opath(r->root, r->path), ret = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, r->st))
		ret = -errno;
	close(fd);
	return ret;
}

int tfile_stat(int root, const char *path, struct stat *st, pid_t as)
{
	struct tfile_req r = { .root = root, .path = path, .st = st };

	return tcred_run_as(as, stat_req, &r);
}

/* tfile_open's work, in the thread that wears the opener's credentials:
 * the walk to the file and its reopen for reading are checked against
 * them. The fd (the table is shared with every thread) or -errno. */
static int open_req(void *arg)
{
	struct tfile_req *r = arg;
	struct stat *st = r->st;
	char self[64];
	int pfd, fd;

	pfd = tfile_opath(r->root, r->path);
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

int tfile_open(int root, const char *path, struct stat *st, pid_t as)
{
	struct stat sb;
	struct tfile_req r = { .root = root, .path = path, .st = st ? st : &sb };

	return tcred_run_as(as, open_req, &r);
}
