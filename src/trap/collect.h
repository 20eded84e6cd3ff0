/* Trap mode: trampolines that stop in the tool, and each stop turned into a profile event. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_COLLECT_H
#define HEAPATTACH_COLLECT_H

#include <sys/types.h>

#include "implant/implant.h"
#include "profile/runstats.h"
#include "shm.h"

struct profile;
struct sampler;
struct unwinder;

/* Where a trap's event goes. */
struct collect_ctx {
	struct implant *im;             /* whose trampolines trap */
	struct profile *prof;
	struct sampler *sampler;        /* sampling is decided here, in the tool */
	struct unwinder *unw;
	struct run_stats *stats;
	unsigned max_depth;             /* frames kept of a stack (--max-depth) */
};

/* Handle a syscall-stop of thread tid that may be one of our traps (bkpt.h):
 * 1 if it was a trap's entry stop (recorded unless record is 0), 0 if not,
 * -errno on error. */
int collect_trap(const struct collect_ctx *c, pid_t tid, int record);

/* Bytes of each region's data part in trap mode: the header a successor
 * reads (recover.c), its pages (shm.h: SHM_OFF_COUNTERS). */
#define COLLECT_DATA_SIZE SHM_OFF_COUNTERS
/* What a trampoline and its traps push on the stack of the thread that
 * made a hooked call (tramp.h, bkpt.h: 7 words), rounded up. */
#define COLLECT_STACK 128

/* The trap mode's implant backend (no arg). */
extern const struct implant_ops collect_implant_ops;

#endif
