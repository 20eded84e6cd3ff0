/* The agent's sampling counters, one per stack slot (shm.h, struct shm_counter), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_COUNTER_H
#define HEAPATTACH_AGENT_COUNTER_H

static struct shm_counter *counter_at(struct shm_hdr *h, unsigned slot)
{
	return (struct shm_counter *)((char *)h + SHM_OFF_COUNTERS + slot * SHM_COUNTER_STRIDE);
}

/* The counter number of the stack sp lies on (as the trampolines compute it). */
static inline unsigned slot_of(uint64_t sp)
{
	return (sp >> 21) & (SHM_NCOUNTERS - 1);
}

/* The counter of the stack an allocator was entered on (entry_sp = &f->ret). */
static struct shm_counter *counter_of(struct shm_hdr *h, uint64_t entry_sp)
{
	return counter_at(h, slot_of(entry_sp));
}

/*
 * Re-arm counter c after a sampled call: the distance from the end of this
 * allocation to the next marked byte is a fresh exponential draw (the marks
 * form a Poisson process, which is memoryless), so the counter is set to
 * one gap, whatever it had run down to. Adding gaps until it turns
 * positive would be the same in law, but a huge allocation would need
 * hundreds of them. Each counter has its own xorshift generator (state in
 * its line, seeded by the tool).
 */
static void rearm(struct shm_hdr *h, struct shm_counter *c)
{
	uint64_t x = c->rng ? c->rng : 0x9e3779b97f4a7c15ULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	__atomic_store_n(&c->left, (int64_t)shm_exp_gap(x, h->gap_mul), __ATOMIC_RELAXED);
}

#endif
