/* What hooks.c, hooks_order.c and hooks_code.c share; no other file includes it. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_HOOKS_INT_H
#define HEAPATTACH_HOOKS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/hooks.h"
#include "model/proc.h"

struct elfobj;
struct target;

/* One object in lookup order. */
struct obj {
	const struct proc_map *map;     /* its lowest mapping */
	struct elfobj *elf;             /* NULL if it could not be opened */
	int shared;                     /* elf is the target's (target_object) */
	uint64_t bias;
	int have_bias;
};

struct objlist {
	struct obj *v;
	size_t n, cap;
	struct target *t;               /* whose objects to share, or NULL */
};

/*
 * l = the objects of pid (maps: its maps) in the dynamic linker's lookup
 * order; *is_static: the executable is static (its .symtab names the
 * entries). l->t set: share the target's objects. 0 or -errno; free l with
 * hooks_order_free either way.
 */
int hooks_order_build(struct objlist *l, pid_t pid, const struct proc_maps *maps, int *is_static);
void hooks_order_free(struct objlist *l);

/* 1 if name is one of the C++ operators of the hooked names. */
int hooks_name_cxx(const char *name);
/* Mark the entries of set that are wrappers of other entries, and what the
 * others call (h->forwards, h->calls). */
void hooks_mark_forwards(struct hook_set *set, const struct objlist *l);
/* Each hook's own extent (h->own_lo, own_hi), in the object that defines it. */
void hooks_mark_own(struct hook_set *set, const struct objlist *l);

#endif
