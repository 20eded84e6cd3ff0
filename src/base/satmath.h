/* Saturating 64-bit arithmetic for figures the target can make anything. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SATMATH_H
#define HEAPATTACH_SATMATH_H

#include <stdint.h>

/* a + b, UINT64_MAX if it does not fit. */
static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* a * b, UINT64_MAX if it does not fit. */
static inline uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif
