/* Unit tests for glibc's malloc figures read from memory: made-up arenas (glibcwalk.c), and this process's own glibc (glibcfind.c) against its mallinfo2. */
/* SPDX-License-Identifier: MIT */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "own_libc.h"
#include "model/glibcfind.h"
#include "model/glibcwalk.h"
#include "model/proc.h"
#include "model/target.h"

/* ---- a made-up address space: MEM bytes at BASE ---- */

#define BASE    0x10000000ULL
#define MEM     (1u << 20)
#define ARENA   (BASE + 0x1000)
#define ARENA2  (BASE + 0x2000)
#define HEAP    (BASE + 0x10000)

static uint8_t mem[MEM];
static unsigned reads;

static int fake_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	reads++;
	if (addr < BASE || addr - BASE > MEM || len > MEM - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, sizeof(v));
}

static uint64_t bin_head(const struct glibc_layout *lay, uint64_t a, unsigned i)
{
	return a + lay->bins + (uint64_t)(i - 1) * 16 - 16;
}

/* An arena at a: empty bins, a top chunk of top_size at top, next. */
static void make_arena(const struct glibc_layout *lay, uint64_t a, uint64_t top, uint64_t top_size,
		       uint64_t system, uint64_t next)
{
	memset(mem + (a - BASE), 0, lay->size);
	for (unsigned i = 1; i < 128; i++) {
		put(a + lay->bins + (i - 1) * 16, bin_head(lay, a, i));
		put(a + lay->bins + (i - 1) * 16 + 8, bin_head(lay, a, i));
	}
	put(a + lay->top, top);
	put(top + 8, top_size | 1);
	put(a + lay->system_mem, system);
	put(a + lay->next, next);
}

/* A chunk of size at p, linked into bin i of the arena at a after the
 * chunk last (0: the bin was empty). */
static void bin_add(const struct glibc_layout *lay, uint64_t a, unsigned i, uint64_t p,
		    uint64_t size)
{
	uint64_t b = bin_head(lay, a, i), pair = a + lay->bins + (uint64_t)(i - 1) * 16, last;

	memcpy(&last, mem + (pair + 8 - BASE), 8);
	put(p + 8, size | 1);
	put(p + 16, b);         /* fd: the head (it goes last) */
	put(p + 24, last);      /* bk: the one before */
	put(last + 16, p);      /* that one's fd: this (for the head: the bin's fd) */
	put(pair + 8, p);       /* the bin's bk: this, the last */
	(void)b;
}

/* A fast bin chunk of size at p on top of fast bin i (safe-linking). */
static void fast_add(const struct glibc_layout *lay, uint64_t a, unsigned i, uint64_t p,
		     uint64_t size)
{
	uint64_t head;

	memcpy(&head, mem + (a + lay->fastbins + 8 * i - BASE), 8);
	put(p + 8, size | 1);
	put(p + 16, ((p + 16) >> 12) ^ head);
	put(a + lay->fastbins + 8 * i, p);
}

/* ---- the walk ---- */

