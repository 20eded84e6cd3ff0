/* mimalloc's blocks in use, listed from a copy of the target that does not run: its segments found by their headers, each page's blocks minus those on its free lists. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/target.h"
#include "snapshot/miblocks.h"

/*
 * The layout, from mimalloc v2.0.9 (include/mimalloc-types.h, src/segment.c)
 * built for release on x86-64 (no padding, free lists not encoded), and
 * checked against Debian 12's libmimalloc.so.2.0.
 *
 * Memory comes in segments of 32 MiB (MI_SEGMENT_SIZE), each at an address
 * that is a multiple of that, cut in slices of 64 KiB; a huge segment
 * (kind 1) is longer and holds one page. Its header, mi_segment_t:
 *   +208 used (pages), +216 cookie (the segment's address xor the main
 *   heap's cookie: one key for every segment of a process), +224
 *   segment_slices, +232 segment_info_slices, +240 kind, +248
 *   slice_entries, +256 thread_id, +264 slices[], 80 bytes each.
 * A span of slices begins with an mi_page_t in its first slice's entry:
 *   +0 slice_count, +4 slice_offset (0 in a span's first entry), +10
 *   capacity (u16), +12 reserved (u16), +16 free, +24 used (u32), +28
 *   xblock_size (0: a free span; 2 GiB: huge, the page's size), +32
 *   local_free, +40 xthread_free (its low 2 bits are flags), +48 xheap.
 * The first span (segment_info_slices long) is the header's own. A page's
 * capacity blocks are block_size apart from the segment + its first
 * slice's index * 64 KiB, plus 384 bytes when blocks are of 8 to 1024.
 * A free block links the next by its first word. A block another thread
 * freed into a full page may instead be on its heap's thread_delayed_free
 * list (mi_heap_t +2840; the heap's thread_id at +2848, the one of the
 * segments it allocates from).
 */
#define MI_SEG_SHIFT 25
#define MI_SEG_SIZE (1ull << MI_SEG_SHIFT)
#define MI_SLICE (1ull << 16)
#define MI_SLICES 512u                  /* slices of a normal segment */
#define MI_HUGE_BSIZE (1ull << 31)
#define MI_SMALL_OFFSET 384u            /* 3 * MI_MAX_ALIGN_GUARANTEE */
#define MI_HDR 264u
#define MI_PAGE 80u
#define SEG_USED 208
#define SEG_COOKIE 216
#define SEG_SLICES 224
#define SEG_INFO 232
#define SEG_KIND 240
#define SEG_ENTRIES 248
#define SEG_TID 256
#define PG_COUNT 0
#define PG_OFFSET 4
#define PG_CAPACITY 10
#define PG_RESERVED 12
#define PG_FREE 16
#define PG_USED 24
#define PG_BSIZE 28
#define PG_LOCAL 32
#define PG_THREAD 40
#define PG_HEAP 48
#define HEAP_DELAYED 2840
#define HEAP_TID 2848

#define MAX_SEG_SLICES (1ull << 24)     /* a huge segment of 1 TiB at most */
#define MAX_CANDIDATES (1u << 20)       /* aligned addresses tried: 32 TiB of mappings */
#define MAX_HEAPS 4096
#define AREA_MAX (1u << 20)             /* a page read whole up to this (medium: 512 KiB) */

static uint16_t rd16(const uint8_t *p, size_t off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint32_t rd32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* ---- the version ---- */

int miblocks_version(struct target *t, const struct proc_maps *maps, unsigned *version)
{
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const struct elfobj_sym *s;
		struct elfobj *e;
		uint8_t code[6];

		if (!m->path || m->path[0] != '/' || !(m->prot & PROC_MAP_X))
			continue;
		e = target_object(t, m, TARGET_OBJ_SYMS, NULL);
		if (!e || !(s = elfobj_lookup(e, "mi_version", 0)))
			continue;
		if (elfobj_read(e, s->value, code, sizeof(code)) || code[0] != 0xb8 || code[5] != 0xc3)
			return -ENOTSUP;
		*version = rd32(code, 1);
		return 0;
	}
	return -ENOENT;
}

/* ---- the walk ---- */

/* Blocks found, in address order; a size of 0 marks one found free later. */
struct blist {
	struct hg_span *v;
	size_t n, cap;
};

/* A heap some page names, with the thread its segment says it is. */
struct heapref {
	uint64_t addr, tid;
};

