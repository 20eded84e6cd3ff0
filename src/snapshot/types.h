/* What a snapshot's blocks hold: a C++ object's class by its vtable pointer, else its size class. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPTYPES_H
#define HEAPATTACH_SNAPTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "model/proc.h"
#include "snapshot/heapgraph.h"
#include "snapshot/names.h"

struct target;

/*
 * Every block of g gets a type (g->type: a name id of names): a block
 * whose first word points into the vtable of a loaded object (a "_ZTV"
 * symbol, past its first word) holds an object of that class, named by
 * the symbol demangled; any other is named by its size class ("[64 B]":
 * the next power of two of its usable size). The first words are read
 * through g's reader, in batches. How many blocks were named by class.
 */
size_t snaptypes_classify(struct target *t, const struct proc_maps *maps, struct heapgraph *g,
			  struct snapnames *names);

#endif
