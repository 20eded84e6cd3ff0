/* A snapshot's thread stacks by frame: each block a thread's stack reaches directly, credited to the function whose frame holds the pointer. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPFRAMES_H
#define HEAPATTACH_SNAPFRAMES_H

#include <stddef.h>
#include "snapshot/heapgraph.h"
#include "snapshot/names.h"
#include "snapshot/roots.h"

struct target;

/*
 * After the scan: walk each thread's stack as it was stopped (its
 * registers, the stack read from t, unwound by the stacks layer), cut it
 * into frames where each frame's return address is stored, and give each
 * block whose parent is the thread's root the function of the outermost
 * frame holding a pointer to it ("main (app.c:42)") as its parent root:
 * the block's owner stays the thread; its stack in the profile reads
 * ... <- FUNCTION (FILE:LINE) <- stack of thread N. How many blocks.
 */
size_t snapframes_credit(struct target *t, struct heapgraph *g, const struct snapthread *th,
			 size_t nth, const struct snaproots *roots, struct snapnames *names);

#endif
