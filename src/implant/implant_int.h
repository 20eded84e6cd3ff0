/* What implant.c, implant_sys.c and implant_remove.c share; no other file includes it. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_IMPLANT_INT_H
#define HEAPATTACH_IMPLANT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "implant/implant.h"
#include "ptrace/tracee.h"
#include "shm.h"

/* One region: a memfd mapped near the object it serves. */
struct region {
	struct inject_region *inj;      /* the r-x view */
	struct inject_region *alias;    /* agent backend: the rw- view, or NULL */
	uint64_t remote;                /* address in the target */
	uint8_t *local;                 /* our RW view */
	size_t size, used;              /* of the code part; used: bytes of code */
	uint64_t near;                  /* the object it serves */
	struct shm_hdr *hdr;            /* local + REGION_CODE: the target may write it */
	struct shm_hdr *want;           /* the header as we wrote it (kept until implant_free) */
};

struct implant {
	struct implant_params p;
	const struct hook_set *hooks;
	struct patch *patches;
	size_t npatches;
	struct region regions[IMPLANT_MAX_REGIONS];
	size_t nregions;
	struct shm_range nest[SHM_NEST_RANGES]; /* the allocator's own code: calls from */
	uint32_t nest_n;                        /* there are nested (nest_ranges) */
	uint64_t leftover_lo[IMPLANT_MAX_REGIONS], leftover_hi[IMPLANT_MAX_REGIONS];
	size_t nleftovers;
	size_t left;                    /* views implant_remove had to leave mapped */
	int handed_over;                /* the first region's local view is the backend's */
};

/* 1 once every thread of the target has exited. */
static inline int implant_gone(const struct implant *im)
{
	return im->p.gone && *im->p.gone;
}

/* Stop every thread of the target (events seen meanwhile go to on_event). */
static inline void implant_stop_all(struct implant *im)
{
	tracee_stop_all(im->p.tr, im->p.on_event, im->p.event_arg);
}

/* A view of a region that is still mapped in the target. */
static inline int implant_view_mapped(const struct inject_region *v)
{
	return v && v->size;
}

#endif
