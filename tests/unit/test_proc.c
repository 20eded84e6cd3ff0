/* Unit tests for /proc parsing: maps, tasks, status, opening mapped files. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "model/proc.h"

static void test_maps_basic(void)
{
	struct proc_maps m;
	const struct proc_map *p;

	expect_int_eq(proc_maps_load("fixtures/maps/basic.txt", &m), 0);
	expect_int_eq(m.n, 19);
	if (m.n != 19)
		return;
	p = &m.v[1];
	expect_u64_eq(p->start, 0x5654cc26f000);
	expect_u64_eq(p->end, 0x5654cc270000);
	expect_u64_eq(p->offset, 0x1000);
	expect_int_eq(p->prot, PROC_MAP_R | PROC_MAP_X);
	expect_int_eq(p->dev_major, 0xfe);
	expect_int_eq(p->dev_minor, 0);
	expect_u64_eq(p->inode, 5308901);
	expect_str_eq(p->path, "/srv/app/bin/server");
	expect_int_eq(p->deleted, 0);
	expect_str_eq(m.v[5].path, "[heap]");
	expect_int_eq(m.v[5].prot, PROC_MAP_R | PROC_MAP_W);
	expect_true(m.v[6].path == NULL);
	expect_u64_eq(m.v[6].inode, 0);
	expect_str_eq(m.v[12].path, "/opt/my libs/libspace.so");
	expect_int_eq(m.v[12].dev_major, 8);
	expect_int_eq(m.v[12].dev_minor, 1);
	expect_str_eq(m.v[13].path, "/tmp/plugin.so");
	expect_int_eq(m.v[13].deleted, 1);
	expect_str_eq(m.v[14].path, "/memfd:ring");
	expect_int_eq(m.v[14].deleted, 1);
	expect_int_eq(m.v[14].prot, PROC_MAP_R | PROC_MAP_W | PROC_MAP_SHARED);
	expect_str_eq(m.v[16].path, "[vdso]");
	expect_str_eq(m.v[17].path, "[stack]");
	expect_u64_eq(m.v[18].start, 0xffffffffff600000);
	expect_int_eq(m.v[18].prot, PROC_MAP_X);

	p = proc_maps_find(&m, 0x7f865dd94000);
	expect_true(p == &m.v[8]);
	p = proc_maps_find(&m, 0x7f865deea000 - 1);
	expect_true(p == &m.v[8]);
	expect_true(proc_maps_find(&m, 0x7f865df43000) == NULL);
	expect_true(proc_maps_find(&m, 0) == NULL);
	expect_true(proc_maps_find(&m, 0xffffffffff600fff) == &m.v[18]);
	proc_maps_free(&m);
	expect_int_eq(m.n, 0);
}

static void test_maps_buffer(void)
{
	static const char buf[] = "00400000-00401000 r-xp 00000000 08:01 1 /bin/true\n"
				  "\n"
				  "00401000-00402000 rw-p 00001000 08:01 1   /bin/true  (deleted)";
	struct proc_maps m;

	/* trailing blanks before " (deleted)" belong to the name */
	expect_int_eq(proc_maps_parse(buf, sizeof(buf) - 1, &m), 0);
	expect_int_eq(m.n, 2);
	if (m.n == 2) {
		expect_str_eq(m.v[0].path, "/bin/true");
		expect_str_eq(m.v[1].path, "/bin/true ");
		expect_int_eq(m.v[1].deleted, 1);
	}
	proc_maps_free(&m);
	expect_int_eq(proc_maps_parse("", 0, &m), 0);
	expect_int_eq(m.n, 0);
	proc_maps_free(&m);
}

static void test_maps_nopath(void)
{
	struct proc_maps m;

	expect_int_eq(proc_maps_load("fixtures/maps/nopath-nonl.txt", &m), 0);
	expect_int_eq(m.n, 2);
	if (m.n == 2) {
		expect_true(m.v[0].path == NULL);
		expect_int_eq(m.v[0].prot, PROC_MAP_R | PROC_MAP_W | PROC_MAP_X);
		expect_int_eq(m.v[1].prot, 0);
	}
	proc_maps_free(&m);
}

