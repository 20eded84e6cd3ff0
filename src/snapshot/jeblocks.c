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
#include "snapshot/jeblocks.h"

/* Facts of jemalloc 5.3.0 on x86-64 (rtree.h, edata.h, bitmap.h, sc.h). */
#define JE_PAGE 4096ULL
#define JE_LEVEL_BITS 18                        /* each of the tree's two levels */
#define JE_ARRAY (8ULL << JE_LEVEL_BITS)        /* bytes of the root and of a leaf */
#define JE_LEAF_ALIGN 64                        /* leaves come from base_alloc(CACHELINE) */
#define JE_EDATA 128                            /* sizeof(edata_t), its alignment */
#define JE_NSIZES 232                           /* size classes */
#define JE_NBINS 36                             /* of them small (slabs): below 16 KiB */
#define JE_MAXREGS 512                          /* regions of a slab at most */
#define JE_TCACHE_NBINS 73                      /* TCACHE_NBINS_MAX */
#define JE_CACHE_BIN 24                         /* sizeof(cache_bin_t) */
/* edata_t's e_bits: slab 12, state 17..19, szind 20..27, nfree 28..37 */
#define EB_SLAB(b)   (((b) >> 12) & 1)
#define EB_STATE(b)  (((b) >> 17) & 7)
#define EB_SZIND(b)  (((b) >> 20) & 0xff)
#define EB_NFREE(b)  (((b) >> 28) & 0x3ff)
/* an rtree leaf element: edata 7..47, slab 0, state 2..4, szind 48..63 */
#define LE_EDATA(e)  ((uint64_t)((int64_t)((e) << 16) >> 16) & ~(uint64_t)(JE_EDATA - 1))
#define LE_SLAB(e)   ((e) & 1)
#define LE_STATE(e)  (((e) >> 2) & 7)
#define LE_SZIND(e)  ((e) >> 48)
#define STATE_ACTIVE 0
#define STATE_MAX 5

/* Bounds on what the target makes us read and keep. */
#define MAX_LEAVES 1024                 /* 1 TiB of address space */
#define MAX_ELEMS (8u << 20)            /* pages mapped: 32 GiB */
#define MAX_REGION (64ULL << 20)        /* writable data searched, an object */
#define MAX_CANDIDATES 64               /* leaves tried while searching */
#define TLS_BELOW (64u << 10)           /* static TLS under the thread pointer */
#define JE_HUGEPAGE (2ULL << 20)                /* base blocks' alignment and granule */
#define MAX_BASE_BACK 512                       /* 2 MiB steps back to a base block's start */
#define MAX_BASE_SIZE (1ULL << 32)

/* An element of the tree: a page and what its leaf says of it. */
struct elem {
	uint64_t key, bits;
};

/* An edata_t as read: its address and words. */
struct edcopy {
	uint64_t at;
	uint64_t w[JE_EDATA / 8];
};

/* An active extent. */
struct extent {
	uint64_t base, addr, size;
	uint64_t bitmap[JE_MAXREGS / 64];
	unsigned slab, szind, nfree;
};

/* Everything one walk of the tree holds. */
struct walk {
	pid_t pid;
	const struct proc_maps *maps;
	uint8_t *buf;                   /* JE_ARRAY: a leaf */
	struct elem *el;
	size_t nel;
	struct edcopy *ed;
	size_t ned;
	struct extent *ex;
	size_t nex;
	struct hg_span *own;            /* what jemalloc manages (struct jeblocks_meta) */
	size_t nown, capown;
	struct jeblocks_stats *st;
	char *why;
	size_t len;
};

