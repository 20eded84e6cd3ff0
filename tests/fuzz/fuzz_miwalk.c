/* libFuzzer target: mimalloc's walker (its segments found by their headers, each page's free lists, the heaps' delayed lists, miblocks.c) over a fake target laid out by the input. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakemem.h"
#include "snapshot/miblocks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fake target: a segment's first MiB (32 MiB aligned: its header,
 * slices' entries, pages 1 to 15), and a second aligned MiB (another
 * candidate, or a heap). */
#define SEG1 0x7f0002000000ULL
#define SEG2 0x7f0004000000ULL

static struct fakemem fm;

static int mi_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct hg_span s = { addr, len };

	return fake_read(arg, &s, 1, buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct miblocks_stats st;
	struct miblocks_segs segs;
	struct snaproots r = { 0 };
	struct heapgraph g;
	char why[256];
	int rc;

	if (!fm.maps.n) {
		fake_map(&fm, SEG1, 1u << 20, PROC_MAP_R | PROC_MAP_W, NULL);
		fake_map(&fm, SEG2, 1u << 20, PROC_MAP_R | PROC_MAP_W, NULL);
	}
	fake_load(&fm, data, size);
	rc = miblocks_list(&fm.maps, mi_read, &fm, &g, fake_read, &fm, &segs, &st, why, sizeof(why));
	if (getenv("FUZZ_SAY"))	/* what an input makes of the target (seeds checked so) */
		fprintf(stderr, "rc %d (%s) segments %u rejected %u pages %llu free %llu delayed %llu "
			"torn %llu miscounted %llu heaps %u; g %zu\n", rc, rc ? why : "", st.segments,
			st.rejected, (unsigned long long)st.pages, (unsigned long long)st.listed_free,
			(unsigned long long)st.delayed_free, (unsigned long long)st.torn,
			(unsigned long long)st.miscounted, st.heaps, g.n);
	if (rc == 0) {
		for (size_t i = 1; i < g.n; i++)
			if (g.addr[i] < g.addr[i - 1] + heapgraph_size(&g, i - 1))
				abort();	/* sealed: sorted, apart */
		/* both mappings roots, less the segments; then the scan */
		r.cap = r.n = fm.maps.n;
		r.v = calloc(r.cap, sizeof(*r.v));
		for (size_t i = 0; i < fm.maps.n; i++)
			r.v[i] = (struct snaproot){ fm.m[i].start, fm.m[i].end, (uint32_t)i };
		miblocks_unroot(&r, &segs);
		for (size_t i = 0; i < r.n; i++) {
			for (size_t k = 0; k < segs.n; k++)
				if (r.v[i].lo < segs.v[k].addr + segs.v[k].len &&
				    segs.v[k].addr < r.v[i].hi)
					abort();	/* a root over a segment */
			heapgraph_root_range(&g, r.v[i].name, r.v[i].lo, r.v[i].hi);
		}
		snaproots_free(&r);
	}
	miblocks_segs_free(&segs);
	heapgraph_free(&g);
	return 0;
}