static void test_maps_malformed(void)
{
	static const char *const bad[] = {
		"00400000 r-xp 00000000 08:01 1 /x",
		"00400000-00401000 rxp 00000000 08:01 1 /x",
		"00400000-00401000 r-xq 00000000 08:01 1 /x",
		"00400000-00401000 r-xp 0000zz00 08:01 1 /x",
		"00400000-00401000 r-xp 00000000 0801 1 /x",
		"00400000-00401000 r-xp 00000000 08:01 x /x",
		"00401000-00400000 r-xp 00000000 08:01 1 /x",
		"00400000-00401000 r-xp 00000000 08:01 1x /x",
		"10000000000000000-1 r-xp 00000000 08:01 1 /x",
		"00400000-",
	};
	struct proc_maps m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = proc_maps_parse(bad[i], strlen(bad[i]), &m);

		if (r != -EINVAL)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		expect_int_eq(r, -EINVAL);
	}
	expect_int_eq(proc_maps_load("fixtures/maps/malformed.txt", &m), -EINVAL);
	expect_int_eq(proc_maps_load("fixtures/maps/does-not-exist.txt", &m), -ENOENT);
}

static void test_maps_self(void)
{
	struct proc_maps m;

	expect_int_eq(proc_maps_read(getpid(), &m), 0);
	expect_true(m.n > 5);
	expect_true(proc_maps_find(&m, (uint64_t)(uintptr_t)&test_maps_self) != NULL);
	proc_maps_free(&m);
}

static void test_tasks(void)
{
	pid_t *t = NULL;
	size_t n = 0;

	expect_int_eq(proc_tasks_load("fixtures/task", &t, &n), 0);
	expect_int_eq(n, 3);
	if (n == 3) {
		expect_int_eq(t[0], 9);
		expect_int_eq(t[1], 101);
		expect_int_eq(t[2], 1000);
	}
	free(t);
	expect_int_eq(proc_tasks_read(getpid(), &t, &n), 0);
	expect_int_eq(n, 1);
	if (n == 1)
		expect_int_eq(t[0], getpid());
	free(t);
	expect_int_eq(proc_tasks_load("fixtures/nonexistent", &t, &n), -ENOENT);
}

static void test_status(void)
{
	char buf[4096], out[64];
	FILE *f = fopen("fixtures/status/thread.txt", "r");
	size_t len;

	expect_true(f != NULL);
	if (!f)
		return;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	expect_int_eq(proc_status_get(buf, "Name", out, sizeof(out)), 0);
	expect_str_eq(out, "server");
	expect_int_eq(proc_status_get(buf, "State", out, sizeof(out)), 0);
	expect_str_eq(out, "S (sleeping)");
	expect_int_eq(proc_status_get(buf, "SigCgt", out, sizeof(out)), 0);
	expect_str_eq(out, "0000000180004002");
	expect_int_eq(proc_status_get(buf, "x86_Thread_features", out, sizeof(out)), 0);
	expect_str_eq(out, "");
	/* a key is the whole word before ':' */
	expect_int_eq(proc_status_get(buf, "Pi", out, sizeof(out)), -ENOENT);
	expect_int_eq(proc_status_get(buf, "Missing", out, sizeof(out)), -ENOENT);
	expect_int_eq(proc_status_get(buf, "Name", out, 4), 0);
	expect_str_eq(out, "ser");
	expect_int_eq(proc_status_read(getpid(), "Tgid", out, sizeof(out)), 0);
	expect_int_eq(atoi(out), getpid());
}

static void test_open_mapped(void)
{
	struct proc_maps m;
	const struct proc_map *p;
	struct stat a, b;
	int fd;

	expect_int_eq(proc_maps_read(getpid(), &m), 0);
	p = proc_maps_find(&m, (uint64_t)(uintptr_t)&test_open_mapped);
	expect_true(p && p->path);
	if (!p || !p->path)
		goto out;
	fd = proc_open_mapped(getpid(), p);
	expect_true(fd >= 0);
	if (fd >= 0) {
		expect_int_eq(fstat(fd, &a), 0);
		expect_int_eq(stat(p->path, &b), 0);
		expect_u64_eq(a.st_ino, b.st_ino);
		close(fd);
	}
	/* the /proc/PID/root fallback alone */
	proc_no_map_files = 1;
	fd = proc_open_mapped(getpid(), p);
	proc_no_map_files = 0;
	expect_true(fd >= 0);
	if (fd >= 0) {
		expect_int_eq(fstat(fd, &a), 0);
		expect_u64_eq(a.st_ino, b.st_ino);
		close(fd);
	}
	/* a deleted file is never looked up by its stale path */
	{
		struct proc_map d = *p;

		d.deleted = 1;
		d.start = d.end = 0;
		expect_int_eq(proc_open_mapped(getpid(), &d), -ENOENT);
	}
out:
	proc_maps_free(&m);
}

HARNESS_MAIN("proc", T(test_maps_basic), T(test_maps_buffer), T(test_maps_nopath),
	     T(test_maps_malformed), T(test_maps_self), T(test_tasks), T(test_status),
	     T(test_open_mapped))
