/* The blocks of a heap as a graph: which roots reach each block, which none (leaked), and what each root alone keeps alive. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/sys_compat.h"
#include "base/xmalloc.h"
#include "snapshot/heapgraph.h"

/* The arrays of one entry a block, and their entry sizes. */
#define ARRAYS(g) { (void **)&(g)->addr, (void **)&(g)->size, (void **)&(g)->owner, \
		    (void **)&(g)->parent, (void **)&(g)->type, (void **)&(g)->work }
static const size_t array_entry[] = { 8, 4, 4, 4, 4, 4 };
#define NARRAYS (sizeof(array_entry) / sizeof(array_entry[0]))
#define HUGE_ALIGN (2u << 20)           /* a huge page */
#define ADDR_SIZE 3u                    /* populate's mask: the arrays addr and size */
#define REST 0x1cu                      /* owner, parent and type */

/*
 * Fault in entries [from, to) of the arrays mask says (bit i: ARRAYS' i),
 * one call each (MADV_POPULATE_WRITE) rather than a fault a page: on a VM
 * a fault's entry and exit cost as much as the page's clearing (10 to 80
 * us a fresh page in all here). With huge, in huge pages where whole ones
 * fit (THP "madvise"; the rest in small pages: no more memory than the
 * entries): one fault, and one first touch, for 512 pages. Nothing when
 * the kernel cannot (before 5.14): the pages fault in as they are written.
 */
