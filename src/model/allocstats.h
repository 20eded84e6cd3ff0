/* The allocator's own statistics: which allocator the target's malloc is, and how its figures are had without running the target's code where that is unsafe. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ALLOCSTATS_H
#define HEAPATTACH_ALLOCSTATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/glibcwalk.h"
#include "model/hooks.h"

/* How the figures are had (allocstats_fn.kind). */
#define ALLOCSTATS_GLIBC    1   /* glibc: its arenas read from the target's memory */
#define ALLOCSTATS_MALLCTL  2   /* jemalloc: mallctl("epoch", ...) to refresh, then
				 * mallctl(name, &v, &8, NULL, 0) for each name */
#define ALLOCSTATS_PROPERTY 3   /* gperftools: MallocExtension_GetNumericProperty(name, &v)
				 * for each name */

#define ALLOCSTATS_MAX_NAMES 8
#define ALLOCSTATS_NAME_MAX  40         /* bytes of a name, its NUL included */
#define ALLOCSTATS_MAX_TEXT  4          /* executable mappings of the allocator */
#define ALLOCSTATS_MAX_FORK  4          /* fork's entry points */
#define ALLOCSTATS_MAX_WAIT  4          /* libc's condition-variable waits */

/* An address range [lo, hi) of the target's code. */
struct allocstats_range {
	uint64_t lo, hi;
};

/* The target's allocator and how to get its figures. */
struct allocstats_fn {
	const char *allocator;          /* "glibc", "jemalloc", "tcmalloc"; NULL: none */
	uint32_t kind;                  /* ALLOCSTATS_*; 0: no figures (why says why) */
	char why[192];                  /* no figures: why */

	/* GLIBC: libc's text mapping starts at glibc_map; glibc_ready once
	 * glibc_find has found the state (it is looked for again until malloc
	 * has set up its main arena) */
	uint64_t glibc_map;
	int glibc_ready;
	struct glibc_state glibc;
	const char *glibc_how;

	/* MALLCTL, PROPERTY: the function, called only at a safe point
	 * (safecall.h) that no thread is inside the allocator's code or fork */
	uint64_t addr;
	struct allocstats_range text[ALLOCSTATS_MAX_TEXT];
	size_t ntext;
	struct allocstats_range fork[ALLOCSTATS_MAX_FORK];
	size_t nfork;
	struct allocstats_range wait[ALLOCSTATS_MAX_WAIT];     /* safecall.h, parked */
	size_t nwait;
	uint64_t instance_at;           /* PROPERTY: where MallocExtension keeps its instance */
	uint64_t vtable;                /* PROPERTY: the vtable that instance must have
					 * (TCMallocImplementation's: no program's class) */
	uint32_t n;                     /* names asked */
	const char *names[ALLOCSTATS_MAX_NAMES];
};

/* The figures, in bytes, as the allocator counts them; UINT64_MAX where it
 * has none. */
struct allocstats {
	const char *allocator;
	uint64_t in_use;        /* allocated and not freed, all threads */
	uint64_t free;          /* free inside the allocator: its caches, free chunks and pages */
	uint64_t metadata;      /* its own bookkeeping */
	uint64_t resident;      /* what it holds from the system (jemalloc, tcmalloc) */
	uint64_t mmapped;       /* glibc: blocks given their own mapping (hblkhd) */
	uint64_t system;        /* glibc: arena bytes from the system (arena field) */
	char how[256];          /* where they come from, for the breakdown */
};

/*
 * Find the allocator that the malloc hook binds to and how to get its
 * figures: tcmalloc's MallocExtension_GetNumericProperty or jemalloc's
 * mallctl (je_, _rjem_) when its object defines one, to be called only if
 * the name binds to that very object (no definition of the executable's
 * or a preloaded object's in front of it), the allocator is a shared
 * object (its code told apart from the program's), and, for tcmalloc,
 * its MallocExtension instance can be checked; glibc's arenas when the
 * object is glibc's, or when it is an object of no known allocator in
 * front of glibc (a wrapper) and glibc's libc is mapped. 0 with fn filled
 * (fn->kind 0 and fn->why when there is an allocator but no safe way to
 * its figures), or -ENOENT (fn->why says why).
 */
struct target;
int allocstats_find(struct target *t, pid_t pid, const struct hook_set *hooks,
		    struct allocstats_fn *fn);

/*
 * GLIBC: find glibc's malloc state (glibcfind.h) unless found already.
 * 0; -ENODATA when malloc has not set up its main arena yet; -errno
 * (fn->why says why).
 */
int allocstats_glibc_find(struct target *t, struct allocstats_fn *fn);

/*
 * GLIBC: glibc's figures now, read from the target's memory (glibcwalk.h)
 * for at most budget_ns (the figures are then cut, and said so in
 * out->how). 0; -ENODATA when malloc has not set up its main arena yet;
 * -errno (fn->why says why) when they cannot be had.
 */
int allocstats_glibc(struct target *t, struct allocstats_fn *fn, uint64_t budget_ns,
		     struct allocstats *out);

/* The figures of one walk (what mallinfo2 would say) into out. */
void allocstats_from_glibc(const struct glibc_figures *f, struct allocstats *out);

/*
 * MALLCTL, PROPERTY: turn the answers (one word per name, UINT64_MAX for
 * a name that failed) into figures. The words are the target's: one that
 * no allocator in a 57-bit address space could report makes the whole
 * answer implausible (-EINVAL).
 */
int allocstats_decode(const struct allocstats_fn *fn, const uint64_t *val, size_t n,
		      struct allocstats *out);

#endif
