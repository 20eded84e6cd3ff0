/* The agent link's frame-pointer ranges: the target's JIT code, walked by its frame pointer. */
/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "base/clock.h"
#include "fast/link_priv.h"
#include "framewalk.h"
#include "model/proc.h"
#include "model/target.h"

#define FP_REFRESH_NS 50000000ULL	/* maps read for new JIT code at most this often */

/* Whether m is code of no ELF object: anonymous (or [anon:...]) or a memfd
 * other than ours, executable. */
static int jit_code(const struct proc_map *m)
{
	if (!(m->prot & PROC_MAP_X))
		return 0;
	if (!m->path || !strncmp(m->path, "[anon", 5))
		return 1;
	return !strncmp(m->path, "/memfd:", 7) && strncmp(m->path, "/memfd:heapattach", 17);
}

/*
 * The target's JIT-like code, into at most SHM_FP_RANGES ranges:
 * adjacent mappings are merged, then the two ranges with the smallest
 * gap between them until they fit (a rule for code in a gap still comes
 * first). Returns the count.
 */
static uint32_t fp_ranges(const struct proc_maps *m, struct shm_range *v)
{
	uint32_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct proc_map *p = &m->v[i];

		if (!jit_code(p))
			continue;
		if (n && v[n - 1].hi == p->start) {
			v[n - 1].hi = p->end;
			continue;
		}
		if (n == SHM_FP_RANGES) {
			uint32_t best = 0;

			for (uint32_t k = 1; k + 1 < n; k++)
				if (v[k + 1].lo - v[k].hi < v[best + 1].lo - v[best].hi)
					best = k;
			v[best].hi = v[best + 1].hi;
			memmove(&v[best + 1], &v[best + 2], (n - best - 2) * sizeof(*v));
			n--;
		}
		v[n++] = (struct shm_range){ p->start, p->end };
	}
	return n;
}

/* Read the maps and publish the ranges (ours first, then the shared
 * header: ranges before their count). */
void fpranges_refresh(struct agent_link *l)
{
	struct shm_hdr *w = (struct shm_hdr *)l->want;
	struct shm_range v[SHM_FP_RANGES];
	uint32_t n;

	l->fp.read_ns = clock_ns(CLOCK_MONOTONIC);
	l->fp.stale = 0;
	/* the one cache of the maps: a change of code seen here is acted on
	 * like any other (target_on_change); no target, no maps */
	if (!l->p.target || target_maps_reload(l->p.target) < 0 || !target_maps(l->p.target))
		return;
	n = fp_ranges(target_maps(l->p.target), v);
	if (n == w->fp_n && !memcmp(v, w->fp, n * sizeof(*v)))
		return;
	w->fp_n = 0;
	l->shm->fp_n = 0;
	shm_barrier();
	memcpy(w->fp, v, sizeof(v));
	memcpy((void *)l->shm->fp, v, sizeof(v));
	shm_barrier();
	w->fp_n = n;
	l->shm->fp_n = n;
	shm_barrier();
	l->shm->walk_gen++;	/* walks the agent kept took the old ranges */
	l->fp.n = n;
}

/* A walk missed at ip: if it is no frame-pointer code we know of, look at
 * the maps again soon (new JIT code), at most every FP_REFRESH_NS. */
void fpranges_missed(struct agent_link *l, uint64_t ip)
{
	struct walk_fp fp = { l->want->fp, l->want->fp_n };

	if (!walk_fp_has(&fp, ip))
		l->fp.stale = 1;
}

void fpranges_after_drain(struct agent_link *l)
{
	if (l->fp.stale && !l->hostile &&
	    clock_ns(CLOCK_MONOTONIC) - l->fp.read_ns >= FP_REFRESH_NS)
		fpranges_refresh(l);
}
