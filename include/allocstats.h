/* The allocator's own statistics, asked of the agent inside the target (glibc, jemalloc, tcmalloc). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ALLOCSTATS_H
#define HEAPATTACH_ALLOCSTATS_H

#include <stdint.h>
#include <sys/types.h>

#include "hooks.h"
#include "shm.h"

/* Which statistics function the target's malloc comes with. */
struct allocstats_fn {
	const char *allocator;          /* "glibc", "jemalloc", "tcmalloc"; NULL: none found */
	uint32_t kind;                  /* SHM_STATS_* */
	uint64_t addr;                  /* the function in the target */
	uint32_t n;                     /* names asked (MALLCTL, PROPERTY) */
	const char *names[SHM_STATS_MAX];
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
};

/*
 * Find the statistics function of the allocator that the malloc hook
 * binds to (its object's dynamic symbols; for a static allocator, the
 * executable's symbols): tcmalloc's MallocExtension_GetNumericProperty,
 * jemalloc's mallctl (or je_/_rjem_ prefixed), glibc's mallinfo2.
 * 0, or -ENOENT (fn->allocator NULL).
 */
int allocstats_find(pid_t pid, const struct hook_set *hooks, struct allocstats_fn *fn);

/* Write fn into the shared header h (and the tool's copy want, the same). */
void allocstats_arm(struct shm_hdr *h, struct shm_hdr *want, const struct allocstats_fn *fn);

/*
 * Turn the answer's words (shm_hdr.stats_val, copied by the caller) into
 * figures. The words are the target's: one that no allocator in a 57-bit
 * address space could report makes the whole answer implausible (-EINVAL).
 */
int allocstats_decode(const struct allocstats_fn *fn, const uint64_t *val, size_t n,
		      struct allocstats *out);

#endif
