/* Unit tests for debugfile: debug files found in the target's root or by build id on the host, traps refused, dwz alt files. */
/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "as_nobody.h"
#include "model/debugfile.h"
#include "harness.h"

/*
 * The tree, below dir:
 *   root/lib/victim        printaddrs, debug info split off, with a build id
 *   root/lib/.debug/victim.dbg
 *   root/lib/nobid         the same without a build id (debug link CRC only)
 *   stash/nobid.dbg        its debug file, moved in and out by the tests
 *   host/...               files on the "host" that must never be found
 */
static char dir[] = "/tmp/debugfile-test.XXXXXX";
static int root = -1, ready;

/* system() of a formatted command; 0 or nonzero. */
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static struct elfobj *open_obj(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return elfobj_open_fd(open(p, O_RDONLY | O_CLOEXEC));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The build directory, absolute. */
static const char *build_dir(void)
{
	static char abs[4096];

	if (!abs[0] && !realpath(getenv("BUILD") ? getenv("BUILD") : "build", abs))
		snprintf(abs, sizeof(abs), "build");
	return abs;
}

static void setup(void)
{
	const char *b = build_dir();
	char p[256];

	if (!mkdtemp(dir))
		exit(99);
	alarm(30);      /* a lookup that blocks fails the test */
	if (sh("cd %s && mkdir -p root/lib/.debug stash host && "
	       "cp %s/fixtures/printaddrs root/lib/victim && "
	       "objcopy --only-keep-debug root/lib/victim root/lib/.debug/victim.dbg && "
	       "objcopy --strip-debug --add-gnu-debuglink=root/lib/.debug/victim.dbg root/lib/victim && "
	       "objcopy --remove-section=.note.gnu.build-id %s/fixtures/printaddrs root/lib/nobid && "
	       "objcopy --only-keep-debug root/lib/nobid stash/nobid.dbg && "
	       "objcopy --strip-debug --add-gnu-debuglink=stash/nobid.dbg root/lib/nobid",
	       dir, b, b)) {
		expect_true(!"objcopy failed");
		return;
	}
	snprintf(p, sizeof(p), "%s/root", dir);
	root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ready = root >= 0;
}

/* Found in the target's root through the debug link; where is its path there. */
static void test_in_root(void)
{
	struct elfobj *e, *d;
	char *where = NULL;

	if (!ready)
		return;
	e = open_obj("root/lib/victim");
	expect_true(e && elfobj_build_id(e) && !elfobj_has_debug_info(e));
	if (!e)
		return;
	d = debugfile_open(e, root, TFILE_SELF, "/lib/victim", &where);
	expect_true(d != NULL);
	expect_str_eq(where, "/lib/.debug/victim.dbg");
	if (d) {
		expect_int_eq(elfobj_has_debug_info(d), 1);
		expect_str_eq(elfobj_build_id(d), elfobj_build_id(e));
	}
	elfobj_free(d);
	free(where);
	/* no root: the host only, by build id only */
	expect_true(debugfile_open(e, -1, TFILE_SELF, "/lib/victim", NULL) == NULL);
	elfobj_free(e);
}

/* On the host a debug file is found by build id under debugfile_host_dir,
 * and by nothing else. */
static void test_host(void)
{
	char hostdir[256], objpath[256];
	struct elfobj *e, *d;
	char *where = (char *)1;
	const char *id;
	int empty;

	if (!ready)
		return;
	e = open_obj("root/lib/victim");
	if (!e)
		return;
	id = elfobj_build_id(e);
	snprintf(hostdir, sizeof(hostdir), "%s/host/debug", dir);
	expect_int_eq(sh("mkdir -p %s/.build-id/%.2s && cp %s/root/lib/.debug/victim.dbg "
			 "%s/.build-id/%.2s/%s.debug", hostdir, id, dir, hostdir, id, id + 2), 0);
	debugfile_host_dir = hostdir;
	d = debugfile_open(e, -1, TFILE_SELF, "/lib/victim", &where);
	expect_true(d != NULL);
	expect_true(where == NULL);
	elfobj_free(d);
	elfobj_free(e);

	/* the debug link names a file that exists on the host, next to the
	 * object's path as the target sees it, but not in the target's root */
	expect_int_eq(sh("mkdir -p %s/host/view %s/empty && cp %s/stash/nobid.dbg %s/host/view/",
			 dir, dir, dir, dir), 0);
	snprintf(objpath, sizeof(objpath), "%s/host/view/nobid", dir);
	snprintf(hostdir, sizeof(hostdir), "%s/empty", dir);
	empty = open(hostdir, O_PATH | O_DIRECTORY);
	e = open_obj("root/lib/nobid");
	expect_true(e && !elfobj_build_id(e) && elfobj_debuglink(e, NULL));
	if (e) {
		expect_true(debugfile_open(e, empty, TFILE_SELF, objpath, NULL) == NULL);
		expect_true(debugfile_open(e, -1, TFILE_SELF, objpath, NULL) == NULL);
	}
	elfobj_free(e);
	close(empty);
	debugfile_host_dir = "/usr/lib/debug";
}

/* Debug links naming /dev/zero, a FIFO or a host file through an absolute
 * symlink: refused at once; an absolute symlink inside the root works. */
static void test_traps(void)
{
	struct elfobj *e, *d;
	char *where = NULL;
	double t0;

	if (!ready)
		return;
	e = open_obj("root/lib/nobid");
	if (!e)
		return;
	expect_int_eq(sh("cd %s && ln -s /dev/zero root/lib/nobid.dbg && "
			 "mkfifo root/lib/.debug/nobid.dbg && mkdir -p root/usr/lib/debug/lib && "
			 "cp stash/nobid.dbg host/nobid.dbg && "
			 "ln -s %s/host/nobid.dbg root/usr/lib/debug/lib/nobid.dbg", dir, dir), 0);
	t0 = now();
	expect_true(debugfile_open(e, root, TFILE_SELF, "/lib/nobid", NULL) == NULL);
	expect_true(now() - t0 < 5);
	/* the same absolute symlink, now naming a file inside the root */
	expect_int_eq(sh("cd %s && mkdir -p root/%s/host && cp stash/nobid.dbg root/%s/host/",
			 dir, dir, dir), 0);
	d = debugfile_open(e, root, TFILE_SELF, "/lib/nobid", &where);
	expect_true(d != NULL);
	expect_str_eq(where, "/usr/lib/debug/lib/nobid.dbg");
	elfobj_free(d);
	free(where);
	/* a regular file whose CRC does not match */
	expect_int_eq(sh("cd %s && rm -rf root/%s/host && rm root/lib/nobid.dbg && "
			 "cp root/lib/nobid root/lib/nobid.dbg", dir, dir), 0);
	expect_true(debugfile_open(e, root, TFILE_SELF, "/lib/nobid", NULL) == NULL);
	/* the object itself is never its own debug file */
	expect_true(debugfile_open(e, root, TFILE_SELF, "/lib/nobid.dbg", NULL) == NULL);
	elfobj_free(e);
}

/* Add a .gnu_debugaltlink naming name with build id id to file. */
static int add_altlink(const char *file, const char *name, const char *id)
{
	char sec[256];
	FILE *f;

	snprintf(sec, sizeof(sec), "%s/altlink.sec", dir);
	f = fopen(sec, "w");
	if (!f)
		return -1;
	fwrite(name, 1, strlen(name) + 1, f);
	for (size_t i = 0; id[i] && id[i + 1]; i += 2) {
		unsigned v;

		sscanf(id + i, "%2x", &v);
		fputc(v, f);
	}
	fclose(f);
	return sh("objcopy --remove-section=.gnu_debugaltlink --add-section .gnu_debugaltlink=%s %s",
		  sec, file);
}

/* The dwz alt file comes from the target's root, by name or build id, or
 * is an empty one: libdw never looks for it by itself. Opened first, it is
 * read after it left the root. */
static void test_alt(void)
{
	const char *b = build_dir();
	struct debugfile_dwarf dd;
	struct elfobj *alt, *d, *a;
	char p[256], fifo[256];
	const char *id;

	if (!ready)
		return;
	snprintf(p, sizeof(p), "%s/fixtures/printaddrs_nopie", b);
	alt = elfobj_open_fd(open(p, O_RDONLY | O_CLOEXEC));
	expect_true(alt && elfobj_build_id(alt));
	if (!alt || !elfobj_build_id(alt))
		return;
	id = elfobj_build_id(alt);
	/* the alt link names a host FIFO, absolutely */
	snprintf(fifo, sizeof(fifo), "%s/host/alt.fifo", dir);
	expect_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(p, sizeof(p), "%s/root/lib/.debug/victim.dbg", dir);
	expect_int_eq(add_altlink(p, fifo, id), 0);
	d = open_obj("root/lib/.debug/victim.dbg");
	expect_true(d && elfobj_altlink(d, NULL));
	if (!d)
		goto out;
	expect_str_eq(elfobj_altlink(d, NULL), fifo);
	/* nowhere in the root: the empty alt, and libdw has nothing to look for */
	expect_int_eq(debugfile_dwarf_begin(&dd, d, root, TFILE_SELF, "/lib/.debug/victim.dbg"), 0);
	expect_true(dd.alt_dw != NULL && dwarf_getalt(dd.dw) == dd.alt_dw);
	expect_true(dd.alt && !elfobj_build_id(dd.alt));
	debugfile_dwarf_end(&dd);
	/* in the root, by that same name */
	expect_int_eq(sh("mkdir -p %s/root/%s/host && cp %s/fixtures/printaddrs_nopie %s/root/%s",
			 dir, dir, b, dir, fifo), 0);
	expect_int_eq(debugfile_dwarf_begin(&dd, d, root, TFILE_SELF, "/lib/.debug/victim.dbg"), 0);
	expect_true(dd.alt && elfobj_build_id(dd.alt) && !strcmp(elfobj_build_id(dd.alt), id));
	expect_true(dwarf_getalt(dd.dw) == dd.alt_dw);
	debugfile_dwarf_end(&dd);
	/* by build id in the root */
	expect_int_eq(sh("rm -rf %s/root/%s && mkdir -p %s/root/usr/lib/debug/.build-id/%.2s && "
			 "cp %s/fixtures/printaddrs_nopie %s/root/usr/lib/debug/.build-id/%.2s/%s.debug",
			 dir, dir, dir, id, b, dir, id, id + 2), 0);
	expect_int_eq(debugfile_dwarf_begin(&dd, d, root, TFILE_SELF, NULL), 0);
	expect_true(dd.alt && elfobj_build_id(dd.alt) && !strcmp(elfobj_build_id(dd.alt), id));
	debugfile_dwarf_end(&dd);
	/* in two steps: opened, then read once it is gone from the root */
	a = debugfile_alt_open(d, root, TFILE_SELF, NULL);
	expect_true(a && elfobj_build_id(a) && !strcmp(elfobj_build_id(a), id));
	expect_int_eq(sh("rm %s/root/usr/lib/debug/.build-id/%.2s/%s.debug", dir, id, id + 2), 0);
	expect_true(debugfile_alt_open(d, root, TFILE_SELF, NULL) == NULL);
	expect_int_eq(debugfile_dwarf_begin_alt(&dd, d, a), 0);
	expect_true(dd.alt == a && dd.alt_dw && dwarf_getalt(dd.dw) == dd.alt_dw);
	debugfile_dwarf_end(&dd);
	elfobj_free(d);
out:
	elfobj_free(alt);
}

/* A debug file the target may not read (as root, the target nobody) is no
 * candidate, in its root (by debug link, by build id) or on the host. */
static void test_not_theirs(void)
{
	struct elfobj *e, *d;
	struct nobody nb;
	char host[256];
	const char *id;
	char *where = NULL;

	if (!ready)
		return;
	if (nobody_start(&nb, 4242)) {
		printf("test_not_theirs: not root, skipped\n");
		return;
	}
	expect_int_eq(sh("chmod 0755 %s", dir), 0);
	e = open_obj("root/lib/victim");
	id = e ? elfobj_build_id(e) : NULL;
	expect_true(id != NULL);
	if (!id)
		goto out;
	d = debugfile_open(e, root, nb.pid, "/lib/victim", &where);
	expect_true(d != NULL);
	expect_str_eq(where, "/lib/.debug/victim.dbg");
	elfobj_free(d);
	free(where);
	expect_int_eq(sh("chmod 0600 %s/root/lib/.debug/victim.dbg", dir), 0);
	expect_true(debugfile_open(e, root, nb.pid, "/lib/victim", NULL) == NULL);
	d = debugfile_open(e, root, TFILE_SELF, "/lib/victim", NULL);	/* ours to read */
	expect_true(d != NULL);
	elfobj_free(d);
	expect_int_eq(sh("chmod 0644 %s/root/lib/.debug/victim.dbg && chmod 0700 %s/root/lib/.debug",
			 dir, dir), 0);
	expect_true(debugfile_open(e, root, nb.pid, "/lib/victim", NULL) == NULL);
	/* by build id: in the root, then on the host */
	expect_int_eq(sh("mkdir -p %s/root/usr/lib/debug/.build-id/%.2s && "
			 "cp %s/root/lib/.debug/victim.dbg %s/root/usr/lib/debug/.build-id/%.2s/%s.debug && "
			 "chmod 0600 %s/root/usr/lib/debug/.build-id/%.2s/%s.debug",
			 dir, id, dir, dir, id, id + 2, dir, id, id + 2), 0);
	expect_true(debugfile_open(e, root, nb.pid, "/lib/victim", NULL) == NULL);
	expect_int_eq(sh("chmod 0644 %s/root/usr/lib/debug/.build-id/%.2s/%s.debug",
			 dir, id, id + 2), 0);
	d = debugfile_open(e, root, nb.pid, "/lib/victim", NULL);
	expect_true(d != NULL);
	elfobj_free(d);
	snprintf(host, sizeof(host), "%s/root/usr/lib/debug", dir);
	debugfile_host_dir = host;
	expect_int_eq(sh("chmod 0600 %s/root/usr/lib/debug/.build-id/%.2s/%s.debug",
			 dir, id, id + 2), 0);
	expect_true(debugfile_open(e, -1, nb.pid, "/lib/victim", NULL) == NULL);
	d = debugfile_open(e, -1, TFILE_SELF, "/lib/victim", NULL);
	expect_true(d != NULL);
	elfobj_free(d);
	debugfile_host_dir = "/usr/lib/debug";
	expect_int_eq(sh("rm -rf %s/root/usr && chmod 0755 %s/root/lib/.debug && chmod 0700 %s",
			 dir, dir, dir), 0);
out:
	elfobj_free(e);
	nobody_end(&nb);
}

static void teardown(void)
{
	if (root >= 0)
		close(root);
	if (sh("rm -rf %s", dir))
		fprintf(stderr, "cannot remove %s\n", dir);
}

HARNESS_MAIN("debugfile", T(setup), T(test_in_root), T(test_host), T(test_traps), T(test_alt),
	     T(test_not_theirs), T(teardown))
