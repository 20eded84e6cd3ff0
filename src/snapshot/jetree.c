/* jemalloc 5.3's extents map walked: every leaf, element and edata_t checked, its active extents, the memory it manages (extents, base blocks). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/jeblocks_priv.h"

#define MAX_ELEMS (8u << 20)            /* pages mapped: 32 GiB */
#define JE_HUGEPAGE (2ULL << 20)                /* base blocks' alignment and granule */
#define MAX_BASE_BACK 512                       /* 2 MiB steps back to a base block's start */
#define MAX_BASE_SIZE (1ULL << 32)
#define MAX_BASE_STEPS (1u << 17)               /* boundaries looked at, a walk: 256 MiB back from each of 256 */

/* By edata, then page. */
static int cmp_elem(const void *a, const void *b)
{
	const struct jeelem *x = a, *y = b;
	uint64_t ex = LE_EDATA(x->bits), ey = LE_EDATA(y->bits);

	if (ex != ey)
		return ex < ey ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct jeextent *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

void jeblocks_own(struct jewalk *w, uint64_t addr, uint64_t len)
{
	if (w->nown == w->capown) {
		w->capown = w->capown ? 2 * w->capown : 1024;
		w->own = xrealloc(w->own, w->capown * sizeof(*w->own));
	}
	w->own[w->nown++] = (struct hg_span){ addr, len };
}

/* Whether a leaf at lp would overlap one read before (each leaf is its own
 * allocation: a root whose entries share a leaf or overlap would have it
 * read, 2 MiB, 1024 times over). */
static int leaf_overlaps(const struct jewalk *w, uint64_t lp)
{
	for (size_t k = 0; k < w->nleaf; k++)
		if (lp < w->leaf[k].len + JE_ARRAY && w->leaf[k].len < lp + JE_ARRAY)
			return 1;
	return 0;
}

/* Every element of the tree whose root array is at root into w->el. 0 or -errno (said). */
static int read_tree(struct jewalk *w, uint64_t root)
{
	uint64_t *rootv = xmap(JE_ARRAY);
	size_t cap = 0;
	int rc = 0;

	if (jeblocks_rd(w, root, rootv, JE_ARRAY)) {
		jeblocks_say(w->why, w->len, "its root at %#llx cannot be read", (unsigned long long)root);
		rc = -EFAULT;
		goto out;
	}
	for (uint64_t i0 = 0; i0 < (1u << JE_LEVEL_BITS); i0++) {
		const uint64_t *leaf = (const uint64_t *)w->buf;
		uint64_t lp = rootv[i0];

		if (!lp)
			continue;
		if (++w->st->leaves > JE_MAX_LEAVES) {
			jeblocks_say(w->why, w->len, "more than %u leaves", JE_MAX_LEAVES);
			rc = -E2BIG;
			goto out;
		}
		if (lp % JE_LEAF_ALIGN || !jeblocks_anon_rw(w->maps, lp, JE_ARRAY) ||
		    leaf_overlaps(w, lp) || jeblocks_rd(w, lp, w->buf, JE_ARRAY)) {
			jeblocks_say(w->why, w->len, "entry %llu of the root at %#llx is no leaf (%#llx)",
			    (unsigned long long)i0, (unsigned long long)root, (unsigned long long)lp);
			rc = -EINVAL;
			goto out;
		}
		jeblocks_own(w, lp, JE_ARRAY);
		w->leaf[w->nleaf++] = (struct hg_span){ i0 << 30, lp };
		for (uint64_t j = 0; j < (1u << JE_LEVEL_BITS); j++) {
			if (!LE_EDATA(leaf[j]))
				continue;	/* none, or cleared (szind SC_NSIZES, no edata) */
			if (w->nel == MAX_ELEMS) {
				jeblocks_say(w->why, w->len, "more than %u pages mapped", MAX_ELEMS);
				rc = -E2BIG;
				goto out;
			}
			if (w->nel == cap) {
				cap = cap ? 2 * cap : 4096;
				w->el = xrealloc(w->el, cap * sizeof(*w->el));
			}
			w->el[w->nel++] = (struct jeelem){ (i0 << 30) | (j << 12), leaf[j] };
		}
	}
	w->st->pages = w->nel;
out:
	xunmap(rootv, JE_ARRAY);
	return rc;
}

/* Read every edata_t the elements name (sorted by edata), HG_BATCH at a time; one that
 * cannot be read is all ones (a state past the last: torn). 0. */
static int read_edatas(struct jewalk *w)
{
	static struct hg_span sp[HG_BATCH];
	static uint64_t buf[HG_BATCH * JE_EDATA / 8];
	size_t n = 0;

	for (size_t i = 0; i < w->nel; i++)
		n += !i || LE_EDATA(w->el[i].bits) != LE_EDATA(w->el[i - 1].bits);
	w->ed = xmalloc((n + 1) * sizeof(*w->ed));
	n = 0;
	for (size_t i = 0; i < w->nel; i++) {
		uint64_t e = LE_EDATA(w->el[i].bits);

		if (n && w->ed[n - 1].at == e)
			continue;
		w->ed[n++].at = e;
	}
	w->ned = n;
	for (size_t i = 0; i < n;) {
		size_t k = 0;

		for (; k < HG_BATCH && i + k < n; k++)
			sp[k] = (struct hg_span){ w->ed[i + k].at, JE_EDATA };
		if (w->read(w->read_arg, sp, k, (uint8_t *)buf) == 0) {
			for (size_t m = 0; m < k; m++)
				memcpy(w->ed[i + m].w, &buf[m * JE_EDATA / 8], JE_EDATA);
		} else {
			for (size_t m = 0; m < k; m++)	/* one at a time: which cannot */
				if (!jeblocks_anon_rw(w->maps, w->ed[i + m].at, JE_EDATA) ||
				    jeblocks_rd(w, w->ed[i + m].at, w->ed[i + m].w, JE_EDATA))
					memset(w->ed[i + m].w, 0xff, JE_EDATA);	/* state 7: torn */
		}
		i += k;
	}
	return 0;
}

/* Whether the extent of edata d, which elements el[0..n) name, holds
 * together; an active one into w->ex. */
static int take_extent(struct jewalk *w, const struct jeedata *d, const struct jeelem *el, size_t n)
{
	uint64_t b = d->w[0], addr = d->w[1], size = d->w[2] & ~(JE_PAGE - 1);
	uint64_t base = addr & ~(JE_PAGE - 1);
	unsigned state = EB_STATE(b), slab = EB_SLAB(b), szind = EB_SZIND(b);
	unsigned promoted = !slab && szind < JE_NBINS;
	const struct proc_map *m = proc_maps_find(w->maps, base);
	struct jeextent *x;

	if (state > STATE_MAX || !size || base + size < base)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (el[i].key < base || el[i].key >= base + size || LE_STATE(el[i].bits) != state ||
		    (state == STATE_ACTIVE && (LE_SLAB(el[i].bits) != slab ||
					       (LE_SZIND(el[i].bits) != szind &&
						(el[i].key == base ||
						 (LE_SZIND(el[i].bits) != JE_NSIZES &&
						  !(promoted && LE_SZIND(el[i].bits) == JE_NBINS)))))))
			return 0;	/* a tail page's szind may be SC_NSIZES, or a promoted one's large class */
	jeblocks_own(w, base, size);
	jeblocks_own(w, d->at & ~(JE_PAGE - 1), JE_PAGE);
	if (state != STATE_ACTIVE)
		return 1;
	if (!m || (m->prot & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_SHARED)) != (PROC_MAP_R | PROC_MAP_W))
		return 0;	/* in use: in jemalloc's private writable memory */
	if (slab) {
		uint64_t reg = jeblocks_class_size(szind), nfree = 0;

		if (szind >= JE_NBINS || addr != base || size % reg || size / reg > JE_MAXREGS ||
		    n != size / JE_PAGE)
			return 0;
		for (uint64_t r = 0; r < size / reg; r++)
			nfree += (d->w[8 + r / 64] >> (r % 64)) & 1;
		if (nfree != EB_NFREE(b))
			return 0;
	} else if (szind >= JE_NSIZES || addr - base >= JE_PAGE || n > 2 ||
		   addr - base + (promoted ? JE_LARGE_MIN : jeblocks_class_size(szind)) > size) {
		return 0;	/* promoted: a small one prof sampled, alone in an extent of the first large class */
	}
	x = &w->ex[w->nex++];
	*x = (struct jeextent){ .base = base, .addr = addr, .size = size, .slab = slab,
			      .szind = szind, .nfree = EB_NFREE(b) };
	memcpy(x->bitmap, &d->w[8], sizeof(x->bitmap));
	memcpy(x->prof, &d->w[9], sizeof(x->prof));
	return 1;
}

