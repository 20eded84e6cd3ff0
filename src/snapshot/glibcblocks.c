/* glibc malloc's blocks in use, listed from a copy of the target that does not run: heap chunks minus those in the thread caches and fast bins. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/census.h"
#include "model/mmchunks.h"
#include "snapshot/glibcblocks.h"

/*
 * A thread's cache (malloc/malloc.c, tcache_perthread_struct) is a chunk
 * of its arena: counts[64] then entries[64], the heads of 64 lists of
 * free chunks of one size class each (class i: chunks of (i + 2) * 16
 * bytes), linked through their first word. counts are 16-bit since glibc
 * 2.30 (a 0x290-byte chunk), 8-bit before (0x250); the links are
 * mangled since 2.32 (safe-linking: the next pointer xor the link's own
 * address >> 12). A chunk of either size is taken for a cache only when
 * every list holds together: each entry a block of the heap of its class,
 * the list exactly counts[i] long, an empty list's head NULL.
 */
#define TCACHE_BINS 64
#define TCACHE_WIDE_CHUNK 0x290         /* 2.30 on: uint16_t counts */
#define TCACHE_NARROW_CHUNK 0x250       /* before: uint8_t counts */
#define FAST_MAX_CHUNKS (64u << 20)     /* free chunks the arenas' walk visits at most */
#define MM_BUDGET_NS 10000000000ULL     /* the search for mmapped blocks: 10 s at most */

#define FIRST_CAP 65536              /* blocks the graph has room for at first */
#define PREFAULT 262144              /* blocks whose room is faulted in at a time, at most:
					 * their addresses fill a huge page (heapgraph_prefault) */

/* The listing's graph: blocks [0, n) set, [0, kept) from chains that held. */
struct fill {
	struct heapgraph *g;
	size_t n, kept;
	size_t ready;                   /* room faulted in for [0, ready) (heapgraph_prefault) */
	int full;                       /* more than HG_MAX blocks: the rest dropped */
};

/* How many blocks' room to fault in after n are set: an eighth of n (no
 * more memory than that ahead), a power of two from 4096 to PREFAULT
 * (each run then starts on a multiple of its length: whole huge pages). */
static size_t prefault_run(size_t n)
{
	size_t run = 4096;

	while (run < PREFAULT && run * 16 <= n)
		run *= 2;
	return run;
}

static void fill_used(void *arg, uint64_t chunk, uint64_t size, int used)
{
	struct fill *f = arg;

	size_t cap = f->g->cap, more = 2 * cap < HG_MAX ? 2 * cap : HG_MAX - 1;

	if (!used || f->full)
		return;
	if (f->n == cap && (more <= cap || heapgraph_grow(f->g, more))) {
		f->full = 1;
		return;
	}
	if (f->n >= f->ready) {
		f->ready = f->n + prefault_run(f->n);
		heapgraph_prefault(f->g, f->n, f->ready);
	}
	heapgraph_set(f->g, f->n++, chunk + 16, size - 8);
}

/* A heap's chain held (its blocks stay) or broke (forget them). */
static void fill_settle(void *arg, int kept)
{
	struct fill *f = arg;

	if (kept)
		f->kept = f->n;
	else
		f->n = f->kept;
}

/* census_read_fn through the graph's reader: one span. */
struct spanread {
	hg_read_fn read;
	void *arg;
};

static int read_span(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct spanread *sr = arg;
	struct hg_span sp = { addr, len };

	return sr->read(sr->arg, &sp, 1, buf);
}

/* Indices of blocks found free, to drop: room for every block (a list that
 * names one twice is cut there), in pages of their own: nothing of ours
 * moves in a heap the listing reads (a unit test lists its own). */
struct frees {
	uint32_t *v;
	size_t n, cap;
};

static void add_free(struct frees *fr, size_t b)
{
	if (fr->n < fr->cap)
		fr->v[fr->n++] = (uint32_t)b;
}

/* The block whose user address is exactly p, of chunk size csize (0: any): its index or -1. */
static long block_at(const struct heapgraph *g, uint64_t p, uint64_t csize)
{
	long b = heapgraph_find(g, p);

	if (b < 0 || g->addr[b] != p || (csize && heapgraph_size(g, (size_t)b) + 8 != csize))
		return -1;
	return b;
}

/* Check the cache whose counts and entries are c (wide: 16-bit counts),
 * its links mangled or not, each link followed taken off *steps; its
 * chunks into fr when it holds together. The number of chunks, or -1. */
static long tcache_check(const struct heapgraph *g, glibc_read_fn read, void *arg,
			 const uint8_t *c, int wide, int mangled, uint64_t *steps, struct frees *fr)
{
	size_t at = fr->n;
	long total = 0;

	for (unsigned i = 0; i < TCACHE_BINS; i++) {
		unsigned cnt = wide ? ((const uint16_t *)c)[i] : c[i];
		uint64_t e;

		memcpy(&e, c + (wide ? 2 : 1) * TCACHE_BINS + 8 * i, 8);
		for (unsigned k = 0; k < cnt; k++) {
			long b = block_at(g, e, (uint64_t)(i + 2) * 16);
			uint64_t raw;

			if (b < 0 || !*steps || read(arg, e, &raw, 8))
				goto bad;
			(*steps)--;
			add_free(fr, (size_t)b);
			e = mangled ? (e >> 12) ^ raw : raw;
		}
		if (e)
			goto bad;	/* longer than its count, or a head without one */
		total += cnt;
	}
	return total;
bad:
	fr->n = at;
	return -1;
}

