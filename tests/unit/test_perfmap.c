/* Unit tests for perfmap: parsing, growth, later entries winning, caps, garbage, unsafe files. */
/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "as_nobody.h"
#include "harness.h"
#include "model/perfmap.h"
#include "model/tfile.h"

static char dir[] = "/tmp/perfmap-test.XXXXXX";
static char file[256];          /* dir/tmp/perf-1.map: the map as the root holds it */
static int root = -1;

#define MAP_PATH "/tmp/perf-1.map"

/* Write s into the map opened with flags. */
static void write_map(const char *s, int flags)
{
	int fd = open(file, O_WRONLY | O_CREAT | flags, 0644);

	expect_true(fd >= 0);
	if (fd < 0)
		return;
	expect_int_eq(write(fd, s, strlen(s)), (long long)strlen(s));
	close(fd);
}

/* Append s to the map. */
static void put(const char *s)
{
	write_map(s, O_APPEND);
}

static void fresh(void)
{
	unlink(file);
}

static struct perfmap_stats stats(const struct perfmap *pm)
{
	struct perfmap_stats st;

	perfmap_get_stats(pm, &st);
	return st;
}

static const char *name_at(struct perfmap *pm, uint64_t a)
{
	return perfmap_lookup(pm, a, NULL);
}

/* pm hit exactly the caps given, and says so in one note holding what. */
static void expect_note_once(struct perfmap *pm, unsigned caps, const char *what)
{
	char note[256];

	expect_int_eq(stats(pm).caps, caps);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 1);
	expect_true(strstr(note, what) != NULL);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 0);
}

static void test_basic(void)
{
	struct perfmap *pm;
	uint64_t off = 0;

	fresh();
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), -ENOENT);
	expect_true(name_at(pm, 0x1000) == NULL);
	put("1000 40 first\n2000 10 LazyCompile:~second /app/x.js:12:3\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, 2);
	expect_str_eq(perfmap_lookup(pm, 0x1000, &off), "first");
	expect_u64_eq(off, 0);
	expect_str_eq(perfmap_lookup(pm, 0x103f, &off), "first");
	expect_u64_eq(off, 0x3f);
	expect_true(name_at(pm, 0x1040) == NULL);
	expect_true(name_at(pm, 0xfff) == NULL);
	expect_str_eq(name_at(pm, 0x2005), "LazyCompile:~second /app/x.js:12:3");
	expect_true(name_at(pm, 0x2010) == NULL);
	expect_str_eq(perfmap_path(pm), MAP_PATH);
	perfmap_free(pm);
}

static void test_growth(void)
{
	struct perfmap *pm;

	fresh();
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	put("1000 40 a\n20");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, 1);
	expect_true(name_at(pm, 0x2000) == NULL);
	/* the half line is taken once complete */
	put("00 40 b");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, 1);
	put("\n3000 40 c\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, 3);
	expect_str_eq(name_at(pm, 0x1001), "a");
	expect_str_eq(name_at(pm, 0x2001), "b");
	expect_str_eq(name_at(pm, 0x3001), "c");
	/* nothing new: nothing changes */
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, 3);
	expect_int_eq(stats(pm).garbage, 0);
	perfmap_free(pm);
}

/* Later entries win where they overlap, whether read at once or in pieces. */
static void check_overrides(struct perfmap *pm)
{
	uint64_t off = 0;

	expect_str_eq(perfmap_lookup(pm, 0x115, &off), "A");
	expect_u64_eq(off, 0x15);
	expect_str_eq(name_at(pm, 0x105), "C");
	expect_str_eq(name_at(pm, 0x14f), "A");
	expect_str_eq(perfmap_lookup(pm, 0x160, &off), "D");
	expect_u64_eq(off, 0x10);
	expect_str_eq(name_at(pm, 0x24f), "D");
	expect_true(name_at(pm, 0x250) == NULL);
	expect_str_eq(name_at(pm, 0x400), "F");
	expect_str_eq(name_at(pm, 0x4ff), "F");
}

static const char *overrides[] = {
	"100 100 A\n",          /* [100, 200) */
	"150 100 B\n",          /* [150, 250) over A's end */
	"100 10 C\n",           /* [100, 110) inside A */
	"150 100 D\n",          /* B's range again */
	"400 100 E\n",
	"300 300 F\n",          /* [300, 600) over all of E */
};

