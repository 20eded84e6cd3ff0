/* The agent blob's frame rules, compiled from its CFI when it is built (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_AGENT_CFI_H
#define HEAPATTACH_ARCH_AGENT_CFI_H

#include <stdint.h>

struct shm_frame;

/*
 * The rule of the agent's code at offset off of the blob (ip - its
 * address), as a frame table's (shm.h struct shm_frame; ip left 0): the
 * CFI row that holds at off, so off - 1 for a return address. 0, or
 * -ENOENT where no CFI covers off (the blob's constants, padding).
 */
int agent_cfi_rule(uint64_t off, struct shm_frame *rule);

#endif