struct walk {
	miblocks_read_fn read;
	void *arg;
	struct miblocks_stats *st;
	struct blist b;
	struct heapref heaps[MAX_HEAPS];
	size_t nheaps;
	uint8_t *seg;                   /* a segment's header and slices */
	uint64_t bits[65536 / 64];      /* a page's free blocks, by index */
	uint8_t *area;                  /* a page's blocks, read whole (AREA_MAX) */
	int have_area;
};

/* One page being walked. */
struct page {
	uint64_t start, bsize;
	uint32_t cap;
};

static void add_block(struct blist *b, uint64_t addr, uint64_t size)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 4096;
		b->v = xrealloc(b->v, b->cap * sizeof(*b->v));
	}
	b->v[b->n++] = (struct hg_span){ addr, (size_t)size };
}

static void add_heap(struct walk *w, uint64_t heap, uint64_t tid)
{
	if (!heap || (heap & 7))
		return;
	for (size_t i = 0; i < w->nheaps; i++)
		if (w->heaps[i].addr == heap)
			return;
	if (w->nheaps < MAX_HEAPS)
		w->heaps[w->nheaps++] = (struct heapref){ heap, tid };
}

/* The first word of block p of page pg (in it, checked): 0 or -errno. */
static int next_of(struct walk *w, const struct page *pg, uint64_t p, uint64_t *next)
{
	uint64_t len = (uint64_t)pg->cap * pg->bsize;

	if (len > AREA_MAX)
		return w->read(w->arg, p, next, 8);
	if (!w->have_area) {
		if (w->read(w->arg, pg->start, w->area, (size_t)len))
			return -EFAULT;
		w->have_area = 1;
	}
	memcpy(next, w->area + (p - pg->start), 8);
	return 0;
}

/* Mark the blocks of the list from head free in w->bits: how many, or -1
 * when it leaves the page, misses a block's start or meets one twice. */
static long walk_list(struct walk *w, const struct page *pg, uint64_t p)
{
	long n = 0;

	while (p) {
		uint64_t k;

		if (p < pg->start || (p - pg->start) % pg->bsize)
			return -1;
		k = (p - pg->start) / pg->bsize;
		if (k >= pg->cap || (w->bits[k / 64] >> (k % 64) & 1))
			return -1;
		w->bits[k / 64] |= 1ull << (k % 64);
		n++;
		if (next_of(w, pg, p, &p))
			return -1;
	}
	return n;
}

/* The page whose entry is s, the span of count slices at slice idx of seg
 * (thread tid): its blocks in use into w->b. 0, or -1 (torn: skipped). */
static int walk_page(struct walk *w, uint64_t seg, uint64_t tid, size_t idx, const uint8_t *s,
		     uint64_t count)
{
	uint32_t xbsize = rd32(s, PG_BSIZE), used = rd32(s, PG_USED);
	uint32_t off = xbsize >= 8 && xbsize <= 1024 ? MI_SMALL_OFFSET : 0;
	uint64_t psize = count * MI_SLICE - off;
	struct page pg = { seg + idx * MI_SLICE + off, xbsize < MI_HUGE_BSIZE ? xbsize : psize,
			   rd16(s, PG_CAPACITY) };
	long nf, nl, nt;

	if (!xbsize || !pg.cap)
		return 0;	/* a free span, or a page with no block yet */
	if (pg.bsize < 8 || rd16(s, PG_RESERVED) < pg.cap || used > pg.cap ||
	    (uint64_t)rd16(s, PG_RESERVED) * pg.bsize > psize)
		return -1;
	memset(w->bits, 0, (pg.cap + 63) / 64 * 8);
	w->have_area = 0;
	nf = walk_list(w, &pg, rd64(s, PG_FREE));
	nl = nf < 0 ? -1 : walk_list(w, &pg, rd64(s, PG_LOCAL));
	nt = nl < 0 ? -1 : walk_list(w, &pg, rd64(s, PG_THREAD) & ~3ull);
	if (nt < 0)
		return -1;
	if ((uint64_t)used + nf + nl != pg.cap)
		w->st->miscounted++;
	w->st->listed_free += (uint64_t)(nf + nl + nt);
	w->st->pages++;
	add_heap(w, rd64(s, PG_HEAP), tid);
	for (uint32_t k = 0; k < pg.cap; k++)
		if (!(w->bits[k / 64] >> (k % 64) & 1))
			add_block(&w->b, pg.start + k * pg.bsize, pg.bsize);
	return 0;
}

/* The header at a (its first MI_HDR bytes in w->seg) as a segment: its
 * length in slices, or 0 when it is none. */
static uint64_t seg_slices(const uint8_t *h)
{
	uint64_t slices = rd64(h, SEG_SLICES), info = rd64(h, SEG_INFO);
	uint64_t entries = rd64(h, SEG_ENTRIES);
	uint32_t kind = rd32(h, SEG_KIND);

	if (info < 1 || info > 4 || rd64(h, SEG_USED) > entries)
		return 0;
	if (kind == 0 && slices == MI_SLICES && entries == MI_SLICES)
		return slices;
	if (kind == 1 && slices > info && slices <= MAX_SEG_SLICES &&
	    entries == (slices < MI_SLICES ? slices : MI_SLICES))
		return slices;
	return 0;
}

/* Walk the segment at a whose header holds (its slices read here): its
 * pages' blocks into w->b. 0, or -1 when its spans do not hold. */
static int walk_segment(struct walk *w, uint64_t a)
{
	uint64_t slices = rd64(w->seg, SEG_SLICES), info = rd64(w->seg, SEG_INFO);
	uint64_t entries = rd64(w->seg, SEG_ENTRIES), tid = rd64(w->seg, SEG_TID);
	size_t at = w->b.n;
	uint64_t i;

	if (w->read(w->arg, a + MI_HDR, w->seg + MI_HDR, entries * MI_PAGE))
		return -1;
	if (rd32(w->seg + MI_HDR, PG_COUNT) != info || rd32(w->seg + MI_HDR, PG_OFFSET))
		return -1;
	for (i = info; i < entries;) {
		const uint8_t *s = w->seg + MI_HDR + i * MI_PAGE;
		uint64_t count = rd32(s, PG_COUNT);

		if (!count || rd32(s, PG_OFFSET) || (i + count > entries && i + count > slices))
			goto bad;
		if (walk_page(w, a, tid, (size_t)i, s, count))
			w->st->torn++;
		i += count;
	}
	w->st->segments++;
	return 0;
bad:
	w->b.n = at;
	return -1;
}

/* The aligned addresses of maps' private anonymous rw memory whose header
 * looks like a segment's, into *c (n of them), with their cookie keys. */
static size_t candidates(struct walk *w, const struct proc_maps *maps, uint64_t *c, uint64_t *key)
{
	size_t n = 0, tried = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		uint64_t a = (m->start + MI_SEG_SIZE - 1) & ~(MI_SEG_SIZE - 1);

		if (m->path || (m->prot & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_SHARED)) !=
		    (PROC_MAP_R | PROC_MAP_W))
			continue;
		for (; a >= m->start && a < m->end && tried < MAX_CANDIDATES; a += MI_SEG_SIZE) {
			tried++;
			if (w->read(w->arg, a, w->seg, MI_HDR) || !seg_slices(w->seg))
				continue;
			c[n] = a;
			key[n++] = rd64(w->seg, SEG_COOKIE) ^ a;
		}
	}
	return n;
}

/* The key most candidates share (a majority vote, then checked): 0 and
 * *key, or -1 when none has more than half. */
