/* glibc's malloc figures (those of mallinfo2) read from the target's memory: its arenas walked with bounds. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "base/satmath.h"
#include "model/glibcwalk.h"

/*
 * What mallinfo2 does under each arena's lock, done here from outside
 * with none: the free bytes of an arena are its top chunk, the chunks of
 * its fast bins and those of its 127 regular bins (unsorted, small,
 * large); what it got from the system is system_mem; mp_ counts the
 * blocks mmapped for themselves. The target runs meanwhile, so a list may
 * change under the walk: every pointer is checked before it is followed
 * (aligned, below 2^57, readable) and every chunk's size before it is
 * added, and a list that fails ends there. Facts from glibc's
 * malloc/malloc.c (2.33 to 2.42, and 2.43's arenas without fast bins):
 * chunks are 16-aligned, at least 32 bytes, their size word's 3 low bits
 * are flags; fast bin i holds chunks of (i + 2) * 16 bytes, linked
 * through fd, mangled since 2.32 (safe-linking: the link stored at
 * address L is the pointer xor L >> 12); bin i's list head is the fake
 * chunk bin_at(i) 16 bytes before its (fd, bk) pair, which an empty bin
 * points at twice.
 */

#define NBINS           128
#define CHUNK_ALIGN     16
#define MINSIZE         32
#define SIZE_BITS       7ULL
#define ADDR_LIMIT      (1ULL << 57)
#define STATE_MAX       2200            /* the larger layout */
#define BAD_BINS_MAX    2               /* bins caught mid-update that a check forgives */

const struct glibc_layout glibc_layout_fast = {
	.name = "2.27-2.42", .size = 2200, .nfastbins = 10, .fastbins = 16, .top = 96,
	.bins = 112, .next = 2160, .system_mem = 2184,
};

const struct glibc_layout glibc_layout_nofast = {
	.name = "2.43", .size = 2112, .nfastbins = 0, .fastbins = 0, .top = 8,
	.bins = 24, .next = 2072, .system_mem = 2096,
};

static uint64_t word(const uint8_t *s, uint32_t off)
{
	uint64_t v;

	memcpy(&v, s + off, sizeof(v));
	return v;
}

/* The list head of bin i (1..127) of the arena at a: a fake chunk whose
 * fd and bk are the bin's pair. */
static uint64_t bin_at(const struct glibc_layout *lay, uint64_t a, unsigned i)
{
	return a + lay->bins + (uint64_t)(i - 1) * 16 - 16;
}

static int chunk_ptr_ok(uint64_t p)
{
	return p && !(p & (CHUNK_ALIGN - 1)) && p < ADDR_LIMIT;
}

static int read_state(const struct glibc_layout *lay, uint64_t a, glibc_read_fn rd, void *arg,
		      uint8_t *s)
{
	if (!a || (a & 7) || a >= ADDR_LIMIT || lay->size > STATE_MAX)
		return -EINVAL;
	return rd(arg, a, s, lay->size);
}

/* The checks of glibc_arena_check on a copy s of the arena at a. */
static int state_check(const struct glibc_layout *lay, uint64_t a, const uint8_t *s)
{
	unsigned zero = 0, empty = 0, bad = 0;
	uint64_t next = word(s, lay->next);

	for (unsigned i = 1; i < NBINS; i++) {
		uint64_t fd = word(s, lay->bins + (i - 1) * 16);
		uint64_t bk = word(s, lay->bins + (i - 1) * 16 + 8);
		uint64_t b = bin_at(lay, a, i);

		if (!fd && !bk)
			zero++;
		else if (fd == b && bk == b)
			empty++;
		else if (!chunk_ptr_ok(fd) || !chunk_ptr_ok(bk))
			bad++;
	}
	if (zero == NBINS - 1)
		return -ENODATA;
	if (zero || !empty || bad > BAD_BINS_MAX)
		return -EINVAL;
	if (!word(s, lay->top) || !next || (next & 7) || next >= ADDR_LIMIT ||
	    word(s, lay->system_mem) >= ADDR_LIMIT)
		return -EINVAL;
	return 0;
}

int glibc_arena_check(const struct glibc_layout *lay, uint64_t a, glibc_read_fn rd, void *arg)
{
	uint8_t s[STATE_MAX];
	int ret = read_state(lay, a, rd, arg, s);

	return ret ? ret : state_check(lay, a, s);
}

/* The walk's state across arenas. */
struct walk {
	const struct glibc_layout *lay;
	glibc_read_fn rd;
	void *arg;
	uint64_t budget;        /* free chunks it may still visit */
	struct glibc_figures *out;
	void (*fast)(void *arg, uint64_t chunk);        /* each fast bin chunk, or NULL */
	void *fast_arg;
};

/* Take one chunk off the budget: 0, or -ENOSPC (and out->cut) when none is left. */
static int spend(struct walk *w)
{
	if (!w->budget) {
		w->out->cut = 1;
		return -ENOSPC;
	}
	w->budget--;
	w->out->chunks++;
	return 0;
}

/* The header words of the chunk at p (from its size on): 0, or -errno;
 * -ECANCELED from the reader ends the whole walk (cut). */
static int read_chunk(struct walk *w, uint64_t p, uint64_t *hdr, size_t len)
{
	int ret;

	if (w->out->cut)
		return -ECANCELED;
	ret = w->rd(w->arg, p + 8, hdr, len);
	if (ret == -ECANCELED) {
		w->budget = 0;
		w->out->cut = 1;
	}
	return ret;
}

