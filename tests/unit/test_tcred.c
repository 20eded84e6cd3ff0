/* Unit tests for tcred: status parsing, and files opened with another process's access (as root: a child that is nobody). */
/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "as_nobody.h"
#include "harness.h"
#include "model/tcred.h"

static char dir[] = "/tmp/tcred-test.XXXXXX";

static void test_parse(void)
{
	static const char ok[] = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t10\t11\t12\t13\n"
				 "Groups:\t27 4 100 \nCapEff:\t0000000000000006\n";
	static const char none[] = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n"
				   "CapEff:\t000001ffffffffff\n";
	static const char *const bad[] = {
		"Gid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n",			/* no Uid */
		"Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n",	/* 3 ids */
		"Uid:\t0\t0\t0\t4294967295\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n",
		"Uid:\t0\t0\t0\t99999999999\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n",
		"Uid:\t0\t0\t0\t0x\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n",
		"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t1 -2\nCapEff:\t0\n",
		"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapEff:\t0\n",		/* no Groups */
		"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t\n",
		"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t00000000000000000\n",
		"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\tz\n",
	};
	struct tcred c;

	expect_int_eq(tcred_parse(ok, &c), 0);
	expect_int_eq(c.fsuid, 1003);
	expect_int_eq(c.fsgid, 13);
	expect_int_eq(c.ngroups, 3);
	if (c.ngroups == 3) {
		expect_int_eq(c.groups[0], 4);
		expect_int_eq(c.groups[1], 27);
		expect_int_eq(c.groups[2], 100);
	}
	expect_int_eq(c.dac_caps, TCRED_DAC_CAPS);
	tcred_release(&c);
	expect_int_eq(tcred_parse(none, &c), 0);
	expect_int_eq(c.fsuid, 0);
	expect_int_eq(c.ngroups, 0);
	expect_true(c.groups == NULL);
	expect_int_eq(c.dac_caps, TCRED_DAC_CAPS);	/* only those two bits are kept */
	tcred_release(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.fsuid = 77;
		expect_int_eq(tcred_parse(bad[i], &c), -EINVAL);
		expect_int_eq(c.fsuid, 77);
	}
}

/* fn for tcred_run: open the path arg read-only; the fd or -errno. */
static int open_fn(void *arg)
{
	int fd = open(arg, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* fn: the thread id it runs in. */
static int tid_fn(void *arg)
{
	(void)arg;
	return (int)syscall(SYS_gettid);
}

/* open(path) through tcred_run with c: 0 if it opened, else -errno. */
static int can_open(const struct tcred *c, const char *path)
{
	int fd = tcred_run(c, open_fn, (void *)path);

	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

static int mkfile(const char *rel, mode_t mode, gid_t gid)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	if (write(fd, "x", 1) != 1 || fchown(fd, 0, gid) || fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static void test_wear(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	char p[160], q[160];
	struct tcred c, self;
	struct nobody nb;

	if (geteuid()) {
		printf("test_wear: not root, skipped\n");
		return;
	}
	snprintf(p, sizeof(p), "%s/open", dir);
	expect_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/closed", dir);
	expect_int_eq(mkdir(p, 0700), 0);
	expect_int_eq(chmod(dir, 0755), 0);
	expect_int_eq(mkfile("open/world", 0644, 0), 0);
	expect_int_eq(mkfile("open/secret", 0600, 0), 0);
	expect_int_eq(mkfile("open/group", 0640, 4242), 0);
	expect_int_eq(mkfile("open/othergroup", 0640, 4243), 0);
	expect_int_eq(mkfile("closed/world", 0644, 0), 0);
	snprintf(q, sizeof(q), "%s/open/link", dir);
	snprintf(p, sizeof(p), "%s/open/secret", dir);
	expect_int_eq(symlink(p, q), 0);

	expect_int_eq(nobody_start(&nb, 4242), 0);
	if (nb.pid <= 0)
		return;
	expect_int_eq(tcred_read(nb.pid, &c), 0);
	expect_int_eq(c.fsuid, NOBODY);
	expect_int_eq(c.fsgid, NOBODY);
	expect_int_eq(c.ngroups, 1);
	expect_int_eq(c.dac_caps, 0);

	snprintf(p, sizeof(p), "%s/open/world", dir);
	expect_int_eq(can_open(&c, p), 0);
	snprintf(p, sizeof(p), "%s/open/secret", dir);
	expect_int_eq(can_open(&c, p), -EACCES);
	expect_int_eq(can_open(&c, q), -EACCES);	/* a link to it */
	snprintf(p, sizeof(p), "%s/open/group", dir);
	expect_int_eq(can_open(&c, p), 0);		/* a supplementary group of its */
	snprintf(p, sizeof(p), "%s/open/othergroup", dir);
	expect_int_eq(can_open(&c, p), -EACCES);
	snprintf(p, sizeof(p), "%s/closed/world", dir);
	expect_int_eq(can_open(&c, p), -EACCES);	/* a directory it cannot search */
	/* a thread of ours wore it, never this one */
	expect_true(tcred_run(&c, tid_fn, NULL) != (int)syscall(SYS_gettid));

	/* we are still root, with every capability we had */
	expect_int_eq(syscall(SYS_setfsuid, -1), 0);
	expect_int_eq(syscall(SYS_setfsgid, -1), 0);
	expect_int_eq(syscall(SYS_capget, &h, d), 0);
	expect_true((d[0].effective & TCRED_DAC_CAPS) == TCRED_DAC_CAPS);
	expect_int_eq(can_open(&c, p), -EACCES);
	expect_true(access(p, R_OK) == 0);

	/* a root that lacks the DAC capabilities cannot read another user's file */
	expect_int_eq(tcred_read(getpid(), &self), 0);
	expect_int_eq(self.dac_caps, TCRED_DAC_CAPS);
	self.dac_caps = 0;
	snprintf(p, sizeof(p), "%s/open/secret", dir);
	expect_int_eq(can_open(&self, p), 0);		/* its own */
	expect_int_eq(chown(p, 4321, 4321), 0);
	expect_int_eq(can_open(&self, p), -EACCES);
	self.dac_caps = TCRED_DAC_CAPS;
	expect_int_eq(can_open(&self, p), 0);
	/* our own credentials: run right here */
	expect_int_eq(tcred_run(&self, tid_fn, NULL), (int)syscall(SYS_gettid));
	expect_int_eq(tcred_run_as(getpid(), tid_fn, NULL), (int)syscall(SYS_gettid));
	expect_int_eq(tcred_run_as(0, tid_fn, NULL), (int)syscall(SYS_gettid));
	tcred_release(&self);

	/* a thread that is gone keeps the credentials it was last read with */
	tcred_release(&c);
	expect_int_eq(tcred_read(nb.pid, &c), 0);
	tcred_release(&c);
	{
		pid_t gone = nb.pid;

		nobody_end(&nb);
		expect_int_eq(kill(gone, 0), -1);
		expect_int_eq(tcred_read(gone, &c), 0);
		expect_int_eq(c.fsuid, NOBODY);
		expect_int_eq(tcred_run_as(gone, open_fn, p), -EACCES);
		tcred_release(&c);
	}
}

static void setup(void)
{
	if (!mkdtemp(dir))
		exit(99);
	alarm(20);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

HARNESS_MAIN("tcred", T(setup), T(test_parse), T(test_wear), T(teardown))
