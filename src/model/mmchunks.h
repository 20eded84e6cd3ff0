/* Large blocks' resident pages in the target, from pagemap: glibc's mmapped blocks (found by their headers) and the large blocks the profile holds live. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MMCHUNKS_H
#define HEAPATTACH_MMCHUNKS_H

#include <stdint.h>
#include <sys/types.h>

/* What mmchunks_measure found, in bytes. */
struct mmchunks {
	uint64_t count;         /* blocks found */
	uint64_t mapped;        /* their virtual size (what mp_.mmapped_mem counts) */
	uint64_t resident;      /* of that, resident (pagemap: present) */
	uint64_t swapped;       /* of that, swapped out */
	int cut;                /* the time budget ran out: the figures are lower bounds */
};

/*
 * Find glibc's mmapped blocks in pid's anonymous private writable
 * mappings (their kernel may have merged several blocks, and the
 * program's own maps, into one): a page whose first 16 bytes are a
 * mmapped chunk's header (prev_size 0, size page-aligned with only
 * IS_MMAPPED set, the block inside the mapping) starts one, which is
 * then skipped whole; other pages are stepped over. glibc's arenas are
 * skipped. Only resident pages
 * are read (no page is faulted in), for at most budget_ns. 0 with *out
 * filled, or -errno (maps or pagemap unreadable).
 */
int mmchunks_measure(pid_t pid, uint64_t budget_ns, struct mmchunks *out);
/* The same, each block found to visit: the start of its mapping (its chunk
 * header; the block is 16 bytes on) and its length, in address order. */
int mmchunks_list(pid_t pid, uint64_t budget_ns, void (*visit)(void *arg, uint64_t addr,
							      uint64_t len),
		  void *arg, struct mmchunks *out);

/* An address range [lo, hi) of the target's. */
struct mmchunks_range {
	uint64_t lo, hi;
};

/*
 * The whole pages inside each of n blocks r (large blocks the profile
 * holds live, of any allocator): out->count the blocks, out->mapped
 * their pages' bytes, out->resident and out->swapped those resident and
 * swapped (the rest was never touched, or given back), from pagemap, for
 * at most budget_ns. 0, or -errno (pagemap unreadable).
 */
int mmchunks_pages(pid_t pid, const struct mmchunks_range *r, size_t n, uint64_t budget_ns,
		   struct mmchunks *out);

#endif