/* The bytes of fast bin i's chunks (its head is p). */
static uint64_t fast_bin(struct walk *w, unsigned i, uint64_t p)
{
	uint64_t sum = 0, hdr[2];

	while (p) {
		if (!chunk_ptr_ok(p) || read_chunk(w, p, hdr, sizeof(hdr)) ||
		    (hdr[0] & ~SIZE_BITS) != (uint64_t)(i + 2) * 16) {
			w->out->torn |= !w->out->cut;
			break;
		}
		if (spend(w))
			break;
		if (w->fast)
			w->fast(w->fast_arg, p);
		sum += hdr[0] & ~SIZE_BITS;
		p = ((p + 16) >> 12) ^ hdr[1];	/* REVEAL_PTR of the fd at p + 16 */
	}
	return sum;
}

/* The bytes of regular bin i's chunks, from its last one back along bk. */
static uint64_t regular_bin(struct walk *w, uint64_t a, unsigned i, uint64_t p, uint64_t system)
{
	uint64_t b = bin_at(w->lay, a, i), sum = 0, hdr[3], sz;

	while (p != b) {
		if (!chunk_ptr_ok(p) || read_chunk(w, p, hdr, sizeof(hdr))) {
			w->out->torn |= !w->out->cut;
			break;
		}
		sz = hdr[0] & ~SIZE_BITS;
		if (sz < MINSIZE || (sz & (CHUNK_ALIGN - 1)) || sz > system) {
			w->out->torn = 1;
			break;
		}
		if (spend(w))
			break;
		sum = sat_add(sum, sz);
		p = hdr[2];
	}
	return sum;
}

/* Add the arena at a (its copy s) to the figures. */
static void walk_arena(struct walk *w, uint64_t a, const uint8_t *s)
{
	const struct glibc_layout *lay = w->lay;
	uint64_t system = word(s, lay->system_mem), top = word(s, lay->top), avail = 0;
	uint64_t fast = 0, tsize;

	if (system >= ADDR_LIMIT) {
		w->out->torn = 1;
		return;
	}
	/* the top chunk; before the first allocation it is the unsorted
	 * bin's head, whose size word is 0 */
	if (top && top < ADDR_LIMIT && !w->rd(w->arg, top + 8, &tsize, sizeof(tsize)) &&
	    (tsize & ~SIZE_BITS) <= system)
		avail = tsize & ~SIZE_BITS;
	else
		w->out->torn = 1;
	for (unsigned i = 0; i < lay->nfastbins; i++)
		fast = sat_add(fast, fast_bin(w, i, word(s, lay->fastbins + 8 * i)));
	for (unsigned i = 1; i < NBINS; i++)
		avail = sat_add(avail, regular_bin(w, a, i, word(s, lay->bins + (i - 1) * 16 + 8),
						   system));
	w->out->arena = sat_add(w->out->arena, system);
	w->out->fordblks = sat_add(w->out->fordblks, sat_add(avail, fast));
	w->out->fsmblks = sat_add(w->out->fsmblks, fast);
	w->out->arenas++;
}

/* mp_'s n_mmaps (an int) and mmapped_mem, where known. */
static void read_mmaps(const struct glibc_state *g, glibc_read_fn rd, void *arg,
		       struct glibc_figures *out)
{
	int32_t n;
	uint64_t bytes;

	if (g->n_mmaps && !rd(arg, g->n_mmaps, &n, sizeof(n)) && n >= 0)
		out->hblks = (uint64_t)n;
	if (g->mmapped_mem && !rd(arg, g->mmapped_mem, &bytes, sizeof(bytes)) &&
	    bytes < ADDR_LIMIT)
		out->hblkhd = bytes;
}

int glibc_walk(const struct glibc_state *g, glibc_read_fn rd, void *arg, uint64_t max_chunks,
	       struct glibc_figures *out)
{
	return glibc_walk_fast(g, rd, arg, max_chunks, out, NULL, NULL);
}

int glibc_walk_fast(const struct glibc_state *g, glibc_read_fn rd, void *arg, uint64_t max_chunks,
		    struct glibc_figures *out, void (*fast)(void *arg, uint64_t chunk), void *fast_arg)
{
	uint64_t seen[GLIBC_MAX_ARENAS];	/* arenas walked: a cycle without main_arena ends */
	struct walk w = { g->lay, rd, arg, max_chunks, out, fast, fast_arg };
	uint8_t s[STATE_MAX];
	uint64_t a = g->main_arena;
	int ret;

	memset(out, 0, sizeof(*out));
	out->hblks = out->hblkhd = UINT64_MAX;
	if (!g->lay)
		return -EINVAL;
	ret = read_state(g->lay, a, rd, arg, s);
	if (!ret)
		ret = state_check(g->lay, a, s);
	if (ret)
		return ret;
	for (uint32_t n = 0;; n++) {
		seen[n] = a;
		walk_arena(&w, a, s);
		a = word(s, g->lay->next);
		if (a == g->main_arena)
			break;
		for (uint32_t k = 0; k <= n; k++)
			if (seen[k] == a)
				a = 0;
		if (n + 1 == GLIBC_MAX_ARENAS || read_state(g->lay, a, rd, arg, s)) {
			out->torn = 1;
			break;
		}
	}
	read_mmaps(g, rd, arg, out);
	return 0;
}