static void test_override(void)
{
	struct perfmap *pm;

	fresh();
	for (size_t i = 0; i < sizeof(overrides) / sizeof(*overrides); i++)
		put(overrides[i]);
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), 0);
	check_overrides(pm);
	perfmap_free(pm);

	fresh();
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	for (size_t i = 0; i < sizeof(overrides) / sizeof(*overrides); i++) {
		put(overrides[i]);
		expect_int_eq(perfmap_refresh(pm), 0);
	}
	check_overrides(pm);
	perfmap_free(pm);
}

/* Random entries read in random pieces against a plain scan: the latest
 * entry holding an address names it. */
static void test_random(void)
{
	enum { N = 600, SPAN = 4096 };
	static uint64_t st[N], len[N];
	unsigned seed = 12345;
	struct perfmap *pm;
	char line[64];
	int bad = 0;

	fresh();
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245 + 12345;
		st[i] = 0x10000 + (seed >> 8) % SPAN;
		seed = seed * 1103515245 + 12345;
		len[i] = 1 + (seed >> 8) % (i % 7 ? 64 : 900);
		snprintf(line, sizeof(line), "%llx %llx n%d\n", (unsigned long long)st[i],
			 (unsigned long long)len[i], i);
		put(line);
		if ((seed >> 4) % 13 == 0)
			expect_int_eq(perfmap_refresh(pm), 0);
	}
	expect_int_eq(perfmap_refresh(pm), 0);
	for (uint64_t a = 0x10000 - 2; a < 0x10000 + SPAN + 1000; a++) {
		const char *got = name_at(pm, a);
		int want = -1;

		for (int i = N - 1; i >= 0 && want < 0; i--)
			if (a >= st[i] && a < st[i] + len[i])
				want = i;
		snprintf(line, sizeof(line), "n%d", want);
		if (want < 0 ? got != NULL : (!got || strcmp(got, line)))
			bad++;
	}
	expect_int_eq(bad, 0);
	perfmap_free(pm);
}

static void test_garbage(void)
{
	static const char bin[] = "\x01\x02\xff\xfe\x00\x80 junk\n";
	struct perfmap *pm;
	char *big;
	int fd;

	fresh();
	put("\nthis is not a perf map line\nzzzz 40 bad_start\n7f0000001000\n"
	    "7f0000001000 40\n7f0000001000 40   \n7f0000001000 0 zero_size\n"
	    "ffffffffffffffff 40 wraps\n12345678901234567 40 too_many_digits\n"
	    "0 40 at_zero\n1000 -40 minus\n1000x 40 glued\n");
	fd = open(file, O_WRONLY | O_APPEND);
	expect_int_eq(write(fd, bin, sizeof(bin) - 1), (long long)sizeof(bin) - 1);
	close(fd);
	put("1000 40 ok\r\n0x2000 0X40 hex_prefix\n3000\t40\tJS:*tabs x.js:3  \n"
	    "4000 40 control\001\033name\n");
	/* a line past the cap, then one right at it, then one so long that
	 * it spans reads */
	big = malloc(200000);
	memset(big, 'B', 199999);
	big[199999] = '\0';
	memcpy(big, "5000 40 ", 8);
	big[5000] = '\0';
	put(big);
	put("\n");
	memset(big, 'C', 4096);
	memcpy(big, "6000 40 ", 8);
	big[4096] = '\0';
	put(big);
	put("\n");
	memset(big, 'D', 199999);
	memcpy(big, "7000 40 ", 8);
	big[199999] = '\0';
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	put(big);
	expect_int_eq(perfmap_refresh(pm), 0);   /* stops inside the long line */
	put(big);
	expect_int_eq(perfmap_refresh(pm), 0);
	put("\n8000 40 after_long\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	free(big);

	expect_str_eq(name_at(pm, 0x1000), "ok");
	expect_str_eq(name_at(pm, 0x2000), "hex_prefix");
	expect_str_eq(name_at(pm, 0x3000), "JS:*tabs x.js:3");
	expect_str_eq(name_at(pm, 0x4000), "control??name");
	expect_true(name_at(pm, 0x5000) == NULL);
	expect_true(name_at(pm, 0x6000) != NULL && strlen(name_at(pm, 0x6000)) == 4088);
	expect_true(name_at(pm, 0x7000) == NULL);
	expect_str_eq(name_at(pm, 0x8000), "after_long");
	expect_true(name_at(pm, 0x7f0000001000) == NULL);
	expect_int_eq(stats(pm).entries, 6);
	expect_int_eq(stats(pm).garbage, 12);
	expect_note_once(pm, PERFMAP_CAP_LINE, "longer than 4096 bytes");
	perfmap_free(pm);
}

static void test_entry_cap(void)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 64);
	struct perfmap *pm;
	int fd;

	fresh();
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (uint64_t i = 0; i < PERFMAP_MAX_ENTRIES + 10; i++) {
		len += (size_t)snprintf(buf + len, 64, "%llx 10 e%llu\n",
					(unsigned long long)(0x100000 + 16 * i),
					(unsigned long long)i);
		if (len > cap) {
			expect_int_eq(write(fd, buf, len), (long long)len);
			len = 0;
		}
	}
	expect_int_eq(write(fd, buf, len), (long long)len);
	close(fd);
	free(buf);
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, PERFMAP_MAX_ENTRIES);
	expect_str_eq(name_at(pm, 0x100000), "e0");
	expect_str_eq(name_at(pm, 0x100000 + 16 * (uint64_t)(PERFMAP_MAX_ENTRIES - 1)), "e1048575");
	expect_true(name_at(pm, 0x100000 + 16 * (uint64_t)PERFMAP_MAX_ENTRIES) == NULL);
	put("1000 10 later\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_true(name_at(pm, 0x1000) == NULL);
	expect_note_once(pm, PERFMAP_CAP_ENTRIES, "more than 1048576 entries");
	perfmap_free(pm);
}

