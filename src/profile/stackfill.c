/* Stacks cut short by the stack copy, shown as the one full stack seen that continues them. */
/* SPDX-License-Identifier: MIT */

/*
 * The first time the fast mode meets a path, the agent has no frame rules
 * for it and sends a copy of SHM_STACK_COPY bytes of its stack, which the
 * tool walks; when the frames up to the root take more than that, the walk
 * runs out of copy and the stack ends in PROFILE_PC_TRUNCATED. Later calls
 * on the path are walked whole, so one site would show as two stacks.
 *
 * A cut stack T (at least one frame, then the mark) is shown as F when F is
 * the only stack of the profile that is not cut short, holds all of T's
 * frames as its first ones and has at least one more: F is a stack the
 * tool walked in full, no frame is made up. None, or more than one (the
 * path was taken from two callers): T stays as it is. A stack cut at
 * --max-depth has no such F (no walk goes deeper), so it stays cut.
 *
 * Every stack's prefix of each length some cut stack has is hashed on one
 * pass over the frames; a cut stack's frames are compared in full before
 * they count as agreeing.
 */
#include <stdlib.h>
#include <string.h>
#include "base/hash.h"
#include "base/xmalloc.h"
#include "profile/profile.h"

#define NONE UINT32_MAX		/* no full stack yet */
#define MANY (UINT32_MAX - 1)	/* more than one */

struct cut {
	uint64_t key;		/* prefix_key of its frames; 0: empty slot */
	uint32_t id;		/* the cut stack */
	uint32_t fill;		/* its completion: a stack id, NONE or MANY */
};

struct cuts {
	struct cut *slot;
	size_t mask;
	uint8_t *lens;		/* lens[k]: some cut stack has k frames before its mark */
};

static uint64_t prefix_step(uint64_t h, uint64_t pc)
{
	return (h ^ pc) * 0x100000001b3ULL + (h >> 29);
}

/* The table key of a prefix of n frames whose running hash is h (never 0). */
static uint64_t prefix_key(uint64_t h, size_t n)
{
	uint64_t k = mix64(h ^ ((uint64_t)n << 48));

	return k ? k : 1;
}

static int is_mark(uint64_t pc)
{
	return profile_mark_name(pc) != NULL;
}

/* Whether stack pcs[0..n) is cut short with at least one frame before its mark. */
static int is_cut(const uint64_t *pcs, size_t n)
{
	return n >= 2 && pcs[n - 1] == PROFILE_PC_TRUNCATED;
}

/* Enter every cut stack of p into c; the number entered. */
static size_t cuts_build(struct cuts *c, const struct profile *p)
{
	size_t ns = profile_nstacks(p), count = 0, cap = 16;

	for (uint32_t id = 0; id < ns; id++) {
		size_t n;
		const uint64_t *pcs = profile_stack_pcs(p, id, &n);

		count += is_cut(pcs, n);
	}
	if (!count)
		return 0;
	while (cap < 2 * count)
		cap *= 2;
	c->slot = xcalloc(cap, sizeof(*c->slot));
	c->mask = cap - 1;
	c->lens = xcalloc(PROFILE_MAX_FRAMES + 1, 1);
	for (uint32_t id = 0; id < ns; id++) {
		size_t n;
		const uint64_t *pcs = profile_stack_pcs(p, id, &n);
		uint64_t h = 0, key;
		size_t i;

		if (!is_cut(pcs, n))
			continue;
		for (size_t k = 0; k + 1 < n; k++)
			h = prefix_step(h, pcs[k]);
		key = prefix_key(h, n - 1);
		for (i = key & c->mask; c->slot[i].key; i = (i + 1) & c->mask)
			;
		c->slot[i] = (struct cut){ key, id, NONE };
		c->lens[n - 1] = 1;
	}
	return count;
}

/* Offer full stack id (pcs[0..n)) to the cut stack whose frames are
 * pcs[0..k), if there is one. */
static void cuts_offer(struct cuts *c, const struct profile *p, uint64_t key, size_t k,
		       const uint64_t *pcs, uint32_t id)
{
	for (size_t i = key & c->mask; c->slot[i].key; i = (i + 1) & c->mask) {
		struct cut *e = &c->slot[i];
		const uint64_t *t;
		size_t tn;

		if (e->key != key)
			continue;
		t = profile_stack_pcs(p, e->id, &tn);
		if (tn != k + 1 || memcmp(t, pcs, k * sizeof(*pcs)))
			continue;
		e->fill = e->fill == NONE || e->fill == id ? id : MANY;
		return;
	}
}

uint32_t *profile_completions(const struct profile *p)
{
	size_t ns = profile_nstacks(p), filled = 0;
	struct cuts c = { 0 };
	uint32_t *map;

	if (!cuts_build(&c, p))
		return NULL;
	for (uint32_t id = 0; id < ns; id++) {
		size_t n;
		const uint64_t *pcs = profile_stack_pcs(p, id, &n);
		uint64_t h = 0;

		if (!n || pcs[n - 1] == PROFILE_PC_TRUNCATED)
			continue;
		/* prefixes of k frames followed by a frame of F's own */
		for (size_t k = 1; k < n && !is_mark(pcs[k]); k++) {
			h = prefix_step(h, pcs[k - 1]);
			if (c.lens[k])
				cuts_offer(&c, p, prefix_key(h, k), k, pcs, id);
		}
	}
	map = xmalloc(ns * sizeof(*map));
	for (uint32_t id = 0; id < ns; id++)
		map[id] = id;
	for (size_t i = 0; i <= c.mask; i++) {
		const struct cut *e = &c.slot[i];

		if (e->key && e->fill != NONE && e->fill != MANY) {
			map[e->id] = e->fill;
			filled++;
		}
	}
	free(c.slot);
	free(c.lens);
	if (!filled) {
		free(map);
		return NULL;
	}
	return map;
}
