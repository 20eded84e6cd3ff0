/* Heap vs RSS: a table that adds up to the process's resident memory, from smaps, the allocator and the profile. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_BREAKDOWN_H
#define HEAPATTACH_BREAKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "model/allocstats.h"
#include "model/mmchunks.h"
#include "model/rss.h"

struct profile;

/* What a breakdown is computed from; each part may be missing. */
struct breakdown_in {
	const struct rss_smaps *sm;     /* NULL: smaps could not be read */
	const struct allocstats *as;    /* NULL: no figures of the allocator's */
	const char *as_why;             /* and why not (NULL: not said) */
	const struct profile *prof;     /* live blocks seen since attach */
	const struct mmchunks *mmc;     /* glibc's mmapped blocks measured (NULL: not) */
	const struct mmchunks *big;     /* others: the pages of the large blocks the
					 * profile holds live (NULL: not looked at) */
};

/* What a line counts. */
enum breakdown_unit {
	BREAKDOWN_RESIDENT,     /* resident bytes (smaps, pagemap): parts of the RSS */
	BREAKDOWN_ALLOCATED,    /* bytes of blocks as the allocator counts them,
				 * resident or not: never added to resident bytes */
};

/* One line of the table. */
struct breakdown_line {
	const char *key;        /* stable name (the machine-readable record's key) */
	const char *label;      /* for people */
	int depth;              /* 0: part of the total; 1: detail of the line above */
	enum breakdown_unit unit;
	int64_t bytes;          /* never negative */
	const char *how;        /* measured, estimated or derived, and from what */
};

#define BREAKDOWN_MAX_LINES 24

struct breakdown {
	struct breakdown_line v[BREAKDOWN_MAX_LINES];
	size_t n;
	uint64_t rss, vsize, swap;
	unsigned arenas;
	int measured;           /* smaps was read (else only the profile's line is known) */
	const char *allocator;  /* NULL: no allocator figures */
	const char *source;     /* where the allocator's figures come from (as->how),
				 * or why there are none (as_why); may be NULL */
};

/* Compute the table. The depth-0 lines are resident bytes and add up to
 * in->sm's RSS exactly (the last one, "unexplained", takes the rest); the
 * allocated lines, details of the heap, follow them. */
void breakdown_compute(const struct breakdown_in *in, struct breakdown *out);

/* Bytes the profile holds live, unsampled as pprof would show them. */
uint64_t breakdown_profile_live(const struct profile *p);

/*
 * The same with each block's requested size rounded up to what allocator
 * ("glibc", "jemalloc", "tcmalloc"; NULL or another: 16 bytes) counts
 * for it: glibc's chunk (header included), jemalloc's size class;
 * tcmalloc's classes are approximated by 16 bytes up to 1 KiB, 128 up to
 * 8 KiB and pages above.
 */
uint64_t breakdown_profile_live_usable(const struct profile *p, const char *allocator);
/* One size so rounded. */
uint64_t breakdown_usable(const char *allocator, uint64_t size);

/*
 * The table as text lines (for stderr, -v and profile comments), each
 * written to line(arg, text). The first is a machine-readable record,
 * "heapattach-rss: key=bytes ...", that `heapattach report` reads back;
 * the last says where the allocator's figures come from or why there
 * are none.
 */
void breakdown_print(const struct breakdown *b, void (*line)(void *arg, const char *text),
		     void *arg);

#endif
