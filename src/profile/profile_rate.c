/* Heap profile model: the sampling interval, its raises when the tool fell behind, and figures unsampled at an interval. */
/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include "profile/profile.h"
#include "profile/profile_priv.h"

void profile_set_shift(struct profile *p, unsigned shift, uint64_t now_ns)
{
	uint64_t at = now_ns > p->created_ns ? now_ns - p->created_ns : 0;
	struct profile_raise *r = NULL;

	if (p->rate <= 1 || shift == p->shift)
		return;
	if (!p->shift) {
		p->raise_start = at;
		if (p->nraises < PROFILE_MAX_RAISES)
			p->raises[p->nraises] = (struct profile_raise){ 0, at, 0 };
		p->nraises++;
	}
	if (p->nraises <= PROFILE_MAX_RAISES)
		r = &p->raises[p->nraises - 1];
	if (shift) {
		uint64_t v = p->rate << shift;

		if (r && v > r->max_rate)
			r->max_rate = v;
		if (!r && v > p->extra_max)
			p->extra_max = v;
	} else if (r) {
		r->end_ns = at > p->raise_start ? at : p->raise_start + 1;
	} else {
		p->extra_ns += at - p->raise_start;
	}
	p->shift = shift;
}

uint64_t profile_interval_now(const struct profile *p)
{
	return p->rate << p->shift;
}

size_t profile_nraises(const struct profile *p)
{
	return p->nraises;
}

const char *profile_interval_text(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (u + 1 < sizeof(unit) / sizeof(unit[0]) && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v, unit[u]);
	return buf;
}

int profile_raise_comment(const struct profile *p, size_t i, uint64_t now_ns, char *buf,
			  size_t len)
{
	uint64_t now = now_ns > p->created_ns ? now_ns - p->created_ns : 0;
	char from[32], to[32];

	profile_interval_text(p->rate, from, sizeof(from));
	if (i < PROFILE_MAX_RAISES) {
		const struct profile_raise *r = &p->raises[i];
		uint64_t end = r->end_ns ? r->end_ns : now;

		if (i >= p->nraises)
			return 0;
		snprintf(buf, len, "heapattach could not keep up: sampling interval raised from %s "
			 "to at most %s for %.1f s (from %.1f s to %.1f s after heapattach started%s); "
			 "each sample is scaled by the interval it was taken at", from,
			 profile_interval_text(r->max_rate, to, sizeof(to)),
			 (end > r->start_ns ? end - r->start_ns : 0) / 1e9, r->start_ns / 1e9,
			 end / 1e9, r->end_ns ? "" : ", still raised when written");
		return 1;
	}
	if (i > PROFILE_MAX_RAISES || p->nraises <= PROFILE_MAX_RAISES)
		return 0;
	snprintf(buf, len, "heapattach could not keep up %zu more times: sampling interval raised "
		 "from %s to at most %s for %.1f s in all", p->nraises - PROFILE_MAX_RAISES, from,
		 profile_interval_text(p->extra_max, to, sizeof(to)),
		 (p->extra_ns + (p->shift && now > p->raise_start ? now - p->raise_start : 0)) / 1e9);
	return 1;
}

/* v * scale + round (0: truncated, 0.5: to the nearest) as an int64,
 * INT64_MAX if it does not fit (the target's figures can be anything). */
static int64_t scaled(uint64_t v, double scale, double round)
{
	double x = (double)v * scale + round;

	return x < 9.2e18 ? (int64_t)x : INT64_MAX;
}

/* The objects one sample of avg bytes stands for at an interval of rate. */
static double unsample(double avg, uint64_t rate)
{
	return 1 / (1 - exp(-avg / (double)rate));
}

struct profile_bucket profile_bucket_at(const struct profile_bucket *b, uint64_t rate)
{
	struct profile_bucket r = *b;
	double k;

	r.rate = rate;
	if (b->rate == rate || rate <= 1 || b->rate <= 1 || !b->size)
		return r;
	/* every sample of a bucket has its size: the scales are per object */
	k = unsample(b->size, b->rate) / unsample(b->size, rate);
	r.alloc_count = (uint64_t)scaled(b->alloc_count, k, 0.5);
	r.inuse_count = (uint64_t)scaled(b->inuse_count, k, 0.5);
	r.alloc_bytes = r.alloc_count * b->size;
	r.inuse_bytes = r.inuse_count * b->size;
	return r;
}

void profile_scale(uint64_t count, uint64_t bytes, uint64_t rate,
		   int64_t *out_count, int64_t *out_bytes)
{
	double avg, scale;

	if (count == 0 || bytes == 0) {
		*out_count = 0;
		*out_bytes = 0;
		return;
	}
	if (rate <= 1) {
		*out_count = count > INT64_MAX ? INT64_MAX : (int64_t)count;
		*out_bytes = bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes;
		return;
	}
	avg = (double)bytes / (double)count;
	scale = unsample(avg, rate);
	*out_count = scaled(count, scale, 0);
	*out_bytes = scaled(bytes, scale, 0);
}
