/* Frame-rule table: compiles DWARF CFI (libdw) into the shared frames[] the agent walks with. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/xmalloc.h"
#include "model/target.h"
#include "stacks/frametab.h"
#include "stacks/frametab_priv.h"
#include "stacks/gocgo.h"

/*
 * The table is an open-addressing hash keyed by return address: the rule for
 * ip lives in one of the SHM_FRAME_PROBES slots from shm_frame_slot(ip) on,
 * at or before the first empty slot. Entries are never removed one by one,
 * only all together by frametab_reset(). The tool is the only writer; the
 * agent reads concurrently. A slot is published by storing its rule (one
 * 8-byte store: cfa_off, base, rbp_saved, rbp_off) and then, after a compiler
 * barrier, its ip; x86-64 keeps stores in order, so a reader that sees the ip
 * sees the rule. A reader that also re-reads ip after the rule never mixes a
 * rule with another slot occupant's ip.
 *
 * Rules come from the CFI row of the call instruction (ip - 1): the CFA must
 * be rsp + K or rbp + K, the return address must be saved at CFA - 8, and the
 * caller's rbp must be unchanged or saved at CFA + off. Anything else (CFA
 * expressions as in signal trampolines and PLT stubs, CFA from another
 * register as in stack-realigning functions) is left out: the agent falls
 * back to a stack copy for that frame.
 *
 * The maps and objects are the target's (target.h): per mapping we keep
 * the CFI of the object it maps and its load bias; the maps are re-read
 * when an ip falls outside all known mappings, and a change of the code
 * mappings resets the whole table (target_on_change). Ips that got -ENOENT are remembered in a
 * small direct-mapped cache until frametab_reset(), so a frame the agent
 * keeps missing on costs a hash probe, not a CFI search or a maps read.
 *
 * The ips come from the target, which can send as many made-up ones as it
 * likes: at most FT_RULES_PER_SEC CFI searches a second (a token bucket)
 * and a maps read at most every TARGET_MAPS_GAP_NS; beyond that learning
 * answers -EAGAIN (not remembered: the frame is learnt when it comes
 * again) and counts it (frametab_stats.throttled).
 */

/* ---- the shared table ---- */

const struct shm_frame *frametab_lookup(const struct shm_frame *table, uint64_t ip)
{
	uint32_t h = shm_frame_slot(ip);

	for (unsigned i = 0; i < SHM_FRAME_PROBES; i++) {
		const struct shm_frame *s = &table[(h + i) & (SHM_NFRAMES - 1)];
		uint64_t v = *(const volatile uint64_t *)&s->ip;

		if (v == ip)
			return s;
		if (v == 0)
			return NULL;
	}
	return NULL;
}

/* The table changed: a walk the agent kept may no longer be the walk (shm.h). */
static void bump_gen(struct frametab *ft)
{
	if (!ft->gen)
		return;
	shm_barrier();
	*ft->gen = *ft->gen + 1;
}

/* Publish rule r for ip in slot s: the rule word, a barrier, then ip
 * (then the generation). */
void ft_publish(struct frametab *ft, struct shm_frame *s, uint64_t ip,
		const struct shm_frame *r)
{
	uint64_t word;

	memcpy(&word, &r->cfa_off, sizeof(word));
	*(volatile ft_u64_alias *)&s->cfa_off = word;
	shm_barrier();
	*(volatile uint64_t *)&s->ip = ip;
	bump_gen(ft);
}

/* The negative-cache entry for key (ip * 2 + exact). */
static uint64_t *neg_slot(struct frametab *ft, uint64_t key)
{
	return &ft->neg[(uint32_t)((key * SHM_HASH_MUL) >> 52) & (FT_NEG_SIZE - 1)];
}

/*
 * The slot of ip within its probe window: *slot is ip's own slot (returns
 * 1) or the first free one (returns 0); -ENOSPC when the window is full.
 */
int ft_probe(struct frametab *ft, uint64_t ip, struct shm_frame **slot)
{
	uint32_t h = shm_frame_slot(ip);

	for (unsigned i = 0; i < SHM_FRAME_PROBES; i++) {
		struct shm_frame *s = &ft->table[(h + i) & (SHM_NFRAMES - 1)];
		uint64_t v = *(volatile uint64_t *)&s->ip;

		if (v == ip || v == 0) {
			*slot = s;
			return v == ip;
		}
	}
	ft->st.full++;
	return -ENOSPC;
}

/* One CFI search from the budget of FT_RULES_PER_SEC a second: 1 if
 * granted, 0 (counted as throttled) if spent. */
int ft_take_token(struct frametab *ft)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), add;

	add = (now - ft->tokens_ns) / (1000000000ULL / FT_RULES_PER_SEC);
	if (add) {
		ft->tokens = ft->tokens + add > FT_RULES_PER_SEC ? FT_RULES_PER_SEC :
			     ft->tokens + add;
		ft->tokens_ns = now;
	}
	if (!ft->tokens) {
		ft->st.throttled++;
		return 0;
	}
	ft->tokens--;
	return 1;
}

