/* --census: glibc's heaps walked once before the attach, chunk by chunk: what was there before heapattach came. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/xmalloc.h"
#include "model/census.h"

/*
 * A glibc heap is a chain of chunks: each starts with two words (the
 * previous chunk's size when that one is free, and its own size with
 * flag bits: 1 = the previous chunk is in use), and the next one starts
 * where its size says. The chain ends in the top chunk, whose end is the
 * end of the heap's used part: the whole [heap] (its mappings, if huge
 * pages split it) for the main arena; heap_info.size bytes from the
 * start of a 64 MiB-aligned heap for the others, whose chunks start
 * after heap_info (and, in an arena's first heap, its malloc_state):
 * rather than trust a glibc version's struct sizes, every 16-byte offset in the first page is tried and the
 * one whose chain lands exactly on the end is taken. Chunks in the
 * thread caches and fastbins look in use from the chain: they are counted
 * so. The walk reads the running target a megabyte at a time; a heap
 * that changes under it breaks its chain and is left out, and so is
 * what is not walked within CENSUS_MAX_NS (a target can make each of
 * the candidate offsets walk far before its chain breaks).
 */

#define WINDOW (1u << 20)
#define ARENA_ALIGN (64ULL << 20)
#define MIN_CHUNK 32
#define HEAP_INFO_SIZE_OFF 16   /* heap_info.size: after ar_ptr and prev */
#define CENSUS_MAX_NS 2000000000ULL	/* the whole walk: a heap not done by then is not counted */

struct reader {
	census_read_fn read;
	void *arg;
	uint8_t *buf;
	uint64_t lo, hi;        /* [lo, hi) is in buf */
	uint64_t end;           /* nothing at or past this is read */
	uint64_t deadline;      /* CLOCK_MONOTONIC ns: no read after it */
};

/* The word at addr (8-aligned, below r->end), read through the window. */
static int word(struct reader *r, uint64_t addr, uint64_t *out)
{
	if (addr < r->lo || addr + 8 > r->hi) {
		uint64_t len = r->end - addr < WINDOW ? r->end - addr : WINDOW;

		if (addr + 8 > r->end || clock_ns(CLOCK_MONOTONIC) > r->deadline ||
		    r->read(r->arg, addr, r->buf, len))
			return -EFAULT;
		r->lo = addr;
		r->hi = addr + len;
	}
	memcpy(out, r->buf + (addr - r->lo), 8);
	return 0;
}

uint64_t census_class_max(unsigned i)
{
	return i + 1 < CENSUS_CLASSES ? (uint64_t)MIN_CHUNK << i : UINT64_MAX;
}

static unsigned class_of(uint64_t size)
{
	unsigned i = 0;

	while (i + 1 < CENSUS_CLASSES && size > census_class_max(i))
		i++;
	return i;
}

/* A chunk of a chain: at c, size bytes, in use by the chain's word (the
 * next chunk's flag: thread-cache and fastbin chunks look in use). */
typedef void (*chunk_fn)(void *arg, uint64_t c, uint64_t size, int used);

/* Walk the chain from first to end, each chunk but the top to visit (may
 * be NULL), the top's size into *top, the chunks in use into *used: 0 if
 * it lands exactly on end. */
static int chain(struct reader *r, uint64_t first, uint64_t end, chunk_fn visit, void *arg,
		 uint64_t *top, uint64_t *used)
{
	uint64_t p = first, prev = 0, size;

	*used = 0;
	while (p < end) {
		if (end - p < MIN_CHUNK || word(r, p + 8, &size))
			return -EINVAL;
		if (prev && visit)
			visit(arg, p - prev, prev, (int)(size & 1));
		*used += prev && (size & 1);
		size &= ~7ULL;
		if (size < MIN_CHUNK || size % 16 || size > end - p)
			return -EINVAL;
		if (p + size == end) {
			*top = size;
			return 0;
		}
		prev = size;
		p += size;
	}
	return -EINVAL;
}

/* Called after a chain walked with visit: kept 1 when it reached its
 * heap's end (its visits stand), 0 when it broke (forget them). */
typedef void (*settle_fn)(void *arg, int kept);

/*
 * One heap: its chain from the offset *off when known (not UINT64_MAX),
 * else from the first offset in [from, from + 4096) whose chain lands on
 * end (into *off), walked again with visit unless visit is NULL; with
 * settle, each candidate is walked with visit once and settled instead.
 * Its top's size into *top, its chunks in use into *used.
 */
