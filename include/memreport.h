/* The run's view of the target's memory: smaps and allocator figures gathered while attached, for the breakdown in every dump. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMREPORT_H
#define HEAPATTACH_MEMREPORT_H

#include <stdint.h>

#include "allocstats.h"
#include "breakdown.h"
#include "rss.h"

struct session;

struct memreport {
	struct allocstats_fn fn;        /* the allocator's statistics function, if found */
	struct allocstats as;           /* its latest answer */
	int have_as;
	uint64_t as_ns;                 /* when it came (CLOCK_MONOTONIC) */
	uint64_t asked_ns;              /* when the last request went out */
	struct rss_smaps sm;            /* smaps at the last snapshot */
	int have_sm;
	char **census;                  /* --census: its lines, kept for every profile */
	size_t ncensus;
};

/* Fast mode, once attached: find the allocator's statistics function and
 * tell the agent (nothing in trap mode). */
void memreport_arm(struct session *s);
/* Between drains: take an answer that came, ask again once a second. */
void memreport_poll(struct session *s);
/* Read smaps now (before a dump, and before detaching: afterwards
 * heapattach's own area is gone from it). */
void memreport_snapshot(struct session *s);
/* The breakdown of the last snapshot, with the latest allocator figures. */
void memreport_compute(struct session *s, struct breakdown *b);
/* --census, before the attach: walk glibc's heaps (census.h), say what
 * was there on stderr and keep it for the profiles' comments. */
void memreport_census(struct session *s);
void memreport_free(struct memreport *m);

#endif
