/* gperftools 2.10's tcmalloc: the blocks of its spans in use, minus the objects on its spans', central and thread caches' free lists. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "snapshot/tcblocks_priv.h"

/* A span's objects, which of them free (bits at boff in the walk's map). */
struct tcobjs {
	uint64_t boff;
	unsigned n, nfree;
	int torn;
};

/* Blocks to drop (free objects of the caches). */
struct tcdrops {
	uint32_t *v;
	size_t n, cap;
};

/*
 * The free list of small span x (objs: its objects) into the bits at map:
 * every object on it inside the span, at an object's start, once; and
 * the objects off it as many as its refcount. 0, or -1: torn.
 */
static int span_free(const struct tcwalk *w, const struct tcspan *x, uint64_t size,
		     struct tcobjs *o, uint64_t *map)
{
	uint64_t p = x->objects;

	o->nfree = 0;
	while (p) {
		uint64_t i = (p - x->base) / size;

		if (p < x->base || p - x->base >= (uint64_t)o->n * size || (p - x->base) % size ||
		    (map[i / 64] >> (i % 64) & 1) || tcblocks_rd(w, p, &p, 8))
			return -1;
		map[i / 64] |= 1ULL << (i % 64);
		o->nfree++;
	}
	return o->n - o->nfree == x->refcount ? 0 : -1;
}

/* The block starting exactly at p of size bytes, or -1. */
static long block_at(const struct heapgraph *g, uint64_t p, uint64_t size)
{
	long b = heapgraph_find(g, p);

	return b >= 0 && g->addr[b] == p && heapgraph_size(g, (size_t)b) == size ? b : -1;
}

/*
 * The free list from head of class cls, n objects at most (until tail, when
 * not 0, is passed): each a block of its size, into d. How many, or -1
 * (one is not: nothing kept in d).
 */
static long list_drop(const struct tcwalk *w, const struct heapgraph *g, uint64_t head,
		      uint64_t tail, unsigned cls, uint64_t n, struct tcdrops *d)
{
	size_t at = d->n;
	long k = 0;

	for (uint64_t p = head; p && (uint64_t)k < n; k++) {
		long b = block_at(g, p, w->size[cls]);

		if (b < 0 || d->n == d->cap)
			goto bad;
		d->v[d->n++] = (uint32_t)b;
		if (p == tail)
			return k + 1;
		if (tcblocks_rd(w, p, &p, 8))
			goto bad;
	}
	if (!tail)
		return k;
bad:
	d->n = at;
	return -1;
}

/* The objects of every thread cache on the list from thread_heaps_ into d. */
static void thread_caches(const struct tcwalk *w, const struct heapgraph *g, struct tcdrops *d)
{
	uint8_t *c = xmalloc(TC_CACHE_BYTES);
	uint64_t p;

	if (tcblocks_rd(w, w->at->heaps, &p, 8))
		p = 0;
	for (unsigned k = 0; p && k < TC_MAX_CACHES; k++) {
		uint64_t nf = 0;

		if (p % 64 || !tcblocks_anon_rw(w->maps, p, TC_CACHE_BYTES) ||
		    tcblocks_rd(w, p, c, TC_CACHE_BYTES))
			break;
		for (unsigned cls = 1; cls < w->ncls; cls++) {
			const uint8_t *fl = c + cls * TC_FREELIST;
			uint64_t head;
			uint32_t length;
			int32_t size;
			long got;

			memcpy(&head, fl, 8);
			memcpy(&length, fl + 8, 4);
			memcpy(&size, fl + 24, 4);
			if ((uint32_t)size != w->size[cls] || length > TC_MAX_LIST)
				break;
			got = list_drop(w, g, head, 0, cls, length, d);
			if (got != (long)length) {
				pr_debug("snapshot: tcmalloc's thread cache at %#llx: class %u: %ld of "
					 "%u objects", (unsigned long long)p, cls, got, length);
				break;
			}
			nf += length;
		}
		w->st->tcaches++;
		w->st->tcache_free += nf;
		memcpy(&p, c + TC_CACHE_NEXT, 8);
	}
	free(c);
}

/* The objects in every central free list's transfer slots into d. */
static void transfer_slots(const struct tcwalk *w, const struct heapgraph *g, struct tcdrops *d)
{
	uint8_t c[CF_USED + 4];

	for (unsigned cls = 1; cls < w->ncls; cls++) {
		uint64_t sc;
		int32_t used;

		if (tcblocks_rd(w, w->at->central + (uint64_t)cls * TC_CENTRAL, c, sizeof(c)))
			continue;
		memcpy(&sc, c + CF_CLASS, 8);
		memcpy(&used, c + CF_USED, 4);
		if (sc != cls || used < 0 || used > CF_NSLOTS)
			continue;
		for (int32_t s = 0; s < used; s++) {
			uint64_t ht[2];
			long got;

			memcpy(ht, c + CF_SLOTS + 16 * s, 16);
			got = list_drop(w, g, ht[0], ht[1], cls, TC_MAX_LIST, d);
			if (got > 0)
				w->st->central_free += (uint64_t)got;
		}
	}
}

