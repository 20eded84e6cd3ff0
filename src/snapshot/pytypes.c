/* What a CPython target's blocks hold: each object named by its Python type ("dict", "str", "Node"), a dict's tables as "dict keys" and "dict values". */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/pytypes.h"

#define HEAD 80                         /* bytes of each block read: 3 object starts, a dict's ma_keys */
#define TYPE_HDR 176                    /* PyTypeObject up to tp_flags (168) */
#define TP_NAME 24
#define TP_FLAGS 168
#define DICT_KEYS 32                    /* PyDictObject.ma_keys */
#define DICT_VALUES 40                  /* PyDictObject.ma_values */
#define NAME_MAX_LEN 96                 /* bytes of a tp_name read */
#define GC_HEAD 16                      /* sizeof(PyGC_Head), 3.8 on */
#define STR_STATE 32                    /* PyASCIIObject.state: 4 bytes, then padding */
#define RUN_GAP 64                      /* heads this close are read in one span, */
#define RUN_MAX (64u << 10)             /* up to this long */

#define F_MANAGED_WEAKREF (1UL << 3)    /* 3.12 on */
#define F_MANAGED_DICT (1UL << 4)       /* 3.11 on */
#define F_READY (1UL << 12)
#define F_HAVE_GC (1UL << 14)
#define F_DICT_SUBCLASS (1UL << 29)
#define F_TYPE_SUBCLASS (1UL << 31)

/* What a candidate type is: its name, where its instances start in their blocks. */
struct tinfo {
	uint32_t name;                  /* UINT32_MAX: not a type */
	uint8_t pre;                    /* the pre-header's bytes */
	uint8_t dictlike;
	uint8_t managed;                /* 3.11, 3.12: values in the pre-header */
	uint8_t gc;                     /* its instances have a PyGC_Head */
};

struct ctx {
	const struct py_target *pt;
	const struct proc_maps *maps;
	struct heapgraph *g;
	struct snapnames *names;
	uint64_t *c;                    /* candidate types, then sorted, unique */
	size_t nc, ccap;
	struct tinfo *info;             /* per c */
	uint64_t *keys;                 /* dicts' ma_keys seen */
	size_t nkeys, kcap;
	uint64_t *vals;                 /* dicts' ma_values, instances' values seen */
	size_t nvals, vcap;
	struct pygcheads *gch;          /* the GC heads found, or NULL */
	size_t gcap, scap;
	uint32_t str;                   /* the name "str" */
	uint8_t *py;                    /* per block: named here */
	uint8_t *buf;                   /* HG_BATCH_BYTES */
	struct hg_span spans[HG_BATCH];
	size_t first[HG_BATCH + 1];     /* each_head: the first block of each run */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4096;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = x;
}

static uint64_t word(const uint8_t *p, size_t off)
{
	uint64_t w;

	memcpy(&w, p + off, 8);
	return w;
}

/* Read spans[0..n) into x->buf one after another; a batch that fails is
 * read span by span, an unreadable span's bytes left zero. */
static void read_all(struct ctx *x, size_t n)
{
	size_t at = 0;

	if (x->g->read(x->g->read_arg, x->spans, n, x->buf) == 0)
		return;
	for (size_t i = 0; i < n; at += x->spans[i].len, i++)
		if (x->g->read(x->g->read_arg, &x->spans[i], 1, x->buf + at))
			memset(x->buf + at, 0, x->spans[i].len);
}

/* Whether a type may lie at a: in a file's mapping (a static type), or
 * a block's start past its PyGC_Head (a heap type: the GC tracks types). */
static int type_place(const struct ctx *x, uint64_t a)
{
	const struct proc_map *m;
	long b;

	if (!a || a & 7)
		return 0;
	m = proc_maps_find(x->maps, a);
	if (m && m->path && m->path[0] == '/')
		return 1;
	b = heapgraph_find(x->g, a);
	return b >= 0 && a - x->g->addr[b] == GC_HEAD;
}

/* The pre-header of a type with flags f: what precedes its instances. */
static uint8_t pre_of(const struct ctx *x, uint64_t f)
{
	uint64_t managed = x->pt->minor >= 12 ? F_MANAGED_DICT | F_MANAGED_WEAKREF :
			   x->pt->minor == 11 ? F_MANAGED_DICT : 0;

	return (uint8_t)((f & F_HAVE_GC ? GC_HEAD : 0) + (f & managed ? 16 : 0));
}

