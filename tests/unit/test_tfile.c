/* Unit tests for tfile: FIFOs, devices and directories refused without blocking, paths kept inside a root, the opener's access. */
/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "as_nobody.h"
#include "harness.h"
#include "model/tfile.h"

static char dir[] = "/tmp/tfile-test.XXXXXX";

/* Write a file of len bytes 'x' at path. */
static void put_file(const char *path, size_t len)
{
	FILE *f = fopen(path, "w");

	expect_true(f != NULL);
	if (!f)
		return;
	while (len--)
		fputc('x', f);
	fclose(f);
}

static void test_kinds(void)
{
	char p[128];
	struct stat st;
	int fd;

	/* a FIFO nobody writes to: refused at once, not opened */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	expect_int_eq(mkfifo(p, 0600), 0);
	expect_int_eq(tfile_open(TFILE_HOST, p, NULL, TFILE_SELF), -EINVAL);
	/* a device and a directory */
	expect_int_eq(tfile_open(TFILE_HOST, "/dev/null", NULL, TFILE_SELF), -EINVAL);
	expect_int_eq(tfile_open(TFILE_HOST, dir, NULL, TFILE_SELF), -EINVAL);
	/* a symlink to a device */
	snprintf(p, sizeof(p), "%s/zero", dir);
	expect_int_eq(symlink("/dev/zero", p), 0);
	expect_int_eq(tfile_open(TFILE_HOST, p, NULL, TFILE_SELF), -EINVAL);
	expect_int_eq(tfile_open(TFILE_HOST, "", NULL, TFILE_SELF), -ENOENT);
	/* a regular file: read-only, non-blocking, its size in st */
	snprintf(p, sizeof(p), "%s/reg", dir);
	put_file(p, 100);
	fd = tfile_open(TFILE_HOST, p, &st, TFILE_SELF);
	expect_true(fd >= 0);
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);

		expect_int_eq(fl & O_ACCMODE, O_RDONLY);
		expect_true(fl & O_NONBLOCK);
		expect_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		expect_int_eq(st.st_size, 100);
		close(fd);
	}
}

static void test_in_root(void)
{
	char p[128], q[256];
	struct stat st;
	int root, fd;

	snprintf(p, sizeof(p), "%s/root", dir);
	expect_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/root/etc", dir);
	expect_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/root/etc/in-root", dir);
	put_file(p, 7);
	/* on the host only */
	snprintf(p, sizeof(p), "%s/host-only", dir);
	put_file(p, 9);
	snprintf(p, sizeof(p), "%s/root", dir);
	root = open(p, O_PATH | O_DIRECTORY);
	expect_true(root >= 0);

	fd = tfile_open(root, "/etc/in-root", &st, TFILE_SELF);
	expect_true(fd >= 0 && st.st_size == 7);
	if (fd >= 0)
		close(fd);
	fd = tfile_open(root, "etc/in-root", &st, TFILE_SELF);
	expect_true(fd >= 0 && st.st_size == 7);
	if (fd >= 0)
		close(fd);
	/* ".." stops at the root */
	fd = tfile_open(root, "/../../../etc/in-root", &st, TFILE_SELF);
	expect_true(fd >= 0 && st.st_size == 7);
	if (fd >= 0)
		close(fd);
	/* an absolute path or symlink naming a host file names a file in root */
	snprintf(q, sizeof(q), "%s/host-only", dir);
	expect_int_eq(tfile_open(root, q, NULL, TFILE_SELF), -ENOENT);
	snprintf(p, sizeof(p), "%s/root/etc/link", dir);
	expect_int_eq(symlink(q, p), 0);
	expect_int_eq(tfile_open(root, "/etc/link", NULL, TFILE_SELF), -ENOENT);
	expect_int_eq(tfile_stat(root, "/etc/link", &st, TFILE_SELF), -ENOENT);
	/* a relative symlink climbing out of root */
	snprintf(p, sizeof(p), "%s/root/etc/up", dir);
	expect_int_eq(symlink("../../host-only", p), 0);
	expect_int_eq(tfile_open(root, "/etc/up", NULL, TFILE_SELF), -ENOENT);
	/* ... and one that stays inside */
	snprintf(p, sizeof(p), "%s/root/etc/abs", dir);
	expect_int_eq(symlink("/etc/in-root", p), 0);
	expect_int_eq(tfile_stat(root, "/etc/abs", &st, TFILE_SELF), 0);
	expect_int_eq(st.st_size, 7);
	close(root);

	/* no /proc magic link, even in our own root, where the file exists */
	root = tfile_root(getpid());
	expect_true(root >= 0);
	if (root >= 0) {
		snprintf(p, sizeof(p), "/proc/self/root%s/host-only", dir);
		expect_int_eq(tfile_open(root, p, NULL, TFILE_SELF), -ELOOP);
		expect_int_eq(tfile_open(root, "/proc/self/exe", NULL, TFILE_SELF), -ELOOP);
		expect_int_eq(tfile_stat(root, p + strlen("/proc/self/root"), &st, TFILE_SELF), 0);
		close(root);
	}
	expect_int_eq(tfile_open(-5, "/etc/hostname", NULL, TFILE_SELF), -EBADF);
}

