/* libFuzzer target: jemalloc's walkers (the extents map found by shape, jefind.c; its leaves, edata_t and slabs, jetree.c; thread caches, jetcache.c; its samples' stacks, jeprof.c; jeblocks.c) over a fake target laid out by the input. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakemem.h"
#include "snapshot/jeblocks.h"
#include "snapshot/jeblocks_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fake target: extents (1 GiB region 0x1fc00 of the tree's root), a
 * base block of metadata (a leaf, edata_t), a thread's static TLS under
 * its fs_base, libjemalloc's data (the root array, JE_ROOT), code. */
#define EXTENTS  0x7f0000000000ULL
#define META     0x7f0040000000ULL
#define TLS      0x7f0080000000ULL
#define TLS_SZ   (72u << 10)
#define LIB      0x7f00c0000000ULL
#define JE_ROOT  (LIB + 0x1000)
#define CODE     0x7f0100000000ULL      /* the program's code, and jemalloc's: a sample's PCs */
#define JECODE   0x7f0140000000ULL

static struct fakemem fm;

static void setup(void)
{
	fake_map(&fm, EXTENTS, 256u << 10, PROC_MAP_R | PROC_MAP_W, NULL);
	fake_map(&fm, META, 4u << 20, PROC_MAP_R | PROC_MAP_W, NULL);
	fake_map(&fm, TLS, TLS_SZ, PROC_MAP_R | PROC_MAP_W, NULL);
	fake_map(&fm, LIB, JE_ARRAY + (16u << 10), PROC_MAP_R | PROC_MAP_W,
		 "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
	fake_map(&fm, CODE, 64u << 10, PROC_MAP_R | PROC_MAP_X, "/usr/bin/prog");
	fake_map(&fm, JECODE, 64u << 10, PROC_MAP_R | PROC_MAP_X,
		 "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
}

/* What the listing gives: g sealed, meta sorted and apart. */
static void check(const struct heapgraph *g, const struct jeblocks_meta *meta)
{
	for (size_t i = 1; i < g->n; i++)
		if (g->addr[i] < g->addr[i - 1] + heapgraph_size(g, i - 1))
			abort();
	for (size_t i = 1; i < meta->n; i++)
		if (meta->v[i].addr <= meta->v[i - 1].addr + meta->v[i - 1].len - 1)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapthread th = { .tid = 1, .fs_base = TLS + (64u << 10) };
	struct jeblocks_stats st;
	struct jeblocks_meta meta;
	struct allocsites as = { 0 };
	struct snaproots r = { 0 };
	struct heapgraph g;
	uint64_t root = JE_ROOT;
	char why[256];
	int rc, found = 0;

	if (!fm.maps.n)
		setup();
	if (size < 1)
		return 0;
	fake_load(&fm, data + 1, size - 1);
	/* the root by its shape, else where the seeds put it */
	if (data[0] & 1)
		found = jeblocks_find_read(fake_read, &fm, &fm.maps, &root, why, sizeof(why)) == 0;
	rc = jeblocks_list(&fm.maps, root, &th, 1, &g, fake_read, &fm, &meta, &as, &st, why,
			   sizeof(why));
	if (getenv("FUZZ_SAY"))	/* what an input makes of the target (seeds checked so) */
		fprintf(stderr, "rc %d (%s) found %d root %#llx leaves %llu pages %llu slabs %llu large %llu torn %llu tcaches %u free %llu arrays %llu; g %zu meta %zu sampled %llu stacks %zu of %zu frames\n",
			rc, rc ? why : "", found, (unsigned long long)root, (unsigned long long)st.leaves, (unsigned long long)st.pages,
			(unsigned long long)st.slabs, (unsigned long long)st.large, (unsigned long long)st.torn,
			st.tcaches, (unsigned long long)st.tcache_free, (unsigned long long)st.tcache_arrays, g.n, meta.n,
			(unsigned long long)st.sampled, as.n, as.npcs);
	if (rc == 0) {
		check(&g, &meta);
		/* every mapping a root, less jemalloc's memory; then the scan */
		r.cap = r.n = fm.maps.n;
		r.v = calloc(r.cap, sizeof(*r.v));
		for (size_t i = 0; i < fm.maps.n; i++)
			r.v[i] = (struct snaproot){ fm.m[i].start, fm.m[i].end, (uint32_t)i };
		jeblocks_cut_roots(&meta, &r);
		for (size_t i = 0; i < r.n; i++) {
			for (size_t k = 0; k < meta.n; k++)
				if (r.v[i].lo < meta.v[k].addr + meta.v[k].len &&
				    meta.v[k].addr < r.v[i].hi)
					abort();	/* a root over jemalloc's memory */
			heapgraph_root_range(&g, r.v[i].name, r.v[i].lo, r.v[i].hi);
		}
		snaproots_free(&r);
	}
	jeblocks_meta_free(&meta);
	allocsites_free(&as);
	heapgraph_free(&g);
	return 0;
}