/*
 * Call fn for every block of g with its first HEAD bytes (zero past the
 * block's end). Blocks whose heads lie close together (a pool's) are read
 * as one run, so that a read takes a few spans, not one a block.
 */
static void each_head(struct ctx *x, void (*fn)(struct ctx *x, size_t b, const uint8_t *h))
{
	struct heapgraph *g = x->g;
	uint8_t h[HEAD];
	size_t i = 0;

	while (i < g->n) {
		size_t nr = 0, bytes = 0, off = 0;

		while (i < g->n && nr < HG_BATCH) {	/* the runs of one read */
			uint64_t lo = g->addr[i], hi = lo + (g->size[i] < HEAD ? g->size[i] : HEAD);
			size_t j = i + 1;

			for (; j < g->n && g->addr[j] - hi <= RUN_GAP; j++) {
				uint64_t end = g->addr[j] + (g->size[j] < HEAD ? g->size[j] : HEAD);

				if (end - lo > RUN_MAX)
					break;
				hi = end;
			}
			if (bytes + (hi - lo) > HG_BATCH_BYTES)
				break;
			x->spans[nr] = (struct hg_span){ lo, (size_t)(hi - lo) };
			x->first[nr++] = i;
			bytes += hi - lo;
			i = j;
		}
		x->first[nr] = i;
		read_all(x, nr);
		for (size_t r = 0; r < nr; off += x->spans[r].len, r++)
			for (size_t b = x->first[r]; b < x->first[r + 1]; b++) {
				size_t len = g->size[b] < HEAD ? (size_t)g->size[b] : HEAD;

				memset(h, 0, sizeof(h));
				memcpy(h, x->buf + off + (g->addr[b] - x->spans[r].addr), len);
				fn(x, b, h);
			}
	}
}

/* Pass 1: the words of block b that may be its object's type. */
static void collect(struct ctx *x, size_t b, const uint8_t *h)
{
	for (size_t o = 0; o <= 32; o += 16) {
		uint64_t w = word(h, o + 8);

		/* a pool's blocks are mostly of one type: its repeats are not kept */
		if (o + 16 <= x->g->size[b] && (!x->nc || x->c[x->nc - 1] != w) && type_place(x, w))
			push(&x->c, &x->nc, &x->ccap, w);
	}
}

/* Read the TYPE_HDR bytes of each of v[0..n) (in batches) and call fn
 * with each: fn(x, i, bytes). */
static void each_type_hdr(struct ctx *x, const uint64_t *v, size_t n,
			  void (*fn)(struct ctx *x, size_t i, const uint8_t *hdr, void *arg), void *arg)
{
	for (size_t at = 0; at < n; at += HG_BATCH) {
		size_t k = n - at < HG_BATCH ? n - at : HG_BATCH;

		for (size_t i = 0; i < k; i++)
			x->spans[i] = (struct hg_span){ v[at + i], TYPE_HDR };
		read_all(x, k);
		for (size_t i = 0; i < k; i++)
			fn(x, at + i, x->buf + i * TYPE_HDR, arg);
	}
}

/* The metatypes: per candidate its type word, then which of those are types of types. */
struct metas {
	uint64_t *of;                   /* per candidate: its ob_type */
	uint64_t *m;                    /* distinct ob_types, sorted */
	uint8_t *ok;                    /* per m: a metatype */
	size_t n;
};

static void meta_word(struct ctx *x, size_t i, const uint8_t *hdr, void *arg)
{
	struct metas *mt = arg;

	(void)x;
	mt->of[i] = word(hdr, 8);
}

/* m[i] is a metatype: &PyType_Type, or a ready type subclass whose type is &PyType_Type. */
static void meta_check(struct ctx *x, size_t i, const uint8_t *hdr, void *arg)
{
	struct metas *mt = arg;
	uint64_t f = word(hdr, TP_FLAGS);

	mt->ok[i] = mt->m[i] == x->pt->type_type ||
		    (word(hdr, 8) == x->pt->type_type && (f & F_TYPE_SUBCLASS) && (f & F_READY));
}

static int metatype(const struct metas *mt, uint64_t a)
{
	const uint64_t *p = bsearch(&a, mt->m, mt->n, sizeof(*mt->m), cmp_u64);

	return p && mt->ok[p - mt->m];
}

/* The name at a, a C string of NAME_MAX_LEN bytes at most, printable, into
 * buf: 0, or -1 when unreadable or not a name. */
