/* File mappings that may shrink under us: a SIGBUS in one reads zeros instead of killing heapattach. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MAPGUARD_H
#define HEAPATTACH_MAPGUARD_H

#include <stddef.h>

/*
 * Register [p, p + len), a read-only mapping of a file the target controls
 * (libelf maps whole ELF files). If the file is truncated, a read past its
 * new end raises SIGBUS: the handler (installed on the first call) maps a
 * page of zeros over the faulting page and the read goes on, so parsers
 * see zeros, which they must survive like any other hostile content. A
 * SIGBUS anywhere else keeps its default action. Mappings are registered
 * and forgotten by one thread; the fault may come in any thread.
 */
void mapguard_add(const void *p, size_t len);
/*
 * The same for a read-write shared view of memory the target shares with
 * us and could shrink (the injected memfd, sealed against it, or the
 * shared anonymous memory of the fallback, which cannot be sealed): the
 * zero pages are writable, so that our writes go on too (to nowhere).
 */
void mapguard_add_rw(void *p, size_t len);
/* Forget the mapping registered at p (call before it is unmapped). */
void mapguard_remove(const void *p);
/* Pages of registered mappings replaced by zeros so far. */
unsigned long mapguard_zeroed(void);
/* Pages of the mapping registered at p replaced by zeros so far. */
unsigned long mapguard_zeroed_in(const void *p);

#endif
