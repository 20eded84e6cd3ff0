/* Unit tests for the memory cgroup reader (v1 and v2) and the ring sizing. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "session/membudget.h"
#include "model/memcg.h"
#include "profile/profile.h"
#include "shm.h"

#define MIB (1ULL << 20)

static const char mountinfo[] =
	"22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
	"30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"31 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"32 25 0:28 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* Check that cg and mi locate version v's cgroup at dir (the mount at top). */
static void located(const char *cg, const char *mi, int v, const char *dir, const char *top)
{
	struct memcg_info m;
	char t[MEMCG_PATH_MAX];

	expect_int_eq(memcg_locate(cg, mi, &m, t, sizeof(t)), 0);
	expect_int_eq(m.version, v);
	expect_str_eq(m.dir, dir);
	if (top)
		expect_str_eq(t, top);
	expect_u64_eq(m.avail, MEMCG_NONE);
}

static void test_locate_v1(void)
{
	located("9:name=systemd:/\n4:memory:/svc/small\n1:cpu:/\n0::/\n", mountinfo, 1,
		"/sys/fs/cgroup/memory/svc/small", "/sys/fs/cgroup/memory");
}

static void test_locate_v2(void)
{
	static const char cg[] = "0::/user.slice/app\n";
	static const char mi[] = "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
	static const char mi_root[] =	/* a container's view: the mount is rooted lower */
		"40 1 0:30 /kube/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	static const char mi_two[] =	/* two mounts: the one that holds the path */
		"40 1 0:30 /kube/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
		"41 1 0:30 / /host/cg rw - cgroup2 cgroup2 rw\n";
	static const char cg_pod[] = "0::/kube/pod1/c1\n";
	struct memcg_info m;
	char top[MEMCG_PATH_MAX];

	located(cg, mi, 2, "/sys/fs/cgroup/user.slice/app", "/sys/fs/cgroup");
	located(cg_pod, mi_root, 2, "/sys/fs/cgroup/c1", NULL);
	expect_int_eq(memcg_locate(cg, mi_root, &m, top, sizeof(top)), -ENOENT);
	located(cg, mi_two, 2, "/host/cg/user.slice/app", "/host/cg");
	located(cg_pod, mi_two, 2, "/sys/fs/cgroup/c1", NULL);
	/* outside our cgroup namespace */
	expect_int_eq(memcg_locate("0::/../other\n", mi, &m, top, sizeof(top)), -ENOENT);
	located(cg, "40 1 0:30 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n", 2,
		"/mnt/my cg/user.slice/app", "/mnt/my cg");
	located("0::/\n", mi, 2, "/sys/fs/cgroup", NULL);	/* the root cgroup itself */
	/* no memory controller anywhere */
	expect_int_eq(memcg_locate("1:cpu:/\n", mountinfo, &m, top, sizeof(top)), -ENOENT);
}

/* Write text into dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(99);
	}
	fputs(text, f);
	fclose(f);
}

static char tmp[64];

static void rm_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp);
}

static void test_measure_v1(void)
{
	char a[256], b[256];
	struct memcg_info m = { .version = 1, .limit = MEMCG_NONE, .avail = MEMCG_NONE };

	snprintf(tmp, sizeof(tmp), "/tmp/memcg-test.XXXXXX");
	expect_true(mkdtemp(tmp) != NULL);
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/a/b", tmp);
	mkdir(a, 0700);
	mkdir(b, 0700);
	put(tmp, "memory.limit_in_bytes", "9223372036854771712\n");
	put(tmp, "memory.usage_in_bytes", "4000000000\n");
	put(a, "memory.limit_in_bytes", "104857600\n");	/* 100 MiB */
	put(a, "memory.usage_in_bytes", "52428800\n");	/* 50 MiB, 10 of it page cache */
	put(a, "memory.stat", "cache 1\ntotal_active_file 4194304\ntotal_inactive_file 6291456\n");
	put(b, "memory.limit_in_bytes", "20971520\n");	/* 20 MiB */
	put(b, "memory.usage_in_bytes", "15728640\n");	/* 15 MiB, 1 of it page cache */
	put(b, "memory.stat", "active_file 99\ntotal_inactive_file 1048576\n");
	snprintf(m.dir, sizeof(m.dir), "%s", b);
	expect_int_eq(memcg_measure(&m, tmp), 0);
	expect_str_eq(m.tight, b);
	expect_u64_eq(m.limit, 20 * MIB);
	expect_u64_eq(m.usage, 15 * MIB);
	expect_u64_eq(m.reclaimable, MIB);
	expect_u64_eq(m.avail, 6 * MIB);
	/* the parent is the tighter one once the child has room */
	put(b, "memory.limit_in_bytes", "1073741824\n");
	put(a, "memory.usage_in_bytes", "102760448\n");	/* 98 MiB */
	m.avail = m.limit = MEMCG_NONE;
	expect_int_eq(memcg_measure(&m, tmp), 0);
	expect_str_eq(m.tight, a);
	expect_u64_eq(m.avail, 12 * MIB);
	/* over its limit: no room at all */
	put(a, "memory.stat", "");
	put(a, "memory.usage_in_bytes", "209715200\n");
	m.avail = m.limit = MEMCG_NONE;
	expect_int_eq(memcg_measure(&m, tmp), 0);
	expect_u64_eq(m.avail, 0);
	/* dir outside top */
	expect_int_eq(memcg_measure(&m, "/nonexistent"), -EINVAL);
	rm_tree();
}

