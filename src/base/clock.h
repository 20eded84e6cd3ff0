/* Nanosecond clock readings for the tool (not the agent: it has no libc). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_CLOCK_H
#define HEAPATTACH_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Clock clk (CLOCK_MONOTONIC, CLOCK_REALTIME, ...) in nanoseconds. */
static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
