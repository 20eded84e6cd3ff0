/* The blocks of a heap as a graph: which roots reach each block, which none (leaked), and what each root alone keeps alive. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/heapgraph.h"

int heapgraph_init(struct heapgraph *g, size_t n, hg_read_fn read, void *arg)
{
	memset(g, 0, sizeof(*g));
	if (n >= HG_MAX)
		return -E2BIG;
	g->n = g->cap = n;
	g->addr = xmap((n + 1) * sizeof(*g->addr));
	g->size = xmap((n + 1) * sizeof(*g->size));
	g->owner = xmap((n + 1) * sizeof(*g->owner));
	g->parent = xmap((n + 1) * sizeof(*g->parent));
	g->type = xmap((n + 1) * sizeof(*g->type));
	g->work = xmap((n + 1) * sizeof(*g->work));
	g->buf = xmap(HG_BATCH_BYTES);
	g->read = read;
	g->read_arg = arg;
	return 0;
}

void heapgraph_free(struct heapgraph *g)
{
	size_t n = g->cap + 1;

	if (!g->addr)
		return;
	xunmap(g->addr, n * sizeof(*g->addr));
	xunmap(g->size, n * sizeof(*g->size));
	xunmap(g->owner, n * sizeof(*g->owner));
	xunmap(g->parent, n * sizeof(*g->parent));
	xunmap(g->type, n * sizeof(*g->type));
	xunmap(g->work, n * sizeof(*g->work));
	xunmap(g->buf, HG_BATCH_BYTES);
	memset(g, 0, sizeof(*g));
}

size_t heapgraph_seal(struct heapgraph *g)
{
	size_t k = 0;
	uint64_t end = 0;

	for (size_t i = 0; i < g->n; i++) {
		uint64_t a = g->addr[i], s = g->size[i];

		if (!s || a < end || a + s < a)
			continue;	/* out of order, overlapping, empty or wrapping */
		g->addr[k] = a;
		g->size[k] = s;
		end = a + s;
		k++;
	}
	g->n = k;
	for (size_t i = 0; i < k; i++) {
		g->owner[i] = HG_NONE;
		g->parent[i] = HG_NONE;
		g->type[i] = 0;
	}
	g->lo = k ? g->addr[0] : 1;
	g->hi = k ? g->addr[k - 1] + g->size[k - 1] : 0;
	return k;
}

