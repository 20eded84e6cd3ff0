/* libFuzzer target: gperftools tcmalloc's walker (its state found by shape, the pagemap's spans, the free lists, thread caches and transfer slots, tcblocks.c) over a fake target laid out by the input. */
/* SPDX-License-Identifier: MIT */
/*
 * The input's first byte: bit 0 asks tcblocks_find_at to look for the
 * state by its shape first; the rest is laid over the fake maps
 * (fakemem.h): a heap, the metadata and the library's data, whose root,
 * size map, central lists, thread-cache head and sample parameter sit
 * where `at` says. A listing must come out sorted and without overlaps,
 * its metadata must cut out of the roots cleanly, and each sampled span's
 * stack must be a listed block's, of 1 to 31 frames.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fakemem.h"
#include "snapshot/roots.h"
#include "snapshot/tcblocks.h"
#include "snapshot/tcblocks_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAP 0x7f0000000000ULL
#define META 0x7f0040000000ULL
#define LIB  0x7f00c0000000ULL
#define ROOT (LIB + 0x1000)
static struct fakemem fm;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcblocks_at at = { .root = ROOT, .sizes = ROOT + TC_ROOT_BYTES + 0x10c,
				  .central = ROOT + TC_ROOT_BYTES + 0x2000,
				  .heaps = ROOT + TC_ROOT_BYTES + 0x2000 + 128 * TC_CENTRAL,
				  .flag = ROOT + TC_ROOT_BYTES + 0x2000 + 128 * TC_CENTRAL + 64 };
	struct tcblocks_stats st; struct tcblocks_meta meta; struct heapgraph g;
	struct snaproots r = { 0 };
	struct allocsites as = { 0 };
	char why[256];
	int rc;

	if (!fm.maps.n) {
		fake_map(&fm, HEAP, 256u << 10, PROC_MAP_R | PROC_MAP_W, NULL);
		fake_map(&fm, META, 4u << 20, PROC_MAP_R | PROC_MAP_W, NULL);
		fake_map(&fm, LIB, TC_ROOT_BYTES + (256u << 10), PROC_MAP_R | PROC_MAP_W, "/usr/lib/libtcmalloc_minimal.so.4");
	}
	if (size < 1)
		return 0;
	fake_load(&fm, data + 1, size - 1);
	if (data[0] & 1)
		tcblocks_find_at(&fm.maps, fake_read, &fm, at.heaps, &at, why, sizeof(why));
	rc = tcblocks_list(&fm.maps, &at, &g, fake_read, &fm, &meta, &as, &st, why, sizeof(why));
	if (!rc) {
		for (size_t i = 1; i < g.n; i++)
			if (g.addr[i] < g.addr[i - 1] + heapgraph_size(&g, i - 1))
				abort();
		for (size_t i = 0; i < as.n; i++) {	/* a stack: a listed block's, bounded */
			long b = heapgraph_find(&g, as.v[i].addr);

			if (b < 0 || g.addr[b] != as.v[i].addr || !as.v[i].depth ||
			    as.v[i].depth > TC_STACK_MAX)
				abort();
		}
		r.cap = r.n = fm.maps.n;
		r.v = calloc(r.cap, sizeof(*r.v));
		for (size_t i = 0; i < fm.maps.n; i++)
			r.v[i] = (struct snaproot){ fm.m[i].start, fm.m[i].end, (uint32_t)i };
		snaproots_cut(&r, meta.v, meta.n);
		for (size_t i = 0; i < r.n; i++)
			heapgraph_root_range(&g, r.v[i].name, r.v[i].lo, r.v[i].hi);
		snaproots_free(&r);
	}
	tcblocks_meta_free(&meta);
	allocsites_free(&as);
	heapgraph_free(&g);
	return 0;
}
