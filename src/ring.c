/* The tool's side of the shared event ring: drain committed records in order. */
/* SPDX-License-Identifier: MIT */
/*
 * Writers (the in-target agent) reserve [head, head+len) with a cmpxchg on
 * ring_head after checking it against ring_tail, write the record and
 * store its len last. The tool reads at ring_tail: len 0 means the writer
 * is still busy (stop and come back), a PAD record fills the tail end of the
 * buffer so that no record straddles it. Consumed bytes are zeroed before
 * ring_tail moves past them, so a stale len can never look committed.
 */
#include "ring.h"

/* ring_tail is stored every this many bytes, not after every record: each
 * store pulls the line away from the writers, who read it on every event. */
#define RING_PUBLISH (64 * 1024)

uint64_t ring_pending(const struct shm_hdr *hdr)
{
	return hdr->ring_head - hdr->ring_tail;
}

size_t ring_drain(struct shm_hdr *hdr, uint8_t *ring, size_t max, ring_fn fn, void *arg)
{
	uint64_t mask = hdr->ring_size - 1;
	uint64_t tail = hdr->ring_tail, published = tail;
	size_t n = 0;

	while (n < max && tail != hdr->ring_head) {
		uint8_t *rec = ring + (tail & mask);
		uint32_t len = __atomic_load_n((uint32_t *)rec, __ATOMIC_ACQUIRE);
		uint16_t kind;
		int stop = 0;

		if (len == 0)
			break;	/* reserved, not yet committed */
		if (len < 8 || (len & 7) || len > hdr->ring_size - (tail & mask))
			len = (uint32_t)(hdr->ring_size - (tail & mask));	/* corrupt: skip to the end */
		kind = *(uint16_t *)(rec + 4);
		if (kind != SHM_EV_PAD) {
			stop = fn(arg, rec, len);
			n++;
		}
		for (uint32_t k = 0; k < len; k += 8)	/* len is a multiple of 8 */
			*(uint64_t *)(rec + k) = 0;
		tail += len;
		if (tail - published >= RING_PUBLISH) {
			__atomic_store_n(&hdr->ring_tail, tail, __ATOMIC_RELEASE);
			published = tail;
		}
		if (stop)
			break;
	}
	if (tail != published)
		__atomic_store_n(&hdr->ring_tail, tail, __ATOMIC_RELEASE);
	return n;
}
