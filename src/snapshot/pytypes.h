/* What a CPython target's blocks hold: each object named by its Python type ("dict", "str", "Node"), a dict's tables as "dict keys" and "dict values". */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYTYPES_H
#define HEAPATTACH_PYTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "model/proc.h"
#include "python/pyfind.h"
#include "snapshot/heapgraph.h"
#include "snapshot/names.h"

/* What the naming found, for the summary. */
struct pytypes_stats {
	uint64_t objects;               /* blocks named by their Python type */
	uint64_t types;                 /* distinct type objects checked and named */
	uint64_t dict_keys;             /* blocks named "dict keys" */
	uint64_t dict_values;           /* blocks named "dict values" */
};

/* The PyGC_Head of each GC object named (16 bytes at each address,
 * ascending), and the state word of each str (8 bytes at each: its bit
 * field's unused bits and the padding after it hold what the memory held
 * before, a word that may read as a pointer). */
struct pygcheads {
	uint64_t *v;
	size_t n;
	uint64_t *state;
	size_t nstate;
};

/*
 * A Python object in a block (pymalloc's or glibc's) starts after its
 * pre-header: 16 bytes of PyGC_Head for a type with Py_TPFLAGS_HAVE_GC,
 * and from 3.11 16 more before it for a type with a managed dict (3.12:
 * or managed weakrefs); its second word is its type. A word at offset
 * 8, 24 or 40 of a block is taken for the object's type when it is a
 * type (its own type &PyType_Type, pt->type_type, or a metatype: a type
 * subclass whose type is &PyType_Type), ready, lying in a file's mapping
 * (a static type: the interpreter's, an extension's) or at the start of
 * a block past its pre-header (a heap type), and the block's object
 * starts exactly where that type's pre-header says. The name is the
 * type's tp_name (a bounded read). A dict's (or a dict subclass's)
 * ma_keys block, when its own block, is named "dict keys"; the block
 * holding its ma_values, or an instance's managed values (3.11, 3.12:
 * the pre-header's first two words), "dict values". Blocks named
 * here replace the names g->type had (snaptypes_classify's); the heads
 * of those with a PyGC_Head go into gch (may be NULL), with the state
 * words of the strs. Everything
 * read is the target's word: each distinct candidate type is read once.
 */
void pytypes_name(const struct py_target *pt, const struct proc_maps *maps, struct heapgraph *g,
		  struct snapnames *names, struct pytypes_stats *st, struct pygcheads *gch);
/*
 * The GC's links are no references: every object the collector tracks
 * is on one of its doubly linked lists, so through them each reaches the
 * next and none could be leaked or owned. Zero, in buf (spans[0..n) read
 * one after another, as an hg_read_fn fills it), the bytes of gc's heads
 * and of its strs' state words.
 */
void pygcheads_hide(const struct pygcheads *gc, const struct hg_span *s, size_t n, uint8_t *buf);
void pygcheads_free(struct pygcheads *gc);
/* Zero, in buf (spans s[0..n) read one after another), the bytes of each
 * run [v[i], v[i] + len[i]) (len NULL: width; v ascending, runs apart). */
void pyhide(const uint64_t *v, const uint64_t *len, size_t nv, uint64_t width,
	    const struct hg_span *s, size_t n, uint8_t *buf);

#endif
