/* Debug files by build id from debuginfod servers, through libdebuginfod loaded on demand, bounded in time. */
/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "model/debugfetch.h"

/* libdebuginfod's entry points, dlsym'd (typed by its own header). */
static struct {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_end) *end;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
} lib;

static debuginfod_client *client;
static int off;                         /* disabled, unloadable or out of time */
static int loaded;                      /* load() tried */
static const volatile sig_atomic_t *stop_flag;
static uint64_t fetch_ns, session_ns;   /* the bounds */
static uint64_t spent_ns;               /* by all fetches so far */
static uint64_t deadline_ns;            /* the current fetch's */
static uint64_t cut_ns;                 /* debugfetch_set_deadline's, or 0 */
static int timed_out;                   /* the current fetch's progress callback cancelled it */
static int cut;                         /* the same, for cut_ns */
static struct {
	unsigned asked, found, missing, mismatched, failed, timed_out, stopped;
	unsigned cut;           /* cut short or not started for cut_ns */
} n;

void debugfetch_disable(void)
{
	off = 1;
}

void debugfetch_watch_stop(const volatile sig_atomic_t *stop)
{
	stop_flag = stop;
}

void debugfetch_set_deadline(uint64_t deadline_ns)
{
	cut_ns = deadline_ns;
}

/* libdebuginfod's progress callback, called through a transfer (also while
 * the server is silent): nonzero cancels it. */
static int progress(debuginfod_client *c, long a, long b)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	(void)c;
	(void)a;
	(void)b;
	if (stop_flag && *stop_flag)
		return 1;
	if (cut_ns && now >= cut_ns) {
		cut = 1;
		return 1;
	}
	if (now >= deadline_ns) {
		timed_out = 1;
		return 1;
	}
	return 0;
}

/* The bound of one fetch: DEBUGINFOD_TIMEOUT seconds (1 to 3600), else DEBUGFETCH_FETCH_S. */
static uint64_t fetch_bound_ns(void)
{
	const char *v = getenv("DEBUGINFOD_TIMEOUT");
	char *end;
	long s = v ? strtol(v, &end, 10) : 0;

	if (!v || end == v || *end || s < 1 || s > 3600)
		s = DEBUGFETCH_FETCH_S;
	return (uint64_t)s * 1000000000ULL;
}

/* Load libdebuginfod and begin its client, once. 0, or -ENOENT (told why on stderr). */
static int load(void)
{
	void *h;

	if (loaded)
		return client ? 0 : -ENOENT;
	loaded = 1;
	fetch_ns = fetch_bound_ns();
	session_ns = DEBUGFETCH_SESSION_S * 1000000000ULL;
	if (session_ns < fetch_ns)
		session_ns = fetch_ns;
	h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		pr_err("debuginfod: DEBUGINFOD_URLS is set, but %s; no debug file fetched",
		       dlerror());
		return -ENOENT;
	}
	lib.begin = (__typeof__(lib.begin))dlsym(h, "debuginfod_begin");
	lib.end = (__typeof__(lib.end))dlsym(h, "debuginfod_end");
	lib.find_debuginfo = (__typeof__(lib.find_debuginfo))dlsym(h, "debuginfod_find_debuginfo");
	lib.set_progressfn = (__typeof__(lib.set_progressfn))dlsym(h, "debuginfod_set_progressfn");
	if (!lib.begin || !lib.end || !lib.find_debuginfo || !lib.set_progressfn ||
	    !(client = lib.begin())) {
		pr_err("debuginfod: libdebuginfod.so.1 is not usable; no debug file fetched");
		return -ENOENT;
	}
	lib.set_progressfn(client, progress);
	return 0;
}

/* 0 if a fetch may start now (it loads libdebuginfod the first time),
 * -EAGAIN if not before another debugfetch_set_deadline, else -ENOENT. */
static int may_fetch(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (off || !urls || !urls[strspn(urls, " \t")] || (stop_flag && *stop_flag))
		return -ENOENT;
	if (cut_ns && clock_ns(CLOCK_MONOTONIC) >= cut_ns) {
		n.cut++;
		return -EAGAIN;
	}
	if (load() || spent_ns >= session_ns) {
		off = 1;
		return -ENOENT;
	}
	return 0;
}

