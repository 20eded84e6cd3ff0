/* The agent's table of live sampled pointers and the trampolines' bitmap (x86-64), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_LIVE_H
#define HEAPATTACH_AGENT_LIVE_H

/*
 * ---- live sampled pointers ----
 * Bucket s holds the sampled pointers of slot s in SHM_LIVE_WAYS words (0 =
 * empty). A pointer that finds no empty way is not entered: bit 0 of the
 * last word (pointers are aligned) then marks the bucket overflowed for
 * good, and its event says SHM_EVF_UNTABLED. A pointer once entered is
 * never dropped, so the tool can take its absence for its free; the frees
 * of pointers not entered are reported as events (any free of the slot not
 * found in an overflowed bucket). Bit s of the trampolines' bitmap is set
 * while the bucket holds anything, the overflow mark included. One cache
 * line per operation.
 */
static uint64_t *bucket_at(struct shm_hdr *h, uint32_t slot)
{
	return (uint64_t *)((char *)h + SHM_OFF_LIVE) + (size_t)slot * SHM_LIVE_WAYS;
}

static int bucket_busy(const uint64_t *w)
{
	for (int i = 0; i < SHM_LIVE_WAYS; i++)
		if (*(const volatile uint64_t *)&w[i])
			return 1;
	return 0;
}

static void bit_set(struct shm_hdr *h, uint32_t slot)
{
	uint8_t *byte = (uint8_t *)h + SHM_OFF_BITS + (slot >> 3);
	uint8_t mask = (uint8_t)(1u << (slot & 7));

	if (!(*(volatile uint8_t *)byte & mask))
		__atomic_fetch_or(byte, mask, __ATOMIC_SEQ_CST);
}

/*
 * Clear bit slot, the bucket w having emptied. Checked again after the
 * write: a thread that filled a way meanwhile may have set the bit before
 * we cleared it, and then the bit must stay.
 */
static void bit_clear(struct shm_hdr *h, uint32_t slot, const uint64_t *w)
{
	uint8_t *byte = (uint8_t *)h + SHM_OFF_BITS + (slot >> 3);
	uint8_t mask = (uint8_t)(1u << (slot & 7));

	__atomic_fetch_and(byte, (uint8_t)~mask, __ATOMIC_SEQ_CST);
	if (bucket_busy(w))
		__atomic_fetch_or(byte, mask, __ATOMIC_SEQ_CST);
}

/* Enter ptr in its bucket; 0 if it overflowed (then marked so). */
static int live_add(struct shm_hdr *h, uint64_t ptr)
{
	uint32_t slot = shm_bloom_slot(ptr);
	uint64_t *w = bucket_at(h, slot);
	int entered = 0;

	for (int i = 0; i < SHM_LIVE_WAYS && !entered; i++) {
		uint64_t v = *(volatile uint64_t *)&w[i];

		/* a failed cmpxchg reloads v: retried while only the overflow
		 * mark changed under us */
		while (!(v & ~SHM_LIVE_OVERFLOW) && !entered)
			entered = __atomic_compare_exchange_n(&w[i], &v, ptr | v, 0,
							      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	}
	if (!entered)
		__atomic_fetch_or(&w[SHM_LIVE_WAYS - 1], SHM_LIVE_OVERFLOW, __ATOMIC_SEQ_CST);
	bit_set(h, slot);
	return entered;
}

/*
 * Take ptr out of its bucket. Returns 1 if its free must be reported: it
 * is not there and the bucket overflowed (it may be a sampled pointer that
 * was never entered). A free found in the table is not reported: the tool
 * reads the table itself.
 */
static int live_del(struct shm_hdr *h, uint64_t ptr)
{
	uint32_t slot = shm_bloom_slot(ptr);
	uint64_t *w = bucket_at(h, slot);

	for (int i = 0; i < SHM_LIVE_WAYS; i++) {
		uint64_t v = *(volatile uint64_t *)&w[i];

		/* retried while only the overflow mark changed under us */
		while ((v & ~SHM_LIVE_OVERFLOW) == ptr) {
			if (__atomic_compare_exchange_n(&w[i], &v, v & SHM_LIVE_OVERFLOW, 0,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				if (!bucket_busy(w))
					bit_clear(h, slot, w);
				return 0;
			}
		}
	}
	return *(volatile uint64_t *)&w[SHM_LIVE_WAYS - 1] & SHM_LIVE_OVERFLOW;
}

#endif
