/* The live set at the session's highest point: a snapshot of every bucket's in-use figures, for the peak profile. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "base/xmalloc.h"
#include "profile/peak.h"

#define MIN_STEP (64u << 10)

static int take(const struct profile_bucket *b, void *arg)
{
	struct peak *pk = arg;

	if (pk->n == pk->cap) {
		pk->cap = pk->cap ? pk->cap * 2 : 1024;
		pk->v = xrealloc(pk->v, pk->cap * sizeof(*pk->v));
	}
	pk->v[pk->n++] = (struct peak_cell){ b->inuse_count, b->inuse_bytes };
	return 0;
}

int peak_update(struct peak *pk, const struct profile *p, uint64_t live, uint64_t now_ns)
{
	uint64_t step = pk->bytes / 100 > MIN_STEP ? pk->bytes / 100 : MIN_STEP;

	if (live <= pk->bytes + step)
		return 0;
	pk->n = 0;
	profile_foreach(p, take, pk);
	pk->bytes = live;
	pk->at_ns = now_ns;
	return 1;
}

void peak_free(struct peak *pk)
{
	free(pk->v);
	pk->v = NULL;
	pk->n = pk->cap = 0;
	pk->bytes = 0;
}

struct profile_bucket peak_bucket(const struct peak *pk, const struct profile_bucket *b,
				  size_t idx)
{
	struct profile_bucket r = *b;

	r.inuse_count = idx < pk->n ? pk->v[idx].count : 0;
	r.inuse_bytes = idx < pk->n ? pk->v[idx].bytes : 0;
	return r;
}
