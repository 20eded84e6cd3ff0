/* Unit tests for --keep's rotation: the newest N numbered profiles stay, a name no longer ours is left alone. */
/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "session/rotate.h"

static char dir[64];
static char out[96];

/* Numbered profile n as heapattach would write it: a new regular file; its stat into st. */
static void write_numbered(const struct dump_dir *dd, unsigned n, struct stat *st)
{
	char *path = dump_numbered_path(out, n);
	int fd = openat(dd->fd, dump_base_name(path), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	expect_true(fd >= 0);
	expect_int_eq(fstat(fd, st), 0);
	close(fd);
	free(path);
}

/* Whether numbered profile n is there (not following a link). */
static int there(unsigned n)
{
	char *path = dump_numbered_path(out, n);
	struct stat st;
	int rc = lstat(path, &st) == 0;

	free(path);
	return rc;
}

/* keep 20 over 50 dumps: the ring grows 8, 16, 20 and wraps; only 31..50 stay. */
static void keeps_newest(void)
{
	struct rotate r = { 0 };
	struct dump_dir dd;
	struct stat st;

	expect_int_eq(dump_dir_open(&dd, out, 0), 0);
	for (unsigned n = 1; n <= 50; n++) {
		write_numbered(&dd, n, &st);
		rotate_wrote(&r, 20, &dd, out, n, &st);
		expect_true(r.n <= 20 && r.cap <= 20);
	}
	for (unsigned n = 1; n <= 50; n++)
		expect_int_eq(there(n), n > 30);
	for (unsigned n = 31; n <= 50; n++) {
		char *path = dump_numbered_path(out, n);

		unlink(path);
		free(path);
	}
	rotate_free(&r);
	dump_dir_close(&dd);
}

/* A name renamed away, replaced by a link or by another file: left alone. */
static void leaves_others(void)
{
	struct rotate r = { 0 };
	struct dump_dir dd;
	struct stat st;
	char *p1 = dump_numbered_path(out, 1), *p2 = dump_numbered_path(out, 2);
	char *p3 = dump_numbered_path(out, 3), away[128], other[128];

	snprintf(away, sizeof(away), "%s/away", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	expect_int_eq(dump_dir_open(&dd, out, 0), 0);
	for (unsigned n = 1; n <= 3; n++) {
		write_numbered(&dd, n, &st);
		rotate_wrote(&r, 1, &dd, out, n, &st);	/* 1 and 2 go at once... */
		if (n == 1) {	/* ...unless no longer ours */
			expect_int_eq(rename(p1, away), 0);
			expect_int_eq(symlink(away, p1), 0);
		}
		if (n == 2) {
			expect_int_eq(rename(p2, other), 0);
			expect_int_eq(link(other, p2), 0);	/* the same file: still ours */
		}
	}
	expect_true(there(1));		/* the link */
	expect_int_eq(access(away, F_OK), 0);
	expect_true(!there(2));		/* the hard link was the file written */
	expect_true(there(3));
	write_numbered(&dd, 4, &st);
	unlink(p3);
	expect_int_eq(rename(other, p3), 0);	/* another file at 3's name */
	rotate_wrote(&r, 1, &dd, out, 4, &st);
	expect_true(there(3));
	expect_true(there(4));
	for (unsigned n = 1; n <= 4; n++) {
		char *path = dump_numbered_path(out, n);

		unlink(path);
		free(path);
	}
	unlink(away);
	rotate_free(&r);
	dump_dir_close(&dd);
	free(p1);
	free(p2);
	free(p3);
}

static void setup(void)
{
	strcpy(dir, "/tmp/test_rotate.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(99);
	}
	snprintf(out, sizeof(out), "%s/out.heap", dir);
}

static void test_setup(void) { setup(); }
static void test_teardown(void) { expect_int_eq(rmdir(dir), 0); }

HARNESS_MAIN("rotate",
	T(test_setup),
	T(keeps_newest),
	T(leaves_others),
	T(test_teardown))
