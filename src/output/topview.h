/* The live view (--top): RSS, allocation rate and the top allocation sites, refreshed every second. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TOPVIEW_H
#define HEAPATTACH_TOPVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "output/wrapfind.h"

struct profile;
struct symbolizer;
struct allocstats;

struct topview;

/* What the user asked for with a key. */
enum topview_action {
	TOPVIEW_NONE,
	TOPVIEW_QUIT,           /* q: write the final profile and detach */
	TOPVIEW_DUMP,           /* d: write a numbered profile now */
};

/* What a refresh shows, from the run. */
struct topview_in {
	pid_t pid;
	const struct profile *prof;
	struct symbolizer *sym;         /* may be NULL: sites by address */
	const struct allocstats *as;    /* the allocator's latest figures, or NULL */
	uint64_t elapsed_ns;            /* since the attach */
	unsigned dumps;                 /* numbered profiles written */
	struct wrapfind *wf;            /* names each site past the wrappers (not owned) */
	struct wrapfind_src src;        /* where wf reads the target */
};

/*
 * A view on out (a terminal: full screen, redrawn in place, keys read from
 * in without echo, if heapattach is in the terminal's foreground process
 * group: a background one, e.g. under timeout(1), reads no keys and
 * leaves the terminal's modes alone; else a plain text table appended
 * every second, and in may be -1), naming each site past the allocator's
 * wrappers (the tick's wrapfind). NULL only when out of memory.
 */
struct topview *topview_new(int in, int out);
/* Restore the terminal and free. NULL is fine. */
void topview_free(struct topview *tv);
/* A line shown under the title until the next one (e.g. "wrote FILE"). */
void topview_say(struct topview *tv, const char *msg);
/* Between drains: read the keys typed, redraw once a second. */
enum topview_action topview_tick(struct topview *tv, const struct topview_in *ti, uint64_t now_ns);

/* v as 512, 1.5K, 2.0M, 1.25G (sign: a + before positive ones). */
void topview_fmt_bytes(char *buf, size_t len, int64_t v, int sign);
/* A process's resident bytes (/proc/PID/statm), or -1. */
int64_t topview_rss(pid_t pid);

#endif
