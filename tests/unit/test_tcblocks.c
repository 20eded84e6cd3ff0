/* Unit tests for tcmalloc's listing (tcfind.c, tcspans.c, tcblocks.c) over a gperftools 2.10 state laid out in this process's memory. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "ownread.h"
#include "snapshot/tcblocks.h"
#include "snapshot/tcblocks_priv.h"

/* The fake state: the library's data (root, size map, central lists,
 * thread_heaps_), metadata (a leaf, spans, a thread cache), the heap. */
#define LIB_SZ (4u << 20)
#define META_SZ (4u << 20)
#define HEAP_SZ (1u << 20)
#define ROOT_AT 0x1000
#define SIZES_AT (ROOT_AT + TC_ROOT_BYTES + 0x10c)     /* 4 mod 8, as in 2.10 */
#define CENTRAL_AT (ROOT_AT + TC_ROOT_BYTES + 0x2000)
#define HEAPS_AT (CENTRAL_AT + 8 * TC_CENTRAL)
#define SPANS_AT TC_ARRAY                               /* in META, after the leaf */
#define CACHE_AT (TC_ARRAY + 0x10000)
#define TRACE_AT (TC_ARRAY + 0x20000)                 /* the large span's StackTrace */
#define FLAG_AT (HEAPS_AT + 64)                         /* FLAGS_tcmalloc_sample_parameter */
#define SAMPLED 4                                       /* location's next bit: Span::sample */

static const uint32_t sizes[] = { 0, 8, 16, 32, TC_MAX_SIZE };
static const uint64_t pages[] = { 0, 1, 1, 1, 32 };
#define NCLS 5

