/* The tool's side of the shared event rings: drain committed records in time order. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_RING_H
#define HEAPATTACH_RING_H

#include <stddef.h>
#include <stdint.h>
#include "shm.h"

/* Called for each committed record (never for PAD); rec points to a
 * private copy of it (len bytes, at most max_len), valid only during
 * the call. Return 0 to go on, non-zero to stop. */
typedef int (*ring_fn)(void *arg, const void *rec, uint32_t len);

/*
 * The consumer's state: its own copy of the geometry and of every tail.
 * Everything in the shared area is input from the target, which can write
 * all of it: the ring size and the rings' place are the tool's own (never
 * read back), a head is checked against our tail and the size before use,
 * and a record's length against the ring and max_len; each shared
 * word is read once. The first value the agent could not have written
 * sets `corrupt` and stops every drain from then on.
 */
struct ring_reader {
	struct shm_hdr *hdr;            /* the DATA view: layout of shm.h */
	uint8_t *rings;                 /* its rings: hdr + SHM_OFF_RING */
	uint64_t size;                  /* bytes of each ring: our choice, a power of two */
	uint32_t max_len;               /* the longest record at the run's depth
					 * (shm_ev_max_len), at most SHM_EV_MAX_LEN */
	uint64_t tail[SHM_NRINGS];
	uint64_t published[SHM_NRINGS]; /* the value last stored in tails[] */
	uint64_t used;                  /* bit i: ring i has been written to */
	uint64_t stuck_tail[SHM_NRINGS]; /* where ring i was last found blocked */
	uint64_t stuck_since[SHM_NRINGS]; /* and since when (CLOCK_MONOTONIC ns) */
	int no_writers;                 /* ring_reader_final() was called */
	const char *corrupt;            /* what the agent could not have written, or NULL */
	uint64_t rec[SHM_EV_MAX_LEN / 8]; /* the record handed to ring_fn */
};

/* Start reading the rings of hdr, ring_size bytes each (the size the tool
 * made them), from a fresh area: every head and tail 0; the agent walks
 * depth frames (the tool's --max-depth, as shm_depth bounds it) and adds
 * at most npy Python frame words. */
void ring_reader_init(struct ring_reader *rd, struct shm_hdr *hdr, uint64_t ring_size,
		      uint32_t depth, uint32_t npy);

/*
 * Hand up to max committed records to fn, merged across rings in time
 * order, as far as that order is known: a record is handed over only once
 * every record that could precede it is visible. Consumed bytes are zeroed
 * and the tails advanced. Returns the number of records handed to fn
 * (0 once rd->corrupt is set).
 */
size_t ring_drain(struct ring_reader *rd, size_t max, ring_fn fn, void *arg);

/* No writer will make progress any more (target gone, or stopped for the
 * last drain): a record reserved and not committed no longer holds back
 * the other rings. */
void ring_reader_final(struct ring_reader *rd);

/* The fullest ring's bytes reserved but not yet consumed (every ring,
 * written to before or not); at most the ring size. */
uint64_t ring_pending_max(struct ring_reader *rd);

/* Bytes reserved so far in all rings together (never decreases while
 * the heads are sound). */
uint64_t ring_heads_total(struct ring_reader *rd);

#endif