static void test_walk(void)
{
	const struct glibc_layout *lay = &glibc_layout_fast;
	struct glibc_state g = { .main_arena = ARENA, .n_mmaps = BASE + 0x100,
				 .mmapped_mem = BASE + 0x108, .lay = lay };
	struct glibc_figures f;
	int32_t n = 3;

	memset(mem, 0, sizeof(mem));
	/* not set up yet: bins all zero */
	expect_int_eq(glibc_walk(&g, fake_read, NULL, GLIBC_WALK_CHUNKS, &f), -ENODATA);
	expect_int_eq(glibc_arena_check(lay, ARENA, fake_read, NULL), -ENODATA);

	make_arena(lay, ARENA, HEAP + 0x8000, 0x2000, 0x10000, ARENA2);
	make_arena(lay, ARENA2, HEAP + 0x20000, 0x1000, 0x8000, ARENA);
	bin_add(lay, ARENA, 1, HEAP + 0x100, 0x40);
	bin_add(lay, ARENA, 1, HEAP + 0x200, 0x90);
	bin_add(lay, ARENA, 40, HEAP + 0x400, 0x300);
	fast_add(lay, ARENA, 0, HEAP + 0x1000, 32);
	fast_add(lay, ARENA, 0, HEAP + 0x1100, 32);
	fast_add(lay, ARENA, 2, HEAP + 0x1200, 64);
	bin_add(lay, ARENA2, 5, HEAP + 0x21000, 0x50);
	memcpy(mem + 0x100, &n, sizeof(n));
	put(BASE + 0x108, 3 * 8192);
	expect_int_eq(glibc_arena_check(lay, ARENA, fake_read, NULL), 0);
	expect_int_eq(glibc_arena_check(&glibc_layout_nofast, ARENA, fake_read, NULL), -EINVAL);
	expect_int_eq(glibc_walk(&g, fake_read, NULL, GLIBC_WALK_CHUNKS, &f), 0);
	expect_int_eq(f.arenas, 2);
	expect_u64_eq(f.arena, 0x18000);
	expect_u64_eq(f.fsmblks, 32 + 32 + 64);
	expect_u64_eq(f.fordblks, 0x2000 + 0x40 + 0x90 + 0x300 + 128 + 0x1000 + 0x50);
	expect_u64_eq(f.hblks, 3);
	expect_u64_eq(f.hblkhd, 3 * 8192);
	expect_int_eq(f.chunks, 7);
	expect_int_eq(f.torn, 0);
	expect_int_eq(f.cut, 0);

	/* the budget ends the walk: said, and what was seen counts */
	expect_int_eq(glibc_walk(&g, fake_read, NULL, 2, &f), 0);
	expect_int_eq(f.cut, 1);
	expect_int_eq(f.chunks, 2);

	/* a chunk whose size makes no sense ends its list: torn */
	put(HEAP + 0x200 + 8, 0x7);
	expect_int_eq(glibc_walk(&g, fake_read, NULL, GLIBC_WALK_CHUNKS, &f), 0);
	expect_int_eq(f.torn, 1);
	put(HEAP + 0x200 + 8, 0x91);
	/* a misaligned fast bin link: torn, nothing followed */
	put(HEAP + 0x1100 + 16, 0x123);
	expect_int_eq(glibc_walk(&g, fake_read, NULL, GLIBC_WALK_CHUNKS, &f), 0);
	expect_int_eq(f.torn, 1);
	expect_u64_eq(f.fsmblks, 32 + 64);	/* the chunk whose link was bad counts */
}

/* Lists that loop, arenas that loop without main_arena: bounded, torn. */
static void test_hostile(void)
{
	const struct glibc_layout *lay = &glibc_layout_fast;
	struct glibc_state g = { .main_arena = ARENA, .lay = lay };
	struct glibc_figures f;

	memset(mem, 0, sizeof(mem));
	make_arena(lay, ARENA, HEAP + 0x8000, 0x2000, 0x10000, ARENA2);
	make_arena(lay, ARENA2, HEAP + 0x20000, 0x1000, 0x8000, ARENA2);	/* loops to itself */
	bin_add(lay, ARENA, 3, HEAP + 0x100, 0x40);
	put(HEAP + 0x100 + 24, HEAP + 0x100);	/* its bk: itself, forever */
	reads = 0;
	expect_int_eq(glibc_walk(&g, fake_read, NULL, 1000, &f), 0);
	expect_int_eq(f.cut, 1);
	expect_int_eq(f.torn, 1);
	expect_int_eq(f.arenas, 2);
	expect_true(reads < 1200);
	expect_u64_eq(f.hblks, UINT64_MAX);	/* mp_ unknown */
	/* not an arena: bins of junk */
	memset(mem + (ARENA - BASE) + lay->bins, 0x41, 2032);
	expect_int_eq(glibc_walk(&g, fake_read, NULL, 1000, &f), -EINVAL);
	/* unreadable */
	g.main_arena = 0x1000;
	expect_true(glibc_walk(&g, fake_read, NULL, 1000, &f) < 0);
}