/*
 * libdebuginfod (0.188) leaves an empty BUILD_ID/debuginfo in its cache
 * when a fetch is cancelled, which it takes for the server's "no such
 * file" for cache_miss_s (600 s): remove it when it is that (a regular
 * empty file changed since t0_real, CLOCK_REALTIME seconds), so that the
 * fetch can be asked again, in this session and the next. The cache
 * directory as libdebuginfod finds it: DEBUGINFOD_CACHE_PATH, else
 * $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client.
 */
static void forget_cancelled(const char *build_id, time_t t0_real)
{
	const char *dir = getenv("DEBUGINFOD_CACHE_PATH"), *base = "", *sub = "";
	char path[ELFOBJ_PATH_MAX + 1];
	struct stat st;

	if (!dir || !*dir) {
		dir = getenv("XDG_CACHE_HOME");
		sub = "/debuginfod_client";
		if (!dir || !*dir) {
			dir = getenv("HOME");
			base = "/.cache";
		}
	}
	if (!dir || !*dir || snprintf(path, sizeof(path), "%s%s%s/%s/debuginfo", dir, base, sub,
				      build_id) >= (int)sizeof(path))
		return;
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && !st.st_size && st.st_mtime >= t0_real &&
	    unlink(path))
		pr_debug("debuginfod: %s left in the cache: %s", path, strerror(errno));
}

/* Open what libdebuginfod returned (fd, at path) as a debug file of build_id. */
static struct elfobj *take(int fd, const char *path, const char *build_id)
{
	struct elfobj *d = elfobj_open_fd_named(fd, 0, path);
	const char *id = d ? elfobj_build_id(d) : NULL;

	if (d && id && !strcmp(id, build_id))
		return d;
	pr_debug("debuginfod: %s for %s is %s", path, build_id,
		 d ? "another build's" : "no ELF file we read");
	elfobj_free(d);
	n.mismatched++;
	return NULL;
}

int debugfetch_debuginfo(const char *build_id, struct elfobj **out)
{
	struct elfobj *d = NULL;
	time_t t0_real = time(NULL) - 1;	/* whole seconds: an mtime in the one before */
	uint64_t t0, left;
	char *path = NULL;
	int fd, rc;

	*out = NULL;
	if (!build_id || strlen(build_id) < 2 * ELFOBJ_BUILD_ID_MIN)
		return -ENOENT;
	rc = may_fetch();
	if (rc)
		return rc;
	n.asked++;
	t0 = clock_ns(CLOCK_MONOTONIC);
	left = session_ns - spent_ns;
	deadline_ns = t0 + (left < fetch_ns ? left : fetch_ns);
	timed_out = cut = 0;
	fd = lib.find_debuginfo(client, (const unsigned char *)build_id, 0, &path);
	spent_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	if (fd >= 0) {
		d = take(fd, path ? path : build_id, build_id);
		if (d)
			n.found++;
	} else if (timed_out) {
		n.timed_out++;
		off = 1;	/* the server did not answer in time: not asked again */
	} else if (cut) {
		n.cut++;
	} else if (stop_flag && *stop_flag) {
		n.stopped++;
	} else if (fd == -ENOENT) {
		n.missing++;
	} else {
		n.failed++;
	}
	if (fd < 0 && (timed_out || cut || (stop_flag && *stop_flag)))
		forget_cancelled(build_id, t0_real);
	pr_debug("debuginfod: %s: %s in %.1f ms", build_id,
		 fd >= 0 ? (d ? "found" : "rejected") : timed_out ? "timed out" :
		 cut ? "cut short" : strerror(-fd),
		 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	free(path);
	*out = d;
	return d ? 0 : cut ? -EAGAIN : -ENOENT;
}

void debugfetch_end(void)
{
	if (n.asked || n.cut) {
		pr_err("debuginfod: %u debug files of %u asked for found (%u not there, %u failed, "
		       "%u not for the build asked for%s%s%s) in %.1f s", n.found, n.asked,
		       n.missing, n.failed, n.mismatched,
		       n.timed_out ? "; timed out, no more asked" : "",
		       n.cut ? "; put off by --duration" : "", n.stopped ? "; stopped" : "",
		       spent_ns / 1e9);
		memset(&n, 0, sizeof(n));
	}
	if (client)
		lib.end(client);
	client = NULL;
	loaded = 0;
}