/* Whether addr is inside one of the extents or base blocks taken so far (w->own, unsorted). */
static int owned(const struct jewalk *w, uint64_t addr, size_t from)
{
	for (size_t i = from; i < w->nown; i++)
		if (addr >= w->own[i].addr && addr - w->own[i].addr < w->own[i].len)
			return 1;
	return 0;
}

/*
 * The base block (base.h: base_block_t, its size then the next block, at
 * a 2 MiB boundary, its size a multiple of 2 MiB) holding jemalloc's
 * metadata at addr, into w->own: the nearest boundary at or below addr
 * whose header covers addr and is no extent. Its base's later blocks
 * (next) too. Bounded: MAX_BASE_BACK boundaries, 1024 blocks; MAX_BASE_STEPS
 * boundaries in all (each edata_t outside every block found looks back
 * again: 2^18 of them, garbage, would look at 2^27).
 */
static void base_block(struct jewalk *w, uint64_t addr, size_t extents)
{
	uint64_t b = addr & ~(JE_HUGEPAGE - 1), hd[5];

	for (unsigned k = 0; k < MAX_BASE_BACK && b && w->base_steps++ < MAX_BASE_STEPS;
	     k++, b -= JE_HUGEPAGE) {
		if (owned(w, b, 0))
			return;	/* inside an extent, or a block found already */
		if (!jeblocks_anon_rw(w->maps, b, sizeof(hd)) || jeblocks_rd(w, b, hd, sizeof(hd)) ||
		    !hd[0] || hd[0] % JE_HUGEPAGE || hd[0] > MAX_BASE_SIZE || b + hd[0] <= addr ||
		    hd[1] % JE_HUGEPAGE || hd[3] < b || hd[3] > b + hd[0])
			continue;
		for (unsigned n = 0; n < 1024 && b && !owned(w, b, extents); n++) {
			jeblocks_own(w, b, hd[0]);
			b = hd[1];
			if (!b || !jeblocks_anon_rw(w->maps, b, sizeof(hd)) || jeblocks_rd(w, b, hd, sizeof(hd)) ||
			    !hd[0] || hd[0] % JE_HUGEPAGE || hd[0] > MAX_BASE_SIZE ||
			    hd[1] % JE_HUGEPAGE || hd[3] < b || hd[3] > b + hd[0])
				break;
		}
		return;
	}
}

