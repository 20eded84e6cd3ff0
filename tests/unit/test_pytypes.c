/* Unit tests for Python types (pytypes.c): made-up type objects and instances in our own memory, named or not. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ownread.h"
#include "snapshot/pytypes.h"


#define TW 22                           /* words of a type read: up to tp_flags */
#define READY (1UL << 12)
#define GC (1UL << 14)
#define HEAPTYPE (1UL << 9)
#define MANAGED_DICT (1UL << 4)
#define DICT_SUB (1UL << 29)
#define TYPE_SUB (1UL << 31)

/* The "interpreter's data": static types, their names, one object. */
static struct {
	uint64_t tt[TW], foo[TW], bar[TW], dct[TW], nope[TW], inst[4];
	char names[5][96];
} st __attribute__((aligned(16)));

#define NB 10
static uint8_t heap[NB][128] __attribute__((aligned(16)));

static uint64_t A(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void type(uint64_t *t, const uint64_t *meta, int name, const char *s, uint64_t flags)
{
	strcpy(st.names[name], s);
	t[0] = 1;
	t[1] = A(meta);
	t[3] = A(st.names[name]);
	t[21] = flags;
}

static void put(int b, size_t off, uint64_t w)
{
	memcpy(&heap[b][off], &w, 8);
}

static void named(void)
{
	struct proc_map m = { .start = A(&st), .end = A(&st) + sizeof(st),
			      .prot = PROC_MAP_R | PROC_MAP_W, .path = "/fake/libpython" };
	struct proc_maps maps = { &m, 1 };
	struct py_target pt = { .minor = 11, .type_type = A(st.tt) };
	struct snapnames names = { 0 };
	struct pytypes_stats ps;
	struct heapgraph g;
	static const char *want[NB] = { "Foo", "Bar", "dict", "type", "dict keys", "dict values",
					NULL, "Heap", NULL, NULL };

	memset(heap, 0, sizeof(heap));
	type(st.tt, st.tt, 0, "type", READY | GC | TYPE_SUB);
	type(st.foo, st.tt, 1, "Foo", READY);
	type(st.bar, st.tt, 2, "Bar", READY | GC | MANAGED_DICT);
	type(st.dct, st.tt, 3, "dict", READY | GC | DICT_SUB);
	type(st.nope, st.tt, 4, "Nope", 0);
	st.inst[0] = 1;
	st.inst[1] = A(st.foo);         /* an object, its type no metatype */
	put(0, 0, 1);                   /* a Foo at 0 */
	put(0, 8, A(st.foo));
	put(1, 0, A(&heap[5][16]));     /* a Bar at 32: its values in 5 */
	put(1, 32, 1);
	put(1, 40, A(st.bar));
	put(2, 16, 1);                  /* a dict at 16: its keys 4 */
	put(2, 24, A(st.dct));
	put(2, 48, A(heap[4]));
	put(3, 16, 1);                  /* a heap type at 16, named in 6 */
	put(3, 24, A(st.tt));
	put(3, 16 + 24, A(&heap[6][8]));
	put(3, 16 + 168, READY | HEAPTYPE);
	memcpy(&heap[6][8], "Heap", 5);
	put(7, 0, 1);                   /* an instance of it */
	put(7, 8, A(&heap[3][16]));
	put(8, 0, 1);                   /* of a type not ready */
	put(8, 8, A(st.nope));
	put(9, 0, 1);                   /* its "type" an object */
	put(9, 8, A(st.inst));
	/* a type's header is 176 bytes: 3's spills into 4 (a real heap type
	 * fills a block of its own), harmless to 4's own words */
	expect_int_eq(heapgraph_init(&g, NB, read_own, NULL), 0);
	for (int i = 0; i < NB; i++)
		heapgraph_set(&g, (size_t)i, A(heap[i]), 128);
	heapgraph_seal(&g);
	pytypes_name(&pt, &maps, &g, &names, &ps, NULL);
	for (int i = 0; i < NB; i++) {
		if (want[i])
			expect_str_eq(snapnames_name(&names, g.type[i]), want[i]);
		else
			expect_int_eq(g.type[i], 0);
	}
	expect_int_eq(ps.objects, 5);
	expect_int_eq(ps.dict_keys, 1);
	expect_int_eq(ps.dict_values, 1);
	/* no &PyType_Type: nothing named */
	pt.type_type = 0;
	for (int i = 0; i < NB; i++)
		g.type[i] = 0;
	pytypes_name(&pt, &maps, &g, &names, &ps, NULL);
	expect_int_eq(ps.objects, 0);
	expect_int_eq(g.type[0], 0);
	heapgraph_free(&g);
	snapnames_free(&names);
}

/* The GC's heads and a str's state word zeroed in what a read returns, spans cut anywhere. */
static void gc_hidden(void)
{
	uint64_t heads[] = { 0x1000, 0x1040, 0x2008 }, state[] = { 0x1020 };
	struct pygcheads gc = { .v = heads, .n = 3, .state = state, .nstate = 1 };
	struct hg_span s[2] = { { 0x1008, 0x40 }, { 0x2000, 0x20 } };
	uint8_t buf[0x60];

	memset(buf, 0xaa, sizeof(buf));
	pygcheads_hide(&gc, s, 2, buf);
	for (size_t i = 0; i < sizeof(buf); i++) {
		int zero = i < 8 ||                     /* 0x1008..0x1010: the first head's end */
			   (i >= 0x18 && i < 0x20) ||   /* 0x1020..0x1028: a str's state word */
			   (i >= 0x38 && i < 0x40) ||   /* 0x1040..0x1048: cut by the span's end */
			   (i >= 0x48 && i < 0x58);     /* 0x2008..0x2018 */

		expect_int_eq(buf[i], zero ? 0 : 0xaa);
	}
}

HARNESS_MAIN("pytypes", T(named), T(gc_hidden))
