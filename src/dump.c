/* Atomic dump files (temporary file + fsync + rename) and numbered dump names. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dump.h"
#include "log.h"
#include "xmalloc.h"

/* fsync the directory holding path so the rename itself is durable. */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!slash)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = strndup(path, slash - path);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/*
 * Readers see either the old file or the complete new one: the profile goes to
 * "PATH.tmp.XXXXXX" in the same directory, is fsynced, and renamed over path.
 * On any error the temporary file is removed and path is left untouched.
 * Returns 0 or -errno.
 */
int dump_write_file(const char *path, enum dump_format fmt,
		    const struct profile *p, const struct dump_info *d)
{
	size_t len = strlen(path);
	char *tmp = xmalloc(len + sizeof(".tmp.XXXXXX"));
	FILE *f = NULL;
	int fd, ret;

	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp.XXXXXX", sizeof(".tmp.XXXXXX"));
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		pr_perror("cannot create %s", tmp);
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		goto err_unlink;
	}
	if (fchmod(fd, 0644) < 0) {
		ret = -errno;
		goto err_close;
	}
	ret = fmt == DUMP_PPROF ? pprof_write(f, p, d) : legacy_write(f, p, d);
	if (ret)
		goto err_close;
	if (fflush(f) || fsync(fd) < 0) {
		ret = -errno;
		goto err_close;
	}
	ret = fclose(f);
	f = NULL;
	if (ret) {
		ret = -errno;
		goto err_unlink;
	}
	if (rename(tmp, path) < 0) {
		ret = -errno;
		goto err_unlink;
	}
	sync_dir(path);
	ret = 0;
	goto out;

err_close:
	fclose(f);
err_unlink:
	unlink(tmp);
	errno = -ret;
	pr_perror("cannot write %s", path);
out:
	free(tmp);
	return ret;
}

/*
 * The number goes before the extension of the last path component, if it has
 * one (a leading dot does not start an extension: ".heap" -> ".heap.0003").
 */
char *dump_numbered_path(const char *path, unsigned n)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	size_t stem, len = strlen(path);
	char *out = xmalloc(len + 16);

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	stem = dot && dot != base ? (size_t)(dot - path) : len;
	snprintf(out, len + 16, "%.*s.%04u%s", (int)stem, path, n, path + stem);
	return out;
}
