/* libFuzzer target: CPython's walkers (pymalloc's pools, pyblocks.c; objects' types, pytypes.c) over a fake target laid out by the input. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakemem.h"
#include "snapshot/names.h"
#include "snapshot/pyblocks.h"
#include "snapshot/pytypes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fake target: the interpreter's data (static types, PyType_Type at
 * its start), an arena of pymalloc's, glibc's heap of fixed blocks. */
#define PY_DATA  0x555555a00000ULL
#define ARENA    0x7f0000000000ULL
#define ARENA_SZ (64u << 10)
#define HEAP     0x7f0000100000ULL
#define HEAP_SZ  (16u << 10)
#define GBLOCK   512                    /* glibc's blocks: one every 512 bytes, 496 usable */

static struct fakemem fm;

static void setup(void)
{
	fake_map(&fm, PY_DATA, 16u << 10, PROC_MAP_R | PROC_MAP_W, "/usr/bin/python3");
	fake_map(&fm, ARENA, ARENA_SZ, PROC_MAP_R | PROC_MAP_W, NULL);
	fake_map(&fm, HEAP, HEAP_SZ, PROC_MAP_R | PROC_MAP_W, "[heap]");
}

/* glibc's blocks: the heap's, and one in the arena when ctl says (a pool there is none). */
static void glibc_graph(struct heapgraph *g, uint8_t ctl)
{
	size_t n = HEAP_SZ / GBLOCK, k = 0;

	if (heapgraph_init(g, n + 1, fake_read, &fm))
		abort();
	if (ctl & 1)
		heapgraph_set(g, k++, ARENA + (uint64_t)(ctl >> 1) * 1024 % ARENA_SZ, 64);
	for (size_t i = 0; i < n; i++)
		heapgraph_set(g, k++, HEAP + i * GBLOCK, GBLOCK - 16);
	g->n = k;
	heapgraph_seal(g);
}

/* The graph sealed: sorted, apart, non-empty blocks. */
static void check_graph(const struct heapgraph *g)
{
	for (size_t i = 1; i < g->n; i++)
		if (g->addr[i] < g->addr[i - 1] + heapgraph_size(g, i - 1))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_target pt = { .type_type = PY_DATA };
	struct snapnames names = { 0 };
	struct pytypes_stats st;
	struct pygcheads gch;
	struct snaproots r = { 0 };
	struct heapgraph g;
	struct pyblocks pb;
	uint8_t buf[1024];
	struct hg_span s = { ARENA, sizeof(buf) };

	if (!fm.maps.n)
		setup();
	if (size < 2)
		return 0;
	pt.minor = 8 + data[0] % 6;
	fake_load(&fm, data + 2, size - 2);
	glibc_graph(&g, data[1]);
	if (pyblocks_find(pt.minor, &fm.maps, &g, fake_read, &fm, &pb) == 0) {
		for (size_t i = 0; i < pb.n; i++)
			if ((i && pb.v[i].addr < pb.v[i - 1].addr + pb.v[i - 1].len) ||
			    pb.v[i].addr < ARENA || pb.v[i].addr + pb.v[i].len > ARENA + ARENA_SZ)
				abort();	/* ascending, apart, in the arena */
		if (pyblocks_merge(&g, &pb))
			abort();
		check_graph(&g);
	}
	pytypes_name(&pt, &fm.maps, &g, &names, &st, &gch);
	if (getenv("FUZZ_SAY"))	/* what an input makes of the target (seeds checked so) */
		fprintf(stderr, "pools %zu blocks %zu refused %llu free %llu; g %zu objects %llu types %llu keys %llu values %llu gc %zu\n",
			pb.npools, pb.n, (unsigned long long)pb.refused, (unsigned long long)pb.free_blocks, g.n,
			(unsigned long long)st.objects, (unsigned long long)st.types, (unsigned long long)st.dict_keys,
			(unsigned long long)st.dict_values, gch.n);
	for (size_t i = 1; i < gch.n; i++)
		if (gch.v[i] <= gch.v[i - 1])
			abort();	/* ascending */
	if (fake_read(&fm, &s, 1, buf) == 0)
		pygcheads_hide(&gch, &s, 1, buf);
	/* every mapping a root, less the pools; then the scan */
	r.cap = r.n = fm.maps.n;
	r.v = calloc(r.cap, sizeof(*r.v));
	for (size_t i = 0; i < fm.maps.n; i++)
		r.v[i] = (struct snaproot){ fm.m[i].start, fm.m[i].end, (uint32_t)i };
	pyblocks_trim_roots(&pb, &r);
	for (size_t i = 0; i < r.n; i++) {
		for (size_t k = 0; k < pb.npools; k++)
			if (r.v[i].lo < pb.pools[k].addr + pb.pools[k].len &&
			    pb.pools[k].addr < r.v[i].hi)
				abort();	/* a root over a pool */
		heapgraph_root_range(&g, (uint32_t)i, r.v[i].lo, r.v[i].hi);
	}
	snaproots_free(&r);
	pygcheads_free(&gch);
	pyblocks_free(&pb);
	snapnames_free(&names);
	heapgraph_free(&g);
	return 0;
}
