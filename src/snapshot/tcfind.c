/* tcmalloc's statics found without their symbols: its size classes, central free lists and pagemap by their shape in the writable data of its object (libtcmalloc*, else any); its thread caches by their exported symbol. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/target.h"
#include "snapshot/tcblocks_priv.h"

#define MAX_REGION (64ULL << 20)        /* writable data searched, an object */
#define MAX_LEAF_TRIES 64               /* leaves looked at while searching */
#define MAX_SPAN_TRIES 64               /* spans of a leaf looked at */
#define TC_HEAPS_SYM "_ZN8tcmalloc11ThreadCache13thread_heaps_E"
/* sampler.cc's FLAGS_tcmalloc_sample_parameter (commandlineflags.h's namespace) */
#define TC_FLAG_SYM "_ZN61FLAG__namespace_do_not_use_directly_use_DECLARE_int64_instead" \
	"31FLAGS_tcmalloc_sample_parameterE"

/* What the search found: each kind's first candidate, and how many. */
struct tcfound {
	uint64_t sizes, central, root;
	unsigned nsizes, ncentral, nroot, tried;
};

/* One more candidate c of a kind (*first, *n), told apart from one found before. */
static void found(uint64_t c, uint64_t *first, unsigned *n)
{
	if (*n && *first == c)
		return;
	if (!(*n)++)
		*first = c;
}

/* Whether the int32 words at v (n of them) start as class_to_size_ does: 0, 8, 16, 32. */
static int sizes_shape(const uint32_t *v, size_t n)
{
	return n >= SM_BYTES / 4 && !v[0] && v[1] == 8 && v[2] == 16 && v[3] == 32;
}

/* Whether the words at v (n of them) are central_cache_[]: each
 * CentralFreeList's size_class_ its index, for the ncls classes. */
static int central_shape(const uint64_t *v, size_t n, unsigned ncls)
{
	const size_t stride = TC_CENTRAL / 8, cls = CF_CLASS / 8;

	if (n < (size_t)ncls * stride || v[cls])
		return 0;
	for (unsigned k = 1; k < ncls; k++)
		if (v[k * stride + cls] != k)
			return 0;
	return 1;
}

/* Whether the root of a pagemap may be at r: its walk finds spans. */
static int root_walks(struct tcwalk *w, uint64_t r)
{
	struct tcblocks_stats st = { 0 };
	struct tcblocks_at at = *w->at;
	const struct tcblocks_at *keep = w->at;
	struct tcblocks_stats *keep_st = w->st;
	int ok;

	at.root = r;
	w->at = &at;
	w->st = &st;
	ok = !tcblocks_spans(w) && w->nsp > 0;
	tcblocks_walk_free(w);
	w->at = keep;
	w->st = keep_st;
	return ok;
}

/* A leaf pointer lp at address at: the root it is an entry of, from the
 * first span its leaf maps from its start (that page's upper bits say
 * which entry; MAX_SPAN_TRIES pointers looked at), when that root walks.
 * 0 if none. */
static uint64_t root_of_leaf(struct tcwalk *w, uint64_t at, uint64_t lp, uint64_t lo, uint64_t hi)
{
	uint64_t sw[TC_SPAN / 8], last = 0;
	unsigned tries = 0;

	if (lp % 8 || !tcblocks_anon_rw(w->maps, lp, TC_ARRAY) || w->st->leaves++ >= MAX_LEAF_TRIES ||
	    tcblocks_rd(w, lp, w->buf, TC_ARRAY))
		return 0;
	for (uint64_t j = 0; j < (1ULL << TC_LEAF_BITS) && tries < MAX_SPAN_TRIES; j++) {
		uint64_t s = w->buf[j], i1, r;

		if (!s || s == last)
			continue;
		last = s;
		tries++;
		if (s % 8 || !tcblocks_anon_rw(w->maps, s, TC_SPAN) || tcblocks_rd(w, s, sw, sizeof(sw)))
			return 0;
		i1 = sw[SP_START] >> TC_LEAF_BITS;
		if ((sw[SP_START] & ((1ULL << TC_LEAF_BITS) - 1)) != j || i1 >= TC_ROOT_LEN ||
		    at < lo + 8 * i1)
			continue;
		r = at - 8 * i1;
		return r + TC_ROOT_BYTES <= hi && root_walks(w, r) ? r : 0;
	}
	return 0;
}

/* The candidates in the data [lo, hi), read into v: the size classes
 * (pass 0), then the central free lists and the pagemap (pass 1: the
 * classes known, in w). */
