/* jemalloc 5.3's blocks in use, listed from a copy of the target that does not run: its extents map, slabs' bitmaps, large extents, minus its thread caches. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "snapshot/jeblocks_priv.h"

void jeblocks_say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

uint64_t jeblocks_class_size(unsigned szind)
{
	static const uint64_t first[] = { 8, 16, 32, 48, 64 };
	uint64_t base = 64, delta = 16;

	if (szind >= JE_NSIZES)
		return 0;
	if (szind < 5)
		return first[szind];
	szind -= 5;
	base <<= szind / 4;
	delta <<= szind / 4;
	return base + delta * (szind % 4 + 1);
}

int jeblocks_rd(const struct jewalk *w, uint64_t addr, void *buf, size_t n)
{
	struct hg_span s = { addr, n };

	return n ? w->read(w->read_arg, &s, 1, buf) : 0;
}

int jeblocks_read_pid(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	struct iovec l[IOV_MAX], r[IOV_MAX];

	while (n) {
		size_t k = n < IOV_MAX ? n : IOV_MAX, want = 0;

		for (size_t i = 0; i < k; i++) {
			l[i] = (struct iovec){ buf + want, s[i].len };
			r[i] = (struct iovec){ (void *)(uintptr_t)s[i].addr, s[i].len };
			want += s[i].len;
		}
		if (process_vm_readv(*(const pid_t *)arg, l, k, r, k, 0) != (ssize_t)want)
			return -EFAULT;
		buf += want;
		s += k;
		n -= k;
	}
	return 0;
}

int jeblocks_anon_rw(const struct proc_maps *maps, uint64_t addr, uint64_t n)
{
	const struct proc_map *m = proc_maps_find(maps, addr);

	return m && addr + n <= m->end && addr + n > addr &&
	       (m->prot & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_SHARED)) == (PROC_MAP_R | PROC_MAP_W) &&
	       (!m->path || !strncmp(m->path, "[anon", 5));
}


static int cmp_span(const void *a, const void *b)
{
	const struct hg_span *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int jeblocks_list(const struct proc_maps *maps, uint64_t root,
		  const struct snapthread *th, size_t nth, struct heapgraph *g, hg_read_fn gread,
		  void *garg, struct jeblocks_meta *meta, struct allocsites *as,
		  struct jeblocks_stats *st, char *why, size_t len)
{
	struct jewalk w = { .read = gread, .read_arg = garg, .maps = maps, .st = st, .why = why,
			    .len = len };
	struct jedrops d = { 0 };
	uint64_t n = 0;
	size_t b = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	memset(g, 0, sizeof(*g));
	memset(meta, 0, sizeof(*meta));
	st->root = root;
	w.buf = xmap(JE_ARRAY);
	rc = jeblocks_walk(&w, root);
	if (rc)
		goto out;
	for (size_t i = 0; i < w.nex; i++) {
		const struct jeextent *x = &w.ex[i];

		n += x->slab ? x->size / jeblocks_class_size(x->szind) - x->nfree : 1;
		st->slabs += x->slab;
		st->large += !x->slab;
	}
	rc = heapgraph_init(g, n, gread, garg);
	if (rc) {
		jeblocks_say(why, len, "%llu blocks: too many", (unsigned long long)n);
		goto out;
	}
	for (size_t i = 0; i < w.nex; i++) {
		const struct jeextent *x = &w.ex[i];
		uint64_t reg = jeblocks_class_size(x->szind);

		if (!x->slab) {
			heapgraph_set(g, b++, x->addr, reg);
			continue;
		}
		for (uint64_t r = 0; r < x->size / reg && b < n; r++)
			if (!((x->bitmap[r / 64] >> (r % 64)) & 1))
				heapgraph_set(g, b++, x->base + r * reg, reg);
	}
	g->n = b;
	heapgraph_seal(g);
	d.cap = g->n;
	d.v = xmap((d.cap + 1) * sizeof(*d.v));
	jeblocks_tcaches(&w, g, th, nth, &d);
	for (size_t i = 0; i < d.n; i++)
		g->size[d.v[i]] = 0;	/* dropped by the seal */
	heapgraph_seal(g);
	xunmap(d.v, (d.cap + 1) * sizeof(*d.v));
	jeblocks_samples(&w, g, as);
	qsort(w.own, w.nown, sizeof(*w.own), cmp_span);
	for (size_t i = 0; i < w.nown; i++) {	/* merged */
		struct hg_span *l = meta->n ? &w.own[meta->n - 1] : NULL;

		if (l && w.own[i].addr <= l->addr + l->len) {
			if (w.own[i].addr + w.own[i].len > l->addr + l->len)
				l->len = w.own[i].addr + w.own[i].len - l->addr;
		} else {
			w.own[meta->n++] = w.own[i];
		}
	}
	meta->v = w.own;
	w.own = NULL;
	pr_debug("snapshot: jemalloc's extents map at %#llx: %llu leaves, %llu pages, %zu extents "
		 "(%llu torn: skipped), %zu spans of its own memory, %llu blocks it sampled",
		 (unsigned long long)root, (unsigned long long)st->leaves,
		 (unsigned long long)st->pages, w.ned, (unsigned long long)st->torn, meta->n,
		 (unsigned long long)st->sampled);
out:
	jeblocks_walk_free(&w);
	return rc;
}

void jeblocks_cut_roots(const struct jeblocks_meta *meta, struct snaproots *r)
{
	snaproots_cut(r, meta->v, meta->n);
}

void jeblocks_meta_free(struct jeblocks_meta *meta)
{
	free(meta->v);
	memset(meta, 0, sizeof(*meta));
}
