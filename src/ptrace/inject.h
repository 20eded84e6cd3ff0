/* A shared memory page injected into the target near a library, writable by the tool. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_INJECT_H
#define HEAPATTACH_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "ptrace/remote.h"

/*
 * One view of an injected memory object. The target sees size bytes at
 * remote; the tool sees the same pages at local (read-write, MAP_SHARED), so
 * whatever the tool writes is visible in the target at once.
 *
 * The first INJECT_STUB_SIZE bytes of a region are left zero; put code and
 * data after them.
 */
struct inject_region {
	void *local;		/* tool's RW mapping of the same pages */
	uint64_t remote;	/* address in the target */
	size_t size;		/* bytes, page multiple */
	int prot;		/* PROT_* of the target's view */
	int anon;		/* 1: shared anonymous memory (memfd refused) */
	int alias;		/* 1: second view made by inject_region_alias */
};

#define INJECT_STUB_SIZE 16
/* Largest distance from near_addr to any byte of the region. */
#define INJECT_REACH ((1ULL << 31) - (256ULL << 20))

#define INJECT_F_ANON 1		/* skip memfd_create, use the fallback */
#define INJECT_F_NO_ANON 2	/* never the fallback (the target's seccomp filter may kill it) */

/* inject_candidates for the current maps of pid (read now: the gaps must
 * be fresh); how many, or -errno (-ENOMEM: none). */
int inject_candidates_for(pid_t pid, uint64_t near, size_t size, uint64_t *out, int max);

/*
 * Map size bytes (rounded up to pages) PROT_READ|PROT_EXEC in the target,
 * in a free gap with every byte within INJECT_REACH of near_addr (so rel32
 * jumps reach it from a library up to 256 MiB long that contains near_addr);
 * nearest gaps are tried first, below and above.
 *
 * The object is a memfd "heapattach" (MFD_CLOEXEC) whose target fd is
 * closed again before returning, so no fd leaks into the target; if the
 * target refuses memfd_create, shared anonymous memory reached through
 * /proc/PID/map_files.
 *
 * Same thread-state contract as remote_syscall(). 0 or -errno; on error
 * nothing is left mapped in either process. Undo with inject_region_remove.
 */
int inject_region_near(struct remote_ctx *ctx, uint64_t near_addr, size_t size,
		       struct inject_region *out);
/* inject_region_near with INJECT_F_* flags. */
int inject_region_near_flags(struct remote_ctx *ctx, uint64_t near_addr,
			     size_t size, unsigned flags,
			     struct inject_region *out);

/*
 * Called before the target maps the memfd at addr (once per address tried),
 * with the tool's fd of it, already of its full size (size bytes, as the
 * mapping will be): what fn writes there
 * is in the file before the target can see the mapping, so a tool killed
 * at any instant leaves a mapping that proves itself ours (recover.c).
 * 0 or -errno (which ends the injection).
 */
typedef int (*inject_prefill_fn)(void *arg, int fd, uint64_t addr, size_t size);
struct inject_prefill {
	inject_prefill_fn fn;
	void *arg;
	int fd;
};
/* inject_region_near_flags, calling fn(arg, ...) on the memfd way. */
int inject_region_near_prefill(struct remote_ctx *ctx, uint64_t near_addr, size_t size,
			       unsigned flags, inject_prefill_fn fn, void *arg,
			       struct inject_region *out);

/*
 * A second target view of base's pages with protection prot (e.g. PROT_READ|
 * PROT_WRITE for data), placed near near_addr like inject_region_near. It
 * needs no fd in the target: mremap(old_size = 0) duplicates a shared
 * mapping. out->local is base->local and is not unmapped separately.
 * 0 or -errno.
 */
int inject_region_alias(struct remote_ctx *ctx, const struct inject_region *base,
			uint64_t near_addr, int prot, struct inject_region *out);

/*
 * Unmap the region in the target and (unless it is an alias) in the tool.
 * On success
 * the region is cleared; when the remote munmap fails only the tool's view
 * goes, and remote/size stay for another try (in another thread). 0 or
 * -errno, printing nothing: the caller says what failed.
 */
int inject_region_remove(struct remote_ctx *ctx, struct inject_region *region);

/*
 * Pure helper, exported for tests: fill out[0..max) with page addresses
 * where size bytes fit in a free gap of the /proc/PID/maps text buf, each
 * byte within INJECT_REACH of near, nearest first. Returns the count.
 */
int inject_candidates(const char *buf, size_t len, uint64_t near, size_t size,
		      uint64_t *out, int max);

#endif