static void populate(struct heapgraph *g, unsigned mask, size_t from, size_t to, int huge)
{
	void **arr[] = ARRAYS(g);

	for (size_t i = 0; i < NARRAYS && from < to; i++) {
		uintptr_t lo = (uintptr_t)*arr[i] + from * array_entry[i];
		uintptr_t hi = (uintptr_t)*arr[i] + to * array_entry[i];
		uintptr_t hlo = (lo + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
		uintptr_t hhi = hi & ~(uintptr_t)(HUGE_ALIGN - 1);

		if (!(mask >> i & 1))
			continue;
		if (huge && hhi > hlo)
			madvise((void *)hlo, hhi - hlo, MADV_HUGEPAGE);
		lo &= ~(uintptr_t)4095;
		hi = (hi + 4095) & ~(uintptr_t)4095;
		madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
	}
}

void heapgraph_prefault(struct heapgraph *g, size_t from, size_t to)
{
	populate(g, ADDR_SIZE, from, to < g->cap ? to : g->cap, 1);
}

/* Bytes reserved for array i: HG_MAX + 1 entries, in whole pages. */
static size_t room_of(size_t i)
{
	return (((size_t)HG_MAX + 1) * array_entry[i] + 4095) & ~(size_t)4095;
}

/*
 * Array i of len bytes: in a reservation of room_of(i) bytes (bit i of
 * g->reserved; inaccessible beyond len, never charged) when the kernel
 * gives one, so that heapgraph_grow makes room where the array is: moved
 * by mremap, each page of it faults again at its next touch (10 to 80 us
 * a fresh page on this VM, every doubling). The reservation starts on a
 * 2 MiB boundary: populate may give it huge pages. Else a mapping of len
 * bytes.
 */
static void *arr_map(struct heapgraph *g, size_t i, size_t len)
{
	size_t room = room_of(i);
	uint8_t *p = mmap(NULL, room + HUGE_ALIGN, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *at;

	if (p == MAP_FAILED)
		return xmap(len);
	at = (uint8_t *)(((uintptr_t)p + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
	if (at > p)
		munmap(p, (size_t)(at - p));
	munmap(at + room, (size_t)(p + HUGE_ALIGN - at));
	if (mprotect(at, len, PROT_READ | PROT_WRITE)) {
		munmap(at, room);
		return xmap(len);
	}
	g->reserved |= 1u << i;
	return at;
}

int heapgraph_init(struct heapgraph *g, size_t n, hg_read_fn read, void *arg)
{
	void **arr[] = ARRAYS(g);

	memset(g, 0, sizeof(*g));
	if (n >= HG_MAX)
		return -E2BIG;
	g->n = g->cap = n;
	for (size_t i = 0; i < NARRAYS; i++)
		*arr[i] = arr_map(g, i, (n + 1) * array_entry[i]);
	g->buf = xmap(HG_BATCH_BYTES);
	g->batch = xmap(HG_BATCH_BLOCKS * sizeof(*g->batch));
	g->sorted = xmap(HG_BATCH_BLOCKS * sizeof(*g->sorted));
	g->boff = xmap(HG_BATCH_BLOCKS * sizeof(*g->boff));
	g->read = read;
	g->read_arg = arg;
	return 0;
}

int heapgraph_grow(struct heapgraph *g, size_t cap)
{
	void **arr[] = ARRAYS(g);

	if (cap >= HG_MAX)
		return -E2BIG;
	if (cap <= g->cap)
		return 0;
	for (size_t i = 0; i < NARRAYS; i++) {
		void *p = *arr[i];

		if (g->reserved >> i & 1) {
			if (mprotect(p, (cap + 1) * array_entry[i], PROT_READ | PROT_WRITE))
				xmalloc_oom((cap + 1) * array_entry[i]);
			continue;
		}
		p = mremap(p, (g->cap + 1) * array_entry[i], (cap + 1) * array_entry[i],
			   MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			xmalloc_oom((cap + 1) * array_entry[i]);
		*arr[i] = p;
	}
	g->cap = cap;
	return 0;
}

void heapgraph_set_big(struct heapgraph *g, uint64_t addr, uint64_t size)
{
	size_t i = 0;

	while (i < g->nbig && g->big[i].addr != addr)
		i++;
	if (i == g->nbig)
		g->big = xrealloc(g->big, ++g->nbig * sizeof(*g->big));
	g->big[i] = (struct hg_big){ addr, size };
}

uint64_t heapgraph_big_size(const struct heapgraph *g, uint64_t addr)
{
	for (size_t i = 0; i < g->nbig; i++)
		if (g->big[i].addr == addr)
			return g->big[i].size;
	return HG_BIG;
}

/* Give the directory back. */
static void index_free(struct heapgraph *g)
{
	xunmap(g->seg, (g->nseg + 1) * sizeof(*g->seg));
	xunmap(g->dir, (g->ndir + 1) * sizeof(*g->dir));
	g->seg = NULL;
	g->dir = NULL;
	g->nseg = g->ndir = 0;
}

void heapgraph_free(struct heapgraph *g)
{
	void **arr[] = ARRAYS(g);

	if (!g->addr)
		return;
	for (size_t i = 0; i < NARRAYS; i++)
		xunmap(*arr[i], g->reserved >> i & 1 ? room_of(i) : (g->cap + 1) * array_entry[i]);
	index_free(g);
	xunmap(g->buf, HG_BATCH_BYTES);
	xunmap(g->batch, HG_BATCH_BLOCKS * sizeof(*g->batch));
	xunmap(g->sorted, HG_BATCH_BLOCKS * sizeof(*g->sorted));
	xunmap(g->boff, HG_BATCH_BLOCKS * sizeof(*g->boff));
	free(g->big);
	memset(g, 0, sizeof(*g));
}

/* The shift of a segment of nb blocks over len bytes: an entry for about
 * every four blocks, at least one. */
static uint32_t seg_shift(uint64_t len, uint32_t nb)
{
	uint64_t want = nb / 4 ? nb / 4 : 1;
	uint32_t shift = 4;

	while (shift < 63 && ((len - 1) >> shift) + 1 > want)
		shift++;
	return shift;
}

/* Entries of segment s. */
static uint64_t seg_entries(const struct hg_seg *s)
{
	return ((s->end - s->base - 1) >> s->shift) + 1;
}

/* The directory of the sealed blocks (heapgraph.h). */
static void index_build(struct heapgraph *g)
{
	size_t nseg = 0, ndir = 0;

	index_free(g);
	for (size_t i = 0; i < g->n; i++)
		nseg += !i || g->addr[i] - (g->addr[i - 1] + heapgraph_size(g, i - 1)) > HG_SEG_GAP;
	if (!nseg)
		return;
	g->seg = xmap((nseg + 1) * sizeof(*g->seg));
	for (size_t i = 0, k = 0; i < g->n; i++) {
		if (!i || g->addr[i] - (g->addr[i - 1] + heapgraph_size(g, i - 1)) > HG_SEG_GAP)
			g->seg[k++] = (struct hg_seg){ .base = g->addr[i], .first = (uint32_t)i };
		g->seg[k - 1].end = g->addr[i] + heapgraph_size(g, i);
		g->seg[k - 1].n++;
	}
	for (size_t k = 0; k < nseg; k++) {
		struct hg_seg *s = &g->seg[k];

		s->shift = seg_shift(s->end - s->base, s->n);
		s->dir = (uint32_t)ndir;
		ndir += seg_entries(s);
	}
	g->nseg = nseg;
	g->ndir = ndir;
	g->dir = xmap((ndir + 1) * sizeof(*g->dir));
	for (size_t k = 0; k < nseg; k++) {
		const struct hg_seg *s = &g->seg[k];
		uint64_t e = seg_entries(s);
		size_t b = s->first, last = s->first + s->n - 1;

		for (uint64_t j = 0; j < e; j++) {
			uint64_t at = s->base + (j << s->shift);

			while (b < last && g->addr[b + 1] <= at)
				b++;
			g->dir[s->dir + j] = (uint32_t)b;	/* the last block starting at or below at */
		}
	}
}

size_t heapgraph_seal(struct heapgraph *g)
{
	size_t k = 0;
	uint64_t end = 0;

	for (size_t i = 0; i < g->n; i++) {
		uint64_t a = g->addr[i], s = heapgraph_size(g, i);

		if (!s || a < end || a + s < a)
			continue;	/* out of order, overlapping, empty or wrapping */
		if (k < i) {
			g->addr[k] = a;
			g->size[k] = g->size[i];	/* HG_BIG: its size stays by its address */
		}
		end = a + s;
		k++;
	}
	g->n = k;
	populate(g, REST, 0, k, 1);
	for (size_t i = 0; i < k; i++) {
		g->owner[i] = HG_NONE;
		g->parent[i] = HG_NONE;
		g->type[i] = 0;
	}
	g->lo = k ? g->addr[0] : 1;
	g->hi = k ? g->addr[k - 1] + heapgraph_size(g, k - 1) : 0;
	index_build(g);
	return k;
}

size_t heapgraph_first_from(const struct heapgraph *g, uint64_t lo)
{
	size_t a = 0, b = g->n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (g->addr[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* The last block of [a, b] starting at or below p (addr[a] <= p). */
static inline size_t last_at_or_below(const struct heapgraph *g, size_t a, size_t b, uint64_t p)
{
	if (b - a <= 8) {
		while (a < b && g->addr[a + 1] <= p)
			a++;
		return a;
	}
	while (a < b) {
		size_t mid = a + (b - a + 1) / 2;

		if (g->addr[mid] <= p)
			a = mid;
		else
			b = mid - 1;
	}
	return a;
}

/* heapgraph_find through the directory. */
static inline long lookup(const struct heapgraph *g, uint64_t p)
{
	const struct hg_seg *s;
	size_t lo = 0, hi, b;
	uint64_t k;

	if (p < g->lo || p >= g->hi)
		return -1;	/* most words: small numbers, code, strings */
	if (!g->seg) {	/* not sealed */
		size_t after = heapgraph_first_from(g, p + 1);

		return after && p - g->addr[after - 1] < heapgraph_size(g, after - 1) ?
		       (long)after - 1 : -1;
	}
	hi = g->nseg - 1;
	while (lo < hi) {	/* the last segment starting at or below p */
		size_t mid = lo + (hi - lo + 1) / 2;

		if (g->seg[mid].base <= p)
			lo = mid;
		else
			hi = mid - 1;
	}
	s = &g->seg[lo];
	if (p >= s->end)
		return -1;
	k = (p - s->base) >> s->shift;
	b = g->dir[s->dir + k];
	hi = ((k + 1) << s->shift) < s->end - s->base ? g->dir[s->dir + k + 1] : s->first + s->n - 1;
	b = last_at_or_below(g, b, hi, p);
	return p - g->addr[b] < heapgraph_size(g, b) ? (long)b : -1;
}

long heapgraph_find(const struct heapgraph *g, uint64_t p)
{
	return lookup(g, p);
}

int heapgraph_parent(const struct heapgraph *g, size_t i, size_t *block, uint32_t *root)
{
	uint32_t p = g->parent[i];

	if (p == HG_NONE)
		return -1;
	if (p < g->n) {
		*block = p;
		return 1;
	}
	*root = p - (uint32_t)g->n;
	return 0;
}

/* Block b reached by owner (a root id or HG_SHARED) from parent: it is
 * owned by owner if nothing reached it before, shared if something else
 * did; queued to be scanned when that changed. A weak root (g->weak)
 * leaves alone the blocks a root before it reached. */
static void reach(struct heapgraph *g, size_t b, uint32_t owner, uint32_t parent)
{
	uint32_t was = g->owner[b];

	if (was == owner || (g->weak && was != HG_NONE && !(g->type[b] & HG_WEAKLY)))
		return;
	if (was == HG_SHARED)
		return;
	if (was == HG_NONE) {
		g->owner[b] = owner;
		g->parent[b] = parent;
		if (g->weak)
			g->type[b] |= HG_WEAKLY;
	} else {
		g->owner[b] = HG_SHARED;
	}
	if (!(g->type[b] & HG_QUEUED)) {
		g->type[b] |= HG_QUEUED;
		g->work[g->nwork++] = (uint32_t)b;	/* at most n: queued once at a time */
	}
}

/* The words of p[0..len) point to what they hit, reached by owner from parent. */
static void scan_words(struct heapgraph *g, const uint8_t *p, size_t len, uint32_t owner,
		       uint32_t parent)
{
	uint64_t lo = g->lo, hi = g->hi;

	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint64_t w;
		long b;

		memcpy(&w, p + off, 8);
		if (w < lo || w >= hi)
			continue;
		b = lookup(g, w);
		if (b >= 0)
			reach(g, (size_t)b, owner, parent);
	}
	g->words += len / 8;
}

/* The block and owner of a batch entry. */
#define KEY_BLOCK(k) ((size_t)((k) >> 32))
#define KEY_OWNER(k) ((uint32_t)(k))

/* Scan blocks keys[from..to) (ascending), read by spans[0..n): all at
 * once, else block by block (one on a page the copy lacks is left
 * unscanned). */
static void scan_read(struct heapgraph *g, const uint64_t *keys, size_t from, size_t to,
		      const struct hg_span *spans, size_t n)
{
	g->reads++;
	if (g->read(g->read_arg, spans, n, g->buf) == 0) {
		for (size_t k = from; k < to; k++) {
			size_t b = KEY_BLOCK(keys[k]);

			scan_words(g, g->buf + g->boff[k], (size_t)(heapgraph_size(g, b) & ~7ULL),
				   KEY_OWNER(keys[k]), (uint32_t)b);
		}
		return;
	}
	for (size_t k = from; k < to; k++) {
		size_t b = KEY_BLOCK(keys[k]);
		struct hg_span sp = { g->addr[b], (size_t)(heapgraph_size(g, b) & ~7ULL) };

		g->reads++;
		if (g->read(g->read_arg, &sp, 1, g->buf) == 0)
			scan_words(g, g->buf, sp.len, KEY_OWNER(keys[k]), (uint32_t)b);
		else
			g->unread += sp.len;
	}
}

/* Scan the blocks of keys[0..n) (ascending, each at most HG_BATCH_BYTES):
 * blocks at most HG_GAP apart read as one span, the gap with them. */
static void scan_sorted(struct heapgraph *g, const uint64_t *keys, size_t n)
{
	static struct hg_span spans[HG_BATCH];
	size_t i = 0;

	while (i < n) {
		size_t m = 0, off = 0, j = i;
		uint64_t end = 0;

		for (; j < n; j++) {
			size_t b = KEY_BLOCK(keys[j]);
			uint64_t a = g->addr[b], len = heapgraph_size(g, b) & ~7ULL;

			if (m && a >= end && a - end <= HG_GAP &&
			    off + (a - end) + len <= HG_BATCH_BYTES) {
				off += a - end;
				spans[m - 1].len += (size_t)(a + len - end);
			} else if (m < HG_BATCH && off + len <= HG_BATCH_BYTES) {
				spans[m++] = (struct hg_span){ a, (size_t)len };
			} else {
				break;
			}
			g->boff[j] = (uint32_t)off;
			off += len;
			end = a + len;
		}
		scan_read(g, keys, i, j, spans, m);
		i = j;
	}
}

/* Sort keys[0..n) by block (ascending), through tmp: as they are, reversed,
 * or three passes of a radix sort on the block's 32 bits. */
static uint64_t *sort_keys(uint64_t *keys, uint64_t *tmp, size_t n)
{
	int up = 1, down = 1;

	for (size_t i = 1; i < n && (up || down); i++) {
		up &= keys[i - 1] < keys[i];
		down &= keys[i - 1] > keys[i];
	}
	if (up)
		return keys;
	if (down) {
		for (size_t i = 0; i < n / 2; i++) {
			uint64_t t = keys[i];

			keys[i] = keys[n - 1 - i];
			keys[n - 1 - i] = t;
		}
		return keys;
	}
	for (unsigned shift = 32; shift < 64; shift += 11) {
		size_t count[2048] = { 0 }, at = 0;
		uint64_t *t;

		for (size_t i = 0; i < n; i++)
			count[(keys[i] >> shift) & 2047]++;
		for (size_t d = 0; d < 2048; d++) {
			size_t c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(keys[i] >> shift) & 2047]++] = keys[i];
		t = keys;
		keys = tmp;
		tmp = t;
	}
	return keys;
}

/* Scan block b's words, a large block in pieces of HG_BATCH_BYTES. */
static void scan_big(struct heapgraph *g, size_t b)
{
	uint64_t size = heapgraph_size(g, b) & ~7ULL;
	uint32_t owner = g->owner[b];

	for (uint64_t at = 0; at < size; at += HG_BATCH_BYTES) {
		struct hg_span sp = { g->addr[b] + at, size - at < HG_BATCH_BYTES ?
						       (size_t)(size - at) : HG_BATCH_BYTES };

		g->reads++;
		if (g->read(g->read_arg, &sp, 1, g->buf) == 0)
			scan_words(g, g->buf, sp.len, owner, (uint32_t)b);
		else
			g->unread += sp.len;
	}
}

/* Scan what the worklist holds, and what it reaches, until it is empty:
 * up to HG_BATCH_BLOCKS blocks (HG_BATCH_BYTES of them) at a time, in
 * address order. */
static void drain(struct heapgraph *g)
{
	while (g->nwork) {
		size_t n = 0, bytes = 0;

		while (g->nwork && n < HG_BATCH_BLOCKS) {
			size_t b = g->work[g->nwork - 1];
			uint64_t len = heapgraph_size(g, b) & ~7ULL;

			if (len > HG_BATCH_BYTES) {
				if (n)
					break;	/* the batch first */
				g->nwork--;
				g->type[b] &= ~HG_QUEUED;
				scan_big(g, b);
				continue;
			}
			if (bytes + len > HG_BATCH_BYTES)
				break;
			g->nwork--;
			g->type[b] &= ~HG_QUEUED;	/* a change while in the batch queues it again */
			g->batch[n++] = (uint64_t)b << 32 | g->owner[b];
			bytes += len;
		}
		if (n)
			scan_sorted(g, sort_keys(g->batch, g->sorted, n), n);
	}
}

int heapgraph_root_range(struct heapgraph *g, uint32_t id, uint64_t lo, uint64_t hi)
{
	uint32_t parent = (uint32_t)g->n + id;
	size_t done = 0;

	lo = (lo + 7) & ~7ULL;
	for (uint64_t at = lo; at < hi; at += HG_BATCH_BYTES) {
		struct hg_span sp = { at, hi - at < HG_BATCH_BYTES ? (size_t)(hi - at) : HG_BATCH_BYTES };

		g->reads++;
		if (g->read(g->read_arg, &sp, 1, g->buf)) {
			g->unread += sp.len;
			continue;
		}
		scan_words(g, g->buf, sp.len, id, parent);
		done++;
		drain(g);
	}
	return done || lo >= hi ? 0 : -EFAULT;
}

void heapgraph_root_words(struct heapgraph *g, uint32_t id, const uint64_t *w, size_t n)
{
	scan_words(g, (const uint8_t *)w, n * 8, id, (uint32_t)g->n + id);
	drain(g);
}

void heapgraph_weak(struct heapgraph *g, int on)
{
	g->weak = on;
	if (!on)
		for (size_t i = 0; i < g->n; i++)
			g->type[i] &= ~HG_WEAKLY;
}
