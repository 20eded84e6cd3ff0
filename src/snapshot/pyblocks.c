/* CPython's pymalloc blocks in use, listed from a copy of the target: its pools found in anonymous memory by their headers. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/pyblocks.h"

#define POOL_OVERHEAD 48                /* sizeof(struct pool_header), rounded to 16 */
#define PY_ALIGN 16                     /* ALIGNMENT on 64-bit since 3.8 */
#define SIZE_CLASSES 32                 /* 512 / 16 */
#define ARENAS_MAX (1u << 24)           /* arenaindex below: 16 TiB of 1 MiB arenas */
#define SLOTS_MAX (1ULL << 24)          /* pool-aligned headers read at most */
#define BLOCKS_MAX (16384 / PY_ALIGN)   /* blocks a pool holds at most */

/* A pool header as read (struct pool_header). */
struct poolhdr {
	uint32_t count, pad;
	uint64_t freeblock, nextpool, prevpool;
	uint32_t arenaindex, szidx, nextoffset, maxnextoffset;
};

/* Whether h is a pool header of a pool of psize bytes: its blocks carved
 * into *carved. */
static int header_ok(const struct poolhdr *h, uint64_t psize, unsigned *carved)
{
	uint64_t size = ((uint64_t)h->szidx + 1) * PY_ALIGN;

	if (h->szidx >= SIZE_CLASSES || h->maxnextoffset != psize - size ||
	    h->nextoffset < POOL_OVERHEAD + size || h->nextoffset > psize ||
	    (h->nextoffset - POOL_OVERHEAD) % size || h->arenaindex >= ARENAS_MAX ||
	    !h->nextpool || !h->prevpool || (h->nextpool | h->prevpool) & 7)
		return 0;
	*carved = (unsigned)((h->nextoffset - POOL_OVERHEAD) / size);
	return h->count <= *carved;
}

static void add_span(struct hg_span **v, size_t *n, size_t *cap, uint64_t addr, uint64_t len)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 1024;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = (struct hg_span){ addr, (size_t)len };
}

/* Whether a block of g lies in [lo, hi): glibc's memory, no pool. */
static int overlaps(const struct heapgraph *g, uint64_t lo, uint64_t hi)
{
	size_t b = heapgraph_first_from(g, lo);

	return heapgraph_find(g, lo) >= 0 || (b < g->n && g->addr[b] < hi);
}

/* A pool whose free list is being walked. */
struct walk {
	uint64_t addr, cur;             /* the pool, the link to check next (0: done) */
	const struct poolhdr *h;
	unsigned carved, nfree;
	int bad;
	uint8_t seen[BLOCKS_MAX / 8];   /* the blocks on its free list */
};

/* The reads of one search: the reader, a header batch, the walks of its pools. */
struct search {
	hg_read_fn read;
	void *arg;
	const struct heapgraph *g;
	struct hg_span spans[HG_BATCH];
	struct poolhdr hdr[HG_BATCH];
	uint8_t ok[HG_BATCH];
	struct walk w[HG_BATCH];
	struct hg_span links[HG_BATCH];
	size_t who[HG_BATCH];
	uint64_t next[HG_BATCH];
};

/* Read spans[0..n) of 48 bytes into hdr: in one batch, else one by one
 * (a span unreadable: ok[i] 0). */
static void read_headers(struct search *s, size_t n)
{
	if (s->read(s->arg, s->spans, n, (uint8_t *)s->hdr) == 0) {
		memset(s->ok, 1, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		s->ok[i] = s->read(s->arg, &s->spans[i], 1, (uint8_t *)&s->hdr[i]) == 0;
}

/* Check w's link w->cur: inside the pool's carved blocks, on a block
 * boundary, not seen before. 1 and marked, or 0 (the pool is refused). */
static int link_ok(struct walk *w, uint64_t size)
{
	uint64_t off = w->cur - w->addr, i;

	if (w->cur < w->addr || off < POOL_OVERHEAD || off >= w->h->nextoffset ||
	    (off - POOL_OVERHEAD) % size)
		return 0;
	i = (off - POOL_OVERHEAD) / size;
	if (w->seen[i / 8] & (1u << (i % 8)))
		return 0;
	w->seen[i / 8] |= (uint8_t)(1u << (i % 8));
	w->nfree++;
	return 1;
}

/*
 * Walk the free lists of w[0..n) side by side: each round checks every
 * pool's current link and reads the next ones in one batch. A list ends
 * at NULL, or at a link that does not hold (the pool refused); each link
 * marks a new block, so a list is at most carved long.
 */
static void walk_lists(struct search *s, size_t n)
{
	for (;;) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			struct walk *w = &s->w[i];

			if (!w->cur || w->bad)
				continue;
			if (!link_ok(w, ((uint64_t)w->h->szidx + 1) * PY_ALIGN)) {
				w->bad = 1;
				continue;
			}
			s->links[k] = (struct hg_span){ w->cur, 8 };
			s->who[k++] = i;
		}
		if (!k)
			return;
		if (s->read(s->arg, s->links, k, (uint8_t *)s->next)) {
			for (size_t j = 0; j < k; j++)
				if (s->read(s->arg, &s->links[j], 1, (uint8_t *)&s->next[j]))
					s->w[s->who[j]].bad = 1;
		}
		for (size_t j = 0; j < k; j++)
			s->w[s->who[j]].cur = s->next[j];
	}
}

