/* The run's view of the target's memory: smaps and allocator figures gathered while attached, for the breakdown in every dump. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMREPORT_H
#define HEAPATTACH_MEMREPORT_H

#include <stdint.h>

#include "model/allocstats.h"
#include "model/mmchunks.h"
#include "model/rss.h"
#include "output/breakdown.h"

#include <sys/types.h>

struct events;
struct tracee;
struct seccomp_plan;
struct unwinder;
struct implant;
struct profile;
struct target;
struct hook_set;
struct proc_maps;

/* Live blocks from this size on are large: their pages are counted (the
 * agent's accounting lists the same, AGENT_LINK_BIG). */
#define MEMREPORT_BIG (64u << 10)

/* What the report reads, all owned by the run (memreport_init). */
struct memreport_src {
	pid_t pid;
	struct target *t;
	const struct hook_set *hooks;
	const struct proc_maps *maps;   /* the maps at the attach (--census) */
	struct events *ev;              /* gone, exec'd, the reader; stops to dispatch */
	struct tracee *tr;              /* the threads stopped for a safe point */
	const struct seccomp_plan *sc;
	struct unwinder *unw;           /* walks a thread's frames for a safe point */
	struct implant *im;             /* code of ours is no safe point */
	struct profile *prof;
	int agent;                      /* an agent runs: the allocator's functions may be called */
	/* large live blocks beyond prof's (exact mode's accounting), as add(ptr, size, a); may be NULL */
	void (*more_big)(void *arg, void (*add)(uint64_t ptr, uint64_t size, void *a), void *a);
	void *more_big_arg;
};

struct memreport {
	struct memreport_src src;
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

/* What m reads from now on (copied). */
void memreport_init(struct memreport *m, const struct memreport_src *src);
/* Before the attach, while the target runs untouched: find the allocator
 * and how to get its figures (allocstats.h; glibc's state from symbols,
 * perhaps a debug file). */
void memreport_prepare(struct memreport *m);
/* Once attached: what the mode and the seccomp plan allow of that. */
void memreport_arm(struct memreport *m);
/* Between drains: with --top (top), glibc's figures read again once a second. */
void memreport_poll(struct memreport *m, int top);
/* Before a dump, and before detaching (afterwards heapattach's own area is
 * gone from smaps): the allocator's figures (glibc's read, or jemalloc's
 * and tcmalloc's asked at a safe point), smaps, and glibc's mmapped
 * blocks' resident pages now. */
void memreport_snapshot(struct memreport *m);
/* The breakdown of the last snapshot, with the latest allocator figures. */
void memreport_compute(struct memreport *m, struct breakdown *b);
/* --census, before the attach: walk glibc's heaps (census.h), say what
 * was there on stderr and keep it for the profiles' comments. */
void memreport_census(struct memreport *m);
void memreport_free(struct memreport *m);

#endif
