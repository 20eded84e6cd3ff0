/* The tool's guard over the agent: a liveness word the kernel clears when heapattach dies, and the agent's faults taken back. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TOOLGUARD_H
#define HEAPATTACH_TOOLGUARD_H

/*
 * The agent reads memory it did not make (the target's stack, Python's
 * frames) with loads that may fault; each such fault stops the thread in
 * its tracer, heapattach, which moves it to the load's fixup and drops
 * the signal (toolguard_fault). Only a tracer can do that, so the agent
 * makes such loads only while the shared word shm_hdr.tool_alive holds
 * the tracer thread's id: a robust futex of that thread (set_robust_list(2)),
 * which the kernel marks SHM_TOOL_DIED when the thread dies, however it
 * dies, before it lets its tracees go (do_exit runs the robust list in
 * exit_mm, the ptrace detach later in exit_notify).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tramp_fast_env;

/* The kernel's struct robust_list_head and one entry (linux/futex.h). */
struct toolguard {
	struct {
		void *next;
		long futex_offset;
		void *pending;
	} head;
	struct {
		void *next;
	} entry;
	void *old_head;         /* the thread's list before (glibc's), given back */
	size_t old_len;
	volatile uint32_t *word;
};

/*
 * Arm: word (in our view of the shared area) gets this thread's id, and
 * this thread's robust list becomes one entry, word. To be called by the
 * thread that traces the target, which must not use robust mutexes while
 * armed. 0 or -errno (the word then says no tool).
 */
int toolguard_arm(struct toolguard *g, volatile uint32_t *word);

/* Disarm: the word says the tool is gone, the thread's list is given back. */
void toolguard_disarm(struct toolguard *g);

/*
 * tid is in a signal-delivery stop: if the kernel raised it (SIGSEGV or
 * SIGBUS of a fault) at one of the agent's guarded loads (env), move the
 * thread to that load's fixup. 1 if so (drop the signal), 0 if the signal
 * is not ours (pass it on), -errno.
 */
int toolguard_fault(const struct tramp_fast_env *env, pid_t tid);

#endif
