/* A series of heap profiles over time: live bytes per site and per function, and which ones leak. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_SERIES_H
#define HEAPATTACH_REPORT_SERIES_H

#include <stddef.h>
#include "report/report_pprof.h"

struct skipsites;

/*
 * A site is one stack (its frames by name, leaf first); a function is the
 * first frame of a stack that is not an allocator wrapper (skipsites.h;
 * the leaf when all are), its sites' figures added up (pprof's "flat" once
 * the wrappers are folded into their callers). Each has four
 * figures per dump: live bytes and objects, allocated bytes and objects
 * (since the profiler started), absent = 0.
 *
 * Leak test (rseries_finish): over the live bytes y(t) of the dumps,
 *   slope  the least-squares line's, in bytes per second;
 *   r2     how well that line fits (1 - residual/total variance);
 *   grew   the fraction of intervals in which y rose;
 *   recent the slope over the second half of the dumps.
 * A suspect has at least RSERIES_MIN_DUMPS dumps, slope > 0, grew >= 0.6,
 * r2 >= 0.8, recent >= slope / 2 (still growing: a cache that filled and
 * stays flat fails here and on grew), and its last value at least 90% of
 * its highest (a spike that was freed fails here, and on r2 and grew).
 */
#define RSERIES_MIN_DUMPS 3

enum { RS_INUSE_B, RS_INUSE_N, RS_ALLOC_B, RS_ALLOC_N, RS_NFIG };
/* The parts of the RSS that a dump's "heapattach-rss:" record partitions
 * it into (breakdown.h), in this order: heap, anon_other, stacks, code,
 * file_data, files, shmem, heapattach, unexplained. */
#define RS_NPARTS 9
extern const char *const rseries_rss_keys[RS_NPARTS];

/* A site's live bytes over the dumps, as the leak-suspect rule reads them
 * (report_series.c, above trend()). */
struct rseries_trend {
	double slope;           /* least-squares bytes per second over all dumps */
	double r2;              /* how well that line fits (1: exactly; flat: 1) */
	double grew;            /* the share of steps from one dump to the next that rose */
	double recent;          /* the slope over the second half of the dumps */
	double first, last, max;        /* live bytes at the first, the last, the highest */
	int suspect;            /* all of the rule's tests passed */
};

struct rseries_site {
	const char **frames;    /* leaf first; names live as long as the series */
	size_t nframes;
	size_t skip;            /* leading wrapper frames: frames[skip] names the site */
	double *fig[RS_NFIG];   /* [ndumps] each */
	struct rseries_trend trend;
};

struct rseries_dump {
	char *path;
	double t;               /* seconds since the epoch: time_nanos + duration_nanos */
	double total[RS_NFIG];  /* over all samples */
	int64_t period;
	int has_rss;            /* the dump carries a "heapattach-rss: rss=" record: */
	double rss;             /* resident bytes */
	double part[RS_NPARTS]; /* and its parts (absent ones 0) */
	size_t ncomments;
	char **comments;
};

struct rseries {
	size_t ndumps;
	struct rseries_dump *dumps;
	size_t nsites, nfuncs;
	struct rseries_site *sites, *funcs;
	void *priv;
};

/* A series of ndumps dumps (at least 1), nothing added yet. */
struct rseries *rseries_new(size_t ndumps);
/* The wrappers that rseries_add skips to find each stack's function
 * (NULL: none); ss must outlive the adds. */
void rseries_set_skip(struct rseries *s, const struct skipsites *ss);
/* Add profile p, read from path, as dump number i (0 <= i < ndumps). 0, or
 * -EINVAL when p has no live-bytes sample type (inuse_space; for a profile
 * with one type, that one). */
int rseries_add(struct rseries *s, size_t i, const char *path, const struct rprof *p);
/* Once every dump was added: order the dumps by time (unless keep_order:
 * a diff's base stays first), compute the trends, and sort sites and
 * functions: suspects first, by slope, then the rest by live bytes at the
 * last dump. */
void rseries_finish(struct rseries *s, int keep_order);
void rseries_free(struct rseries *s);
/* Why a site with trend t over ndumps dumps is no suspect, in a few
 * words, or NULL if it is one. */
const char *rseries_why(const struct rseries_trend *t, size_t ndumps);
/* "site < caller < caller's caller" from the first frame past the wrappers
 * (at most depth names, a run of unnamed frames one "[N unnamed]"), then
 * " [via leaf < wrapper]" when wrappers were skipped; malloc'd. */
char *rseries_site_name(const struct rseries_site *site, size_t depth);
/* Site (or function) order for a diff of dump a against dump b: by growth of
 * live bytes, largest first. idx gets n indices into sites (or funcs). */
void rseries_diff_order(const struct rseries *s, int funcs, size_t a, size_t b, size_t *idx);

#endif