static void test_measure_v2(void)
{
	char a[256];
	struct memcg_info m = { .version = 2, .limit = MEMCG_NONE, .avail = MEMCG_NONE };

	snprintf(tmp, sizeof(tmp), "/tmp/memcg-test.XXXXXX");
	expect_true(mkdtemp(tmp) != NULL);
	snprintf(a, sizeof(a), "%s/app", tmp);
	mkdir(a, 0700);
	put(tmp, "memory.stat", "file 1\n");	/* the root: no memory.max */
	put(a, "memory.max", "max\n");
	put(a, "memory.high", "8388608\n");	/* 8 MiB */
	put(a, "memory.current", "6291456\n");
	put(a, "memory.stat", "anon 1\nfile 3145728\nactive_file 524288\ninactive_file 524288\n");
	snprintf(m.dir, sizeof(m.dir), "%s", a);
	expect_int_eq(memcg_measure(&m, tmp), 0);
	expect_u64_eq(m.limit, 8 * MIB);
	expect_u64_eq(m.avail, 3 * MIB);
	put(a, "memory.high", "max\n");
	m.avail = m.limit = MEMCG_NONE;
	expect_int_eq(memcg_measure(&m, tmp), 0);
	expect_u64_eq(m.avail, MEMCG_NONE);
	rm_tree();
}

static void test_fmt(void)
{
	char b[32];

	expect_str_eq(memcg_fmt(512, b, sizeof(b)), "512 bytes");
	expect_str_eq(memcg_fmt(64 << 10, b, sizeof(b)), "64 KiB");
	expect_str_eq(memcg_fmt(3 * MIB / 2, b, sizeof(b)), "1.5 MiB");
	expect_str_eq(memcg_fmt(MEMCG_NONE, b, sizeof(b)), "no limit");
}

/* Exact mode's live cap: half the room at 32 bytes a block, within bounds. */
static void test_live_cap(void)
{
	size_t cap = membudget_live_cap();

	expect_int_eq(membudget_live_cap_for(UINT64_MAX), PROFILE_MAX_LIVE);
	expect_int_eq(membudget_live_cap_for(0), PROFILE_MAX_LIVE);
	expect_int_eq(membudget_live_cap_for(64ULL << 30), MEMBUDGET_LIVE_MAX);	/* not 2^30 */
	expect_int_eq(membudget_live_cap_for(2ULL << 30), 32u << 20);	/* 1 GiB at 32 bytes */
	expect_true(cap >= PROFILE_MAX_LIVE && cap <= MEMBUDGET_LIVE_MAX);
}

/* The note follows the accounting's regions when the attach turns them off. */
static void test_note_xlive(void)
{
	struct membudget m;
	char before[sizeof(m.note)], want[96], r[32], t[32];
	const struct budget_ask ask = { .agent = 1, .exact = 1, .ring_want = 8 * MIB };
	uint64_t slots;

	expect_int_eq(membudget_plan(getpid(), &ask, &m), 0);
	slots = m.xlive_slots;
	if (!slots)
		return;		/* our cgroup has no room for them */
	snprintf(before, sizeof(before), "%s", m.note);
	membudget_set_xlive(&m, 0);
	expect_u64_eq(m.xlive_slots, 0);
	expect_true(strcmp(before, m.note) != 0);
	if (m.room.cg.avail == MEMCG_NONE) {
		snprintf(want, sizeof(want), "rings of %s, %s of tables;",
			 memcg_fmt(m.ring_size, r, sizeof(r)), memcg_fmt(SHM_OFF_RING, t, sizeof(t)));
		expect_true(strstr(m.note, want) != NULL);
	}
	membudget_set_xlive(&m, slots);
	expect_str_eq(m.note, before);
}

HARNESS_MAIN("memcg",
	T(test_locate_v1), T(test_locate_v2), T(test_measure_v1), T(test_measure_v2),
	T(test_fmt), T(test_live_cap), T(test_note_xlive))
