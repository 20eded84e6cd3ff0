/* Undoing what a heapattach that died left behind, as far as it can be proven. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_RECOVER_H
#define HEAPATTACH_RECOVER_H

#include <sys/types.h>

#include "model/hooks.h"
#include "model/proc.h"

struct implant;

/*
 * Undo what a previous heapattach that died left in target pid (read
 * through thread proc_tid): restore the entry points that jump into its
 * memfd:heapattach mappings, wait (through im, whose threads must all be
 * stopped) until no thread is inside them, unmap them. Returns 0 when
 * nothing was unmapped, 1 when maps were re-read and hooks resolved again
 * (what pointed into the old maps must be rebuilt), or -errno.
 */
int recover_leftovers(struct implant *im, pid_t pid, pid_t proc_tid, struct proc_maps *maps,
		      struct hook_set *hooks);

#endif
