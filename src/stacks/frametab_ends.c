/* Frame-rule table: where walks end, by the tool's word (frametab_set_end) or for want of a way on (the unwalkable set). */
/* SPDX-License-Identifier: MIT */
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>

#include "base/clock.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/frametab.h"
#include "stacks/frametab_priv.h"

#define FT_UNWALK_PROBES 16
#define FT_JUNK_GAP_NS 1000000ULL	/* maps read for a return address at most this often */

int frametab_set_end(struct frametab *ft, uint64_t ip)
{
	struct shm_frame end = { .base = SHM_BASE_END }, *slot, hop;
	int ret;

	if (!ip)
		return -ENOENT;
	ret = ft_probe(ft, ip, &slot);
	if (ret < 0)
		return ret;
	if (ret == 1 && (slot->base == SHM_BASE_END || slot->base == SHM_BASE_CGO))
		return 0;	/* an end, or a hop only the agent can take */
	if (!ft_go_hop(ft, ip, &hop)) {
		/* a copy's walk ends in asmcgocall: the agent hops there */
		if (ret == 0)
			ft->st.learned++;
		ft_publish(ft, slot, ip, &hop);
		return 0;
	}
	if (ret == 0)
		ft->st.learned++;
	ft_publish(ft, slot, ip, &end);	/* one 8-byte store: old or new rule, both valid */
	return 1;
}

/* The slot of ip in the unwalkable set: ip's own (returns 1), the first
 * free one (0), or -ENOSPC. */
static int unwalk_slot(const struct frametab *ft, uint64_t ip, size_t *at)
{
	uint32_t h = (uint32_t)((ip * SHM_HASH_MUL) >> 54);

	for (unsigned i = 0; i < FT_UNWALK_PROBES; i++) {
		size_t k = (h + i) & (FT_UNWALK_SIZE - 1);

		if (ft->unwalk[k] == ip || !ft->unwalk[k]) {
			*at = k;
			return ft->unwalk[k] == ip;
		}
	}
	return -ENOSPC;
}

size_t frametab_code_prefix(struct frametab *ft, const uint64_t *pcs, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		const struct proc_map *m;
		int ret = target_find(ft->t, pcs[i] - 1, &m);

		if (ret == -EAGAIN) {
			/* maps up to TARGET_MAPS_GAP_NS old: code mapped since? */
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			if (now - ft->junk_ns >= FT_JUNK_GAP_NS) {
				ft->junk_ns = now;
				target_maps_expire(ft->t);
				ret = target_find(ft->t, pcs[i] - 1, &m);
			}
		}
		if (ret || !(m->prot & PROC_MAP_X))
			return i;
	}
	return n;
}

int frametab_unwalkable(const struct frametab *ft, uint64_t ip)
{
	size_t at;

	return ft->nunwalk && ip && unwalk_slot(ft, ip, &at) == 1;
}

int frametab_set_unwalkable(struct frametab *ft, uint64_t ip)
{
	const struct shm_frame *end;
	Dwarf_Frame *fr = NULL;
	struct ft_obj *o;
	uint64_t bias;
	size_t at;
	int ret;

	if (!ip)
		return -ENOENT;
	ret = unwalk_slot(ft, ip, &at);
	if (ret)
		return ret < 0 ? ret : 1;
	end = frametab_lookup(ft->table, ip);
	if (end && (end->base == SHM_BASE_END || end->base == SHM_BASE_CGO))
		return 0;	/* an end already: a root (its CFI's, or frametab_set_end's), or a hop */
	if (!ft_take_token(ft))
		return -EAGAIN;
	ret = ft_resolve(ft, ip - 1, &o, &bias);
	if (ret == -EAGAIN)
		return ret;
	if (!ret && !ft_find_frame(o, ip - 1 - bias, &fr)) {
		free(fr);
		return 0;	/* its CFI says how to go on: not ours to overrule */
	}
	ret = frametab_set_end(ft, ip);
	if (ret <= 0)
		return ret;	/* 0: a hop (Go's asmcgocall) */
	ft->unwalk[at] = ip;
	ft->nunwalk++;
	ft->st.unwalkable++;
	return 1;
}

