/* jemalloc's extents map found without symbols: by its shape in the writable data of its object (libjemalloc*, else any), and taken when all of it holds together. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/jeblocks_priv.h"

#define MAX_REGION (64ULL << 20)        /* writable data searched, an object */
#define FIND_TRIES 3                    /* walks of a candidate, the target running */
#define MAX_CANDIDATES 64               /* leaves tried while searching */
#define MAX_GIGS 4096                   /* 1 GiB regions of anonymous memory told apart */

/* The root a leaf pointer found at address at would sit at, from its leaf's
 * first element (its page's upper bits say which root entry it is): 0 if none. */
static uint64_t root_of_leaf(const struct jewalk *w, const struct proc_maps *maps, uint8_t *buf,
			     uint64_t at, uint64_t lp)
{
	const uint64_t *leaf = (const uint64_t *)buf;
	uint64_t d[JE_EDATA / 8];

	if (lp % JE_LEAF_ALIGN || !jeblocks_anon_rw(maps, lp, JE_ARRAY) || jeblocks_rd(w, lp, buf, JE_ARRAY))
		return 0;
	for (uint64_t j = 0; j < (1u << JE_LEVEL_BITS); j++) {
		uint64_t e = LE_EDATA(leaf[j]), base, size;

		if (!e)
			continue;
		if (!jeblocks_anon_rw(maps, e, JE_EDATA) || jeblocks_rd(w, e, d, sizeof(d)))
			return 0;
		base = d[1] & ~(JE_PAGE - 1);
		size = d[2] & ~(JE_PAGE - 1);
		for (int end = 0; end < 2; end++) {
			uint64_t i0 = ((end ? base + size - 1 : base) >> 30) & ((1u << JE_LEVEL_BITS) - 1);
			uint64_t key = (i0 << 30) | (j << 12);

			if (key >= base && key < base + size && at >= 8 * i0)
				return at - 8 * i0;
		}
		return 0;
	}
	return 0;
}

/* The writable data of object m (its rw mappings and the anonymous one after): [lo, hi). */
static void data_span(const struct proc_maps *maps, size_t i, uint64_t *lo, uint64_t *hi)
{
	*lo = maps->v[i].start;
	*hi = maps->v[i].end;
	if (i + 1 < maps->n && maps->v[i + 1].start == *hi && !maps->v[i + 1].path &&
	    (maps->v[i + 1].prot & PROC_MAP_W))
		*hi = maps->v[i + 1].end;
	if (*hi - *lo > MAX_REGION)
		*hi = *lo + MAX_REGION;
}

/* The 1 GiB regions (root entries) holding private writable anonymous
 * memory, where jemalloc's extents are: distinct, MAX_GIGS at most. */
struct gigs {
	uint64_t v[MAX_GIGS];
	size_t n;
};

static void gigs_of(const struct proc_maps *maps, struct gigs *g)
{
	g->n = 0;
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];

		if (!jeblocks_anon_rw(maps, m->start, m->end - m->start))
			continue;
		for (uint64_t k = m->start >> 30; k <= (m->end - 1) >> 30 && g->n < MAX_GIGS; k++)
			if (!g->n || g->v[g->n - 1] != k)
				g->v[g->n++] = k;
	}
}

/* Whether a leaf pointer at address at may be an entry of a root array
 * inside [lo, hi): for one of the regions g, the array would start there. */
static int may_be_entry(const struct gigs *g, uint64_t at, uint64_t lo, uint64_t hi)
{
	for (size_t k = 0; k < g->n; k++) {
		uint64_t i0 = g->v[k] & ((1u << JE_LEVEL_BITS) - 1);

		if (at >= lo + 8 * i0 && at - 8 * i0 + JE_ARRAY <= hi)
			return 1;
	}
	return 0;
}

/* Roots of the leaves pointed at from [lo, hi) into cand (n of them, distinct). */
static void search_span(const struct jewalk *w, const struct proc_maps *maps, const struct gigs *g,
			uint64_t lo, uint64_t hi, uint8_t *leafbuf, uint64_t *cand, size_t *n,
			unsigned *tried)
{
	size_t len = hi - lo;
	uint64_t *v;

	if (len < JE_ARRAY)
		return;	/* no room for a root array */
	v = xmap(len);
	if (jeblocks_rd(w, lo, v, len))	/* w reads any length */
		goto out;
	for (size_t i = 0; i < len / 8 && *tried < MAX_CANDIDATES; i++) {
		uint64_t r, at = lo + 8 * i;

		if (!v[i] || v[i] % JE_LEAF_ALIGN || !may_be_entry(g, at, lo, hi) ||
		    !jeblocks_anon_rw(maps, v[i], JE_ARRAY))
			continue;
		(*tried)++;
		r = root_of_leaf(w, maps, leafbuf, at, v[i]);
		if (!r || r < lo || r + JE_ARRAY > hi)
			continue;
		for (size_t k = 0; k <= *n; k++)
			if (k == *n) {
				if (*n < 4)
					cand[(*n)++] = r;
				break;
			} else if (cand[k] == r) {
				break;
			}
	}
out:
	xunmap(v, len);
}

int jeblocks_libjemalloc(const struct proc_map *m)
{
	const char *b = m->path ? strrchr(m->path, '/') : NULL;

	return b && !strncmp(b + 1, "libjemalloc", 11);
}

int jeblocks_find(pid_t pid, const struct proc_maps *maps, uint64_t *root, char *why, size_t len)
{
	return jeblocks_find_read(jeblocks_read_pid, &pid, maps, root, why, len);
}

int jeblocks_find_read(hg_read_fn read, void *arg, const struct proc_maps *maps, uint64_t *root,
		       char *why, size_t len)
{
	struct jeblocks_stats st;
	struct jewalk w = { .read = read, .read_arg = arg, .maps = maps, .st = &st,
			    .why = why, .len = len };
	uint64_t cand[4], found = 0;
	size_t n = 0;
	unsigned tried = 0, ok = 0;
	int named = 0;
	struct gigs *g;

	for (size_t i = 0; i < maps->n; i++)
		named |= jeblocks_libjemalloc(&maps->v[i]);
	g = xmalloc(sizeof(*g));
	gigs_of(maps, g);
	w.buf = xmap(JE_ARRAY);
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		uint64_t lo, hi;

		if (!m->path || m->path[0] != '/' || (m->prot & (PROC_MAP_W | PROC_MAP_SHARED)) !=
		    PROC_MAP_W || (named && !jeblocks_libjemalloc(m)))
			continue;
		data_span(maps, i, &lo, &hi);
		search_span(&w, maps, g, lo, hi, w.buf, cand, &n, &tried);
	}
	jeblocks_say(why, len, "no extents map found in its data");
	for (size_t k = 0; k < n; k++)	/* the target runs: a walk it tore is tried again */
		for (int tries = 0; tries < FIND_TRIES; tries++) {
			int rc;

			memset(&st, 0, sizeof(st));
			rc = jeblocks_walk(&w, cand[k]);
			jeblocks_walk_free(&w);
			w.buf = xmap(JE_ARRAY);
			if (!rc) {
				ok++;
				found = cand[k];
				break;
			}
		}
	xunmap(w.buf, JE_ARRAY);
	free(g);
	if (ok > 1)
		jeblocks_say(why, len, "%u trees of extents found", ok);
	if (ok != 1)
		return -ENOENT;
	*root = found;
	return 0;
}
