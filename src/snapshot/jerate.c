/* jemalloc's sampling rate (lg_prof_sample) told from its counters: the one rate whose unbiased sizes sum to what each prof_tctx_t counted of the sampled blocks in use. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdint.h>

#include "snapshot/jeblocks_priv.h"

/*
 * jemalloc 5.3 (prof.c, prof_data.c) adds, for each sampled allocation of
 * usable size sz, round(sz / (1 - exp(-sz / 2^lg_prof_sample))) to its
 * tctx's cnts.curbytes_unbiased (and sz to curbytes, 1 to curobjs;
 * prof_cnt_t is the tctx's words 4..11), and takes it away when freed. A
 * tctx all of whose counted blocks are the sampled blocks in use seen
 * (objects and bytes agree) says which rates are possible; the rate is
 * known when one alone fits every such tctx.
 */
#define CNT_OBJS 4                      /* prof_tctx_t's words: cnts.curobjs */
#define CNT_BYTES 6                     /* cnts.curbytes */
#define CNT_UNBIASED 7                  /* cnts.curbytes_unbiased */

/* The unbiased size of a block of sz bytes at 2^lg bytes a sample (prof_unbias_map_init). */
static uint64_t unbiased(uint64_t sz, unsigned lg)
{
	double d = (double)sz, div = 1.0 - exp(-d / (double)(1ULL << lg));

	return div > 0 && d / div < 1.8e19 ? (uint64_t)round(d / div) : UINT64_MAX;
}

void jerate_add(struct jerate *r, uint64_t tctx, const uint64_t *tw, uint64_t usize)
{
	size_t i = 0;

	if (r->adds >= JERATE_ADDS)
		return;	/* enough to tell (a tctx with blocks past it is not checked) */
	r->adds++;
	while (i < r->n && r->t[i].at != tctx)
		i++;
	if (i == r->n) {
		if (r->n == JERATE_TCTXS)
			return;	/* enough to tell */
		r->t[r->n++] = (struct jerate_tctx){ .at = tctx, .objs = tw[CNT_OBJS],
						      .bytes = tw[CNT_BYTES],
						      .unbiased = tw[CNT_UNBIASED] };
	}
	r->t[i].seen_objs++;
	r->t[i].seen_bytes += usize;
	for (unsigned lg = 0; lg < JERATE_LGS; lg++)
		r->t[i].sum[lg] += unbiased(usize, lg);
}

uint64_t jerate_period(const struct jerate *r)
{
	uint64_t fits = ~0ULL;	/* bit lg: 2^lg fits every tctx looked at */
	unsigned checked = 0;

	for (size_t i = 0; i < r->n; i++) {
		const struct jerate_tctx *t = &r->t[i];

		if (t->seen_objs != t->objs || t->seen_bytes != t->bytes)
			continue;	/* some of its blocks not seen in use (being freed?) */
		checked++;
		for (unsigned lg = 0; lg < JERATE_LGS; lg++)
			if (t->sum[lg] != t->unbiased)
				fits &= ~(1ULL << lg);
	}
	if (!checked || !fits || (fits & (fits - 1)))
		return 0;	/* none told, none fits, or several do */
	return 1ULL << __builtin_ctzll(fits);
}
