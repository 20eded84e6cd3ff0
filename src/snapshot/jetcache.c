/* jemalloc's thread caches, found in each thread's TLS: their regions are free, and so are their arrays. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/jeblocks_priv.h"

#define JE_TCACHE_NBINS 73                      /* TCACHE_NBINS_MAX */
#define JE_CACHE_BIN 24                         /* sizeof(cache_bin_t) */
#define TLS_BELOW (64u << 10)           /* static TLS under the thread pointer */

/* The block starting exactly at p, or -1. */
static long block_at(const struct heapgraph *g, uint64_t p)
{
	long b = heapgraph_find(g, p);

	return b >= 0 && g->addr[b] == p ? b : -1;
}

static void drop(struct jedrops *d, size_t b)
{
	if (d->n < d->cap)
		d->v[d->n++] = (uint32_t)b;
}

/*
 * The cache whose bins (cache_bin_t: stack_head, a counter, three 16-bit
 * low bits of its stack's positions) begin at bins, read: each bin's
 * cached regions, from stack_head up to its empty position, must be
 * blocks of its size class, in the block of bin 0's stack (the cache's
 * array, itself a block of arena 0). The regions and the array go to d.
 * The regions, or -1 (no cache: nothing kept in d).
 */
static long cache_check(const struct jewalk *w, const struct heapgraph *g, const uint8_t *bins,
			struct jedrops *d)
{
	size_t at = d->n;
	long total = 0, array = -1;
	uint64_t items[1024];

	for (unsigned i = 0; i < JE_TCACHE_NBINS; i++) {
		const uint8_t *cb = bins + i * JE_CACHE_BIN;
		uint64_t head;
		uint16_t low_empty;
		unsigned n;

		memcpy(&head, cb, 8);
		memcpy(&low_empty, cb + 20, 2);
		if (!head)
			break;	/* the bins past the cache's last */
		n = (uint16_t)(low_empty - (uint16_t)head);
		if (n % 8 || n / 8 > sizeof(items) / 8)
			goto bad;
		n /= 8;
		if (!i)
			array = heapgraph_find(g, head + 8 * n - 8);
		if (array < 0 || (n && heapgraph_find(g, head) != array) ||
		    (n && jeblocks_rd(w, head, items, 8 * n)))
			goto bad;
		for (unsigned k = 0; k < n; k++) {
			long b = block_at(g, items[k]);

			if (b < 0 || heapgraph_size(g, (size_t)b) != jeblocks_class_size(i))
				goto bad;
			drop(d, (size_t)b);
		}
		total += n;
	}
	if (array < 0)
		goto bad;
	drop(d, (size_t)array);
	return total;
bad:
	d->n = at;
	return -1;
}

/*
 * The tree's lookup caches in the TSD of a thread whose TLS tls[0..nw)
 * was read from lo (rtree_ctx: pairs of a leaf key, an address's upper
 * bits, and that leaf) are jemalloc's: a key is an address at 1 GiB, an
 * interior pointer into any block across it.
 */
static void lookup_caches(struct jewalk *w, const uint64_t *tls, uint64_t lo, size_t nw)
{
	for (size_t i = 0; i + 1 < nw; i++) {
		if (!tls[i] || tls[i] % (1ULL << 30))
			continue;
		for (size_t k = 0; k < w->nleaf; k++)
			if (w->leaf[k].addr == tls[i] % (1ULL << 48) && w->leaf[k].len == tls[i + 1]) {
				jeblocks_own(w, lo + 8 * i, 16);
				break;
			}
	}
}

/*
 * Each thread's cache: its tcache_t (a pointer to its tcache_slow_t, then
 * the bins) and tcache_slow_t (which points back at it and at its bins
 * within its first 256 bytes) both in the thread's TSD, in its static
 * TLS under fs_base.
 */
void jeblocks_tcaches(struct jewalk *w, const struct heapgraph *g, const struct snapthread *th,
		      size_t nth, struct jedrops *d)
{
	const struct proc_maps *maps = w->maps;
	struct jeblocks_stats *st = w->st;
	uint64_t *tls = xmalloc(TLS_BELOW);
	uint8_t bins[JE_TCACHE_NBINS * JE_CACHE_BIN];

	for (size_t t = 0; t < nth; t++) {
		const struct proc_map *m = proc_maps_find(maps, th[t].fs_base - 8);
		uint64_t lo, nw;

		st->threads++;
		if (!m || th[t].fs_base < 8)
			continue;
		lo = th[t].fs_base - m->start > TLS_BELOW ? th[t].fs_base - TLS_BELOW : m->start;
		nw = (th[t].fs_base - lo) / 8;
		if (jeblocks_rd(w, lo, tls, 8 * nw))
			continue;
		lookup_caches(w, tls, lo, nw);
		for (size_t i = 0; i + 1 + sizeof(bins) / 8 < nw; i++) {
			uint64_t slow = tls[i], tc = lo + 8 * i;
			size_t s = (slow - lo) / 8;
			int back = 0, to_bins = 0;
			long got;

			if (slow < lo || slow % 8 || s + 32 > nw)
				continue;
			for (size_t k = s; k < s + 32; k++) {
				back |= tls[k] == tc;
				to_bins |= tls[k] == tc + 8;
			}
			if (!back || !to_bins)
				continue;
			memcpy(bins, &tls[i + 1], sizeof(bins));
			got = cache_check(w, g, bins, d);
			if (got < 0)
				continue;
			st->tcaches++;
			st->tcache_arrays++;
			st->tcache_free += (uint64_t)got;
			break;
		}
	}
	free(tls);
}