size_t heapgraph_first_from(const struct heapgraph *g, uint64_t lo)
{
	size_t a = 0, b = g->n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (g->addr[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

long heapgraph_find(const struct heapgraph *g, uint64_t p)
{
	size_t after;

	if (p < g->lo || p >= g->hi)
		return -1;	/* most words: small numbers, code, strings */
	after = heapgraph_first_from(g, p + 1);	/* the last block starting at or below p */
	return after && p - g->addr[after - 1] < g->size[after - 1] ? (long)after - 1 : -1;
}

int heapgraph_parent(const struct heapgraph *g, size_t i, size_t *block, uint32_t *root)
{
	uint32_t p = g->parent[i];

	if (p == HG_NONE)
		return -1;
	if (p < g->n) {
		*block = p;
		return 1;
	}
	*root = p - (uint32_t)g->n;
	return 0;
}

/* Block b reached by owner (a root id or HG_SHARED) from parent: it is
 * owned by owner if nothing reached it before, shared if something else
 * did; queued to be scanned when that changed. */
static void reach(struct heapgraph *g, size_t b, uint32_t owner, uint32_t parent)
{
	uint32_t was = g->owner[b];

	if (was == owner || was == HG_SHARED)
		return;
	if (was == HG_NONE) {
		g->owner[b] = owner;
		g->parent[b] = parent;
	} else {
		g->owner[b] = HG_SHARED;
	}
	if (!(g->type[b] & HG_QUEUED)) {
		g->type[b] |= HG_QUEUED;
		g->work[g->nwork++] = (uint32_t)b;	/* at most n: queued once at a time */
	}
}

/* The words of w[0..n) point to what they hit, reached by owner from parent. */
static void scan_words(struct heapgraph *g, const uint8_t *p, size_t len, uint32_t owner,
		       uint32_t parent)
{
	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint64_t w;
		long b;

		memcpy(&w, p + off, 8);
		b = heapgraph_find(g, w);
		if (b >= 0)
			reach(g, (size_t)b, owner, parent);
	}
	g->words += len / 8;
}

/* Read spans[0..n) into g->buf and scan each as block ids[i]'s words;
 * a batch that cannot be read is read span by span (a block on a page
 * the copy lacks is left unscanned). */
static void scan_batch(struct heapgraph *g, const struct hg_span *spans, const uint32_t *ids,
		       const uint32_t *owners, size_t n)
{
	size_t off = 0;

	g->reads++;
	if (g->read(g->read_arg, spans, n, g->buf) == 0) {
		for (size_t i = 0; i < n; i++) {
			scan_words(g, g->buf + off, spans[i].len, owners[i], ids[i]);
			off += spans[i].len;
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		g->reads++;
		if (g->read(g->read_arg, &spans[i], 1, g->buf) == 0)
			scan_words(g, g->buf, spans[i].len, owners[i], ids[i]);
		else
			g->unread += spans[i].len;
	}
}

/* Scan block b's words, a large block in pieces of HG_BATCH_BYTES. */
static void scan_big(struct heapgraph *g, size_t b)
{
	uint64_t size = g->size[b] & ~7ULL;

	for (uint64_t at = 0; at < size; at += HG_BATCH_BYTES) {
		struct hg_span sp = { g->addr[b] + at, size - at < HG_BATCH_BYTES ?
						       (size_t)(size - at) : HG_BATCH_BYTES };
		uint32_t id = (uint32_t)b, owner = g->owner[b];

		scan_batch(g, &sp, &id, &owner, 1);
	}
}

/* Scan what the worklist holds, and what it reaches, until it is empty:
 * in batches of blocks read by one call each. */
static void drain(struct heapgraph *g)
{
	static struct hg_span spans[HG_BATCH];
	static uint32_t ids[HG_BATCH], owners[HG_BATCH];

	while (g->nwork) {
		size_t n = 0, bytes = 0;

		while (g->nwork && n < HG_BATCH) {
			size_t b = g->work[g->nwork - 1];
			size_t len = (size_t)(g->size[b] & ~7ULL);

			if (len > HG_BATCH_BYTES) {
				if (n)
					break;	/* the batch first */
				g->nwork--;
				g->type[b] &= ~HG_QUEUED;
				scan_big(g, b);
				continue;
			}
			if (bytes + len > HG_BATCH_BYTES)
				break;
			g->nwork--;
			g->type[b] &= ~HG_QUEUED;	/* a change while in the batch queues it again */
			spans[n] = (struct hg_span){ g->addr[b], len };
			ids[n] = (uint32_t)b;
			owners[n] = g->owner[b];
			bytes += len;
			n++;
		}
		if (n)
			scan_batch(g, spans, ids, owners, n);
	}
}

int heapgraph_root_range(struct heapgraph *g, uint32_t id, uint64_t lo, uint64_t hi)
{
	uint32_t parent = (uint32_t)g->n + id;
	size_t done = 0;

	lo = (lo + 7) & ~7ULL;
	for (uint64_t at = lo; at < hi; at += HG_BATCH_BYTES) {
		struct hg_span sp = { at, hi - at < HG_BATCH_BYTES ? (size_t)(hi - at) : HG_BATCH_BYTES };

		g->reads++;
		if (g->read(g->read_arg, &sp, 1, g->buf)) {
			g->unread += sp.len;
			continue;
		}
		scan_words(g, g->buf, sp.len, id, parent);
		done++;
		drain(g);
	}
	return done || lo >= hi ? 0 : -EFAULT;
}

void heapgraph_root_words(struct heapgraph *g, uint32_t id, const uint64_t *w, size_t n)
{
	scan_words(g, (const uint8_t *)w, n * 8, id, (uint32_t)g->n + id);
	drain(g);
}
