/* Frames of heapattach's own code in the target (the fast trampolines, the agent), for walks of stacks that a signal interrupted there. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_OWNFRAMES_H
#define HEAPATTACH_OWNFRAMES_H

/*
 * A signal handler's allocation is walked through the handler's signal
 * frame into the code the signal interrupted, which may be heapattach's:
 * a trampoline (tramp_fast.h) or the agent (agent.h). No object's unwind
 * information covers that code, so the tool keeps its own: each
 * trampoline's frame map (tramp.h, struct tramp_layout) with the
 * relocated prologue it holds, and the agent's CFI (agent_cfi.h), as
 * rules of the frame table's form (shm.h, struct shm_frame). Filled by
 * the fast mode's implant backend as it lays out the code (agentlink.c);
 * read by the walks of stack copies (copywalk.c).
 */
#include <stdint.h>

#include "reloc.h"
#include "shm.h"
#include "tramp.h"

struct ownframes;

struct ownframes *ownframes_new(void);
void ownframes_free(struct ownframes *o);
/* The agent blob lies at [lo, hi) in the target. */
void ownframes_set_agent(struct ownframes *o, uint64_t lo, uint64_t hi);
/* A trampoline at `at`, laid out as lay around r (the relocated prologue
 * of the hooked function at r->from). */
void ownframes_add_tramp(struct ownframes *o, uint64_t at, const struct tramp_layout *lay,
			 const struct reloc_result *r);
/* Whether ip lies in heapattach's code: a trampoline or the agent. */
int ownframes_has(const struct ownframes *o, uint64_t ip);

#define OWNFRAMES_RULE	0	/* *rule steps the frame to its caller */
#define OWNFRAMES_MOVED	1	/* the relocated prologue: the thread is as it would
				 * be at *moved, in the hooked function */
/*
 * How the frame at ip in heapattach's code is stepped (exact: a signal
 * interrupted the thread there; else ip is a return address):
 * OWNFRAMES_RULE and *rule (ip left 0), OWNFRAMES_MOVED and *moved, or
 * -ENOENT (no rule: between two instructions of a relocated branch, the
 * agent's constants, outside our code). *entry: the hooked function whose
 * trampoline holds ip, 0 in the agent.
 */
int ownframes_rule(const struct ownframes *o, uint64_t ip, int exact, struct shm_frame *rule,
		   uint64_t *moved, uint64_t *entry);

#endif