static int read_name(struct ctx *x, uint64_t a, char *buf)
{
	struct hg_span s = { a, NAME_MAX_LEN };
	uint8_t raw[NAME_MAX_LEN];
	size_t i;

	if (!a)
		return -1;
	if (x->g->read(x->g->read_arg, &s, 1, raw)) {	/* up to its page's end */
		s.len = 4096 - (a & 4095);
		if (s.len > NAME_MAX_LEN || x->g->read(x->g->read_arg, &s, 1, raw))
			return -1;
	}
	for (i = 0; i < s.len && raw[i]; i++)
		if (raw[i] < 0x20 || raw[i] > 0x7e)
			return -1;
	if (!i || i == s.len)
		return -1;
	memcpy(buf, raw, i);
	buf[i] = 0;
	return 0;
}

/* The candidates whose type is a metatype: their indices in x->c. */
struct todo {
	const struct metas *mt;
	size_t *idx;
};

/* Candidate td->idx[p], whose type is a metatype: a type when ready and named. */
static void type_check(struct ctx *x, size_t p, const uint8_t *hdr, void *arg)
{
	const struct todo *td = arg;
	size_t i = td->idx[p];
	uint64_t f = word(hdr, TP_FLAGS);
	char name[NAME_MAX_LEN + 1];

	if (!(f & F_READY) || word(hdr, 8) != td->mt->of[i] ||
	    read_name(x, word(hdr, TP_NAME), name))
		return;
	x->info[i] = (struct tinfo){ snapnames_id(x->names, name), pre_of(x, f),
				     (f & F_DICT_SUBCLASS) != 0,
				     (x->pt->minor == 11 || x->pt->minor == 12) &&
				     (f & F_MANAGED_DICT), (f & F_HAVE_GC) != 0 };
}

/* Pass 2: which candidates are types, and their names. How many types. */
static uint64_t check_types(struct ctx *x)
{
	struct metas mt = { 0 };
	struct todo td = { &mt, NULL };
	uint64_t *addrs, named = 0;
	size_t k = 0, nt = 0;

	mt.of = xcalloc(x->nc + 1, sizeof(*mt.of));
	mt.m = xcalloc(x->nc + 1, sizeof(*mt.m));
	each_type_hdr(x, x->c, x->nc, meta_word, &mt);
	for (size_t i = 0; i < x->nc; i++)
		if (type_place(x, mt.of[i]))
			mt.m[k++] = mt.of[i];
	qsort(mt.m, k, sizeof(*mt.m), cmp_u64);	/* mt.m is never NULL */
	for (size_t i = 0; i < k; i++)
		if (!mt.n || mt.m[mt.n - 1] != mt.m[i])
			mt.m[mt.n++] = mt.m[i];
	mt.ok = xcalloc(mt.n + 1, 1);
	each_type_hdr(x, mt.m, mt.n, meta_check, &mt);
	/* the candidates whose type is a metatype, read whole */
	td.idx = xcalloc(x->nc + 1, sizeof(*td.idx));
	addrs = xcalloc(x->nc + 1, sizeof(*addrs));
	for (size_t i = 0; i < x->nc; i++) {
		x->info[i].name = UINT32_MAX;
		if (metatype(&mt, mt.of[i])) {
			td.idx[nt] = i;
			addrs[nt++] = x->c[i];
		}
	}
	each_type_hdr(x, addrs, nt, type_check, &td);
	for (size_t i = 0; i < x->nc; i++)
		named += x->info[i].name != UINT32_MAX;
	free(addrs);
	free(td.idx);
	free(mt.of);
	free(mt.m);
	free(mt.ok);
	return named;
}

/* Pass 3: block b named by the type of the object it holds, if any. */
static void name_block(struct ctx *x, size_t b, const uint8_t *h)
{
	for (size_t o = 0; o <= 32; o += 16) {
		uint64_t w = word(h, o + 8);
		const uint64_t *p;
		const struct tinfo *ti;

		if (o + 16 > x->g->size[b] || !word(h, o) ||
		    !(p = bsearch(&w, x->c, x->nc, sizeof(*x->c), cmp_u64)))
			continue;
		ti = &x->info[p - x->c];
		if (ti->name == UINT32_MAX || ti->pre != o)
			continue;
		x->g->type[b] = ti->name;
		x->py[b] = 1;
		if (ti->gc && x->gch)	/* blocks ascending: heads too */
			push(&x->gch->v, &x->gch->n, &x->gcap, x->g->addr[b] + o - GC_HEAD);
		if (ti->name == x->str && !o && x->gch && x->g->size[b] >= STR_STATE + 8)
			push(&x->gch->state, &x->gch->nstate, &x->scap, x->g->addr[b] + STR_STATE);
		if (ti->dictlike && o + DICT_VALUES + 8 <= HEAD &&
		    o + DICT_VALUES + 8 <= x->g->size[b]) {
			push(&x->keys, &x->nkeys, &x->kcap, word(h, o + DICT_KEYS));
			push(&x->vals, &x->nvals, &x->vcap, word(h, o + DICT_VALUES));
		}
		if (ti->managed && o >= 16) {	/* 3.12 tags the values pointer: -1 */
			push(&x->vals, &x->nvals, &x->vcap, word(h, 0));
			push(&x->vals, &x->nvals, &x->vcap, word(h, 8));
		}
		return;
	}
}

