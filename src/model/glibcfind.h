/* Where glibc's malloc keeps its state in the target: main_arena and mp_'s counters, from symbols or from mallinfo2's code. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_GLIBCFIND_H
#define HEAPATTACH_GLIBCFIND_H

#include <stddef.h>

#include "model/glibcwalk.h"
#include "model/proc.h"

struct target;
struct elfobj;

/* 1 if e is glibc's malloc: it defines mallinfo2 (2.33 on) and __libc_malloc. */
int glibc_is_malloc(const struct elfobj *e);

/*
 * Find glibc's malloc state in the object mapped at m (libc.so.6, or a
 * static executable), one of t's mappings: main_arena and mp_ from the
 * object's .symtab or from its debug file's (the symbols' sizes give the
 * layouts); without them, from the code of mallinfo2 and of the functions
 * it calls (the address it takes that holds an arena, and the int and the
 * word it loads that sit where mp_ keeps n_mmaps and mmapped_mem). Every
 * candidate is checked in the target's memory before it is taken. *how
 * says where they came from ("symbols", "debug file", "mallinfo2's code").
 * 0 (g->n_mmaps and g->mmapped_mem may be 0: unknown); -ENODATA when malloc
 * has not set up its main arena yet (try again later); -ENOENT with a
 * reason in why.
 */
int glibc_find(struct target *t, const struct proc_map *m, struct glibc_state *g,
	       const char **how, char *why, size_t whylen);

/* Test seam: nonzero makes glibc_find skip the symbols (mallinfo2's code only). */
extern int glibc_find_no_symbols;

/* target_read as a glibc_read_fn (arg: the target). */
int glibc_target_read(void *arg, uint64_t addr, void *buf, size_t len);

#endif
