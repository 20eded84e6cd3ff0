/* Unit tests for pymerge: Python frames in place of the eval loop's frames. */
/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include "python/pymerge.h"

/* Interpreter code 0x1000-0x2000, its eval loop 0x1800-0x1900; return addresses. */
#define EVAL(i)  (0x1800 + (i))
#define INTERP(i) (0x1100 + (i))
#define EXT(i)   (0x9000 + (i))
#define PY(i)    (0xffe0000000000000ULL + (i))

static const struct pymerge_code code = { 0x1800, 0x1900, 0x1000, 0x2000, 0 };

static void expect_frames(const uint64_t *got, size_t n, const uint64_t *want, size_t nwant)
{
	expect_int_eq(n, nwant);
	for (size_t i = 0; i < n && i < nwant; i++)
		expect_u64_eq(got[i], want[i]);
}

/* 3.11+: one eval call runs two Python frames, another one more; dispatch
 * frames between them go, those leafward of the first and rootward of
 * the last stay. */
static void test_groups(void)
{
	const uint64_t native[] = { EXT(1), INTERP(1), EVAL(1), INTERP(2), EXT(2), INTERP(3),
				    EVAL(2), INTERP(4), 0x7000 };
	const uint64_t py[] = { PY(1), PY(2), PY(3) };
	const uint8_t ends[] = { 0, 1, 1 };
	const uint64_t want[] = { EXT(1), INTERP(1), PY(1), PY(2), EXT(2), PY(3), INTERP(4),
				  0x7000 };
	uint64_t out[16];
	size_t n = pymerge(&code, native, 9, py, ends, 3, out, 16);
	struct pymerge_code keep = code;

	expect_frames(out, n, want, 8);

	keep.keep_c = 1;
	{
		const uint64_t all[] = { EXT(1), INTERP(1), EVAL(1), PY(1), PY(2), INTERP(2),
					 EXT(2), INTERP(3), EVAL(2), PY(3), INTERP(4), 0x7000 };

		n = pymerge(&keep, native, 9, py, ends, 3, out, 16);
		expect_frames(out, n, all, 12);
	}
}

/* More groups than eval frames (a walk cut short): the rest at the root
 * end; more eval frames than groups: they stay. Bounded by max. */
static void test_mismatch(void)
{
	const uint64_t native[] = { EXT(1), EVAL(1) };
	const uint64_t py[] = { PY(1), PY(2) };
	const uint8_t ends[] = { 1, 1 };
	uint64_t out[16];
	size_t n = pymerge(&code, native, 2, py, ends, 2, out, 16);
	const uint64_t want[] = { EXT(1), PY(1), PY(2) };
	const uint64_t native2[] = { EVAL(1), INTERP(1), EVAL(2) };
	const uint64_t want2[] = { PY(1), EVAL(2) };

	expect_frames(out, n, want, 3);
	n = pymerge(&code, native2, 3, py, ends, 1, out, 16);
	expect_frames(out, n, want2, 2);
	n = pymerge(&code, native, 2, py, ends, 2, out, 2);
	expect_int_eq(n, 2);
	n = pymerge(&code, native, 2, py, ends, 0, out, 16);
	expect_frames(out, n, native, 2);
}

HARNESS_MAIN("pymerge", T(test_groups), T(test_mismatch))
