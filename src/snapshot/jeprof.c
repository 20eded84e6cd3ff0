/* jemalloc's own samples (MALLOC_CONF=prof:true): the stack it took of each sampled extent in use, through its prof_tctx_t and prof_gctx_t. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>

#include "base/xmalloc.h"
#include "snapshot/jeblocks_priv.h"

/*
 * jemalloc 5.3 (prof_structs.h, edata.h) gives a sampled allocation an
 * extent of its own (a small one is promoted: the first large class's
 * extent, its szind the small one's) whose e_prof_info is { nstime_t
 * alloc_time; size_t alloc_size; prof_tctx_t *tctx; ... }: edata_t's
 * words 8, 9, 10 (11 if nstime_t holds a debug build's magic too). tctx
 * 1 is "not sampled". A prof_tctx_t's gctx is its word 12 (a pointer and
 * three uint64_t, then prof_cnt_t's 8); a prof_gctx_t's bt { void **vec;
 * unsigned len; } is found by its vec, which points at the gctx's own
 * trailing array, right after bt.
 */
#define TCTX_GCTX 12                    /* prof_tctx_t's word: gctx */
#define GCTX_WORDS 24                   /* prof_gctx_t's words searched for bt */
#define BT_MAX 128                      /* PROF_BT_MAX */

/* The stack at the tctx at t, leaf first, into pcs (BT_MAX), its words
 * into tw (TCTX_GCTX + 1): how many frames, or 0. */
static size_t tctx_stack(const struct jewalk *w, uint64_t t, uint64_t *tw, uint64_t *pcs)
{
	uint64_t gw[GCTX_WORDS], gctx;
	unsigned k, len;

	if (t <= 1 || t % 8 || !jeblocks_anon_rw(w->maps, t, 8 * (TCTX_GCTX + 1)) ||
	    jeblocks_rd(w, t, tw, 8 * (TCTX_GCTX + 1)))
		return 0;
	gctx = tw[TCTX_GCTX];
	if (!gctx || gctx % 8 || !jeblocks_anon_rw(w->maps, gctx, sizeof(gw)) ||
	    jeblocks_rd(w, gctx, gw, sizeof(gw)))
		return 0;
	for (k = 1; k + 2 < GCTX_WORDS; k++)
		if (gw[k] == gctx + 8 * (k + 2))
			break;	/* bt.vec, bt.len, then vec[] */
	if (k + 2 >= GCTX_WORDS)
		return 0;
	len = (unsigned)gw[k + 1];
	if (!len || len > BT_MAX || !jeblocks_anon_rw(w->maps, gw[k], 8ULL * len) ||
	    jeblocks_rd(w, gw[k], pcs, 8ULL * len))
		return 0;
	return len;
}

/* The stack of extent x if jemalloc sampled it, into pcs: how many, or 0;
 * its tctx counted in r. The tctx follows the request size (at most the
 * block's usable size). */
static size_t extent_stack(const struct jewalk *w, const struct jeextent *x, uint64_t *pcs,
			   struct jerate *r)
{
	uint64_t usable = jeblocks_class_size(x->szind), tw[TCTX_GCTX + 1];

	for (unsigned k = 1; k < 3; k++) {
		size_t n;

		if (!x->prof[k - 1] || x->prof[k - 1] > usable || x->prof[k] <= 1)
			continue;
		n = tctx_stack(w, x->prof[k], tw, pcs);
		if (n) {
			jerate_add(r, x->prof[k], tw, usable);
			return n;
		}
	}
	return 0;
}

/* Whether pc is in code of the target's: executable, mapped. */
static int code_at(const struct proc_maps *maps, uint64_t pc)
{
	const struct proc_map *m = proc_maps_find(maps, pc);

	return m && (m->prot & PROC_MAP_X);
}

void jeblocks_samples(const struct jewalk *w, const struct heapgraph *g, struct allocsites *as)
{
	struct jerate *r = xcalloc(1, sizeof(*r));
	uint64_t pcs[BT_MAX];

	as->by = "jemalloc";
	for (size_t i = 0; i < w->nex; i++) {
		const struct jeextent *x = &w->ex[i];
		long b = x->slab ? -1 : heapgraph_find(g, x->addr);
		size_t n, k = 0, top = 0;

		if (b < 0 || g->addr[b] != x->addr)
			continue;	/* a slab's region, or none in use */
		n = extent_stack(w, x, pcs, r);
		while (k < n && code_at(w->maps, pcs[k]))
			k++;
		n = k;	/* the frames up to the first that is no code */
		while (top < n && jeblocks_libjemalloc(proc_maps_find(w->maps, pcs[top])))
			top++;	/* prof_backtrace .. malloc: jemalloc's own */
		if (top < n && !allocsites_add(as, x->addr, pcs + top, n - top))
			w->st->sampled++;
	}
	as->period = jerate_period(r);
	free(r);
}
