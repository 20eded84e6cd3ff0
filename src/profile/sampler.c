/* Exponential sampling gaps with a seedable xoshiro256** generator. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include "profile/sampler.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sampler_rand(struct sampler *s)
{
	uint64_t r = rotl(s->s[1] * 5, 7) * 9;
	uint64_t t = s->s[1] << 17;

	s->s[2] ^= s->s[0];
	s->s[3] ^= s->s[1];
	s->s[1] ^= s->s[2];
	s->s[0] ^= s->s[3];
	s->s[2] ^= t;
	s->s[3] = rotl(s->s[3], 45);
	return r;
}

/*
 * -rate * ln(U) with U uniform in (0, 1] on a 2^-53 grid. Go and tcmalloc use
 * a 26-bit U (docs/profile-format.md §4); 53 bits give the same mean with a finer
 * tail (largest draw ~36.7 * rate instead of ~18 * rate).
 */
double sampler_exp_draw(struct sampler *s)
{
	double u = (double)((sampler_rand(s) >> 11) + 1) * 0x1p-53;

	return -log(u) * (double)s->rate;
}

uint64_t sampler_next_gap(struct sampler *s)
{
	double x;

	if (s->rate == 0)
		return SAMPLER_GAP_NEVER;
	if (s->rate == 1)
		return 0;
	x = sampler_exp_draw(s);
	if (x >= (double)(SAMPLER_GAP_NEVER - 1))
		return SAMPLER_GAP_NEVER;
	return (uint64_t)x + 1;
}

void sampler_init(struct sampler *s, uint64_t rate, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		s->s[i] = splitmix64(&x);
	sampler_set_rate(s, rate);
}

void sampler_set_rate(struct sampler *s, uint64_t rate)
{
	s->rate = rate;
	s->left = sampler_next_gap(s);
}

int sampler_should_sample(struct sampler *s, uint64_t size)
{
	if (s->rate == 0)
		return 0;
	if (size >= s->left) {
		s->left = sampler_next_gap(s);
		return 1;
	}
	s->left -= size;
	return 0;
}