struct fake {
	uint8_t *lib, *meta, *heap, *heapmap;
	struct proc_map m[3];
	struct proc_maps maps;
	uint64_t heaps;
};

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static int cmp_map(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Span k in META for [base, base + npages pages), class cls, location loc,
 * refcount ref, free list objs; its first and last page (every page when
 * it has a class) in the leaf. */
static uint64_t span(struct fake *f, unsigned k, uint64_t base, uint64_t npages, unsigned cls,
		     unsigned loc, unsigned ref, uint64_t objs)
{
	uint8_t *s = f->meta + SPANS_AT + k * TC_SPAN;
	uint64_t at = (uint64_t)(uintptr_t)s, page = base >> TC_PAGE_SHIFT;
	uint64_t *leaf = (uint64_t *)(void *)f->meta;
	uint64_t mask = (1ULL << TC_LEAF_BITS) - 1;

	put64(s, page);
	put64(s + 8, npages);
	put64(s + 32, objs);
	put32(s + 40, ref | cls << 16 | loc << 24);
	for (uint64_t p = page; p < page + npages; p++)
		if (cls || p == page || p == page + npages - 1)
			leaf[p & mask] = at;
	return at;
}

/* Objects i of the class-1 span at the heap's start, linked in order. */
static uint64_t obj8(const struct fake *f, unsigned i)
{
	return (uint64_t)(uintptr_t)f->heap + 8 * i;
}

static void link8(struct fake *f, const unsigned *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put64(f->heap + 8 * v[i], i + 1 < n ? obj8(f, v[i + 1]) : 0);
}

/*
 * The heap: a span of 8-byte objects (page 0; 1024 objects: 5 and 6 on
 * its free list, 3 and 4 in a thread cache, 7 and 8 in a transfer slot),
 * a large span of 3 pages (page 1), sampled: its stack a frame of the
 * library's then two, a free span of 2 pages (page 4).
 */
static void lay(struct fake *f, unsigned refcount)
{
	static const unsigned onspan[] = { 5, 6 }, cached[] = { 3, 4 }, slot[] = { 7, 8 };
	uint64_t heap = (uint64_t)(uintptr_t)f->heap, i1 = heap >> (TC_PAGE_SHIFT + TC_LEAF_BITS);
	uint8_t *c = f->meta + CACHE_AT, *cf = f->lib + CENTRAL_AT + TC_CENTRAL;
	uint64_t *leaf = (uint64_t *)(void *)f->meta;

	put64(f->lib + ROOT_AT + 8 * i1, (uint64_t)(uintptr_t)f->meta);
	for (unsigned k = 0; k < NCLS; k++) {
		put32(f->lib + SIZES_AT + 4 * k, sizes[k]);
		put64(f->lib + SIZES_AT + SM_PAGES(SIZES_AT) + 8 * k, pages[k]);
		put64(f->lib + CENTRAL_AT + k * TC_CENTRAL + CF_CLASS, k);
		if (k)
			put32(c + k * TC_FREELIST + 24, sizes[k]);
	}
	put64(f->lib + SIZES_AT + SM_NUM(SIZES_AT), NCLS);
	span(f, 0, heap, 1, 1, 0, refcount, obj8(f, 5));
	span(f, 1, heap + TC_PAGE, 3, 0, SAMPLED, 0, (uint64_t)(uintptr_t)(f->meta + TRACE_AT));
	put64(f->meta + TRACE_AT + 8 * ST_SIZE, 3 * TC_PAGE - 100);
	put64(f->meta + TRACE_AT + 8 * ST_DEPTH, 3);
	put64(f->meta + TRACE_AT + 8 * ST_STACK, (uint64_t)(uintptr_t)f->lib + 16);
	put64(f->meta + TRACE_AT + 8 * ST_STACK + 8, 0x401000);
	put64(f->meta + TRACE_AT + 8 * ST_STACK + 16, 0x402000);
	put64(f->lib + FLAG_AT, 4096);
	span(f, 2, heap + 4 * TC_PAGE, 2, 0, 1, 0, 0);
	/* a stale pointer (page 2, inside the large span) to a Span freed: its
	 * first word a pointer of the span allocator's free list */
	put64(f->meta + SPANS_AT + 9 * TC_SPAN, (uint64_t)(uintptr_t)f->meta);
	leaf[((heap >> TC_PAGE_SHIFT) + 2) & ((1ULL << TC_LEAF_BITS) - 1)] =
		(uint64_t)(uintptr_t)(f->meta + SPANS_AT + 9 * TC_SPAN);
	link8(f, onspan, 2);
	link8(f, cached, 2);
	link8(f, slot, 2);
	put64(c + TC_FREELIST, obj8(f, 3));
	put32(c + TC_FREELIST + 8, 2);
	put64(cf + CF_SLOTS, obj8(f, 7));
	put64(cf + CF_SLOTS + 8, obj8(f, 8));
	put32(cf + CF_USED, 1);
	put64(f->lib + HEAPS_AT, (uint64_t)(uintptr_t)c);
	f->heaps = (uint64_t)(uintptr_t)(f->lib + HEAPS_AT);
}

static void fake_init(struct fake *f)
{
	f->lib = mmap(NULL, LIB_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	f->meta = mmap(NULL, META_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* the heap aligned to its pages */
	f->heapmap = mmap(NULL, 2 * HEAP_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (f->lib == MAP_FAILED || f->meta == MAP_FAILED || f->heapmap == MAP_FAILED)
		abort();
	f->heap = (uint8_t *)(((uintptr_t)f->heapmap + HEAP_SZ - 1) & ~(uintptr_t)(HEAP_SZ - 1));
	f->m[0] = (struct proc_map){ (uintptr_t)f->lib, (uintptr_t)f->lib + LIB_SZ, .prot =
				     PROC_MAP_R | PROC_MAP_W,
				     .path = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4" };
	f->m[1] = (struct proc_map){ (uintptr_t)f->meta, (uintptr_t)f->meta + META_SZ,
				     .prot = PROC_MAP_R | PROC_MAP_W };
	f->m[2] = (struct proc_map){ (uintptr_t)f->heap, (uintptr_t)f->heap + HEAP_SZ,
				     .prot = PROC_MAP_R | PROC_MAP_W };
	qsort(f->m, 3, sizeof(f->m[0]), cmp_map);
	f->maps = (struct proc_maps){ f->m, 3 };
}

static void fake_free(struct fake *f)
{
	munmap(f->lib, LIB_SZ);
	munmap(f->meta, META_SZ);
	munmap(f->heapmap, 2 * HEAP_SZ);
}

/* Found by shape, listed: 1018 objects of 8 bytes and one large block. */
static void listed(void)
{
	struct fake f;
	struct tcblocks_at at;
	struct tcblocks_stats st;
	struct tcblocks_meta meta;
	struct heapgraph g;
	char why[200] = "";
	uint64_t heap;
	/* a leaf; two spans in use, one of a class; all of the cache and slot free */
	const struct tcblocks_stats want = { .leaves = 1, .spans = 2, .small = 1, .large = 1,
					     .classes = NCLS, .tcaches = 1, .tcache_free = 2,
					     .central_free = 2 };

	fake_init(&f);
	heap = (uint64_t)(uintptr_t)f.heap;
	lay(&f, 1022);
	expect_int_eq(tcblocks_find_at(&f.maps, read_own, NULL, f.heaps, &at, why, sizeof(why)), 0);
	expect_u64_eq(at.root, (uint64_t)(uintptr_t)f.lib + ROOT_AT);
	expect_u64_eq(at.sizes, (uint64_t)(uintptr_t)f.lib + SIZES_AT);
	expect_u64_eq(at.central, (uint64_t)(uintptr_t)f.lib + CENTRAL_AT);
	expect_int_eq(tcblocks_list(&f.maps, &at, &g, read_own, NULL, &meta, NULL, &st, why,
				    sizeof(why)),
		      0);
	expect_int_eq(g.n, 1018 + 1);
	expect_true(!memcmp(&st, &want, sizeof(st)));
	expect_u64_eq(g.addr[0], heap);
	expect_u64_eq(g.addr[3], heap + 9 * 8);	/* 3..8 free */
	expect_u64_eq(g.addr[g.n - 1], heap + TC_PAGE);
	expect_u64_eq(heapgraph_size(&g, g.n - 1), 3 * TC_PAGE);
	expect_int_eq(meta.n, 1);
	expect_u64_eq(meta.v[0].addr, heap + 4 * TC_PAGE);
	expect_u64_eq(meta.v[0].len, 2 * TC_PAGE);
	heapgraph_free(&g);
	tcblocks_meta_free(&meta);
	/* a refcount its free list disagrees with: the span is torn, skipped */
	lay(&f, 1000);
	expect_int_eq(tcblocks_list(&f.maps, &at, &g, read_own, NULL, &meta, NULL, &st, why,
				    sizeof(why)),
		      0);
	expect_int_eq(st.torn, 1);
	expect_int_eq(g.n, 1);
	heapgraph_free(&g);
	tcblocks_meta_free(&meta);
	/* a span in use longer than its mapping (a block of 8 TiB to scan): torn */
	lay(&f, 1022);
	put64(f.meta + SPANS_AT + TC_SPAN + 8, 1ULL << 30);
	expect_int_eq(tcblocks_list(&f.maps, &at, &g, read_own, NULL, &meta, NULL, &st, why,
				    sizeof(why)), 0);
	expect_int_eq(st.torn, 1);
	expect_int_eq(g.n, 1018);
	heapgraph_free(&g);
	tcblocks_meta_free(&meta);
	/* no size map: refused, said */
	memset(f.lib + SIZES_AT, 0, 16);
	expect_int_eq(tcblocks_find_at(&f.maps, read_own, NULL, f.heaps, &at, why, sizeof(why)),
		      -ENOENT);
	expect_str_eq(why, "no size classes found in its data");
	fake_free(&f);
}

/* The sampled span's stack: tcmalloc's frame dropped, the period read;
 * a StackTrace too deep or not readable: no stack, the block listed. */
static void sampled(void)
{
	struct fake f;
	struct tcblocks_at at;
	struct tcblocks_stats st;
	struct tcblocks_meta meta;
	struct heapgraph g;
	struct allocsites as = { 0 };
	char why[200] = "";
	uint64_t heap;

	fake_init(&f);
	heap = (uint64_t)(uintptr_t)f.heap;
	lay(&f, 1022);
	expect_int_eq(tcblocks_find_at(&f.maps, read_own, NULL, f.heaps, &at, why, sizeof(why)), 0);
	at.flag = (uint64_t)(uintptr_t)f.lib + FLAG_AT;
	expect_int_eq(tcblocks_list(&f.maps, &at, &g, read_own, NULL, &meta, &as, &st, why,
				    sizeof(why)), 0);
	expect_int_eq(as.n, 1);
	expect_int_eq(st.sampled, 1);
	expect_u64_eq(as.period, 4096);
	expect_str_eq(as.by, "tcmalloc");
	expect_u64_eq(as.v[0].addr, heap + TC_PAGE);
	expect_int_eq(as.v[0].depth, 2);
	expect_u64_eq(as.pcs[as.v[0].at], 0x401000);
	expect_u64_eq(as.pcs[as.v[0].at + 1], 0x402000);
	heapgraph_free(&g);
	tcblocks_meta_free(&meta);
	allocsites_free(&as);
	/* 32 frames (more than tcmalloc keeps), then its objects pointer off
	 * any mapping: no stack, the block listed */
	for (int k = 0; k < 2; k++) {
		put64(f.meta + TRACE_AT + 8 * ST_DEPTH, k ? 3 : TC_STACK_MAX + 1);
		if (k)
			put64(f.meta + SPANS_AT + TC_SPAN + 32, 0x1000);
		expect_int_eq(tcblocks_list(&f.maps, &at, &g, read_own, NULL, &meta, &as, &st, why,
					    sizeof(why)), 0);
		expect_int_eq(as.n, 0);
		expect_int_eq(st.unread, 1);
		expect_int_eq(g.n, 1018 + 1);
		heapgraph_free(&g);
		tcblocks_meta_free(&meta);
	}
	allocsites_free(&as);
	fake_free(&f);
}

HARNESS_MAIN("tcblocks", T(listed), T(sampled))
