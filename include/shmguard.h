/* A guard against SIGBUS in shared mappings the target can shrink under us. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SHMGUARD_H
#define HEAPATTACH_SHMGUARD_H

#include <stddef.h>

/*
 * Our view of an object the target shares with us (the injected memfd,
 * sealed against resizing, or the shared anonymous memory of the fallback,
 * which cannot be sealed) faults with SIGBUS when the object shrinks
 * under it: a target that truncates it (through /proc/self/map_files)
 * would kill us, its jumps still in place. A SIGBUS at an address inside
 * a guarded range replaces the whole range with private zero pages, marks
 * the guard tripped, and the faulting access is retried: it reads zeros,
 * and writes go nowhere. Any other SIGBUS still kills as before.
 */

/* Guard [addr, addr + len). 0, or -ENOSPC when too many ranges are guarded. */
int shmguard_add(void *addr, size_t len);
/* Stop guarding the range that starts at addr (before it is unmapped). */
void shmguard_remove(void *addr);
/* Non-zero once a guarded range was found truncated. */
int shmguard_tripped(void);

#endif
