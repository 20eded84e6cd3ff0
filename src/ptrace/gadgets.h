/* Instructions in the target's own code that a kill-safe remote syscall returns through. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_GADGETS_H
#define HEAPATTACH_GADGETS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * syscall_ret: a "syscall; ret" (e.g. in one of libc's syscall wrappers);
 * sigreturn: an rt_sigreturn ("mov $15, %rax; syscall", libc's
 * __restore_rt). Any occurrence of the bytes will do, instruction boundary
 * or not: the CPU decodes from where rip points.
 */
struct gadgets {
	uint64_t syscall_ret;
	uint64_t sigreturn;
};

/*
 * Look for both in buf, len bytes of the target's code that start at
 * address base; fill the members of g that are still 0. Returns 1 once both
 * are set.
 */
int gadgets_scan(const uint8_t *buf, size_t len, uint64_t base, struct gadgets *g);

/*
 * Both gadgets of process pid, from its private executable file mappings
 * (not ours, memfd:heapattach, which a recovery may unmap), cached per pid
 * and checked byte for byte on each call. 0, -ENOENT if the code has none,
 * -EOPNOTSUPP if the thread tid runs with a shadow stack (CET), where a
 * `ret` to an address the shadow stack does not hold would fault, or -errno.
 */
int gadgets_get(pid_t pid, pid_t tid, struct gadgets *g);

#endif
