/* Unit tests for the sampler: exponential gaps (mean and shape), special rates. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include "harness.h"
#include "profile/sampler.h"

#define NDRAWS 1000000

static int near(double x, double want, double tol)
{
	if (fabs(x - want) <= tol)
		return 1;
	fprintf(stderr, "  got %.6f, want %.6f +- %.6f\n", x, want, tol);
	return 0;
}

static void test_exp_mean_and_shape(void)
{
	const uint64_t rate = 524288;
	struct sampler s;
	double sum = 0, over1 = 0, over2 = 0, over05 = 0;

	sampler_init(&s, rate, 1);
	for (int i = 0; i < NDRAWS; i++) {
		double x = sampler_exp_draw(&s);

		sum += x;
		over05 += x > 0.5 * rate;
		over1 += x > rate;
		over2 += x > 2.0 * rate;
	}
	expect_true(near(sum / NDRAWS / rate, 1.0, 0.01));
	expect_true(near(over05 / NDRAWS, exp(-0.5), 0.003));
	expect_true(near(over1 / NDRAWS, exp(-1.0), 0.003));
	expect_true(near(over2 / NDRAWS, exp(-2.0), 0.002));
}

/* Gaps are floor(X) + 1: mean rate + 1/2 for large rates, never 0. */
static void test_gap_mean(void)
{
	const uint64_t rates[] = { 4096, 524288, 64 << 20 };

	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		struct sampler s;
		double sum = 0, over1 = 0;
		uint64_t minv = UINT64_MAX;

		sampler_init(&s, rates[r], 42 + r);
		for (int i = 0; i < NDRAWS; i++) {
			uint64_t g = sampler_next_gap(&s);

			sum += (double)g;
			over1 += g > rates[r];
			if (g < minv)
				minv = g;
		}
		expect_true(near(sum / NDRAWS / rates[r], 1.0, 0.01));
		expect_true(near(over1 / NDRAWS, exp(-1.0), 0.003));
		expect_true(minv >= 1);
	}
}

/* Fraction of S-byte allocations sampled is 1 - exp(-S/rate). */
static void test_should_sample_probability(void)
{
	const uint64_t rate = 4096, sizes[] = { 64, 1024, 4096, 16384 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct sampler s;
		double hits = 0;

		sampler_init(&s, rate, 7 + k);
		for (int i = 0; i < NDRAWS; i++)
			hits += sampler_should_sample(&s, sizes[k]);
		expect_true(near(hits / NDRAWS, 1 - exp(-(double)sizes[k] / rate), 0.003));
	}
}

static void test_special_rates(void)
{
	struct sampler s;
	int hits = 0;

	sampler_init(&s, 1, 0);
	expect_int_eq(s.left, 0);
	expect_int_eq(sampler_next_gap(&s), 0);
	for (int i = 0; i < 1000; i++)
		hits += sampler_should_sample(&s, i % 3);       /* size 0 included */
	expect_int_eq(hits, 1000);

	sampler_set_rate(&s, 0);
	expect_u64_eq(s.left, SAMPLER_GAP_NEVER);
	hits = 0;
	for (int i = 0; i < 1000; i++)
		hits += sampler_should_sample(&s, UINT64_MAX / 2 + i);
	expect_int_eq(hits, 0);

	sampler_set_rate(&s, UINT64_MAX);               /* absurd: clamps */
	for (int i = 0; i < 1000; i++)
		expect_true(sampler_next_gap(&s) <= SAMPLER_GAP_NEVER);
}

static void test_counter_rule(void)
{
	struct sampler s;

	sampler_init(&s, 1000, 3);
	s.left = 100;
	expect_int_eq(sampler_should_sample(&s, 99), 0);
	expect_int_eq(s.left, 1);
	expect_int_eq(sampler_should_sample(&s, 0), 0);
	expect_int_eq(sampler_should_sample(&s, 1), 1);        /* S >= left */
	expect_true(s.left >= 1);
}

static void test_seeded(void)
{
	struct sampler a, b, c;
	int same = 1, differ = 0;

	sampler_init(&a, 4096, 99);
	sampler_init(&b, 4096, 99);
	sampler_init(&c, 4096, 100);
	for (int i = 0; i < 100; i++) {
		uint64_t x = sampler_rand(&a), y = sampler_rand(&b), z = sampler_rand(&c);

		same &= x == y;
		differ += x != z;
	}
	expect_true(same);
	expect_true(differ > 95);
}

/* Bits look uniform: each of the 64 bits is set about half the time. */
static void test_bits_uniform(void)
{
	struct sampler s;
	int counts[64] = { 0 };

	sampler_init(&s, 1, 0);
	for (int i = 0; i < 100000; i++) {
		uint64_t r = sampler_rand(&s);

		for (int b = 0; b < 64; b++)
			counts[b] += (r >> b) & 1;
	}
	for (int b = 0; b < 64; b++)
		expect_true(counts[b] > 49000 && counts[b] < 51000);
}

HARNESS_MAIN("sampler",
	T(test_exp_mean_and_shape),
	T(test_gap_mean),
	T(test_should_sample_probability),
	T(test_special_rates),
	T(test_counter_rule),
	T(test_seeded),
	T(test_bits_uniform))