void pyhide(const uint64_t *v, const uint64_t *len, size_t nv, uint64_t width,
	    const struct hg_span *s, size_t n, uint8_t *buf)
{
	for (size_t i = 0; i < n; buf += s[i].len, i++) {
		uint64_t lo = s[i].addr, hi = lo + s[i].len;
		size_t a = 0, b = nv;

		while (a < b) {	/* the first run ending after lo */
			size_t mid = a + (b - a) / 2;

			if (v[mid] + (len ? len[mid] : width) <= lo)
				a = mid + 1;
			else
				b = mid;
		}
		for (; a < nv && v[a] < hi; a++) {
			uint64_t from = v[a] < lo ? lo : v[a];
			uint64_t end = v[a] + (len ? len[a] : width);
			uint64_t to = end > hi ? hi : end;

			memset(buf + (from - lo), 0, to - from);
		}
	}
}

void pygcheads_hide(const struct pygcheads *gc, const struct hg_span *s, size_t n, uint8_t *buf)
{
	pyhide(gc->v, NULL, gc->n, GC_HEAD, s, n, buf);
	pyhide(gc->state, NULL, gc->nstate, 8, s, n, buf);
}

void pygcheads_free(struct pygcheads *gc)
{
	free(gc->v);
	free(gc->state);
	memset(gc, 0, sizeof(*gc));
}

void pytypes_name(const struct py_target *pt, const struct proc_maps *maps, struct heapgraph *g,
		  struct snapnames *names, struct pytypes_stats *st, struct pygcheads *gch)
{
	struct ctx *x = xcalloc(1, sizeof(*x));
	uint32_t keys = snapnames_id(names, "dict keys");
	uint32_t values = snapnames_id(names, "dict values");
	size_t k = 0;

	memset(st, 0, sizeof(*st));
	if (gch)
		memset(gch, 0, sizeof(*gch));
	if (!pt->type_type || !g->n)
		goto out;
	x->buf = xmap(HG_BATCH_BYTES);
	x->gch = gch;
	x->pt = pt;
	x->maps = maps;
	x->g = g;
	x->names = names;
	x->str = snapnames_id(names, "str");
	each_head(x, collect);
	if (!x->nc)
		goto out;
	qsort(x->c, x->nc, sizeof(*x->c), cmp_u64);
	for (size_t i = 0; i < x->nc; i++)
		if (!k || x->c[k - 1] != x->c[i])
			x->c[k++] = x->c[i];
	x->nc = k;
	x->info = xcalloc(x->nc + 1, sizeof(*x->info));
	st->types = check_types(x);
	x->py = xcalloc(g->n + 1, 1);
	each_head(x, name_block);
	for (size_t i = 0; i < g->n; i++)
		st->objects += x->py[i];
	for (size_t i = 0; i < x->nkeys; i++) {
		long b = heapgraph_find(g, x->keys[i]);

		if (b >= 0 && g->addr[b] == x->keys[i] && !x->py[b]) {
			g->type[b] = keys;
			x->py[b] = 1;
			st->dict_keys++;
		}
	}
	for (size_t i = 0; i < x->nvals; i++) {	/* a values table starts after a prefix */
		long b = heapgraph_find(g, x->vals[i]);

		if (b >= 0 && !x->py[b]) {
			g->type[b] = values;
			x->py[b] = 1;
			st->dict_values++;
		}
	}
out:
	if (x->buf)
		xunmap(x->buf, HG_BATCH_BYTES);
	free(x->c);
	free(x->info);
	free(x->keys);
	free(x->vals);
	free(x->py);
	free(x);
}