int frametab_learn_flags(struct frametab *ft, uint64_t ip, unsigned flags)
{
	uint64_t key = ip * 2 + !!(flags & FRAMETAB_IP_EXACT);
	struct shm_frame *slot, rule;
	int ret;

	if (!ip)
		return -ENOENT;
	if (ft->prime < 0)
		frametab_prime_go(ft);	/* the code changed since */
	ret = ft_probe(ft, ip, &slot);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		ft->st.present++;
		return 0;
	}
	if (*neg_slot(ft, key) == key) {
		ft->st.unrepresentable++;
		return -ENOENT;
	}
	if (!ft_take_token(ft))
		return -EAGAIN;
	ret = frametab_rule(ft, ip, flags, &rule);
	if (ret == -ENOENT) {
		/* no rule, or no code there even in freshly read maps: until a reset */
		*neg_slot(ft, key) = key;
		ft->st.unrepresentable++;
	}
	if (ret)
		return ret;
	ft_publish(ft, slot, ip, &rule);
	ft->st.learned++;
	return 1;
}

int frametab_prime_go(struct frametab *ft)
{
	const struct proc_maps *maps = target_maps(ft->t);
	uint64_t rets[GOCGO_RETURNS_MAX], *starts;
	size_t nx = 0;
	int added = 0;

	ft->prime = 1;
	if (!maps)
		return 0;
	/* the starts first: a resolve may read the maps again */
	starts = xcalloc(maps->n ? maps->n : 1, sizeof(*starts));
	for (size_t i = 0; i < maps->n; i++)
		if ((maps->v[i].prot & PROC_MAP_X) && maps->v[i].path && maps->v[i].path[0] == '/')
			starts[nx++] = maps->v[i].start;
	for (size_t i = 0; i < nx; i++) {
		struct ft_obj *o;
		uint64_t bias;
		size_t n;

		if (ft_resolve(ft, starts[i], &o, &bias) || o->go <= 0 || o->go_primed)
			continue;
		o->go_primed = 1;
		n = gocgo_returns(o->elf, &o->go_cgo, rets, GOCGO_RETURNS_MAX);
		for (size_t k = 0; k < n; k++)
			if (frametab_learn(ft, bias + rets[k]) == 1)
				added++;
	}
	free(starts);
	return added;
}

int frametab_learn_many(struct frametab *ft, const uint64_t *pcs, size_t n)
{
	int added = 0;

	for (size_t i = 0; i < n; i++)
		if (frametab_learn(ft, pcs[i]) == 1)
			added++;
	return added;
}

/* ---- lifetime ---- */

/* Clear the table (ips first: see the top of this file) and the caches. */
static void reset(struct frametab *ft)
{
	for (size_t i = 0; i < SHM_NFRAMES; i++)
		if (ft->table[i].ip)
			*(volatile uint64_t *)&ft->table[i].ip = 0;
	shm_barrier();
	for (size_t i = 0; i < SHM_NFRAMES; i++)
		*(volatile ft_u64_alias *)&ft->table[i].cfa_off = 0;
	bump_gen(ft);
	ft_drop_binds(ft);
	ft_drop_objects(ft);
	memset(ft->neg, 0, sizeof(ft->neg));
	memset(ft->unwalk, 0, sizeof(ft->unwalk));
	ft->nunwalk = 0;
	if (ft->prime)
		ft->prime = -1;	/* at the next learn: the maps are new */
}

/* target_on_change listener: the code changed, no old rule may stay. */
static void on_maps_change(void *arg, const struct proc_maps *old)
{
	(void)old;
	reset(arg);
}

struct frametab *frametab_new_target(struct target *t, struct shm_frame *table)
{
	struct frametab *ft;

	if (!t || !table) {
		errno = EINVAL;
		return NULL;
	}
	ft = xcalloc(1, sizeof(*ft));
	ft->t = t;
	ft->table = table;
	ft->tokens = FT_RULES_PER_SEC;
	ft->tokens_ns = clock_ns(CLOCK_MONOTONIC);
	if (target_on_change(t, TARGET_ON_FRAMES, on_maps_change, ft)) {
		free(ft);
		errno = ENOSPC;
		return NULL;
	}
	return ft;
}

void frametab_reset(struct frametab *ft)
{
	reset(ft);
	target_maps_expire(ft->t);	/* the maps changed: the next miss reads them */
}

void frametab_free(struct frametab *ft)
{
	if (!ft)
		return;
	target_off_change(ft->t, on_maps_change, ft);
	ft_drop_binds(ft);
	ft_drop_objects(ft);
	free(ft);
}

void frametab_set_gen(struct frametab *ft, volatile uint32_t *gen)
{
	ft->gen = gen;
}

void frametab_get_stats(const struct frametab *ft, struct frametab_stats *st)
{
	*st = ft->st;
}

