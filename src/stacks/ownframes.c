/* Frames of heapattach's own code in the target: each fast trampoline by its layout, the agent by its CFI. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_cfi.h"
#include "base/xmalloc.h"
#include "stacks/ownframes.h"

struct own_tramp {
	uint64_t at;
	struct tramp_layout lay;
	struct reloc_result reloc;
};

struct ownframes {
	uint64_t agent_lo, agent_hi;
	uint64_t lo, hi;		/* all of it: a quick no */
	struct own_tramp *t;
	size_t n, cap;
};

struct ownframes *ownframes_new(void)
{
	struct ownframes *o = xcalloc(1, sizeof(*o));

	o->lo = UINT64_MAX;
	return o;
}

void ownframes_free(struct ownframes *o)
{
	if (!o)
		return;
	free(o->t);
	free(o);
}

static void widen(struct ownframes *o, uint64_t lo, uint64_t hi)
{
	if (lo < o->lo)
		o->lo = lo;
	if (hi > o->hi)
		o->hi = hi;
}

void ownframes_set_agent(struct ownframes *o, uint64_t lo, uint64_t hi)
{
	o->agent_lo = lo;
	o->agent_hi = hi;
	widen(o, lo, hi);
}

void ownframes_add_tramp(struct ownframes *o, uint64_t at, const struct tramp_layout *lay,
			 const struct reloc_result *r)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 16;
		o->t = xrealloc(o->t, o->cap * sizeof(*o->t));
	}
	o->t[o->n].at = at;
	o->t[o->n].lay = *lay;
	o->t[o->n].reloc = *r;
	o->n++;
	widen(o, at, at + lay->size);
}

/* The trampoline holding ip, or NULL. */
static const struct own_tramp *tramp_at(const struct ownframes *o, uint64_t ip)
{
	for (size_t i = 0; i < o->n; i++)
		if (ip >= o->t[i].at && ip - o->t[i].at < o->t[i].lay.size)
			return &o->t[i];
	return NULL;
}

int ownframes_has(const struct ownframes *o, uint64_t ip)
{
	if (!o || ip < o->lo || ip >= o->hi)
		return 0;
	return (ip >= o->agent_lo && ip < o->agent_hi) || tramp_at(o, ip);
}

int ownframes_rule(const struct ownframes *o, uint64_t ip, int exact, struct shm_frame *rule,
		   uint64_t *moved, uint64_t *entry)
{
	const struct own_tramp *t;

	*entry = 0;
	if (!o)
		return -ENOENT;
	if (ip >= o->agent_lo && ip < o->agent_hi) {
		/* a return address: the row of its call */
		if ((!exact && ip == o->agent_lo) ||
		    agent_cfi_rule(ip - o->agent_lo - !exact, rule))
			return -ENOENT;
		return OWNFRAMES_RULE;
	}
	t = tramp_at(o, ip);
	if (!t)
		return -ENOENT;
	*entry = t->reloc.from;
	/* a return address in a trampoline is that of a call whose frame
	 * ends where it began: the rule at ip holds for it too */
	switch (tramp_frame_rule(&t->lay, ip - t->at, rule)) {
	case TRAMP_FR_STACK:
		return OWNFRAMES_RULE;
	case TRAMP_FR_RELOC:
		return reloc_map_back(&t->reloc, ip, moved) ? -ENOENT : OWNFRAMES_MOVED;
	default:
		return -ENOENT;
	}
}
