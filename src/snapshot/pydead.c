/* CPython 3.8-3.10's dead frames (a code object's zombie frame, the frame free list): blocks in use whose words are stale. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/pydead.h"

#define GC_HEAD 16                      /* sizeof(PyGC_Head) */
#define HEAD 32                         /* ob_refcnt, ob_type, ob_size, f_back */
#define F_BACK 24                       /* PyFrameObject.f_back */
#define F_CODE 32                       /* PyFrameObject.f_code: hidden from here */
#define MIN_SIZE 128                    /* bytes of a frame's block at least */

static uint64_t word(const uint8_t *p, size_t off)
{
	uint64_t w;

	memcpy(&w, p + off, 8);
	return w;
}

/* The type of frames: the one of the first block named "frame", or 0. */
static uint64_t frame_type(const struct heapgraph *g, uint32_t frame)
{
	uint8_t h[HEAD];

	for (size_t b = 0; b < g->n; b++) {
		struct hg_span s = { g->addr[b] + GC_HEAD, HEAD };

		if (g->type[b] == frame && heapgraph_size(g, b) >= MIN_SIZE &&
		    !g->read(g->read_arg, &s, 1, h) && word(h, 8))
			return word(h, 8);
	}
	return 0;
}

static void add(struct pydead *d, uint64_t at, uint64_t len)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 256;
		d->at = xrealloc(d->at, d->cap * sizeof(*d->at));
		d->len = xrealloc(d->len, d->cap * sizeof(*d->len));
	}
	d->at[d->n] = at;
	d->len[d->n++] = len;
}

/* Whether the frame at a is a live one (its block named "frame"). */
static int live(const struct heapgraph *g, uint64_t a, uint32_t frame)
{
	long b = heapgraph_find(g, a);

	return b >= 0 && g->addr[b] + GC_HEAD == a && g->type[b] == frame;
}

/* Blocks first[0..k) (their heads read into buf, HEAD bytes each): each a
 * dead frame of type ft is added, from f_code on, from f_back when that
 * is a live frame (the caller it had: a free list's link is a dead one). */
static void check(const struct heapgraph *g, const size_t *first, size_t k, const uint8_t *buf,
		  uint64_t ft, uint32_t frame, struct pydead *d)
{
	for (size_t i = 0; i < k; i++) {
		size_t b = first[i];
		const uint8_t *h = buf + i * HEAD;
		uint64_t from = live(g, word(h, F_BACK), frame) ? F_BACK : F_CODE;

		if (!word(h, 0) && word(h, 8) == ft)
			add(d, g->addr[b] + GC_HEAD + from, heapgraph_size(g, b) - GC_HEAD - from);
	}
}

void pydead_find(const struct heapgraph *g, struct snapnames *names, struct pydead *d)
{
	static struct hg_span spans[HG_BATCH];
	static size_t first[HG_BATCH];
	uint8_t *buf;
	uint32_t frame = snapnames_id(names, "frame");
	uint64_t ft = frame_type(g, frame);
	size_t k = 0;

	memset(d, 0, sizeof(*d));
	if (!ft)
		return;
	buf = xmalloc(HG_BATCH * HEAD);
	for (size_t b = 0; b <= g->n; b++) {
		const char *name = b < g->n ? snapnames_name(names, g->type[b]) : NULL;

		if (b < g->n && ((name && name[0] != '[') || heapgraph_size(g, b) < MIN_SIZE))
			continue;	/* a live object is named by its type; a dead one by its size */
		if (b < g->n) {
			spans[k] = (struct hg_span){ g->addr[b] + GC_HEAD, HEAD };
			first[k++] = b;
		}
		if (k == HG_BATCH || (b == g->n && k)) {
			if (g->read(g->read_arg, spans, k, buf) == 0)
				check(g, first, k, buf, ft, frame, d);
			else	/* one by one */
				for (size_t i = 0; i < k; i++)
					if (!g->read(g->read_arg, &spans[i], 1, buf))
						check(g, &first[i], 1, buf, ft, frame, d);
			k = 0;
		}
	}
	free(buf);
}

void pydead_free(struct pydead *d)
{
	free(d->at);
	free(d->len);
	memset(d, 0, sizeof(*d));
}
