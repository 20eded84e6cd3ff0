/* The shared stack table: stack ids the agent may send instead of frames. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include "fast/stackids.h"

int stackids_publish(struct shm_stack *table, const uint64_t *pcs, size_t n, int trunc,
		     uint32_t id)
{
	uint32_t key = (uint32_t)n | (trunc ? SHM_STACK_TRUNC : 0);
	uint64_t h = 0;

	for (size_t i = 0; i < n; i++)
		h = shm_stack_hash_step(h, pcs[i]);
	h = shm_stack_hash_end(h, key);
	for (int i = 0; i < SHM_STACK_PROBES; i++) {
		struct shm_stack *e = &table[(h + i) & (SHM_NSTACKS - 1)];
		/* read once: the target can write the table too (it only
		 * misleads its own agent) */
		uint64_t eh = *(volatile uint64_t *)&e->hash;

		if (eh == h && *(volatile uint32_t *)&e->nframes == key)
			return 0;
		if (eh)
			continue;
		e->id = id;
		e->nframes = key;
		shm_barrier();	/* x86-64 keeps stores in order: hash last */
		*(volatile uint64_t *)&e->hash = h;
		return 1;
	}
	return -ENOSPC;
}

void stackids_reset(struct shm_stack *table)
{
	for (size_t i = 0; i < SHM_NSTACKS; i++)
		if (*(volatile uint64_t *)&table[i].hash)
			*(volatile uint64_t *)&table[i].hash = 0;
	shm_barrier();
	for (size_t i = 0; i < SHM_NSTACKS; i++) {
		table[i].id = 0;
		table[i].nframes = 0;
	}
}