int jeblocks_walk(struct jewalk *w, uint64_t root)
{
	size_t good = 0, e = 0, extents;
	int rc;

	w->base_steps = 0;
	rc = read_tree(w, root);
	if (rc)
		return rc;
	if (w->nel)	/* a tree of no leaves: w->el is NULL */
		qsort(w->el, w->nel, sizeof(*w->el), cmp_elem);
	read_edatas(w);
	w->ex = xmalloc((w->ned + 1) * sizeof(*w->ex));
	for (size_t i = 0; i < w->nel;) {
		size_t k = i;

		while (k < w->nel && LE_EDATA(w->el[k].bits) == w->ed[e].at)
			k++;
		if (take_extent(w, &w->ed[e], &w->el[i], k - i))
			good++;
		else
			w->st->torn++;
		i = k;
		e++;
	}
	qsort(w->ex, w->nex, sizeof(*w->ex), cmp_extent);
	extents = w->nown;
	for (size_t i = 0; i < extents; i++)	/* the metadata: base blocks */
		if (w->own[i].len == JE_ARRAY && !owned(w, w->own[i].addr, extents))
			base_block(w, w->own[i].addr, extents);	/* a leaf */
	for (size_t i = 0; i < w->ned; i++)
		if (!owned(w, w->ed[i].at, extents))
			base_block(w, w->ed[i].at, extents);
	for (size_t i = 1; i < w->nex; i++)
		if (w->ex[i - 1].base + w->ex[i - 1].size > w->ex[i].base) {
			jeblocks_say(w->why, w->len, "extents at %#llx and %#llx overlap",
			    (unsigned long long)w->ex[i - 1].base, (unsigned long long)w->ex[i].base);
			return -EINVAL;
		}
	if (!w->nex || w->st->torn > 8 + good / 100) {
		jeblocks_say(w->why, w->len, "the tree at %#llx does not hold together: %llu of %zu extents "
		    "disagree with it, %zu active", (unsigned long long)root,
		    (unsigned long long)w->st->torn, w->ned, w->nex);
		return -EINVAL;
	}
	return 0;
}

void jeblocks_walk_free(struct jewalk *w)
{
	if (w->buf)
		xunmap(w->buf, JE_ARRAY);
	free(w->el);
	free(w->ed);
	free(w->ex);
	free(w->own);
	w->own = NULL;
	w->nown = w->capown = 0;
	w->nleaf = 0;
	w->buf = NULL;
	w->el = NULL;
	w->ed = NULL;
	w->ex = NULL;
	w->nel = w->ned = w->nex = 0;
}