static void search_span(struct tcwalk *w, const uint64_t *v, uint64_t lo, uint64_t hi,
			int pass, struct tcfound *f)
{
	size_t n = (hi - lo) / 8;
	struct tcblocks_at at = { 0 };
	const struct tcblocks_at *keep = w->at;
	struct tcwalk probe = *w;

	probe.at = &at;
	for (size_t i = 0; i < n; i++) {
		uint64_t r;

		for (size_t h = 0; !pass && h < 2; h++)	/* int32s: at either half */
			if (sizes_shape((const uint32_t *)(v + i) + h, 2 * (n - i) - h)) {
				at.sizes = lo + 8 * i + 4 * h;
				if (!tcblocks_sizes(&probe))
					found(at.sizes, &f->sizes, &f->nsizes);
			}
		if (!pass)
			continue;
		if (central_shape(v + i, n - i, w->ncls))
			found(lo + 8 * i, &f->central, &f->ncentral);
		if (f->nroot || !v[i] || hi - lo < TC_ROOT_BYTES)
			continue;
		r = root_of_leaf(w, lo + 8 * i, v[i], lo, hi);
		if (r)
			found(r, &f->root, &f->nroot);
	}
	w->at = keep;
}

/* The writable data of mapping i (with the anonymous one after: .bss): [lo, hi). */
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

/* One of a kind, or say why not. */
static int one(const char *what, unsigned n, char *why, size_t len)
{
	if (n == 1)
		return 0;
	if (n)
		snprintf(why, len, "%u %s found", n, what);
	else
		snprintf(why, len, "no %s found in its data", what);
	return -ENOENT;
}

int tcblocks_find_at(const struct proc_maps *maps, hg_read_fn read, void *arg, uint64_t heaps,
		     struct tcblocks_at *at, char *why, size_t len)
{
	struct tcblocks_stats st = { 0 };
	struct tcwalk w = { .read = read, .read_arg = arg, .maps = maps, .st = &st, .why = why,
			    .len = len };
	struct tcfound f = { 0 };
	struct tcblocks_at cur = { 0 };
	int named = 0, rc;

	for (size_t i = 0; i < maps->n; i++)
		named |= tcblocks_lib(&maps->v[i]);
	w.buf = xmap(TC_ARRAY);
	w.at = &cur;
	for (int pass = 0; pass < 2 && (!pass || f.nsizes == 1); pass++) {
		if (pass) {	/* the classes known */
			cur.sizes = f.sizes;
			tcblocks_sizes(&w);
		}
		for (size_t i = 0; i < maps->n; i++) {
			const struct proc_map *m = &maps->v[i];
			uint64_t lo, hi, *v;

			if (!m->path || m->path[0] != '/' || (m->prot & (PROC_MAP_W | PROC_MAP_SHARED)) !=
			    PROC_MAP_W || (named && !tcblocks_lib(m)))
				continue;
			data_span(maps, i, &lo, &hi);
			v = xmap(hi - lo);
			if (!tcblocks_rd(&w, lo, v, hi - lo))
				search_span(&w, v, lo, hi, pass, &f);
			xunmap(v, hi - lo);
		}
	}
	xunmap(w.buf, TC_ARRAY);
	rc = one("size classes", f.nsizes, why, len);
	if (!rc)
		rc = one("central free lists", f.ncentral, why, len);
	if (!rc)
		rc = one("pagemaps", f.nroot, why, len);
	if (rc)
		return rc;
	*at = (struct tcblocks_at){ .root = f.root, .sizes = f.sizes, .central = f.central,
				    .heaps = heaps };
	return 0;
}

int tcblocks_find(struct target *t, const struct proc_maps *maps, hg_read_fn read, void *arg,
		  struct tcblocks_at *at, char *why, size_t len)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const struct elfobj_sym *s;
		struct elfobj *e;
		uint64_t bias;
		int rc;

		if (!m->path || m->path[0] != '/')
			continue;
		e = target_object(t, m, TARGET_OBJ_SYMS, NULL);
		if (!e || !(s = elfobj_lookup(e, TC_HEAPS_SYM, 0)) || target_map_bias(t, m, e, &bias))
			continue;
		rc = tcblocks_find_at(maps, read, arg, bias + s->value, at, why, len);
		s = elfobj_lookup(e, TC_FLAG_SYM, 0);
		if (!rc && s)
			at->flag = bias + s->value;
		return rc;
	}
	snprintf(why, len, "no symbol ThreadCache::thread_heaps_ (its thread caches)");
	return -ENOENT;
}
