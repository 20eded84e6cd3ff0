/* A CPython target's module globals as named roots ("__main__.cache"), so that what one global alone keeps alive is owned by it. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYROOTS_H
#define HEAPATTACH_PYROOTS_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/heapgraph.h"
#include "snapshot/names.h"
#include "snapshot/pydead.h"

/*
 * The rule. In a Python process the interpreter's C globals, every
 * thread's frames (f_globals), every function (__globals__) and
 * sys.modules all reach each module's dict, and through it every global
 * value: by the dominator rule (heapgraph.h) nearly every object would
 * be "shared". So each entry of a module's dict whose key is a str is a
 * root of its own, named "MODULE.KEY" (__name__ of the module, the key),
 * with one edge: to the entry's value. That edge is the dict's edge to
 * the value, moved: while scanning, the entry's me_value word reads zero
 * (pyroots_hide), so a path through the module dict (from sys.modules,
 * a frame's globals, a function's __globals__, the interpreter's state)
 * stops at the dict; the dict itself, its keys table and the keys stay
 * reached as before. A value is then owned by MODULE.KEY when nothing
 * else reaches it but through that entry: the super-root's children are
 * the named globals and the anonymous C roots alike, and the module
 * dicts are no longer a path from the second to what the first hold.
 * A value two globals hold (`from m import X` binds X in both modules)
 * is shared, as anything two roots reach; so is one a C root reaches by
 * another way (a cache of the interpreter's, a thread's frame).
 *
 * The named roots are scanned first (pyroots_scan): a shared block's
 * first root, the top of its stack in the profile, is then a global
 * when one reaches it.
 *
 * Found from the blocks pytypes_name named "module": a module object
 * (past its PyGC_Head) whose md_dict is a block named "dict" holding a
 * combined table (ma_values NULL); its keys table read by version (3.8
 * to 3.10: dk_size, entries of {hash, key, value}; 3.11 on: dk_log2_size,
 * dk_kind, {key, value} entries for unicode keys); each key a compact
 * ASCII str (its state bits, NUL after its length, printable). Every
 * word is the target's: sizes checked against the blocks holding them,
 * entries bounded, names bounded.
 */

/* A named root: one edge, to the object at value. */
struct pyroot {
	uint64_t value;
	uint32_t name;
};

struct pyroots {
	struct pyroot *v;
	size_t n, cap;
	uint64_t *hidden;               /* each such entry's me_value word, ascending */
	size_t nhidden, hcap;
	uint64_t modules;               /* module dicts read */
	struct pydead dead;             /* 3.8-3.10: dead frames, hidden too */
};

/* The module globals of a CPython 3.minor whose blocks g holds (named by
 * pytypes_name; read through g->read), into r. */
void pyroots_find(int minor, struct heapgraph *g, struct snapnames *names, struct pyroots *r);
/* Scan from each named root (before the others: see above). */
void pyroots_scan(const struct pyroots *r, struct heapgraph *g);
/* Zero, in buf (spans[0..n) read one after another), the words of
 * r->hidden and the dead frames' stale words. */
void pyroots_hide(const struct pyroots *r, const struct hg_span *s, size_t n, uint8_t *buf);
void pyroots_free(struct pyroots *r);

#endif
