/* Which definition of each allocator entry point the target's calls bind to. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_HOOKS_H
#define HEAPATTACH_HOOKS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "model/proc.h"

/*
 * What a hooked function does with its arguments (argN: its Nth integer
 * argument, C order; which register holds it is the architecture's
 * business, see src/arch/). "old" is freed before the call, the result is
 * the new block unless said otherwise. Sizes are the request, whatever the
 * allocator rounds it to.
 */
enum hook_kind {
	HOOK_ALLOC,             /* size = arg0: malloc, valloc, pvalloc, operator new, mallocx */
	HOOK_CALLOC,            /* size = arg0 * arg1 */
	HOOK_REALLOC,           /* old = arg0, size = arg1: realloc, rallocx */
	HOOK_REALLOCARRAY,      /* old = arg0, size = arg1 * arg2 */
	HOOK_POSIX_MEMALIGN,    /* memptr = arg0, size = arg2; result in *memptr */
	HOOK_ALIGNED,           /* align = arg0, size = arg1: aligned_alloc, memalign */
	HOOK_FREE,              /* ptr = arg0: free, operator delete, sdallocx, dallocx */
	HOOK_HEAP_ALLOC,        /* heap = arg0, size = arg1 (mimalloc's mi_heap_*) */
	HOOK_HEAP_CALLOC,       /* heap = arg0, size = arg1 * arg2 */
	HOOK_HEAP_REALLOC,      /* heap = arg0, old = arg1, size = arg2 */
	HOOK_HEAP_REALLOCN,     /* heap = arg0, old = arg1, size = arg2 * arg3 */
	/*
	 * In place: the block at arg0 keeps its address and gets a new size.
	 * Recorded as a free of the block and an allocation of the new size
	 * at the same address from this call's stack, like a realloc that did
	 * not move; nothing when the resize failed.
	 */
	HOOK_XALLOCX,           /* jemalloc xallocx: new size = the result (the usable
				 * size) if it is >= arg1, else failed */
	HOOK_EXPAND,            /* mi_expand: new size = arg1 if the result is not NULL */
	/* The size is known only from the result: a copy of a string. */
	HOOK_STRDUP,            /* size = strlen(result) + 1 */
	HOOK_WCSDUP,            /* size = 2 * (16-bit length of result + 1) */
	HOOK_REALPATH,          /* resolved = arg1: a new block (strlen + 1) iff arg1 is NULL */
	HOOK_HEAP_REALPATH,     /* heap = arg0, resolved = arg2: the same */
	HOOK_DUPENV,            /* buf = arg0: *buf gets a string copy (strlen + 1) if it returns 0 */
	HOOK_REALLOCARR,        /* p = arg0: *p realloc'ed to arg1 * arg2 if it returns 0 */
	HOOK_NKINDS
};

#define HOOK_MAX_NAMES 16

/* One runtime address that calls bind to; aliases folded. */
struct hook {
	enum hook_kind kind;
	uint64_t addr;          /* runtime address of the function */
	uint64_t size;          /* st_size: length of the body, 0 if unknown */
	uint64_t own_lo, own_hi; /* the allocator's own code around it: the function and
				  * its neighbours that are no one else's (hooks.c,
				  * own_extent); own_hi 0 if unknown */
	const char *names[HOOK_MAX_NAMES]; /* static strings, table order */
	size_t nnames;
	const struct proc_map *map; /* mapping holding addr; points into the caller's maps */
	char *path;             /* object path as the target sees it */
	int nargs;              /* integer arguments it takes (the most of its names) */
	uint32_t calls;         /* 1 << kind of each listed entry point its code calls
				 * (a wrapper that is not a mere tail jump): it may
				 * allocate or free through them */
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
 * is static. Besides the definition each name binds to, an object's own
 * definition that it does not export (in its .symtab only: an allocator
 * linked statically into it, such as mallocx or tc_malloc) is listed too:
 * its code calls it directly. maps: the target's maps, which must outlive
 * set. 0 or -errno (-ENOENT when no allocator was found). Free set with
 * hooks_free.
 */
int hooks_resolve(pid_t pid, const struct proc_maps *maps, struct hook_set *set);
/* The same, reading the objects that t's maps hold the same way through
 * t's cache (target_object), where the symbolizer finds them again. */
struct target;
int hooks_resolve_target(struct target *t, pid_t pid, const struct proc_maps *maps,
			 struct hook_set *set);
void hooks_free(struct hook_set *set);
/*
 * The definition a call of name from the target binds to, as
 * hooks_resolve finds it (the lookup order, or a static executable's own
 * symbols): its runtime address in *addr and the lowest mapping of its
 * object in *map (one of maps). 0, -ENOENT if nothing defines name, or
 * -errno.
 */
int hooks_binding(struct target *t, pid_t pid, const struct proc_maps *maps, const char *name,
		  uint64_t *addr, const struct proc_map **map);
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