/* 2.43's arenas: no fast bins. */
static void test_nofast(void)
{
	const struct glibc_layout *lay = &glibc_layout_nofast;
	struct glibc_state g = { .main_arena = ARENA, .lay = lay };
	struct glibc_figures f;

	memset(mem, 0, sizeof(mem));
	make_arena(lay, ARENA, HEAP + 0x8000, 0x2000, 0x10000, ARENA);
	bin_add(lay, ARENA, 7, HEAP + 0x100, 0x70);
	expect_int_eq(glibc_arena_check(&glibc_layout_fast, ARENA, fake_read, NULL), -EINVAL);
	expect_int_eq(glibc_walk(&g, fake_read, NULL, GLIBC_WALK_CHUNKS, &f), 0);
	expect_u64_eq(f.fordblks, 0x2000 + 0x70);
	expect_u64_eq(f.arena, 0x10000);
}

/* ---- this process's glibc ---- */

/* Found from symbols or from code alone, the figures equal mallinfo2's. */
static void own_glibc(int code_only)
{
	struct target *t = target_new(getpid(), getpid());
	const struct proc_map *m = t ? libc_map(t) : NULL;
	void *keep[64];
	struct glibc_state g;
	struct glibc_figures f;
	struct mallinfo2 mi;
	const char *how;
	char why[160];
	int ret;

	expect_true(m != NULL);
	if (!m)
		return;
	for (int i = 0; i < 64; i++)
		keep[i] = malloc(i % 8 ? 100 + (size_t)i * 8 : 40u << 20);	/* mmapped: above any threshold */
	for (int i = 0; i < 64; i += 3) {
		free(keep[i]);
		keep[i] = NULL;
	}
	glibc_find_no_symbols = code_only;
	ret = glibc_find(t, m, &g, &how, why, sizeof(why));
	glibc_find_no_symbols = 0;
	expect_int_eq(ret, 0);
	if (ret) {
		fprintf(stderr, "glibc_find: %s\n", why);
		goto out;
	}
	if (code_only)
		expect_str_eq(how, "mallinfo2's code");
	expect_true(g.lay == &glibc_layout_fast);
	expect_true(g.n_mmaps != 0 && g.mmapped_mem != 0);
	/* nothing between the walk and mallinfo2 allocates */
	ret = glibc_walk(&g, glibc_target_read, t, GLIBC_WALK_CHUNKS, &f);
	mi = mallinfo2();
	expect_int_eq(ret, 0);
	expect_int_eq(f.torn, 0);
	expect_u64_eq(f.arena, mi.arena);
	expect_u64_eq(f.fordblks, mi.fordblks);
	expect_u64_eq(f.fsmblks, mi.fsmblks);
	expect_u64_eq(f.hblks, mi.hblks);
	expect_u64_eq(f.hblkhd, mi.hblkhd);
	expect_true(mi.hblkhd >= 5 * (40u << 20));
out:
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	target_free(t);
}

/* Under AddressSanitizer malloc is the sanitizer's: glibc's arenas are
 * not this process's allocator, and there is nothing to compare. */
#if defined(__SANITIZE_ADDRESS__)
#define OWN_GLIBC 0
#else
#define OWN_GLIBC 1
#endif

static void test_own_symbols(void)
{
	if (OWN_GLIBC)
		own_glibc(0);
}

static void test_own_code(void)
{
	if (OWN_GLIBC)
		own_glibc(1);
}

HARNESS_MAIN("glibcstats", T(test_walk), T(test_hostile), T(test_nofast), T(test_own_symbols),
	     T(test_own_code))