static void test_byte_cap(void)
{
	struct perfmap *pm;
	char note[256];

	fresh();
	put("1000 40 before_hole\n");
	/* a sparse file past the cap: zeros, no newline */
	expect_int_eq(truncate(file, PERFMAP_MAX_BYTES + (8 << 20)), 0);
	put("\n2000 40 past_cap\n");
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x1000), "before_hole");
	expect_true(name_at(pm, 0x2000) == NULL);
	expect_int_eq(stats(pm).caps, PERFMAP_CAP_BYTES | PERFMAP_CAP_LINE);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 1);
	expect_true(strstr(note, "larger than 64 MiB") != NULL);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 1);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 0);
	/* read again: nothing more, no new note */
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 0);
	perfmap_free(pm);
	fresh();
}

/* A map replaced by another file, or truncated, is read again from its start. */
static void test_replaced(void)
{
	char other[300];
	struct perfmap *pm;

	fresh();
	put("1000 40 old\n");
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x1000), "old");
	snprintf(other, sizeof(other), "%s.new", file);
	{
		FILE *f = fopen(other, "w");

		fputs("2000 40 new\n", f);
		fclose(f);
	}
	expect_int_eq(rename(other, file), 0);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_true(name_at(pm, 0x1000) == NULL);
	expect_str_eq(name_at(pm, 0x2000), "new");
	expect_int_eq(truncate(file, 0), 0);
	put("3000 4 t\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_true(name_at(pm, 0x2000) == NULL);
	expect_str_eq(name_at(pm, 0x3000), "t");
	expect_int_eq(stats(pm).entries, 1);
	perfmap_free(pm);
}

/* Truncate the map where it is (the same inode, as fopen "w" does) and
 * write s into it. */
static void rewrite(const char *s)
{
	write_map(s, O_TRUNC);
}

/*
 * `jcmd PID Compiler.perfmap` rewrites the map in place: between two reads
 * it is truncated and written again, larger. A size check alone reads on
 * from the old offset, in the middle of other lines; the bytes before it
 * tell. perfmap_rewind reads it again even when they are the same.
 */
#define EIGHT_TAIL \
	"0x00007f0000002000 0x0000000000000040 B.second()\n" \
	"0x00007f0000003000 0x0000000000000040 B.third()\n" \
	"0x00007f0000004000 0x0000000000000040 D.fourth()\n" \
	"0x00007f0000007000 0x0000000000000040 F.sixth()\n" \
	"0x00007f0000008000 0x0000000000000040 F.seventh()\n" \
	"0x00007f0000009000 0x0000000000000040 F.eighth()\n" \
	"0x00007f000000a000 0x0000000000000040 F.ninth()\n"

