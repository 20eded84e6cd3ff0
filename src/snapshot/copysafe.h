/* Whether a snapshot may copy or stop its target now: a vfork in flight, the memory cgroup's room for the copy, the time a stopped read would take. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_COPYSAFE_H
#define HEAPATTACH_COPYSAFE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/memcg.h"

/*
 * A heap read from the target stopped goes at most this fast (the fastest
 * measured, 0.81 GiB/s with blocks of 1000 B, rounded up; blocks of 64 B
 * go at 0.19 GiB/s): a read that would take longer than --max-stop even
 * at this speed is refused before the target is stopped.
 */
#define COPYSAFE_READ_BYTES_PER_S (1ULL << 30)

/*
 * A child of one of pid's threads that shares pid's memory: a vfork (or
 * posix_spawn) in flight, the child running in the parent's memory until
 * it execs or exits while the parent thread waits, unstoppable. A copy
 * forked then would not be of one instant, and the parent would not stop
 * for the stop of every thread. Children traced by us are left out (a
 * vfork made after our seize: its child stops before it runs). 1 with
 * *tid (the parent thread) and *child, 0 if none, -errno when pid's
 * children cannot be listed. Sharing is told by kcmp(KCMP_VM); without
 * kcmp, by the parent thread waiting in vfork, or in clone with
 * CLONE_VFORK (/proc/TID/syscall).
 */
int copysafe_vfork(pid_t pid, pid_t *tid, pid_t *child);

/*
 * What the copy may cost pid's memory cgroup at worst: every private
 * anonymous page resident (RssAnon) or swapped (VmSwap) written by the
 * target while the copy lives (copy on write), and the copy's page
 * tables (a 4 KiB page for each 2 MiB). Into *anon the first figure.
 * 0, or -errno when /proc/PID/status cannot be read.
 */
int copysafe_copy_cost(pid_t pid, uint64_t *cost, uint64_t *anon);

/*
 * Pure: whether a copy costing cost fits the room cg leaves (swap is not
 * counted as room: a service pushed to swap by our copy is harmed too).
 * 1, or 0 with why ("its memory cgroup ... has 120 MiB free, a copy could
 * need 900 MiB"). A cgroup not found, or without a limit, fits.
 */
int copysafe_memcg_fits(const struct memcg_info *cg, uint64_t cost, char *why, size_t len);

/* Pure: the least time in ns reading anon bytes stopped could take
 * (COPYSAFE_READ_BYTES_PER_S). */
uint64_t copysafe_read_ns(uint64_t anon);

#endif
