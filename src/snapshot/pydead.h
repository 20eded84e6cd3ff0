/* CPython 3.8-3.10's dead frames (a code object's zombie frame, the frame free list): blocks in use whose words are stale. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYDEAD_H
#define HEAPATTACH_PYDEAD_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/heapgraph.h"
#include "snapshot/names.h"

/*
 * Up to 3.10 a frame that returns is kept for its code's next call (the
 * code's co_zombieframe) or on the frame free list: a block in use whose
 * object has a refcount of 0, and whose words (its value stack above all,
 * never cleared) point to what the frame held when it ran. A global whose
 * function's code keeps such a frame would reach, through it, objects
 * another global holds: every global would be shared. So a dead frame's
 * words from f_code on read zero while scanning (its f_back, the free
 * list's link, stays). Found as the blocks of 128 bytes or more whose
 * object (past its PyGC_Head) has refcount 0 and the type of a block
 * pytypes_name named "frame" (a live frame: the interpreter's PyFrame_Type).
 */
struct pydead {
	uint64_t *at, *len;             /* the words hidden: [at[i], at[i] + len[i]), ascending */
	size_t n, cap;
};

/* The dead frames of g (its blocks named by pytypes_name, read through g->read). */
void pydead_find(const struct heapgraph *g, struct snapnames *names, struct pydead *d);
void pydead_free(struct pydead *d);

#endif