static void say(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
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

/* Read [addr, addr + n) of pid into buf: 0 or -EFAULT. */
static int rd(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

/* The mapping of maps holding addr, or NULL. */
static const struct proc_map *map_of(const struct proc_maps *maps, uint64_t addr)
{
	size_t lo = 0, hi = maps->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < maps->n && maps->v[lo].start <= addr ? &maps->v[lo] : NULL;
}

/* Whether [addr, addr + n) is private writable anonymous memory, as jemalloc's metadata is. */
static int anon_rw(const struct proc_maps *maps, uint64_t addr, uint64_t n)
{
	const struct proc_map *m = map_of(maps, addr);

	return m && addr + n <= m->end && addr + n > addr &&
	       (m->prot & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_SHARED)) == (PROC_MAP_R | PROC_MAP_W) &&
	       (!m->path || !strncmp(m->path, "[anon", 5));
}

/* By edata, then page. */
static int cmp_elem(const void *a, const void *b)
{
	const struct elem *x = a, *y = b;
	uint64_t ex = LE_EDATA(x->bits), ey = LE_EDATA(y->bits);

	if (ex != ey)
		return ex < ey ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_span(const void *a, const void *b)
{
	const struct hg_span *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

/* [addr, addr + len) is jemalloc's. */
static void own(struct walk *w, uint64_t addr, uint64_t len)
{
	if (w->nown == w->capown) {
		w->capown = w->capown ? 2 * w->capown : 1024;
		w->own = xrealloc(w->own, w->capown * sizeof(*w->own));
	}
	w->own[w->nown++] = (struct hg_span){ addr, len };
}

/* ---- the tree ---- */

/* Every element of the tree whose root array is at root into w->el. 0 or -errno (said). */
static int read_tree(struct walk *w, uint64_t root)
{
	uint64_t *rootv = xmap(JE_ARRAY);
	size_t cap = 0;
	int rc = 0;

	if (rd(w->pid, root, rootv, JE_ARRAY)) {
		say(w->why, w->len, "its root at %#llx cannot be read", (unsigned long long)root);
		rc = -EFAULT;
		goto out;
	}
	for (uint64_t i0 = 0; i0 < (1u << JE_LEVEL_BITS); i0++) {
		const uint64_t *leaf = (const uint64_t *)w->buf;
		uint64_t lp = rootv[i0];

		if (!lp)
			continue;
		if (lp % JE_LEAF_ALIGN || !anon_rw(w->maps, lp, JE_ARRAY) ||
		    ++w->st->leaves > MAX_LEAVES || rd(w->pid, lp, w->buf, JE_ARRAY)) {
			say(w->why, w->len, "entry %llu of the root at %#llx is no leaf (%#llx)",
			    (unsigned long long)i0, (unsigned long long)root, (unsigned long long)lp);
			rc = -EINVAL;
			goto out;
		}
		own(w, lp, JE_ARRAY);
		for (uint64_t j = 0; j < (1u << JE_LEVEL_BITS); j++) {
			if (!LE_EDATA(leaf[j]))
				continue;	/* none, or cleared (szind SC_NSIZES, no edata) */
			if (w->nel == MAX_ELEMS) {
				say(w->why, w->len, "more than %u pages mapped", MAX_ELEMS);
				rc = -E2BIG;
				goto out;
			}
			if (w->nel == cap) {
				cap = cap ? 2 * cap : 4096;
				w->el = xrealloc(w->el, cap * sizeof(*w->el));
			}
			w->el[w->nel++] = (struct elem){ (i0 << 30) | (j << 12), leaf[j] };
		}
	}
	w->st->pages = w->nel;
out:
	xunmap(rootv, JE_ARRAY);
	return rc;
}

/* Read every edata_t the elements name (sorted by edata), IOV_MAX at a time. 0 or -errno. */
static int read_edatas(struct walk *w)
{
	struct iovec l[IOV_MAX], r[IOV_MAX];
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
		size_t k = 0, want = 0;

		for (; k < IOV_MAX && i + k < n; k++) {
			l[k] = (struct iovec){ w->ed[i + k].w, JE_EDATA };
			r[k] = (struct iovec){ (void *)(uintptr_t)w->ed[i + k].at, JE_EDATA };
			want += JE_EDATA;
		}
		if (process_vm_readv(w->pid, l, k, r, k, 0) != (ssize_t)want) {
			for (size_t m = 0; m < k; m++)	/* one at a time: which cannot */
				if (!anon_rw(w->maps, w->ed[i + m].at, JE_EDATA) ||
				    rd(w->pid, w->ed[i + m].at, w->ed[i + m].w, JE_EDATA))
					memset(w->ed[i + m].w, 0xff, JE_EDATA);	/* state 7: torn */
		}
		i += k;
	}
	return 0;
}

/* Whether the extent of edata d, which elements el[0..n) name, holds
 * together; an active one into w->ex. */
static int take_extent(struct walk *w, const struct edcopy *d, const struct elem *el, size_t n)
{
	uint64_t b = d->w[0], addr = d->w[1], size = d->w[2] & ~(JE_PAGE - 1);
	uint64_t base = addr & ~(JE_PAGE - 1);
	unsigned state = EB_STATE(b), slab = EB_SLAB(b), szind = EB_SZIND(b);
	struct extent *x;

	if (state > STATE_MAX || !size || base + size < base)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (el[i].key < base || el[i].key >= base + size || LE_STATE(el[i].bits) != state ||
		    (state == STATE_ACTIVE && (LE_SLAB(el[i].bits) != slab ||
					       (LE_SZIND(el[i].bits) != szind &&
						(el[i].key == base ||
						 LE_SZIND(el[i].bits) != JE_NSIZES))))) {
			return 0;
		}
	own(w, base, size);
	own(w, d->at & ~(JE_PAGE - 1), JE_PAGE);
	if (state != STATE_ACTIVE)
		return 1;
	if (slab) {
		uint64_t reg = jeblocks_class_size(szind), free = 0;

		if (szind >= JE_NBINS || addr != base || size % reg || size / reg > JE_MAXREGS ||
		    n != size / JE_PAGE)
			return 0;
		for (uint64_t r = 0; r < size / reg; r++)
			free += (d->w[8 + r / 64] >> (r % 64)) & 1;
		if (free != EB_NFREE(b))
			return 0;
	} else if (szind < JE_NBINS || szind >= JE_NSIZES || addr - base >= JE_PAGE ||
		   addr - base + jeblocks_class_size(szind) > size || n > 2) {
		return 0;
	}
	x = &w->ex[w->nex++];
	*x = (struct extent){ .base = base, .addr = addr, .size = size, .slab = slab,
			      .szind = szind, .nfree = EB_NFREE(b) };
	memcpy(x->bitmap, &d->w[8], sizeof(x->bitmap));
	return 1;
}

/* Whether addr is inside one of the extents or base blocks taken so far (w->own, unsorted). */
static int owned(const struct walk *w, uint64_t addr, size_t from)
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
 * (next) too. Bounded: MAX_BASE_BACK boundaries, 1024 blocks.
 */
static void base_block(struct walk *w, uint64_t addr, size_t extents)
{
	uint64_t b = addr & ~(JE_HUGEPAGE - 1), hd[5];

	for (unsigned k = 0; k < MAX_BASE_BACK && b; k++, b -= JE_HUGEPAGE) {
		if (owned(w, b, 0))
			return;	/* inside an extent, or a block found already */
		if (!anon_rw(w->maps, b, sizeof(hd)) || rd(w->pid, b, hd, sizeof(hd)) ||
		    !hd[0] || hd[0] % JE_HUGEPAGE || hd[0] > MAX_BASE_SIZE || b + hd[0] <= addr ||
		    hd[1] % JE_HUGEPAGE || hd[3] < b || hd[3] > b + hd[0])
			continue;
		for (unsigned n = 0; n < 1024 && b && !owned(w, b, extents); n++) {
			own(w, b, hd[0]);
			b = hd[1];
			if (!b || !anon_rw(w->maps, b, sizeof(hd)) || rd(w->pid, b, hd, sizeof(hd)) ||
			    !hd[0] || hd[0] % JE_HUGEPAGE || hd[0] > MAX_BASE_SIZE ||
			    hd[1] % JE_HUGEPAGE || hd[3] < b || hd[3] > b + hd[0])
				break;
		}
		return;
	}
}

/* The active extents of the tree at root into w->ex, sorted, checked. 0 or -errno (said). */
static int walk_tree(struct walk *w, uint64_t root)
{
	size_t good = 0, e = 0, extents;
	int rc = read_tree(w, root);

	if (rc)
		return rc;
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
			say(w->why, w->len, "extents at %#llx and %#llx overlap",
			    (unsigned long long)w->ex[i - 1].base, (unsigned long long)w->ex[i].base);
			return -EINVAL;
		}
	if (!w->nex || w->st->torn > 8 + good / 100) {
		say(w->why, w->len, "the tree at %#llx does not hold together: %llu of %zu extents "
		    "disagree with it, %zu active", (unsigned long long)root,
		    (unsigned long long)w->st->torn, w->ned, w->nex);
		return -EINVAL;
	}
	return 0;
}

static void walk_free(struct walk *w)
{
	if (w->buf)
		xunmap(w->buf, JE_ARRAY);
	free(w->el);
	free(w->ed);
	free(w->ex);
	free(w->own);
	w->own = NULL;
	w->nown = w->capown = 0;
	w->buf = NULL;
	w->el = NULL;
	w->ed = NULL;
	w->ex = NULL;
	w->nel = w->ned = w->nex = 0;
}

/* ---- finding the root ---- */

/* The root a leaf pointer found at address at would sit at, from its leaf's
 * first element (its page's upper bits say which root entry it is): 0 if none. */
static uint64_t root_of_leaf(pid_t pid, const struct proc_maps *maps, uint8_t *buf,
			     uint64_t at, uint64_t lp)
{
	const uint64_t *leaf = (const uint64_t *)buf;
	uint64_t d[JE_EDATA / 8];

	if (lp % JE_LEAF_ALIGN || !anon_rw(maps, lp, JE_ARRAY) || rd(pid, lp, buf, JE_ARRAY))
		return 0;
	for (uint64_t j = 0; j < (1u << JE_LEVEL_BITS); j++) {
		uint64_t e = LE_EDATA(leaf[j]), base, size;

		if (!e)
			continue;
		if (!anon_rw(maps, e, JE_EDATA) || rd(pid, e, d, sizeof(d)))
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

/* Roots of the leaves pointed at from [lo, hi) into cand (n of them, distinct). */
static void search_span(pid_t pid, const struct proc_maps *maps, uint64_t lo, uint64_t hi,
			uint8_t *leafbuf, uint64_t *cand, size_t *n, unsigned *tried)
{
	size_t len = hi - lo;
	uint64_t *v = xmap(len);

	if (rd(pid, lo, v, len))
		goto out;
	for (size_t i = 0; i < len / 8 && *tried < MAX_CANDIDATES; i++) {
		uint64_t r, at = lo + 8 * i;

		if (!v[i] || v[i] % JE_LEAF_ALIGN || !anon_rw(maps, v[i], JE_ARRAY))
			continue;
		(*tried)++;
		r = root_of_leaf(pid, maps, leafbuf, at, v[i]);
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

int jeblocks_find(pid_t pid, const struct proc_maps *maps, uint64_t *root, char *why, size_t len)
{
	struct jeblocks_stats st;
	struct walk w = { .pid = pid, .maps = maps, .st = &st, .why = why, .len = len };
	uint64_t cand[4], found = 0;
	size_t n = 0;
	unsigned tried = 0, ok = 0;
	int named = 0;

	for (size_t i = 0; i < maps->n; i++)
		named |= maps->v[i].path && strstr(maps->v[i].path, "jemalloc") != NULL;
	w.buf = xmap(JE_ARRAY);
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		uint64_t lo, hi;

		if (!m->path || m->path[0] != '/' || (m->prot & (PROC_MAP_W | PROC_MAP_SHARED)) !=
		    PROC_MAP_W || (named && !strstr(m->path, "jemalloc")))
			continue;
		data_span(maps, i, &lo, &hi);
		search_span(pid, maps, lo, hi, w.buf, cand, &n, &tried);
	}
	say(why, len, "no extents map found in its data");
	for (size_t k = 0; k < n; k++) {
		memset(&st, 0, sizeof(st));
		if (walk_tree(&w, cand[k]) == 0) {
			ok++;
			found = cand[k];
		}
		walk_free(&w);
		w.buf = xmap(JE_ARRAY);
	}
	xunmap(w.buf, JE_ARRAY);
	if (ok > 1)
		say(why, len, "%u trees of extents found", ok);
	if (ok != 1)
		return -ENOENT;
	*root = found;
	return 0;
}

/* ---- the thread caches ---- */

/* The block starting exactly at p, or -1. */
static long block_at(const struct heapgraph *g, uint64_t p)
{
	long b = heapgraph_find(g, p);

	return b >= 0 && g->addr[b] == p ? b : -1;
}

/* Indices of blocks to drop. */
struct drops {
	uint32_t *v;
	size_t n, cap;
};

static void drop(struct drops *d, size_t b)
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
static long cache_check(pid_t pid, const struct heapgraph *g, const uint8_t *bins,
			struct drops *d)
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
		    (n && rd(pid, head, items, 8 * n)))
			goto bad;
		for (unsigned k = 0; k < n; k++) {
			long b = block_at(g, items[k]);

			if (b < 0 || g->size[b] != jeblocks_class_size(i))
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
 * Each thread's cache: its tcache_t (a pointer to its tcache_slow_t, then
 * the bins) and tcache_slow_t (which points back at it and at its bins
 * within its first 256 bytes) both in the thread's TSD, in its static
 * TLS under fs_base.
 */
static void tcaches(pid_t pid, const struct proc_maps *maps, const struct heapgraph *g,
		    const struct snapthread *th, size_t nth, struct drops *d,
		    struct jeblocks_stats *st)
{
	uint64_t *tls = xmalloc(TLS_BELOW);
	uint8_t bins[JE_TCACHE_NBINS * JE_CACHE_BIN];

	for (size_t t = 0; t < nth; t++) {
		const struct proc_map *m = map_of(maps, th[t].fs_base - 8);
		uint64_t lo, nw;

		st->threads++;
		if (!m || th[t].fs_base < 8)
			continue;
		lo = th[t].fs_base - m->start > TLS_BELOW ? th[t].fs_base - TLS_BELOW : m->start;
		nw = (th[t].fs_base - lo) / 8;
		if (rd(pid, lo, tls, 8 * nw))
			continue;
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
			got = cache_check(pid, g, bins, d);
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

/* ---- the blocks ---- */

int jeblocks_list(pid_t pid, const struct proc_maps *maps, uint64_t root,
		  const struct snapthread *th, size_t nth, struct heapgraph *g, hg_read_fn gread,
		  void *garg, struct jeblocks_meta *meta, struct jeblocks_stats *st, char *why,
		  size_t len)
{
	struct walk w = { .pid = pid, .maps = maps, .st = st, .why = why, .len = len };
	struct drops d = { 0 };
	uint64_t n = 0;
	size_t b = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	memset(g, 0, sizeof(*g));
	memset(meta, 0, sizeof(*meta));
	st->root = root;
	w.buf = xmap(JE_ARRAY);
	rc = walk_tree(&w, root);
	if (rc)
		goto out;
	for (size_t i = 0; i < w.nex; i++) {
		const struct extent *x = &w.ex[i];

		n += x->slab ? x->size / jeblocks_class_size(x->szind) - x->nfree : 1;
		st->slabs += x->slab;
		st->large += !x->slab;
	}
	rc = heapgraph_init(g, n, gread, garg);
	if (rc) {
		say(why, len, "%llu blocks: too many", (unsigned long long)n);
		goto out;
	}
	for (size_t i = 0; i < w.nex; i++) {
		const struct extent *x = &w.ex[i];
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
	tcaches(pid, maps, g, th, nth, &d, st);
	for (size_t i = 0; i < d.n; i++)
		g->size[d.v[i]] = 0;	/* dropped by the seal */
	heapgraph_seal(g);
	xunmap(d.v, (d.cap + 1) * sizeof(*d.v));
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
		 "(%llu torn: skipped), %zu spans of its own memory", (unsigned long long)root,
		 (unsigned long long)st->leaves, (unsigned long long)st->pages, w.ned,
		 (unsigned long long)st->torn, meta->n);
out:
	walk_free(&w);
	return rc;
}

/* Root [lo, hi) named name into out. */
static void add_root(struct snaproots *out, uint64_t lo, uint64_t hi, uint32_t name)
{
	if (hi <= lo)
		return;
	if (out->n == out->cap) {
		out->cap = out->cap ? 2 * out->cap : 64;
		out->v = xrealloc(out->v, out->cap * sizeof(*out->v));
	}
	out->v[out->n++] = (struct snaproot){ lo, hi, name };
}

void jeblocks_cut_roots(const struct jeblocks_meta *meta, struct snaproots *r)
{
	struct snaproots out = { 0 };

	if (!meta->n)
		return;
	for (size_t i = 0; i < r->n; i++) {
		uint64_t lo = r->v[i].lo, hi = r->v[i].hi;
		size_t p = 0, q = meta->n;

		while (p < q) {	/* the first span ending after lo */
			size_t mid = p + (q - p) / 2;

			if (meta->v[mid].addr + meta->v[mid].len <= lo)
				p = mid + 1;
			else
				q = mid;
		}
		for (; p < meta->n && meta->v[p].addr < hi && lo < hi; p++) {
			add_root(&out, lo, meta->v[p].addr, r->v[i].name);
			if (meta->v[p].addr + meta->v[p].len > lo)
				lo = meta->v[p].addr + meta->v[p].len;
		}
		add_root(&out, lo, hi, r->v[i].name);
	}
	free(r->v);
	*r = out;
}

void jeblocks_meta_free(struct jeblocks_meta *meta)
{
	free(meta->v);
	memset(meta, 0, sizeof(*meta));
}
