/* tcmalloc's pagemap walked: its size classes checked, and every span it maps, each checked. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/tcblocks_priv.h"

int tcblocks_rd(const struct tcwalk *w, uint64_t addr, void *buf, size_t n)
{
	uint8_t *b = buf;

	while (n) {	/* the reader takes HG_BATCH_BYTES a span */
		struct hg_span s = { addr, n < HG_BATCH_BYTES ? n : HG_BATCH_BYTES };

		if (w->read(w->read_arg, &s, 1, b))
			return -EFAULT;
		addr += s.len;
		b += s.len;
		n -= s.len;
	}
	return 0;
}

int tcblocks_anon_rw(const struct proc_maps *maps, uint64_t addr, uint64_t n)
{
	const struct proc_map *m = proc_maps_find(maps, addr);

	return m && addr + n <= m->end && addr + n > addr &&
	       (m->prot & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_SHARED)) == (PROC_MAP_R | PROC_MAP_W) &&
	       (!m->path || !strncmp(m->path, "[anon", 5) || !strcmp(m->path, "[heap]"));
}

int tcblocks_lib(const struct proc_map *m)
{
	const char *b = m->path ? strrchr(m->path, '/') : NULL;

	return b && !strncmp(b + 1, "libtcmalloc", 11);
}

int tcblocks_sizes(struct tcwalk *w)
{
	uint8_t b[SM_BYTES];
	uint64_t n;

	if (w->at->sizes % 4 || tcblocks_rd(w, w->at->sizes, b, sizeof(b)))
		goto bad;
	memcpy(w->size, b, sizeof(w->size));
	memcpy(w->pages, b + SM_PAGES(w->at->sizes), sizeof(w->pages));
	memcpy(&n, b + SM_NUM(w->at->sizes), 8);
	if (n < 2 || n > TC_CLASSES_MAX || w->size[0] || w->size[n - 1] != TC_MAX_SIZE)
		goto bad;
	for (unsigned c = 1; c < n; c++)
		if (w->size[c] <= w->size[c - 1] || w->size[c] % 8 || !w->pages[c] ||
		    w->pages[c] > TC_CLASSES_MAX || w->pages[c] * TC_PAGE < w->size[c] ||
		    w->pages[c] * TC_PAGE / w->size[c] > TC_MAX_OBJS)
			goto bad;
	w->ncls = (unsigned)n;
	w->st->classes = w->ncls;
	return 0;
bad:
	snprintf(w->why, w->len, "its size classes at %#llx do not hold together",
		 (unsigned long long)w->at->sizes);
	return -EINVAL;
}

/* Whether [lo, lo + n) is mapped (by mappings end to end). */
static int mapped(const struct proc_maps *maps, uint64_t lo, uint64_t n)
{
	const struct proc_map *m = proc_maps_find(maps, lo), *last = maps->v + maps->n - 1;

	if (!m || lo + n < lo)
		return 0;
	for (; m->end < lo + n; m++)
		if (m == last || m[1].start != m->end)
			return 0;
	return 1;
}

/* Span s read (its words) as found at page key: added to w->sp when it
 * starts there (its other pages, and stale pointers, are not its head);
 * one in use must be mapped (its block is scanned): else torn. */
static void add_span(struct tcwalk *w, uint64_t s, const uint64_t *sw, uint64_t key)
{
	struct tcspan *x;
	uint64_t bits = sw[SP_BITS];

	if (sw[SP_START] != key || !sw[SP_LENGTH] || sw[SP_LENGTH] > (1ULL << 35) - key ||
	    SP_LOCATION(bits) > 2)
		return;
	if (SP_LOCATION(bits) == 0 && (SP_CLASS(bits) >= w->ncls ||
	    (SP_CLASS(bits) && sw[SP_LENGTH] != w->pages[SP_CLASS(bits)]) ||
	    !mapped(w->maps, key << TC_PAGE_SHIFT, sw[SP_LENGTH] << TC_PAGE_SHIFT))) {
		w->st->torn++;
		return;
	}
	if (w->nsp == w->capsp) {
		w->capsp = w->capsp ? 2 * w->capsp : 1024;
		w->sp = xrealloc(w->sp, w->capsp * sizeof(*w->sp));
	}
	x = &w->sp[w->nsp++];
	*x = (struct tcspan){ .at = s, .base = key << TC_PAGE_SHIFT,
			      .len = sw[SP_LENGTH] << TC_PAGE_SHIFT, .objects = sw[SP_OBJECTS],
			      .cls = SP_CLASS(bits), .refcount = SP_REFCOUNT(bits),
			      .location = SP_LOCATION(bits), .sample = SP_SAMPLE(bits) };
}

/* The spans of the leaf (read into w->buf) of root entry i1. */
static void leaf_spans(struct tcwalk *w, uint64_t i1)
{
	uint64_t last = 0, sw[TC_SPAN / 8];

	for (uint64_t j = 0; j < (1ULL << TC_LEAF_BITS); j++) {
		uint64_t s = w->buf[j];

		if (!s || s == last)
			continue;	/* a span's pages map to it one after the other */
		last = s;
		if (s % 8 || !tcblocks_anon_rw(w->maps, s, TC_SPAN) ||
		    tcblocks_rd(w, s, sw, sizeof(sw)))
			continue;
		add_span(w, s, sw, i1 << TC_LEAF_BITS | j);
	}
}

static int cmp_base(const void *a, const void *b)
{
	const struct tcspan *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

int tcblocks_spans(struct tcwalk *w)
{
	uint64_t *root = xmap(TC_ROOT_BYTES);
	size_t k = 0;
	int rc = -EINVAL;

	if (tcblocks_rd(w, w->at->root, root, TC_ROOT_BYTES)) {
		snprintf(w->why, w->len, "its pagemap at %#llx cannot be read",
			 (unsigned long long)w->at->root);
		goto out;
	}
	for (uint64_t i1 = 0; i1 < TC_ROOT_LEN; i1++) {
		if (!root[i1])
			continue;
		if (++w->st->leaves > TC_MAX_LEAVES || root[i1] % 8 ||
		    !tcblocks_anon_rw(w->maps, root[i1], TC_ARRAY) ||
		    tcblocks_rd(w, root[i1], w->buf, TC_ARRAY)) {
			snprintf(w->why, w->len, "its pagemap at %#llx: leaf %llu at %#llx is no "
				 "leaf", (unsigned long long)w->at->root, (unsigned long long)i1,
				 (unsigned long long)root[i1]);
			goto out;
		}
		leaf_spans(w, i1);
	}
	if (w->nsp)
		qsort(w->sp, w->nsp, sizeof(*w->sp), cmp_base);
	for (size_t i = 0; i < w->nsp; i++) {	/* overlapping spans: torn, dropped */
		if (k && w->sp[i].base < w->sp[k - 1].base + w->sp[k - 1].len) {
			w->st->torn++;
			continue;
		}
		w->sp[k++] = w->sp[i];
	}
	w->nsp = k;
	rc = 0;
out:
	xunmap(root, TC_ROOT_BYTES);
	return rc;
}

void tcblocks_walk_free(struct tcwalk *w)
{
	free(w->sp);
	w->sp = NULL;
	w->nsp = w->capsp = 0;
}
