/* jemalloc's and tcmalloc's figures, asked by calls the tool makes in a stopped thread at a safe point. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_STATSCALL_H
#define HEAPATTACH_STATSCALL_H

#include <stddef.h>

#include "model/allocstats.h"
#include "ptrace/safecall.h"

#define STATSCALL_STACK   (64u << 10)          /* stack the allocator's function may use */
#define STATSCALL_TIMEOUT 1000000000ULL         /* ns each call may take */

/*
 * Ask fn's allocator (ALLOCSTATS_MALLCTL, ALLOCSTATS_PROPERTY) for its
 * figures: stop every thread, and only if none is inside the allocator's
 * code (fn->text), fork (fn->fork), a signal handler or heapattach's code
 * (safecall_run), call its function in one of them: jemalloc's epoch
 * refresh then each name, tcmalloc's property for each name once its
 * MallocExtension instance is checked to be TCMallocImplementation's.
 * 0 with *out filled; -EBUSY when this is no safe point (try again
 * later); -ETIMEDOUT or -EFAULT when a call did not return in time or
 * faulted (make no more); -EPERM when tcmalloc's instance is not its own;
 * other -errno. why says why in each case.
 */
int statscall_ask(const struct safecall_env *env, const struct allocstats_fn *fn,
		  struct allocstats *out, char *why, size_t whylen);

#endif