static int majority(const uint64_t *key, size_t n, uint64_t *out)
{
	uint64_t k = 0;
	size_t votes = 0, have = 0;

	for (size_t i = 0; i < n; i++) {
		if (!votes)
			k = key[i];
		votes += key[i] == k ? 1 : (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		have += key[i] == k;
	if (!n || 2 * have <= n)
		return -1;
	*out = k;
	return 0;
}

/* The index of the block starting at p in b, or -1. */
static long find_block(const struct blist *b, uint64_t p)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->v[mid].addr < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->n && b->v[lo].addr == p ? (long)lo : -1;
}

/* Each heap's delayed free list, its blocks marked free (size 0); a heap
 * whose thread is not its segments' is passed over, a list cut where it
 * leaves the blocks; steps bounded by the blocks. */
static void delayed(struct walk *w)
{
	uint64_t steps = w->b.n;

	for (size_t h = 0; h < w->nheaps; h++) {
		uint8_t hd[16];
		uint64_t p;
		long k;

		if (w->read(w->arg, w->heaps[h].addr + HEAP_DELAYED, hd, sizeof(hd)) ||
		    rd64(hd, 8) != w->heaps[h].tid)
			continue;
		w->st->heaps++;
		for (p = rd64(hd, 0); p && steps; steps--) {
			k = find_block(&w->b, p);
			if (k < 0 || !w->b.v[k].len || w->read(w->arg, p, &p, 8))
				break;
			w->b.v[k].len = 0;
			w->st->delayed_free++;
		}
	}
}

int miblocks_list(const struct proc_maps *maps, miblocks_read_fn read, void *arg,
		  struct heapgraph *g, hg_read_fn gread, void *garg, struct miblocks_segs *segs,
		  struct miblocks_stats *st, char *why, size_t whylen)
{
	size_t segbytes = MI_HDR + MI_SLICES * MI_PAGE, nc, n = 0;
	uint64_t *c = NULL, *key = NULL, k, end = 0, ncand = 0;
	struct walk *w = xmalloc(sizeof(*w));
	int rc = -ENOENT, anykey;

	memset(st, 0, sizeof(*st));
	memset(g, 0, sizeof(*g));
	memset(segs, 0, sizeof(*segs));
	memset(w, 0, sizeof(*w));
	w->read = read;
	w->arg = arg;
	w->st = st;
	w->seg = xmalloc(segbytes);
	w->area = xmap(AREA_MAX);
	for (size_t i = 0; i < maps->n; i++)
		if (!maps->v[i].path)
			ncand += (maps->v[i].end - maps->v[i].start) / MI_SEG_SIZE + 1;
	ncand = ncand < MAX_CANDIDATES ? ncand : MAX_CANDIDATES;
	c = xmalloc((ncand + 1) * sizeof(*c));
	key = xmalloc((ncand + 1) * sizeof(*key));
	nc = candidates(w, maps, c, key);
	if (!nc) {
		snprintf(why, whylen, "no mimalloc segment in its anonymous memory");
		goto out;
	}
	/* most segments share their key: a header with another is taken for
	 * none (when none has most, each header holds or not by its spans) */
	anykey = majority(key, nc, &k) != 0;
	for (size_t i = 0; i < nc; i++) {
		if ((!anykey && key[i] != k) || c[i] < end) {
			st->rejected++;
			continue;
		}
		if (read(arg, c[i], w->seg, MI_HDR) || !seg_slices(w->seg) ||
		    (rd64(w->seg, SEG_COOKIE) ^ c[i]) != key[i] || walk_segment(w, c[i])) {
			st->rejected++;
			continue;
		}
		end = c[i] + seg_slices(w->seg) * MI_SLICE;
		if (segs->n == segs->cap) {
			segs->cap = segs->cap ? 2 * segs->cap : 16;
			segs->v = xrealloc(segs->v, segs->cap * sizeof(*segs->v));
		}
		segs->v[segs->n++] = (struct hg_span){ c[i], (size_t)(end - c[i]) };
	}
	if (!st->segments) {
		snprintf(why, whylen, "none of %zu headers like a mimalloc segment's holds", nc);
		goto out;
	}
	if (st->pages < 2 * st->torn) {
		snprintf(why, whylen, "the free lists of %llu of %llu pages do not hold (a debug or "
			 "secure build of mimalloc?)", (unsigned long long)st->torn,
			 (unsigned long long)(st->pages + st->torn));
		rc = -EPROTO;
		goto out;
	}
	delayed(w);
	for (size_t i = 0; i < w->b.n; i++)
		n += w->b.v[i].len != 0;
	rc = heapgraph_init(g, n, gread, garg);
	if (rc) {
		snprintf(why, whylen, "%zu blocks: too many", n);
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < w->b.n; i++)
		if (w->b.v[i].len)
			heapgraph_set(g, n++, w->b.v[i].addr, w->b.v[i].len);
	g->n = n;
	heapgraph_seal(g);
	pr_debug("snapshot: mimalloc: %u segments (%u headers rejected), %llu pages (%llu torn, "
		 "%llu miscounted), %zu blocks in use, %llu free on the pages' lists, %llu on %u "
		 "heaps' delayed lists", st->segments, st->rejected,
		 (unsigned long long)st->pages, (unsigned long long)st->torn,
		 (unsigned long long)st->miscounted, g->n, (unsigned long long)st->listed_free,
		 (unsigned long long)st->delayed_free, st->heaps);
out:
	free(c);
	free(key);
	free(w->b.v);
	free(w->seg);
	xunmap(w->area, AREA_MAX);
	free(w);
	return rc;
}

void miblocks_segs_free(struct miblocks_segs *segs)
{
	free(segs->v);
	memset(segs, 0, sizeof(*segs));
}

/* ---- the roots ---- */

void miblocks_unroot(struct snaproots *r, const struct miblocks_segs *segs)
{
	snaproots_cut(r, segs->v, segs->n);
}
