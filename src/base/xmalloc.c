/* Allocation wrappers that never return NULL. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "base/xmalloc.h"

void (*xmalloc_oom_hook)(void);

void xmalloc_oom(size_t n)
{
	fprintf(stderr, "heapattach: out of memory allocating %zu bytes\n", n);
	if (xmalloc_oom_hook)
		xmalloc_oom_hook();
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		xmalloc_oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		xmalloc_oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		xmalloc_oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		xmalloc_oom(strlen(s) + 1);
	return p;
}

void *xmap(size_t n)
{
	void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		xmalloc_oom(n);
	return p;
}

void xunmap(void *p, size_t n)
{
	if (p)
		munmap(p, n ? n : 1);
}
