/* Unit tests for module globals as roots (pyroots.c): made-up modules, dicts, keys tables and strs in our own memory. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ownread.h"
#include "snapshot/pyroots.h"

#define NB 10
#define BS 256
static uint8_t heap[NB][BS] __attribute__((aligned(16)));

static uint64_t A(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void put(int b, size_t off, uint64_t w)
{
	memcpy(&heap[b][off], &w, 8);
}

/* A compact str in block b: ASCII (else Latin-1, no name) of 3.minor. */
static void str(int b, int minor, const char *s, int ascii)
{
	size_t data = minor <= 11 ? 48 : 40;
	uint32_t state = 1u << 2 | 1u << 5 | (ascii ? 1u << 6 : 0);

	put(b, 0, 1);
	put(b, 16, strlen(s));
	memcpy(&heap[b][32], &state, 4);
	memcpy(&heap[b][data], s, strlen(s) + 1);
}

/*
 * Module "__main__" (block 0, its name 3) whose dict (1) has the keys
 * table 2 of 3.minor (kind: 3.11 on, 1 unicode, 2 split): "cache" (4) ->
 * block 6, a Latin-1 key (5) -> 7, "reg" (9) -> 8.
 */
static void build(struct heapgraph *g, struct snapnames *names, int minor, int kind)
{
	uint64_t keys[3] = { A(heap[4]), A(heap[5]), A(heap[9]) };
	size_t ent;

	memset(heap, 0, sizeof(heap));
	put(0, 16, 1);
	put(0, 16 + 16, A(heap[1]) + 16);	/* md_dict */
	put(0, 16 + 48, A(heap[3]));		/* md_name */
	put(1, 16, 1);
	put(1, 16 + 32, A(heap[2]));		/* ma_keys; ma_values NULL */
	put(2, 0, 1);
	if (minor <= 10) {	/* dk_size 8, dk_nentries 3, 8 one-byte indices */
		put(2, 8, 8);
		put(2, 32, 3);
		ent = 48;
		for (int i = 0; i < 3; i++) {
			put(2, ent + 24 * i + 8, keys[i]);
			put(2, ent + 24 * i + 16, A(heap[6 + i]));
		}
	} else {	/* dk_log2_size 3, dk_log2_index_bytes 3, dk_kind, dk_nentries 3 */
		heap[2][8] = 3;
		heap[2][9] = 3;
		heap[2][10] = (uint8_t)kind;
		put(2, 24, 3);
		ent = 40;
		for (int i = 0; i < 3; i++) {
			put(2, ent + 16 * i, keys[i]);
			put(2, ent + 16 * i + 8, A(heap[6 + i]));
		}
	}
	str(3, minor, "__main__", 1);
	str(4, minor, "cache", 1);
	str(5, minor, "caf\xe9", 0);
	str(9, minor, "reg", 1);
	memset(g, 0, sizeof(*g));
	expect_int_eq(heapgraph_init(g, NB, read_own, NULL), 0);
	for (int i = 0; i < NB; i++)
		heapgraph_set(g, (size_t)i, A(heap[i]), BS);
	expect_int_eq(heapgraph_seal(g), NB);
	g->type[0] = snapnames_id(names, "module");
	g->type[1] = snapnames_id(names, "dict");
}

/* Each layout: two roots named, their value words hidden, their values owned. */
static void globals(void)
{
	static const int minors[] = { 8, 10, 11, 12, 13 };

	for (size_t k = 0; k < sizeof(minors) / sizeof(minors[0]); k++) {
		struct snapnames names = { 0 };
		struct heapgraph g;
		struct pyroots r;
		int m = minors[k];
		uint64_t esz = m <= 10 ? 24 : 16, ent = m <= 10 ? 48 : 40, voff = m <= 10 ? 16 : 8;
		uint32_t cache, reg;

		build(&g, &names, m, 1);
		pyroots_find(m, &g, &names, &r);
		cache = snapnames_id(&names, "__main__.cache");
		reg = snapnames_id(&names, "__main__.reg");
		expect_int_eq(r.modules, 1);
		expect_int_eq(r.n, 2);
		if (r.n == 2) {
			expect_int_eq(r.v[0].name, cache);
			expect_int_eq(r.v[0].value, A(heap[6]));
			expect_int_eq(r.v[1].name, reg);
			expect_int_eq(r.v[1].value, A(heap[8]));
			expect_int_eq(r.hidden[0], A(heap[2]) + ent + voff);
			expect_int_eq(r.hidden[1], A(heap[2]) + ent + 2 * esz + voff);
		}
		pyroots_scan(&r, &g);
		expect_int_eq(g.owner[6], cache);
		expect_int_eq(g.owner[8], reg);
		expect_int_eq(g.owner[7], HG_NONE);
		{	/* a read of the table: the two values read zero, the Latin-1 key's not */
			struct hg_span s = { A(heap[2]), BS };
			uint8_t buf[BS];

			memcpy(buf, heap[2], BS);
			pyroots_hide(&r, &s, 1, buf);
			expect_int_eq(buf[ent + voff], 0);
			expect_int_eq(buf[ent + 2 * esz + voff], 0);
			expect_int_eq(memcmp(buf + ent + esz + voff, heap[2] + ent + esz + voff, 8), 0);
		}
		pyroots_free(&r);
		heapgraph_free(&g);
		snapnames_free(&names);
	}
}

/* A split table, a size not a power of two, more entries than it holds, a
 * dict's values table, a dict not named "dict": no roots. */
static void refused(void)
{
	for (int c = 0; c < 5; c++) {
		struct snapnames names = { 0 };
		struct heapgraph g;
		struct pyroots r;
		int m = c == 1 ? 9 : 12;

		build(&g, &names, m, c == 0 ? 2 : 1);
		if (c == 1)
			put(2, 8, 12);
		if (c == 2)
			put(2, 24, 6);
		if (c == 3)
			put(1, 16 + 40, A(heap[7]));
		if (c == 4)
			g.type[1] = snapnames_id(&names, "list");
		pyroots_find(m, &g, &names, &r);
		expect_int_eq(r.n, 0);
		expect_int_eq(r.nhidden, 0);
		pyroots_free(&r);
		heapgraph_free(&g);
		snapnames_free(&names);
	}
}

HARNESS_MAIN("pyroots", T(globals), T(refused))
