/* Heap profile model: the stack table (each distinct call stack once) and the set of distinct return addresses. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "base/hash.h"
#include "base/xmalloc.h"
#include "profile/profile.h"
#include "profile/profile_priv.h"

/* A stack index of cap slots, all EMPTY_IDX. */
uint32_t *profile_new_index(size_t cap)
{
	uint32_t *v = xmalloc(cap * sizeof(*v));

	memset(v, 0xff, cap * sizeof(*v));
	return v;
}

/* ---- stack table ---- */

/* Make the stack index anew with cap slots. */
static void stack_index_build(struct profile *p, size_t cap)
{
	size_t mask = cap - 1;
	uint32_t *v = profile_new_index(cap);

	for (size_t id = 0; id < p->nstacks; id++) {
		size_t i = p->stacks[id].hash & mask;

		while (v[i] != EMPTY_IDX)
			i = (i + 1) & mask;
		v[i] = id;
	}
	free(p->stack_idx);
	p->stack_idx = v;
	p->stack_idx_cap = cap;
}

static void stack_index_grow(struct profile *p)
{
	stack_index_build(p, p->stack_idx_cap * 2);
}

/* ---- distinct return addresses ---- */

/* The slot of pc (not 0) in the set, or the empty slot where it would go. */
static size_t loc_find(const struct profile *p, uint64_t pc)
{
	size_t mask = p->locs_cap - 1, i = mix64(pc) & mask;

	while (p->locs[i] && p->locs[i] != pc)
		i = (i + 1) & mask;
	return i;
}

static int loc_known(const struct profile *p, uint64_t pc)
{
	return pc ? p->locs[loc_find(p, pc)] != 0 : p->loc_zero;
}

static void loc_add(struct profile *p, uint64_t pc)
{
	size_t i;

	if (!pc) {
		p->nlocs += !p->loc_zero;
		p->loc_zero = 1;
		return;
	}
	i = loc_find(p, pc);
	if (p->locs[i])
		return;
	p->locs[i] = pc;
	if (++p->nlocs * 2 > p->locs_cap) {
		uint64_t *old = p->locs;
		size_t old_cap = p->locs_cap;

		p->locs_cap *= 2;
		p->locs = xcalloc(p->locs_cap, sizeof(*p->locs));
		for (size_t k = 0; k < old_cap; k++)
			if (old[k])
				p->locs[loc_find(p, old[k])] = old[k];
		free(old);
	}
}

/* Whether a new stack pcs[0..n) stays within the caps on stacks, frames
 * and distinct return addresses. */
static int stack_fits(const struct profile *p, const uint64_t *pcs, size_t n)
{
	size_t fresh = 0;

	if (p->nstacks >= p->max_stacks || p->npcs + n > p->max_pcs)
		return 0;
	for (size_t i = 0; i < n; i++)
		fresh += !loc_known(p, pcs[i]);
	return p->nlocs + fresh <= PROFILE_MAX_LOCS;
}

static uint32_t stack_intern(struct profile *p, const uint64_t *pcs, size_t n);

/* The empty stack, where what the caps turn away goes. */
uint32_t profile_overflow_stack(struct profile *p)
{
	if (p->overflow == EMPTY_IDX) {
		size_t max = p->max_stacks;

		p->max_stacks = SIZE_MAX;	/* this one goes in */
		p->overflow = stack_intern(p, NULL, 0);
		p->max_stacks = max;
	}
	return p->overflow;
}

/* Id of the stack pcs[0..n), added to the table if new (the empty stack's
 * if the caps leave no room for it). */
static uint32_t stack_intern(struct profile *p, const uint64_t *pcs, size_t n)
{
	uint64_t h = hash_pcs(pcs, n);
	size_t mask = p->stack_idx_cap - 1, i = h & mask;
	struct stack *s;

	for (; p->stack_idx[i] != EMPTY_IDX; i = (i + 1) & mask) {
		s = &p->stacks[p->stack_idx[i]];
		if (s->hash == h && s->n == n &&
		    (!n || !memcmp(p->pcs + s->off, pcs, n * sizeof(*pcs))))
			return p->stack_idx[i];
	}
	if (!stack_fits(p, pcs, n)) {
		p->caps_hit |= PROFILE_CAP_STACKS;
		return profile_overflow_stack(p);
	}
	for (size_t k = 0; k < n; k++)
		loc_add(p, pcs[k]);
	if (p->nstacks == p->stacks_cap) {
		p->stacks_cap *= 2;
		p->stacks = xrealloc(p->stacks, p->stacks_cap * sizeof(*p->stacks));
	}
	while (p->npcs + n > p->pcs_cap) {
		p->pcs_cap *= 2;
		p->pcs = xrealloc(p->pcs, p->pcs_cap * sizeof(*p->pcs));
	}
	s = &p->stacks[p->nstacks];
	s->hash = h;
	s->off = p->npcs;
	s->n = n;
	if (n)
		memcpy(p->pcs + p->npcs, pcs, n * sizeof(*pcs));
	p->npcs += n;
	p->stack_idx[i] = p->nstacks;
	if (++p->nstacks * 10 > p->stack_idx_cap * 7)
		stack_index_grow(p);
	return p->nstacks - 1;
}

uint32_t profile_stack_id(struct profile *p, const uint64_t *pcs, size_t npcs)
{
	uint64_t cut[PROFILE_MAX_FRAMES];

	if (npcs <= PROFILE_MAX_FRAMES)
		return stack_intern(p, pcs, npcs);
	memcpy(cut, pcs, (PROFILE_MAX_FRAMES - 1) * sizeof(*cut));
	cut[PROFILE_MAX_FRAMES - 1] = PROFILE_PC_TRUNCATED;
	return stack_intern(p, cut, PROFILE_MAX_FRAMES);
}

size_t profile_map_pcs(struct profile *p, uint64_t (*fn)(void *arg, uint64_t pc), void *arg)
{
	size_t changed = 0;

	for (size_t id = 0; id < p->nstacks; id++) {
		struct stack *s = &p->stacks[id];
		uint64_t *pcs = p->pcs + s->off;
		int any = 0;

		for (uint32_t i = 0; i < s->n; i++) {
			uint64_t v = fn(arg, pcs[i]);

			if (v != pcs[i]) {
				pcs[i] = v;
				loc_add(p, v);
				any = 1;
			}
		}
		if (any) {
			s->hash = hash_pcs(pcs, s->n);
			changed++;
		}
	}
	if (changed)
		stack_index_build(p, p->stack_idx_cap);
	return changed;
}

size_t profile_nstacks(const struct profile *p)
{
	return p->nstacks;
}

const uint64_t *profile_stack_pcs(const struct profile *p, uint32_t id, size_t *n)
{
	if (id >= p->nstacks) {
		*n = 0;
		return NULL;
	}
	*n = p->stacks[id].n;
	return p->pcs + p->stacks[id].off;
}

