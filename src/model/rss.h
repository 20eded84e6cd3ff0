/* Where a process's resident memory is, by kind of mapping (from /proc/PID/smaps). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_RSS_H
#define HEAPATTACH_RSS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* What a mapping is, as far as its address, protection and name tell. */
enum rss_kind {
	RSS_BRK,        /* [heap]: the brk heap (glibc's main arena) */
	RSS_ARENA,      /* glibc's other arenas: anonymous, 64 MiB-aligned, a
			 * reservation (---p) right after the usable part */
	RSS_STACK,      /* [stack], and anonymous memory right above a guard (---p):
			 * thread stacks */
	RSS_ANON,       /* every other anonymous private mapping: large blocks the
			 * allocator mmapped, other allocators' memory, the program's
			 * own mmaps */
	RSS_CODE,       /* executable file mappings, [vdso] */
	RSS_FILE_DATA,  /* writable private file mappings (data, relro, bss) */
	RSS_FILE,       /* other file mappings: read-only data, mapped files */
	RSS_SHMEM,      /* shared memory: memfds, /dev/shm, SysV, shared anonymous */
	RSS_OURS,       /* heapattach's own shared area */
	RSS_NKINDS
};

/* Sizes in bytes. */
struct rss_sum {
	uint64_t rss;           /* resident */
	uint64_t size;          /* virtual */
	uint64_t swap;          /* swapped out */
	uint64_t maps;          /* mappings */
};

struct rss_smaps {
	struct rss_sum kind[RSS_NKINDS];
	struct rss_sum total;
	unsigned arenas;        /* glibc arenas (the brk one included when present) */
};

/* Short name of a kind, for messages and profile comments ("brk", "arena", ...). */
const char *rss_kind_name(enum rss_kind k);

/*
 * Sum an smaps text by kind. Input is the target's: lines that do not
 * parse are skipped, every figure is saturated, at most RSS_MAX_MAPS
 * mappings are read (then -E2BIG, with what was read summed). 0 or -errno.
 */
#define RSS_MAX_MAPS (1u << 20)
int rss_smaps_parse(FILE *f, struct rss_smaps *out);
/* The same for /proc/PID/smaps (tid may name any thread). */
int rss_smaps_read(pid_t pid, struct rss_smaps *out);

#endif
