/* The live set at the session's highest point: a snapshot of every bucket's in-use figures, for the peak profile. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PEAK_H
#define HEAPATTACH_PEAK_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* In-use figures of one bucket, raw (as sampled). */
struct peak_cell {
	uint64_t count, bytes;
};

/*
 * Buckets are numbered in profile_foreach() order (creation order, and
 * never removed), so a snapshot is the in-use pair of each bucket by that
 * number; a bucket made after it held nothing at the peak.
 */
struct peak {
	struct peak_cell *v;
	size_t n, cap;
	uint64_t bytes;         /* live bytes (unsampled) at the snapshot; 0: none */
	uint64_t at_ns;         /* when, since the session started */
};

/* A new high: snapshot p if live exceeds the last snapshot's by more than
 * 1% (and 64 KiB), so that a slowly climbing peak costs a few snapshots.
 * Returns 1 if it took one. */
int peak_update(struct peak *pk, const struct profile *p, uint64_t live, uint64_t now_ns);
void peak_free(struct peak *pk);

/* b as it was at the peak (idx: its number in profile_foreach order). */
struct profile_bucket peak_bucket(const struct peak *pk, const struct profile_bucket *b,
				  size_t idx);

#endif
