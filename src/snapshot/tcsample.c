/* tcmalloc's sampled allocations (TCMALLOC_SAMPLE_PARAMETER): the stack it recorded for each, read from the StackTrace its span points to. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>

#include "base/log.h"
#include "snapshot/tcblocks_priv.h"

#define TC_PERIOD_MAX (1ULL << 58)      /* sampler.cc: "between 1 and 2^58" */

/* Whether pc is in an object named libtcmalloc*: tcmalloc's own frame. */
static int own_pc(const struct proc_maps *maps, uint64_t pc)
{
	const struct proc_map *m = proc_maps_find(maps, pc);

	return m && tcblocks_lib(m);
}

/*
 * The stack of sampled span x in use (tcmalloc.cc's DoSampledAllocation:
 * a span of its own, its objects a StackTrace) into as, from its first
 * frame outside libtcmalloc*, and the size asked for into *size: 0, or
 * -1 when the StackTrace cannot be read or does not hold together (no
 * stack; the block stays listed).
 */
static int span_stack(const struct tcwalk *w, const struct tcspan *x, struct allocsites *as,
		      uint64_t *size)
{
	uint64_t tr[TC_TRACE_WORDS], k = 0;

	if (x->objects % 8 || !tcblocks_anon_rw(w->maps, x->objects, sizeof(tr)) ||
	    tcblocks_rd(w, x->objects, tr, sizeof(tr)) || !tr[ST_DEPTH] ||
	    tr[ST_DEPTH] > TC_STACK_MAX || tr[ST_SIZE] > x->len)
		return -1;
	while (k < tr[ST_DEPTH] && own_pc(w->maps, tr[ST_STACK + k]))
		k++;
	*size = tr[ST_SIZE];
	return allocsites_add(as, x->base, tr + ST_STACK + k, tr[ST_DEPTH] - k) ? -1 : 0;
}

void tcblocks_samples(struct tcwalk *w, struct heapgraph *g, struct allocsites *as)
{
	int64_t period;
	uint64_t size;
	long b;

	if (!as)
		return;
	as->by = "tcmalloc";
	if (w->at->flag && !tcblocks_rd(w, w->at->flag, &period, 8) && period > 0 &&
	    (uint64_t)period <= TC_PERIOD_MAX)
		as->period = (uint64_t)period;
	for (size_t i = 0; i < w->nsp; i++) {
		const struct tcspan *x = &w->sp[i];

		if (x->location || x->cls || !x->sample)
			continue;
		if (span_stack(w, x, as, &size)) {
			w->st->unread++;
			continue;
		}
		w->st->sampled++;
		/* its span is its usable size; the size asked for says its type */
		if (size && size < HG_BIG && (b = heapgraph_find(g, x->base)) >= 0 && g->addr[b] == x->base &&
		    size < heapgraph_size(g, (size_t)b))
			g->size[b] = (uint32_t)size;
	}
	if (w->st->sampled + w->st->unread)
		pr_debug("snapshot: tcmalloc sampled %llu blocks in use (%llu without a stack), one "
			 "in every %llu bytes allocated", (unsigned long long)w->st->sampled,
			 (unsigned long long)w->st->unread, (unsigned long long)as->period);
}