static void test_rewritten(void)
{
	struct perfmap *pm;
	struct stat a, b;

	fresh();
	put("0x00007f0000001000 0x0000000000000040 A.first()\n");
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x7f0000001000), "A.first()");
	expect_int_eq(stat(file, &a), 0);
	rewrite("0x00007f0000005000 0x0000000000000040 C.stub()\n"
		"0x00007f0000002000 0x0000000000000040 B.second()\n"
		"0x00007f0000003000 0x0000000000000040 B.third()\n");
	expect_int_eq(stat(file, &b), 0);
	expect_true(a.st_ino == b.st_ino);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_true(name_at(pm, 0x7f0000001000) == NULL);
	expect_str_eq(name_at(pm, 0x7f0000005000), "C.stub()");
	expect_str_eq(name_at(pm, 0x7f0000002010), "B.second()");
	expect_str_eq(name_at(pm, 0x7f0000003000), "B.third()");
	expect_int_eq(stats(pm).entries, 3);
	expect_int_eq(stats(pm).garbage, 0);
	/* appended: read on, nothing again */
	put("0x00007f0000004000 0x0000000000000040 D.fourth()\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_int_eq(stats(pm).entries, 4);
	expect_str_eq(name_at(pm, 0x7f0000005000), "C.stub()");
	/* another name at the start, the same bytes before the offset: only
	 * perfmap_rewind tells */
	rewrite("0x00007f0000005000 0x0000000000000040 X.stub()\n"
		"0x00007f0000002000 0x0000000000000040 B.second()\n"
		"0x00007f0000003000 0x0000000000000040 B.third()\n"
		"0x00007f0000004000 0x0000000000000040 D.fourth()\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x7f0000005000), "X.stub()");	/* within the mark */
	rewrite("0x00007f0000005000 0x0000000000000040 Y.stub()\n" EIGHT_TAIL);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x7f0000005000), "Y.stub()");
	rewrite("0x00007f0000005000 0x0000000000000040 X.stub()\n" EIGHT_TAIL);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x7f0000005000), "Y.stub()");
	perfmap_rewind(pm);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x7f0000005000), "X.stub()");
	expect_int_eq(stats(pm).entries, 8);
	/* shorter than the offset reached: truncated */
	rewrite("0x00007f0000002000 0x0000000000000040 B.second()\n"
		"0x00007f0000003000 0x0000000000000040 B.third()\n"
		"0x00007f0000004000 0x0000000000000040 D.fourth()\n"
		"0x00007f0000006000 0x0000000000000040 E.fifth()\n");
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_true(name_at(pm, 0x7f0000005000) == NULL);
	expect_str_eq(name_at(pm, 0x7f0000006000), "E.fifth()");
	expect_int_eq(stats(pm).entries, 4);
	expect_int_eq(stats(pm).garbage, 0);
	perfmap_free(pm);
}

/* A map removed from its path is read on through the descriptor kept. */
static void test_kept_file(void)
{
	struct perfmap *pm;
	int fd;

	fresh();
	put("1000 40 before\n");
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), 0);
	fd = open(file, O_WRONLY | O_APPEND);
	expect_true(fd >= 0);
	unlink(file);
	expect_int_eq(write(fd, "2000 40 after\n", 14), 14);
	close(fd);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x1000), "before");
	expect_str_eq(name_at(pm, 0x2000), "after");
	perfmap_free(pm);
}

/*
 * Once the target is gone, its path is not looked up again (a root kept
 * from before would by then lead to the host's /tmp): only the file
 * already open is read on, whatever the path names now.
 */
static void test_target_gone(void)
{
	char path[64], other[80];
	struct perfmap *pm;
	pid_t child;
	FILE *f;
	int fd;

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	expect_true(child > 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
	snprintf(other, sizeof(other), "%s.other", path);
	f = fopen(path, "w");
	expect_true(f != NULL);
	fputs("1000 40 alive\n", f);
	fclose(f);
	pm = perfmap_open_target(child);
	expect_true(pm != NULL);
	expect_str_eq(perfmap_path(pm), path);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x1000), "alive");
	fd = open(path, O_WRONLY | O_APPEND);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	expect_int_eq(write(fd, "3000 40 appended\n", 17), 17);
	close(fd);
	f = fopen(other, "w");
	expect_true(f != NULL);
	fputs("2000 40 someone_else\n", f);
	fclose(f);
	expect_int_eq(rename(other, path), 0);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x1000), "alive");
	expect_str_eq(name_at(pm, 0x3000), "appended");
	expect_true(name_at(pm, 0x2000) == NULL);
	perfmap_free(pm);
	unlink(path);
}