/* Pool w, walked: its blocks in use into pb when its free list held
 * together and leaves exactly count of them; else counted refused. */
static void take_pool(struct pyblocks *pb, const struct walk *w)
{
	uint64_t size = ((uint64_t)w->h->szidx + 1) * PY_ALIGN;

	if (w->bad || w->carved - w->nfree != w->h->count) {
		pb->refused++;
		return;
	}
	pb->free_blocks += w->nfree;
	add_span(&pb->pools, &pb->npools, &pb->pcap, w->addr, pb->pool_size);
	for (unsigned i = 0; i < w->carved; i++)
		if (!(w->seen[i / 8] & (1u << (i % 8))))
			add_span(&pb->v, &pb->n, &pb->cap, w->addr + POOL_OVERHEAD + i * size, size);
}

/* The headers of spans[0..n) read: each pool whose header holds (and
 * that no glibc block overlaps) walked and taken. */
static void check_batch(struct search *s, struct pyblocks *pb, size_t n)
{
	size_t k = 0;
	unsigned carved;

	read_headers(s, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t a = s->spans[i].addr;

		if (!s->ok[i] || !header_ok(&s->hdr[i], pb->pool_size, &carved) ||
		    overlaps(s->g, a, a + pb->pool_size))
			continue;
		if (!s->hdr[i].count) {	/* empty: pymalloc's, nothing in use */
			add_span(&pb->pools, &pb->npools, &pb->pcap, a, pb->pool_size);
			continue;
		}
		memset(&s->w[k], 0, sizeof(s->w[k]));
		s->w[k].addr = a;
		s->w[k].cur = s->hdr[i].freeblock;
		s->w[k].h = &s->hdr[i];
		s->w[k++].carved = carved;
	}
	walk_lists(s, k);
	for (size_t i = 0; i < k; i++)
		take_pool(pb, &s->w[i]);
}

static int cmp_span(const void *a, const void *b)
{
	const struct hg_span *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Whether m may hold pymalloc's arenas: private, writable, anonymous. */
static int arena_map(const struct proc_map *m)
{
	return (m->prot & (PROC_MAP_R | PROC_MAP_W)) == (PROC_MAP_R | PROC_MAP_W) &&
	       !(m->prot & PROC_MAP_SHARED) && (!m->path || !strncmp(m->path, "[anon:", 6));
}

/* Every pool of pool_size bytes in maps' anonymous memory, into pb. */
static void search(struct search *s, const struct proc_maps *maps, struct pyblocks *pb)
{
	size_t n = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		uint64_t a = (m->start + pb->pool_size - 1) & ~(pb->pool_size - 1);

		if (!arena_map(m))
			continue;
		for (; a + pb->pool_size <= m->end && pb->slots < SLOTS_MAX;
		     a += pb->pool_size) {
			s->spans[n++] = (struct hg_span){ a, POOL_OVERHEAD };
			pb->slots++;
			if (n == HG_BATCH) {
				check_batch(s, pb, n);
				n = 0;
			}
		}
	}
	if (n)
		check_batch(s, pb, n);
}

int pyblocks_find(int minor, const struct proc_maps *maps, const struct heapgraph *g,
		  hg_read_fn read, void *arg, struct pyblocks *pb)
{
	struct search *s = xcalloc(1, sizeof(*s));
	uint64_t sizes[2] = { 16384, 4096 };	/* 3.10 on (the radix tree), then before */

	memset(pb, 0, sizeof(*pb));
	if (minor < 10) {
		sizes[0] = 4096;
		sizes[1] = 16384;
	}
	s->read = read;
	s->arg = arg;
	s->g = g;
	/* the version's pool size, else the other (a build without the radix tree) */
	for (int k = 0; k < 2 && !pb->npools; k++) {
		pb->pool_size = sizes[k];
		pb->n = pb->free_blocks = pb->refused = 0;
		search(s, maps, pb);
	}
	/* empty pools were listed before the full ones of their batch */
	if (pb->npools)
		qsort(pb->pools, pb->npools, sizeof(*pb->pools), cmp_span);
	free(s);
	return pb->npools ? 0 : -ENOENT;
}

int pyblocks_merge(struct heapgraph *g, const struct pyblocks *pb)
{
	struct heapgraph m;
	size_t i = 0, j = 0, k = 0;

	if (g->n + pb->n >= HG_MAX || heapgraph_init(&m, g->n + pb->n, g->read, g->read_arg))
		return -E2BIG;
	while (i < g->n || j < pb->n) {
		if (j == pb->n || (i < g->n && g->addr[i] < pb->v[j].addr)) {
			heapgraph_set(&m, k++, g->addr[i], heapgraph_size(g, i));
			i++;
		} else {
			heapgraph_set(&m, k++, pb->v[j].addr, pb->v[j].len);
			j++;
		}
	}
	heapgraph_seal(&m);
	heapgraph_free(g);
	*g = m;
	return 0;
}

void pyblocks_trim_roots(const struct pyblocks *pb, struct snaproots *r)
{
	snaproots_cut(r, pb->pools, pb->npools);
}

void pyblocks_free(struct pyblocks *pb)
{
	free(pb->v);
	free(pb->pools);
	memset(pb, 0, sizeof(*pb));
}
