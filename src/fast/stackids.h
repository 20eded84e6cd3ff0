/* The shared stack table: stack ids the agent may send instead of frames. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_STACKIDS_H
#define HEAPATTACH_STACKIDS_H

#include <stddef.h>
#include <stdint.h>
#include "shm.h"

/*
 * Enter the stack pcs[0..n) (as the agent walked it, leaf first; trunc:
 * the walk was cut at the depth, SHM_EVF_TRUNC) with the tool's id in
 * table (SHM_NSTACKS slots, layout of shm.h), so that the agent sends the
 * id from now on. Returns 1 if entered, 0 if it was there already,
 * -ENOSPC if its probe run is full (the agent keeps sending the frames of
 * that stack).
 */
int stackids_publish(struct shm_stack *table, const uint64_t *pcs, size_t n, int trunc,
		     uint32_t id);
/* Empty the table (the target's code changed): each entry's hash first, so
 * an agent reading concurrently sees an entry whole or not at all. */
void stackids_reset(struct shm_stack *table);

#endif
