/* The run's view of the target's memory: smaps and allocator figures gathered while attached, for the breakdown in every dump. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMREPORT_H
#define HEAPATTACH_MEMREPORT_H

#include <stdint.h>

#include "model/allocstats.h"
#include "model/mmchunks.h"
#include "model/rss.h"
#include "output/breakdown.h"

struct session;

struct memreport {
	struct allocstats_fn fn;        /* the allocator, and how its figures are had */
	struct allocstats as;           /* the latest figures */
	int have_as;
	uint64_t as_ns;                 /* when they were had (CLOCK_MONOTONIC) */
	uint64_t tried_ns;              /* when they were last asked for */
	int calls_off;                  /* a call failed for good: no more calls */
	char why[224];                  /* the last try's failure (no figures, or old ones) */
	struct rss_smaps sm;            /* smaps at the last snapshot */
	int have_sm;
	struct mmchunks mmc;            /* glibc: its mmapped blocks at the last snapshot */
	int have_mmc;
	struct mmchunks big;            /* others: the profile's large live blocks' pages then */
	int have_big;
	char **census;                  /* --census: its lines, kept for every profile */
	size_t ncensus;
};

/* Before the attach, while the target runs untouched: find the allocator
 * and how to get its figures (allocstats.h; glibc's state from symbols,
 * perhaps a debug file). */
void memreport_prepare(struct session *s);
/* Once attached: what the mode and the seccomp plan allow of that. */
void memreport_arm(struct session *s);
/* Between drains: with --top, glibc's figures read again once a second. */
void memreport_poll(struct session *s);
/* Before a dump, and before detaching (afterwards heapattach's own area is
 * gone from smaps): the allocator's figures (glibc's read, or jemalloc's
 * and tcmalloc's asked at a safe point), smaps, and glibc's mmapped
 * blocks' resident pages now. */
void memreport_snapshot(struct session *s);
/* The breakdown of the last snapshot, with the latest allocator figures. */
void memreport_compute(struct session *s, struct breakdown *b);
/* --census, before the attach: walk glibc's heaps (census.h), say what
 * was there on stderr and keep it for the profiles' comments. */
void memreport_census(struct session *s);
void memreport_free(struct memreport *m);

#endif