static int heap(struct reader *r, uint64_t start, uint64_t from, uint64_t end, chunk_fn visit,
		settle_fn settle, void *arg, uint64_t *off, uint64_t *top, uint64_t *used)
{
	int rc;

	if (*off != UINT64_MAX) {
		rc = chain(r, start + *off, end, visit, arg, top, used);
		if (settle)
			settle(arg, rc == 0);
		return rc;
	}
	for (uint64_t o = from; o < from + 4096 && start + o < end; o += 16) {
		rc = chain(r, start + o, end, settle ? visit : NULL, arg, top, used);
		if (settle)
			settle(arg, rc == 0);
		if (rc)
			continue;
		*off = o;
		return visit && !settle ? chain(r, start + o, end, visit, arg, top, used) : 0;
	}
	return -EINVAL;
}

/* chunk_fn: count the chunk in its class. */
static void count(void *arg, uint64_t c, uint64_t size, int used)
{
	struct census_class *k = &((struct census *)arg)->cls[class_of(size)];

	(void)c;
	if (used) {
		k->used_n++;
		k->used_b += size;
	} else {
		k->free_n++;
		k->free_b += size;
	}
}

/*
 * Every heap of maps: [heap], and the other arenas' heaps (anonymous, rw,
 * at a 64 MiB boundary, heap_info.size plausible), each walked with
 * visit; the tops' bytes into *top, the chunks in use into *nused. How
 * many were found and walked. offs (may be NULL): each mapping's chain
 * offset, found or known (heap()); settle (may be NULL): heap().
 */
static void heaps(const struct proc_maps *maps, struct reader *r, chunk_fn visit,
		  settle_fn settle, void *arg, uint64_t *offs, unsigned *found, unsigned *walked,
		  uint64_t *tops, uint64_t *nused)
{
	uint64_t top;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		uint64_t used, start = m->start, from = 32;
		size_t last = i;

		r->lo = r->hi = 0;
		r->end = m->end;
		if (m->path && !strcmp(m->path, "[heap]")) {
			/* one heap however many mappings: an madvise (huge pages)
			 * splits it where a chunk may straddle the cut */
			while (last + 1 < maps->n && maps->v[last + 1].start == maps->v[last].end &&
			       maps->v[last + 1].path && !strcmp(maps->v[last + 1].path, "[heap]"))
				last++;
			used = maps->v[last].end - m->start;
			from = 0;
		} else if (m->path || (m->prot & (PROC_MAP_R | PROC_MAP_W)) !=
					      (PROC_MAP_R | PROC_MAP_W) ||
			   (m->prot & PROC_MAP_SHARED) || m->start % ARENA_ALIGN ||
			   m->end - m->start > ARENA_ALIGN ||
			   word(r, m->start + HEAP_INFO_SIZE_OFF, &used) || used < 4096 ||
			   used > m->end - m->start) {
			continue;
		}
		(*found)++;
		r->lo = r->hi = 0;
		r->end = start + used;
		{
			uint64_t none = UINT64_MAX, *off = offs ? &offs[i] : &none, n;

			if (heap(r, start, from, start + used, visit, settle, arg, off, &top, &n) == 0) {
				(*walked)++;
				*tops += top;
				*nused += n;
			}
		}
		i = last;
	}
}

int census_chunks(const struct proc_maps *maps, census_read_fn read, void *arg,
		  void (*visit)(void *arg, uint64_t chunk, uint64_t size, int used),
		  void (*settle)(void *arg, int kept), void *varg, uint64_t *offs, unsigned *walked,
		  uint64_t *nused)
{
	struct reader r = { .read = read, .arg = arg, .buf = xmap(WINDOW),
			    .deadline = UINT64_MAX };
	unsigned found = 0;
	uint64_t tops = 0;

	*walked = 0;
	*nused = 0;
	heaps(maps, &r, visit, settle, varg, offs, &found, walked, &tops, nused);
	xunmap(r.buf, WINDOW);
	return *walked ? 0 : -ENOENT;
}

