/* glibc's mmapped blocks in the target: found by their headers in anonymous mappings, their resident part read from pagemap. */
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

#endif
