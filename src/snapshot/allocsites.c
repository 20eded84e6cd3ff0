/* Allocation stacks an allocator recorded itself for some of its blocks: kept by block address, looked up once sorted. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/allocsites.h"

int allocsites_add(struct allocsites *s, uint64_t addr, const uint64_t *pcs, size_t depth)
{
	size_t d = 0;

	while (d < depth && d < ALLOCSITE_DEPTH && pcs[d])
		d++;
	if (!d)
		return -EINVAL;
	if (s->n >= ALLOCSITES_MAX)
		return -ENOSPC;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	if (s->npcs + d > s->pcap) {
		s->pcap = s->pcap ? 2 * s->pcap : 4096;
		s->pcs = xrealloc(s->pcs, s->pcap * sizeof(*s->pcs));
	}
	memcpy(s->pcs + s->npcs, pcs, d * sizeof(*pcs));
	s->v[s->n++] = (struct allocsite){ .addr = addr, .at = (uint32_t)s->npcs,
					   .depth = (uint32_t)d };
	s->npcs += d;
	s->sorted = 0;
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct allocsite *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

const struct allocsite *allocsites_find(struct allocsites *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	if (!s->n)
		return NULL;
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), by_addr);
		s->sorted = 1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->n || s->v[lo].addr != addr)
		return NULL;
	return &s->v[lo];
}

void allocsites_free(struct allocsites *s)
{
	free(s->v);
	free(s->pcs);
	memset(s, 0, sizeof(*s));
}