/*
 * The thread caches among the blocks of g: their chunks into fr. Every
 * entry of a real cache is a block of its own, so all of them together
 * are fewer than the blocks: the links followed over every candidate
 * (each tried with and without safe-linking) stop at twice that, however
 * many chunks of a cache's size a target makes look like one.
 */
static void tcaches(const struct heapgraph *g, glibc_read_fn read, void *arg, struct frees *fr,
		    struct glibcblocks_stats *st)
{
	uint8_t c[TCACHE_WIDE_CHUNK - 16];
	uint64_t steps = 2 * (uint64_t)g->n + 2 * TCACHE_BINS;

	for (size_t b = 0; b < g->n; b++) {
		uint64_t csize = heapgraph_size(g, b) + 8;
		int wide = csize == TCACHE_WIDE_CHUNK;
		long got;

		if (!wide && csize != TCACHE_NARROW_CHUNK)
			continue;
		if (read(arg, g->addr[b], c, csize - 16))
			continue;
		got = tcache_check(g, read, arg, c, wide, 1, &steps, fr);
		if (got < 0)
			got = tcache_check(g, read, arg, c, wide, 0, &steps, fr);
		if (got < 0)
			continue;
		st->tcaches++;
		st->tcache_free += (uint64_t)got;
	}
}

struct fastctx {
	const struct heapgraph *g;
	struct frees *fr;
	struct glibcblocks_stats *st;
};

static void fast_chunk(void *arg, uint64_t chunk)
{
	struct fastctx *f = arg;
	long b = block_at(f->g, chunk + 16, 0);

	if (b >= 0) {
		add_free(f->fr, (size_t)b);
		f->st->fast_free++;
	}
}

/* glibc's mmapped blocks, in address order. */
struct mmlist {
	struct hg_span *v;
	size_t n, cap;
};

static void add_mm(void *arg, uint64_t addr, uint64_t len)
{
	struct mmlist *l = arg;

	if (len <= 16)
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct hg_span){ addr + 16, (size_t)(len - 16) };
}

/* Merge mm's blocks into g's first f.n (both in address order), from the end back. */
static void merge_mm(struct heapgraph *g, size_t nheap, const struct mmlist *mm)
{
	size_t i = nheap, j = mm->n, k = nheap + mm->n;

	while (j) {
		if (i && g->addr[i - 1] > mm->v[j - 1].addr) {
			i--;
			heapgraph_set(g, --k, g->addr[i], heapgraph_size(g, i));
		} else {
			j--;
			heapgraph_set(g, --k, mm->v[j].addr, mm->v[j].len);
		}
	}
	g->n = nheap + mm->n;
}

int glibcblocks_list(pid_t pid, const struct proc_maps *maps, glibc_read_fn read, void *arg,
		     const struct glibc_state *gs, struct heapgraph *g, hg_read_fn gread,
		     void *garg, struct glibcblocks_stats *st)
{
	struct frees fr = { 0 };
	struct fill f = { g, 0, 0, 0, 0 };
	struct mmlist mm = { 0 };
	struct mmchunks mc;
	struct spanread sr = { gread, garg };
	uint64_t n = 0, t0 = clock_ns(CLOCK_MONOTONIC);
	int rc;

	memset(st, 0, sizeof(*st));
	memset(g, 0, sizeof(*g));
	st->mm_known = mmchunks_list(pid, MM_BUDGET_NS, add_mm, &mm, &mc) == 0 && !mc.cut;
	rc = heapgraph_init(g, FIRST_CAP, gread, garg);
	if (rc)
		goto out;
	/* one walk of each heap, in large reads through the graph's reader */
	rc = census_chunks(maps, gread ? read_span : read, gread ? (void *)&sr : arg, fill_used,
			   fill_settle, &f, NULL, &st->heaps, &n);
	if (rc && !mm.n) {
		heapgraph_free(g);
		goto out;
	}
	rc = heapgraph_grow(g, f.n + mm.n);
	if (rc) {
		heapgraph_free(g);
		goto out;
	}
	merge_mm(g, f.n, &mm);
	st->mmapped = mm.n;
	st->chunks = heapgraph_seal(g);
	fr.cap = g->n;
	fr.v = xmap((fr.cap + 1) * sizeof(*fr.v));
	tcaches(g, read, arg, &fr, st);
	if (gs && gs->lay) {
		struct glibc_figures fig;
		struct fastctx fc = { g, &fr, st };

		st->fast_known = glibc_walk_fast(gs, read, arg, FAST_MAX_CHUNKS, &fig, fast_chunk,
						 &fc) == 0 && !fig.torn && !fig.cut;
	}
	for (size_t i = 0; i < fr.n; i++)
		g->size[fr.v[i]] = 0;	/* dropped by the seal */
	if (fr.n)
		heapgraph_seal(g);	/* else the first seal's stands */
	xunmap(fr.v, (fr.cap + 1) * sizeof(*fr.v));
	pr_debug("snapshot: %zu blocks listed in %.1f ms", g->n,
		 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
out:
	free(mm.v);
	return rc;
}
