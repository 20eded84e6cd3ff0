/* A pprof profile.proto reader for the report: gzip or raw protobuf in, stacks of names and values out. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_PPROF_H
#define HEAPATTACH_REPORT_PPROF_H

#include <stddef.h>
#include <stdint.h>

/*
 * Profiles are input from elsewhere: every length, count and index is
 * checked, and what the reader keeps is bounded (RPROF_MAX_*), so a hostile
 * file costs at most a few hundred MiB and an error, never a crash.
 */
#define RPROF_MAX_FILE   (256u << 20)   /* bytes of the file as stored */
#define RPROF_MAX_RAW    (1024u << 20)  /* bytes once inflated */
#define RPROF_MAX_FRAMES (1u << 24)     /* frames over all samples, inline ones included */
#define RPROF_MAX_TYPES  64             /* sample types */

/* One sample: its stack by name, leaf first (the allocator's caller
 * first), and one value per sample type. */
struct rprof_sample {
	const char **frames;
	size_t nframes;
	const int64_t *values;
};

struct rprof {
	uint64_t time_nanos, duration_nanos;
	int64_t period;
	size_t ntypes;
	const char **type, **unit;      /* sample type names and units */
	size_t nsamples;
	struct rprof_sample *samples;
	size_t ncomments;
	const char **comments;
	void *priv;                     /* the storage behind the pointers */
};

/* Decode buf (a gzip stream or the protobuf itself). 0, -EBADMSG for a
 * malformed profile, -E2BIG beyond a bound. out is empty on error. */
int rprof_parse(const uint8_t *buf, size_t len, struct rprof *out);
/* Read and decode path. 0, -errno, -EBADMSG or -E2BIG. */
int rprof_read_file(const char *path, struct rprof *out);
/* Index of the sample type named type, or -1. */
int rprof_type_index(const struct rprof *p, const char *type);
void rprof_free(struct rprof *p);

#endif
