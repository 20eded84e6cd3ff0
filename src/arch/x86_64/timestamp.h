/* The clock the agent stamps ring records with, read on the tool's side (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_TIMESTAMP_H
#define HEAPATTACH_ARCH_TIMESTAMP_H

#include <stdint.h>

/*
 * The time stamp counter, read once the loads before have executed and
 * before any load after (the agent's rdtscp orders the first half). The
 * kernel keeps it in step across CPUs where it is invariant (constant_tsc,
 * nonstop_tsc), which ring.c's merge relies on.
 */
static inline uint64_t arch_timestamp(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

#endif
