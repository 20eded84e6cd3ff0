/* Allocator wrappers found by their code: functions whose every allocating call seen returns what it got. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_WRAPFIND_H
#define HEAPATTACH_WRAPFIND_H

#include <stddef.h>
#include <stdint.h>

struct profile;
struct profile_bucket;
struct skipsites;
struct symbolizer;

/*
 * A site is a stack's first frame whose function is not an allocator
 * wrapper: named so (skipsites.h), or found so by its code: a function
 * whose every allocating call seen (a frame reached past wrappers only)
 * returns the call's result (disasm_returns_result); and every frame
 * leafward of a named wrapper among the first SKIPSITES_REACH (what a
 * wrapper calls to get memory is its machinery, named or not: a stripped
 * PostgreSQL's static AllocSet helpers under MemoryContextAlloc). A function that also
 * allocates for itself, a header say, is a site for all its calls once
 * that call is seen; what is found so stays found for the wrapfind's life.
 * In a Python target the interpreter's own frames between the wrappers
 * and the first Python frame (list_repeat, type_call, ...: how Python
 * code allocates) are passed over too: the site is the Python function.
 */
struct wrapfind;

/* Where the target's code and names come from. */
struct wrapfind_src {
	struct symbolizer *sym;         /* NULL: nothing is a wrapper by its code */
	int (*read)(void *arg, uint64_t addr, void *buf, size_t len);  /* 0 or -errno */
	void *arg;
	uint64_t interp_lo, interp_hi;  /* the Python interpreter's code, or 0, 0 */
};

#define WRAPFIND_NAME 128               /* bytes of a name found, NUL included */
#define WRAPFIND_REACH 16               /* frames looked at for a named wrapper */

/* Named wrappers are skip's (not owned, may be NULL); xcalloc'd. */
struct wrapfind *wrapfind_new(const struct skipsites *skip);
void wrapfind_free(struct wrapfind *wf);
/* The return address that names b's site: its first frame that is no
 * wrapper (the leaf when every frame is one); 2 for no stack. */
uint64_t wrapfind_site_pc(struct wrapfind *wf, const struct wrapfind_src *src,
			  const struct profile_bucket *b);
/* Test the wrappers of every stack of prof, so that a function found
 * impure at one call is so for all its calls in later wrapfind_site_pc. */
void wrapfind_scan(struct wrapfind *wf, const struct wrapfind_src *src, const struct profile *prof);
/* The functions found wrappers by their code alone (not by name), and the
 * interpreter's passed over, at most max, their names into v (an unnamed
 * one as its frame's address, "0x..." as pprof.c writes it); how many. */
size_t wrapfind_found(struct wrapfind *wf, const struct wrapfind_src *src,
		      char (*v)[WRAPFIND_NAME], size_t max);

#endif
