/* Allocator wrappers: the frames skipped to name an allocation's site (a built-in list and --skip). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SKIPSITES_H
#define HEAPATTACH_SKIPSITES_H

#include <stddef.h>

/*
 * A stack's site is its first frame, from the leaf, whose function is not
 * an allocator wrapper: a function known to return what it got from the
 * allocator (a built-in list of redis, nginx, PostgreSQL, CPython, glib,
 * C++ and the usual xmalloc family), or one matching a --skip expression
 * (POSIX extended, unanchored, as grep -E). The profile keeps every frame;
 * only the site shown (--top, the report's tables) moves past wrappers.
 */
struct skipsites;

/* The built-in list alone. NULL only when out of memory. */
struct skipsites *skipsites_new(void);
/* Also skip functions matching regex. 0, or -EINVAL when it does not compile. */
int skipsites_add(struct skipsites *ss, const char *regex);
/* 1 if function is a wrapper to skip, else 0 (also for NULL ss or name). */
int skipsites_match(const struct skipsites *ss, const char *function);
/*
 * The one rule for the frames to pass over to name a stack's site (leaf
 * first, n of them): the leading wrappers, and up to the rootmost frame
 * named a wrapper among the first SKIPSITES_REACH (what a wrapper called
 * to get memory is its machinery, named or not: a stripped program's
 * static helpers under MemoryContextAlloc), and the wrappers that lead on
 * from there. kind(arg, i, reached) says what frame i is, SKIPSITES_*
 * bits; reached: every frame before i is passed over (a wrapper found by
 * its code is one only then). How many to pass: n when all are.
 */
#define SKIPSITES_REACH 16
#define SKIPSITES_WRAPPER 1u            /* a wrapper, where reached */
#define SKIPSITES_NAMED   2u            /* named one: what it called is passed too */
size_t skipsites_pass(size_t n, unsigned (*kind)(void *arg, size_t i, int reached), void *arg);
/* skipsites_pass with the names ss matches: 0 when every frame would be
 * passed (the leaf is shown). */
size_t skipsites_count(const struct skipsites *ss, const char *const *names, size_t n);
void skipsites_free(struct skipsites *ss);

#endif
