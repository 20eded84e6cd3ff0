/* The tool's side of the shared event ring: drain committed records in order. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_RING_H
#define HEAPATTACH_RING_H

#include <stddef.h>
#include <stdint.h>
#include "shm.h"

/* Called for each committed record (never for PAD); rec points into the ring
 * and is valid only during the call. Return 0 to go on, non-zero to stop. */
typedef int (*ring_fn)(void *arg, const void *rec, uint32_t len);

/* Consume up to max records from the ring of hdr (ring memory at ring).
 * Consumed bytes are zeroed and ring_tail advanced. Returns the number of
 * records handed to fn; stops early at a reserved but uncommitted record. */
size_t ring_drain(struct shm_hdr *hdr, uint8_t *ring, size_t max, ring_fn fn, void *arg);
/* Bytes reserved but not yet consumed. */
uint64_t ring_pending(const struct shm_hdr *hdr);

#endif
