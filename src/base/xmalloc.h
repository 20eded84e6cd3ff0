/* Allocation wrappers that abort the tool (after cleanup) when memory runs out. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_XMALLOC_H
#define HEAPATTACH_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* n zeroed bytes of their own pages (anonymous mmap): big arrays that go
 * back to the system whole, outside the heap; xunmap with the same n. */
void *xmap(size_t n);
void xunmap(void *p, size_t n);

/* Say that n bytes could not be had and exit (xmalloc's end, for
 * allocations made otherwise: mmap). */
void xmalloc_oom(size_t n) __attribute__((noreturn));

/* Called by xmalloc before exiting on OOM; main sets it to its cleanup. */
extern void (*xmalloc_oom_hook)(void);

#endif
