/* Which definition of each allocator entry point the target's calls bind to. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_HOOKS_H
#define HEAPATTACH_HOOKS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "proc.h"

/* Which argument registers (x86-64 System V) carry what at the entry. */
enum hook_kind {
	HOOK_ALLOC,             /* size = rdi: malloc, valloc, pvalloc, operator new/new[] */
	HOOK_CALLOC,            /* size = rdi * rsi */
	HOOK_REALLOC,           /* old = rdi, size = rsi */
	HOOK_REALLOCARRAY,      /* old = rdi, size = rsi * rdx */
	HOOK_POSIX_MEMALIGN,    /* memptr = rdi, align = rsi, size = rdx; result in *memptr */
	HOOK_ALIGNED,           /* align = rdi, size = rsi: aligned_alloc, memalign */
	HOOK_FREE,              /* ptr = rdi: free, cfree, operator delete/delete[] */
};

#define HOOK_MAX_NAMES 16

/* One runtime address that calls bind to; aliases folded. */
struct hook {
	enum hook_kind kind;
	uint64_t addr;          /* runtime address of the function */
	uint64_t size;          /* st_size: length of the body, 0 if unknown */
	const char *names[HOOK_MAX_NAMES]; /* static strings, table order */
	size_t nnames;
	const struct proc_map *map; /* mapping holding addr; points into the caller's maps */
	char *path;             /* object path as the target sees it */
	int unsupported;        /* 1: IFUNC, addr is the resolver; do not patch */
	const char *forwards;   /* non-NULL: a small wrapper that tail-jumps through
				 * its PLT to this other listed entry point (glibc's
				 * reallocarray -> realloc); do not patch, or its
				 * allocations count twice */
};

struct hook_set {
	struct hook *v;
	size_t n;
};

/*
 * Resolve the allocator entry points of pid without stopping it: lookup order
 * from the dynamic linker's r_debug list (read with process_vm_readv), or
 * exe + LD_PRELOAD + maps order when that fails; only the executable when it
 * is static. maps: the target's maps, which must outlive set. 0 or -errno
 * (-ENOENT when no allocator was found). Free set with hooks_free.
 */
int hooks_resolve(pid_t pid, const struct proc_maps *maps, struct hook_set *set);
void hooks_free(struct hook_set *set);
/*
 * One line per entry: "0xADDR name[=alias...] PATH". Entries not to patch
 * are printed as comments: "# unsupported ifunc 0xADDR names PATH" and
 * "# forwards to NAME 0xADDR names PATH".
 * 0 or -EIO.
 */
int hooks_print(FILE *f, const struct hook_set *set);
/* Test seam: nonzero makes hooks_resolve skip the r_debug list and use its
 * fallback order (executable, LD_PRELOAD, maps). */
extern int hooks_no_r_debug;

/* "alloc", "calloc", ... for messages. */
const char *hook_kind_name(enum hook_kind kind);
/* The kind of an allocator entry point name (mangled for C++); -ENOENT if
 * the name is not one we hook. */
int hook_kind_of(const char *name);

#endif
