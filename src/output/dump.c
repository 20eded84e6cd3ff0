/* Atomic dump files (temporary file + fsync + rename in one directory fd) and numbered dump names. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "output/dump.h"

#define DUMP_PROBE_BYTES (64 * 1024)
#define TMP_SUFFIX ".tmp.XXXXXX"

const char *dump_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* What kind of file st is, for a refusal message. */
static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/*
 * A profile replaces its name by rename(), which would replace whatever
 * the name is (as root, -o /dev/null would put a regular file in place of
 * the device). So the name must be free or a regular file. 0, or -EEXIST
 * (or -errno) after one message.
 */
static int check_name(int dirfd, const char *path)
{
	const char *name = dump_base_name(path);
	struct stat st;

	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		pr_err("cannot write %s: it names a directory", path);
		return -EISDIR;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		pr_perror("cannot write %s", path);
		return -errno;
	}
	if (S_ISREG(st.st_mode))
		return 0;
	pr_err("cannot write %s: it is %s (heapattach replaces only regular files)", path,
	       kind_of(st.st_mode));
	return S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
}

/*
 * Create "NAME.tmp.XXXXXX" in dirfd, mode 0600 (a profile holds the
 * target's names, paths and sizes), never following a link. The name
 * goes to tmp (strlen(name) + sizeof(TMP_SUFFIX) bytes). fd or -errno.
 */
static int create_tmp(int dirfd, const char *name, char *tmp)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static uint64_t counter;
	size_t len = strlen(name);

	for (int tries = 0; tries < 100; tries++) {
		uint64_t x = clock_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32) ^
			     (++counter * 0x9e3779b97f4a7c15ULL);
		int fd;

		memcpy(tmp, name, len);
		memcpy(tmp + len, TMP_SUFFIX, sizeof(TMP_SUFFIX));
		for (char *c = tmp + len + sizeof(TMP_SUFFIX) - 7; *c; c++) {
			*c = chars[x % (sizeof(chars) - 1)];
			x /= sizeof(chars) - 1;
		}
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (fchmod(fd, 0600) == 0)
				return fd;
			fd = -errno;
			unlinkat(dirfd, tmp, 0);
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Room for len bytes in fd: allocated by fallocate, else written and synced. */
static int reserve(int fd, size_t len)
{
	static const char zeros[4096];

	if (fallocate(fd, 0, 0, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	for (size_t done = 0; done < len; done += sizeof(zeros))
		if (write(fd, zeros, sizeof(zeros)) != (ssize_t)sizeof(zeros))
			return errno ? -errno : -ENOSPC;
	return fsync(fd) < 0 ? -errno : 0;
}

/* Open path's directory: the only time any of its components is resolved.
 * fd, or -errno after one message. */
static int open_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!slash)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else {
		dir = xmalloc((size_t)(slash - path) + 1);
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = 0;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		pr_err("cannot write %s: directory %s: %s", path, dir, strerror(-fd));
	}
	free(dir);
	return fd;
}

int dump_dir_open(struct dump_dir *dd, const char *path, int probe)
{
	char *tmp = NULL;
	int fd = -1, rc;

	dd->fd = -1;
	rc = open_dir(path);
	if (rc < 0)
		return rc;
	dd->fd = rc;
	rc = check_name(dd->fd, path);
	if (rc || !probe)
		goto out;
	tmp = xmalloc(strlen(dump_base_name(path)) + sizeof(TMP_SUFFIX));
	fd = create_tmp(dd->fd, dump_base_name(path), tmp);
	if (fd < 0) {
		rc = fd;
		pr_err("cannot write %s: cannot create a file in its directory: %s", path,
		       strerror(-rc));
		goto out;
	}
	rc = reserve(fd, DUMP_PROBE_BYTES);
	if (rc)
		pr_err("cannot write %s: no room for %d KiB in its directory: %s", path,
		       DUMP_PROBE_BYTES / 1024, strerror(-rc));
	close(fd);
	unlinkat(dd->fd, tmp, 0);
out:
	free(tmp);
	if (rc)
		dump_dir_close(dd);
	return rc;
}

void dump_dir_close(struct dump_dir *dd)
{
	if (dd->fd >= 0)
		close(dd->fd);
	dd->fd = -1;
}

/*
 * Readers see either the old file or the complete new one: the profile goes
 * to "NAME.tmp.XXXXXX" in the same directory (dd's, opened once), is
 * fsynced, and renamed over NAME. On any error the temporary file is
 * removed and NAME is left untouched. 0, or -errno after one message.
 */
int dump_write_at(const struct dump_dir *dd, const char *path, enum dump_format fmt,
		  const struct profile *p, const struct dump_info *d)
{
	return dump_write_at_stat(dd, path, fmt, p, d, NULL);
}

int dump_write_at_stat(const struct dump_dir *dd, const char *path, enum dump_format fmt,
		       const struct profile *p, const struct dump_info *d, struct stat *st)
{
	const char *name = dump_base_name(path);
	char *tmp = NULL;
	FILE *f = NULL;
	int fd, ret;

	ret = check_name(dd->fd, path);
	if (ret)
		return ret;
	tmp = xmalloc(strlen(name) + sizeof(TMP_SUFFIX));
	fd = create_tmp(dd->fd, name, tmp);
	if (fd < 0) {
		ret = fd;
		pr_err("cannot write %s: cannot create a temporary file beside it: %s", path,
		       strerror(-ret));
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		goto err_unlink;
	}
	ret = fmt == DUMP_PPROF ? pprof_write(f, p, d) :
	      fmt == DUMP_FOLDED ? folded_write(f, p, d) : legacy_write(f, p, d);
	if (ret)
		goto err_close;
	if (fflush(f) || fsync(fd) < 0 || (st && fstat(fd, st) < 0)) {
		ret = -errno;
		goto err_close;
	}
	ret = fclose(f);
	f = NULL;
	if (ret) {
		ret = -errno;
		goto err_unlink;
	}
	if (renameat(dd->fd, tmp, dd->fd, name) < 0) {
		ret = -errno;
		goto err_unlink;
	}
	fsync(dd->fd);	/* the rename itself durable */
	ret = 0;
	goto out;

err_close:
	fclose(f);
err_unlink:
	unlinkat(dd->fd, tmp, 0);
	pr_err("cannot write %s: %s", path, strerror(-ret));
out:
	free(tmp);
	return ret;
}

int dump_write_file(const char *path, enum dump_format fmt,
		    const struct profile *p, const struct dump_info *d)
{
	struct dump_dir dd;
	int ret = dump_dir_open(&dd, path, 0);

	if (ret)
		return ret;
	ret = dump_write_at(&dd, path, fmt, p, d);
	dump_dir_close(&dd);
	return ret;
}

/*
 * The number goes before the extension of the last path component, if it has
 * one (a leading dot does not start an extension: ".heap" -> ".heap.0003").
 */
char *dump_tagged_path(const char *path, const char *tag)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	size_t stem, len = strlen(path) + strlen(tag) + 2;
	char *out = xmalloc(len);

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	stem = dot && dot != base ? (size_t)(dot - path) : strlen(path);
	snprintf(out, len, "%.*s.%s%s", (int)stem, path, tag, path + stem);
	return out;
}

char *dump_numbered_path(const char *path, unsigned n)
{
	char tag[16];

	snprintf(tag, sizeof(tag), "%04u", n);
	return dump_tagged_path(path, tag);
}