/* FIFOs, devices, directories and links out of the root are never read. */
static void test_unsafe(void)
{
	struct perfmap *pm;
	char note[256], host[300];

	fresh();
	expect_int_eq(mkfifo(file, 0600), 0);
	pm = perfmap_new(root, MAP_PATH, TFILE_SELF);
	expect_int_eq(perfmap_refresh(pm), -EINVAL);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 1);
	expect_true(strstr(note, "not a regular file") != NULL);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 0);
	expect_int_eq(perfmap_refresh(pm), -EINVAL);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 0);
	unlink(file);
	/* /dev/zero of the root (it has none), and of the host */
	expect_int_eq(symlink("/dev/zero", file), 0);
	expect_int_eq(perfmap_refresh(pm), -ENOENT);
	unlink(file);
	expect_int_eq(symlink("/dev/zero", file), 0);
	{
		int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct perfmap *host_root = perfmap_new(slash, file, TFILE_SELF);

		expect_int_eq(perfmap_refresh(host_root), -EINVAL);
		perfmap_free(host_root);
		close(slash);
	}
	unlink(file);
	expect_int_eq(mkdir(file, 0700), 0);
	expect_int_eq(perfmap_refresh(pm), -EINVAL);
	rmdir(file);
	/* an absolute link stays in the root: the host's file is not read */
	snprintf(host, sizeof(host), "%s/host.map", dir);
	{
		FILE *f = fopen(host, "w");

		fputs("1000 40 host\n", f);
		fclose(f);
	}
	expect_int_eq(symlink(host, file), 0);
	expect_int_eq(perfmap_refresh(pm), -ENOENT);
	expect_true(name_at(pm, 0x1000) == NULL);
	unlink(file);
	unlink(host);
	perfmap_free(pm);
	/* no root: nothing is read, not even the host's path */
	pm = perfmap_new(-1, "/etc/hostname", TFILE_SELF);
	expect_true(perfmap_refresh(pm) < 0);
	perfmap_free(pm);
}

/* A map the target may not read (as root, the target nobody) is not read,
 * and that is said once; one it may read is. */
static void test_not_theirs(void)
{
	struct perfmap *pm;
	struct nobody nb;
	char note[256];

	if (nobody_start(&nb, 4242)) {
		printf("test_not_theirs: not root, skipped\n");
		return;
	}
	expect_int_eq(chmod(dir, 0755), 0);
	fresh();
	put("1000 40 secret\n");
	expect_int_eq(chmod(file, 0600), 0);
	pm = perfmap_new(root, MAP_PATH, nb.pid);
	expect_int_eq(perfmap_refresh(pm), -EACCES);
	expect_true(name_at(pm, 0x1000) == NULL);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 1);
	expect_true(strstr(note, "cannot be opened with the target's access (Permission denied)") != NULL);
	expect_int_eq(perfmap_refresh(pm), -EACCES);
	expect_int_eq(perfmap_take_note(pm, note, sizeof(note)), 0);
	expect_int_eq(chmod(file, 0644), 0);
	expect_int_eq(perfmap_refresh(pm), 0);
	expect_str_eq(name_at(pm, 0x1000), "secret");
	perfmap_free(pm);
	unlink(file);
	expect_int_eq(chmod(dir, 0700), 0);
	nobody_end(&nb);
}

static void test_path_of(void)
{
	char path[64], want[64];

	snprintf(want, sizeof(want), "/tmp/perf-%d.map", (int)getpid());
	expect_int_eq(perfmap_path_of(getpid(), path, sizeof(path)), 0);
	expect_str_eq(path, want);
	expect_int_eq(perfmap_path_of(getpid(), path, 8), -ENAMETOOLONG);
	expect_true(perfmap_path_of(0x7ffffff0, path, sizeof(path)) < 0);
	perfmap_free(perfmap_open_target(getpid()));
}

static void setup(void)
{
	char p[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(99);
	}
	snprintf(p, sizeof(p), "%s/tmp", dir);
	mkdir(p, 0755);
	snprintf(file, sizeof(file), "%s/tmp/perf-1.map", dir);
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		exit(99);
}

static void teardown(void)
{
	char p[256];

	unlink(file);
	snprintf(p, sizeof(p), "%s/tmp", dir);
	rmdir(p);
	rmdir(dir);
	close(root);
}

static const struct harness_test tests[] = {
	T(test_basic), T(test_growth), T(test_override), T(test_random), T(test_garbage),
	T(test_entry_cap), T(test_byte_cap), T(test_replaced), T(test_rewritten), T(test_kept_file), T(test_target_gone),
	T(test_unsafe), T(test_not_theirs), T(test_path_of),
};

int main(void)
{
	int rc;

	setup();
	rc = harness_run("perfmap", tests, sizeof(tests) / sizeof(tests[0]));
	teardown();
	return rc;
}
