/* A 64-bit integer mixer shared by the tool's hash tables. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_HASH_H
#define HEAPATTACH_HASH_H

#include <stdint.h>

/* The murmur3 finalizer: every input bit affects every output bit. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#endif
