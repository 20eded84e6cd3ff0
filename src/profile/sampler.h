/* Sampling decisions: exponential gaps between sampled bytes (docs/profile-format.md §4). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SAMPLER_H
#define HEAPATTACH_SAMPLER_H

#include <stdint.h>

/*
 * Allocated bytes form one stream; each byte is marked with probability
 * 1/rate, and an allocation that contains a marked byte is sampled, so an
 * S-byte allocation is sampled with probability 1 - exp(-S/rate).
 *
 * A gap G is the number of bytes until the next sample, with this rule:
 * an allocation of S bytes is sampled iff S >= G (then G is redrawn);
 * otherwise G -= S. The rule matches a counter the target decrements: sample
 * when counter - S <= 0. Gaps are floor(X) + 1 with X exponential of mean
 * rate, so P(sampled) = P(X < S) = 1 - exp(-S/rate) exactly.
 *
 * Special rates: 1 -> every gap is 0, so every allocation is sampled, size 0
 * included; 0 -> sampling off, every gap is SAMPLER_GAP_NEVER.
 * Gaps never exceed SAMPLER_GAP_NEVER (INT64_MAX), so they fit a signed counter.
 */
#define SAMPLER_GAP_NEVER ((uint64_t)INT64_MAX)

struct sampler {
	uint64_t rate;
	uint64_t s[4];          /* xoshiro256** state */
	uint64_t left;          /* current gap: bytes until the next sample */
};

/* Seed the generator (any seed, 0 included) and draw the first gap. */
void sampler_init(struct sampler *s, uint64_t rate, uint64_t seed);
/* Change the rate and draw a fresh gap. */
void sampler_set_rate(struct sampler *s, uint64_t rate);
/* 64 uniformly random bits. */
uint64_t sampler_rand(struct sampler *s);
/* One exponential draw of mean rate (a double, for tests of the shape). */
double sampler_exp_draw(struct sampler *s);
/* A fresh gap under the rule above (does not change s->left). */
uint64_t sampler_next_gap(struct sampler *s);
/* Whether an allocation of size bytes is sampled; updates s->left. 1 or 0. */
int sampler_should_sample(struct sampler *s, uint64_t size);

#endif