/* The blocks of the spans in use into g: n of them counted first. */
static int fill(struct tcwalk *w, struct heapgraph *g, hg_read_fn read, void *arg)
{
	struct tcobjs *o = xcalloc(w->nsp + 1, sizeof(*o));
	uint64_t nbits = 0, n = 0, *map;
	size_t b = 0;
	int rc;

	for (size_t i = 0; i < w->nsp; i++)
		if (!w->sp[i].location && w->sp[i].cls) {
			o[i].n = (unsigned)(w->sp[i].len / w->size[w->sp[i].cls]);
			o[i].boff = nbits;
			nbits += (o[i].n + 63) / 64 * 64;
		}
	map = xcalloc(nbits / 64 + 1, 8);
	for (size_t i = 0; i < w->nsp; i++) {
		const struct tcspan *x = &w->sp[i];

		if (x->location)
			continue;
		if (x->cls && span_free(w, x, w->size[x->cls], &o[i], map + o[i].boff / 64)) {
			o[i].torn = 1;
			w->st->torn++;
			continue;
		}
		n += x->cls ? o[i].n - o[i].nfree : 1;
		w->st->small += x->cls != 0;
		w->st->large += !x->cls;
	}
	w->st->spans = w->st->small + w->st->large;
	rc = heapgraph_init(g, n, read, arg);
	if (rc) {
		snprintf(w->why, w->len, "%llu blocks: too many", (unsigned long long)n);
		goto out;
	}
	for (size_t i = 0; i < w->nsp; i++) {
		const struct tcspan *x = &w->sp[i];
		const uint64_t *m = map + o[i].boff / 64;

		if (x->location || o[i].torn)
			continue;
		if (!x->cls) {
			heapgraph_set(g, b++, x->base, x->len);
			continue;
		}
		for (unsigned k = 0; k < o[i].n && b < n; k++)
			if (!(m[k / 64] >> (k % 64) & 1))
				heapgraph_set(g, b++, x->base + (uint64_t)k * w->size[x->cls],
					      w->size[x->cls]);
	}
	g->n = b;
	heapgraph_seal(g);
out:
	free(map);
	free(o);
	return rc;
}

/* The free spans, merged, into meta. */
static void free_spans(const struct tcwalk *w, struct tcblocks_meta *meta)
{
	meta->v = xcalloc(w->nsp + 1, sizeof(*meta->v));
	for (size_t i = 0; i < w->nsp; i++) {
		struct hg_span *l = meta->n ? &meta->v[meta->n - 1] : NULL;

		if (!w->sp[i].location)
			continue;
		if (l && l->addr + l->len == w->sp[i].base)
			l->len += w->sp[i].len;
		else
			meta->v[meta->n++] = (struct hg_span){ w->sp[i].base, w->sp[i].len };
	}
}

int tcblocks_list(const struct proc_maps *maps, const struct tcblocks_at *at,
		  struct heapgraph *g, hg_read_fn read, void *arg, struct tcblocks_meta *meta,
		  struct allocsites *as, struct tcblocks_stats *st, char *why, size_t len)
{
	struct tcwalk w = { .read = read, .read_arg = arg, .maps = maps, .at = at, .st = st,
			    .why = why, .len = len };
	struct tcdrops d = { 0 };
	int rc;

	memset(st, 0, sizeof(*st));
	memset(g, 0, sizeof(*g));
	memset(meta, 0, sizeof(*meta));
	w.buf = xmap(TC_ARRAY);
	rc = tcblocks_sizes(&w);
	if (!rc)
		rc = tcblocks_spans(&w);
	if (!rc)
		rc = fill(&w, g, read, arg);
	if (rc)
		goto out;
	d.cap = g->n;
	d.v = xmap((d.cap + 1) * sizeof(*d.v));
	thread_caches(&w, g, &d);
	transfer_slots(&w, g, &d);
	for (size_t i = 0; i < d.n; i++)
		g->size[d.v[i]] = 0;	/* dropped by the seal */
	heapgraph_seal(g);
	xunmap(d.v, (d.cap + 1) * sizeof(*d.v));
	free_spans(&w, meta);
	tcblocks_samples(&w, g, as);
	pr_debug("snapshot: tcmalloc's pagemap at %#llx: %llu leaves, %zu spans (%llu torn: "
		 "skipped), %u size classes, %zu free spans", (unsigned long long)at->root,
		 (unsigned long long)st->leaves, w.nsp, (unsigned long long)st->torn, w.ncls,
		 meta->n);
out:
	xunmap(w.buf, TC_ARRAY);
	tcblocks_walk_free(&w);
	return rc;
}

void tcblocks_meta_free(struct tcblocks_meta *meta)
{
	free(meta->v);
	memset(meta, 0, sizeof(*meta));
}