/* With a target's access (as root, the target nobody): what it may not
 * reach or read is not opened, whichever way the path leads there. */
static void test_as_target(void)
{
	static const char *const files[] = { "as/world", "as/secret", "as/vault/inner" };
	static const mode_t modes[] = { 0644, 0600, 0644 };
	struct nobody nb;
	char p[128], q[128];
	struct stat st;
	int root, fd;

	if (nobody_start(&nb, 4242)) {
		printf("test_as_target: not root, skipped\n");
		return;
	}
	expect_int_eq(chmod(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/as", dir);
	expect_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/as/vault", dir);
	expect_int_eq(mkdir(p, 0700), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		put_file(p, 5);
		expect_int_eq(chmod(p, modes[i]), 0);
	}
	snprintf(p, sizeof(p), "%s/as/secret", dir);
	snprintf(q, sizeof(q), "%s/as/link", dir);
	expect_int_eq(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/as/fifo", dir);
	expect_int_eq(mkfifo(q, 0666), 0);

	snprintf(p, sizeof(p), "%s/as/world", dir);
	fd = tfile_open(TFILE_HOST, p, &st, nb.pid);
	expect_true(fd >= 0 && st.st_size == 5);
	if (fd >= 0)
		close(fd);
	snprintf(p, sizeof(p), "%s/as/secret", dir);
	expect_int_eq(tfile_open(TFILE_HOST, p, NULL, nb.pid), -EACCES);
	expect_int_eq(tfile_stat(TFILE_HOST, p, &st, nb.pid), 0);	/* stat needs no read */
	fd = tfile_open(TFILE_HOST, p, NULL, TFILE_SELF);		/* we may */
	expect_true(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(p, sizeof(p), "%s/as/link", dir);
	expect_int_eq(tfile_open(TFILE_HOST, p, NULL, nb.pid), -EACCES);
	snprintf(p, sizeof(p), "%s/as/vault/inner", dir);
	expect_int_eq(tfile_open(TFILE_HOST, p, NULL, nb.pid), -EACCES);
	expect_int_eq(tfile_stat(TFILE_HOST, p, &st, nb.pid), -EACCES);
	expect_int_eq(tfile_open(TFILE_HOST, q, NULL, nb.pid), -EINVAL);	/* still never a FIFO */

	snprintf(p, sizeof(p), "%s/as", dir);
	root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	expect_true(root >= 0);
	fd = tfile_open(root, "/world", NULL, nb.pid);
	expect_true(fd >= 0);
	if (fd >= 0)
		close(fd);
	expect_int_eq(tfile_open(root, "/secret", NULL, nb.pid), -EACCES);
	expect_int_eq(tfile_open(root, "/vault/inner", NULL, nb.pid), -EACCES);
	/* a hard link is the same inode: the same answer */
	snprintf(p, sizeof(p), "%s/as/secret", dir);
	snprintf(q, sizeof(q), "%s/as/hard", dir);
	expect_int_eq(link(p, q), 0);
	expect_int_eq(tfile_open(root, "/hard", NULL, nb.pid), -EACCES);
	close(root);
	nobody_end(&nb);
}

static void setup(void)
{
	if (!mkdtemp(dir))
		exit(99);
	/* a test that blocks fails */
	alarm(20);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

HARNESS_MAIN("tfile", T(setup), T(test_kinds), T(test_in_root), T(test_as_target), T(teardown))
