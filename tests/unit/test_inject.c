/* Unit tests for the choice of an injection address from maps text. */
/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include "ptrace/inject.h"

static const char maps[] =
	"55d000000000-55d000001000 r--p 00000000 08:01 100 /usr/bin/victim\n"
	"55d000001000-55d000002000 r-xp 00001000 08:01 100 /usr/bin/victim\n"
	"55d000200000-55d000300000 rw-p 00000000 00:00 0 [heap]\n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n"
	"7f0000200000-7f0000228000 r--p 00000000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000228000-7f00003bd000 r-xp 00028000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f00003bd000-7f0000415000 r--p 001bd000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000420000-7f0000430000 rw-p 00000000 00:00 0\n"
	"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static void test_nearest_gap_first(void)
{
	uint64_t c[16];
	int n = inject_candidates(maps, sizeof(maps) - 1, 0x7f0000228000ULL,
				  8192, c, 16);

	expect_true(n >= 2);
	/* Just below libc (a page of guard) beats the small gap above it. */
	expect_u64_eq(c[0], 0x7f00001fd000ULL);
	expect_u64_eq(c[1], 0x7f0000416000ULL);
	for (int i = 1; i < n; i++)
		expect_true(absdiff(c[i - 1], 0x7f0000228000ULL) <=
			    absdiff(c[i], 0x7f0000228000ULL) + 8192);
}

static void test_all_within_reach_and_free(void)
{
	uint64_t c[16], near = 0x7f0000228000ULL;
	int n = inject_candidates(maps, sizeof(maps) - 1, near, 65536, c, 16);

	expect_true(n > 0);
	for (int i = 0; i < n; i++) {
		expect_true(absdiff(c[i], near) <= INJECT_REACH);
		expect_true(absdiff(c[i] + 65536, near) <= INJECT_REACH);
		expect_u64_eq(c[i] & 4095, 0);
		/* never inside or adjacent to a listed mapping */
		expect_true(c[i] + 65536 <= 0x7f00003bd000ULL ||
			    c[i] >= 0x7f0000415000ULL + 4096 ||
			    c[i] + 65536 <= 0x7f0000200000ULL - 4096);
		/* keep away from the stack's growth area */
		expect_true(c[i] + 65536 <= 0x7ffc00000000ULL - (64ULL << 20) ||
			    c[i] > 0x7ffc00021000ULL);
	}
}

static void test_too_big(void)
{
	uint64_t c[4];
	/* 5 GiB cannot fit in the window of +-1.75 GiB around near. */
	int n = inject_candidates(maps, sizeof(maps) - 1, 0x7f0000228000ULL,
				  5ULL << 30, c, 4);

	expect_int_eq(n, 0);
}

static void test_low_near(void)
{
	uint64_t c[4];
	int n = inject_candidates(maps, sizeof(maps) - 1, 0x55d000001000ULL,
				  4096, c, 4);

	expect_true(n > 0);
	/* below the executable, above mmap_min_addr, or between it and heap */
	expect_true(absdiff(c[0], 0x55d000001000ULL) < (4ULL << 20));
}

HARNESS_MAIN("inject",
	T(test_nearest_gap_first),
	T(test_all_within_reach_and_free),
	T(test_too_big),
	T(test_low_near))
