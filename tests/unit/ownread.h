/* A reader (hg_read_fn) over this process's own memory, for unit tests of walkers that read a target. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TEST_OWNREAD_H
#define HEAPATTACH_TEST_OWNREAD_H

#include <stdint.h>
#include <string.h>
#include "snapshot/heapgraph.h"

/* The spans read from our own memory, one after the other into buf. */
static inline int read_own(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	(void)arg;
	for (size_t i = 0; i < n; i++) {
		memcpy(buf, (const void *)(uintptr_t)s[i].addr, s[i].len);
		buf += s[i].len;
	}
	return 0;
}

#endif