int census_walk(const struct proc_maps *maps, census_read_fn read, void *arg, struct census *out)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	struct reader r = { .read = read, .arg = arg, .buf = xmap(WINDOW),
			    .deadline = t0 + CENSUS_MAX_NS };

	memset(out, 0, sizeof(*out));
	{
		uint64_t nused;

		heaps(maps, &r, count, NULL, out, NULL, &out->heaps, &out->walked, &out->top_b, &nused);
	}
	xunmap(r.buf, WINDOW);
	out->ns = clock_ns(CLOCK_MONOTONIC) - t0;
	return out->walked ? 0 : -ENOENT;
}

static void fmt_mib(char *buf, size_t len, uint64_t b)
{
	snprintf(buf, len, "%.1f MiB", b / 1048576.0);
}

void census_print(const struct census *c, void (*line)(void *arg, const char *text), void *arg)
{
	char rec[2048], text[256], a[32], b[32];
	uint64_t un = 0, ub = 0, fn = 0, fb = 0;
	size_t off;

	for (unsigned i = 0; i < CENSUS_CLASSES; i++) {
		un += c->cls[i].used_n;
		ub += c->cls[i].used_b;
		fn += c->cls[i].free_n;
		fb += c->cls[i].free_b;
	}
	off = (size_t)snprintf(rec, sizeof(rec),
			       "heapattach-census: heaps=%u walked=%u used_n=%llu used_b=%llu "
			       "free_n=%llu free_b=%llu top_b=%llu", c->heaps, c->walked,
			       (unsigned long long)un, (unsigned long long)ub,
			       (unsigned long long)fn, (unsigned long long)fb,
			       (unsigned long long)c->top_b);
	if (c->mm_known)
		off += (size_t)snprintf(rec + off, sizeof(rec) - off,
					" mmapped_n=%llu mmapped_b=%llu mmapped_res=%llu",
					(unsigned long long)c->mm_n, (unsigned long long)c->mm_b,
					(unsigned long long)c->mm_res);
	for (unsigned i = 0; i < CENSUS_CLASSES && off < sizeof(rec); i++)
		if (c->cls[i].used_n || c->cls[i].free_n)
			off += (size_t)snprintf(rec + off, sizeof(rec) - off, " le%llu=%llu/%llu/%llu/%llu",
				(unsigned long long)(i + 1 < CENSUS_CLASSES ? census_class_max(i) : 0),
				(unsigned long long)c->cls[i].used_n,
				(unsigned long long)c->cls[i].used_b,
				(unsigned long long)c->cls[i].free_n,
				(unsigned long long)c->cls[i].free_b);
	line(arg, rec);
	fmt_mib(a, sizeof(a), ub);
	fmt_mib(b, sizeof(b), fb);
	snprintf(text, sizeof(text), "census before attach (%u of %u glibc heaps walked in %.0f ms): "
		 "%llu chunks in use (%s), %llu free (%s), %.1f MiB at the arenas' tops",
		 c->walked, c->heaps, c->ns / 1e6, (unsigned long long)un, a,
		 (unsigned long long)fn, b, c->top_b / 1048576.0);
	line(arg, text);
	for (unsigned i = 0; i < CENSUS_CLASSES; i++) {
		const struct census_class *k = &c->cls[i];

		if (!k->used_n && !k->free_n)
			continue;
		fmt_mib(a, sizeof(a), k->used_b);
		fmt_mib(b, sizeof(b), k->free_b);
		if (i + 1 < CENSUS_CLASSES)
			snprintf(text, sizeof(text), "  chunks up to %8llu bytes: %9llu in use (%s), "
				 "%9llu free (%s)", (unsigned long long)census_class_max(i),
				 (unsigned long long)k->used_n, a, (unsigned long long)k->free_n, b);
		else
			snprintf(text, sizeof(text), "  larger chunks:            %9llu in use (%s), "
				 "%9llu free (%s)", (unsigned long long)k->used_n, a,
				 (unsigned long long)k->free_n, b);
		line(arg, text);
	}
	if (c->mm_known) {
		fmt_mib(a, sizeof(a), c->mm_b);
		fmt_mib(b, sizeof(b), c->mm_res);
		snprintf(text, sizeof(text), "  and %llu blocks mmapped for themselves, outside the "
			 "heaps, all in use: %s mapped, %s of it resident",
			 (unsigned long long)c->mm_n, a, b);
	} else {
		snprintf(text, sizeof(text), "  blocks mmapped for themselves (outside the heaps) "
			 "not counted: the search for them failed or ran out of time");
	}
	line(arg, text);
}
