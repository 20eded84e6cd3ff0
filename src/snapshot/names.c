/* The snapshot's names (roots, types, owners), interned: each a small id, and a pseudo-PC the symbolizer names. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/names.h"
#include "stacks/symbolize.h"

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

/* Slots for twice the names, filled again. */
static void grow(struct snapnames *t)
{
	size_t ns = t->nslots ? 2 * t->nslots : 256;

	free(t->slot);
	t->slot = xcalloc(ns, sizeof(*t->slot));
	t->nslots = ns;
	for (size_t i = 0; i < t->n; i++) {
		size_t k = hash_str(t->v[i]) & (ns - 1);

		while (t->slot[k])
			k = (k + 1) & (ns - 1);
		t->slot[k] = (uint32_t)i + 1;
	}
}

uint32_t snapnames_id(struct snapnames *t, const char *name)
{
	char cut[SNAPNAME_LEN + 1];
	size_t k;

	if (strlen(name) > SNAPNAME_LEN) {
		memcpy(cut, name, SNAPNAME_LEN);
		cut[SNAPNAME_LEN] = 0;
		name = cut;
	}
	if (2 * (t->n + 1) > t->nslots)
		grow(t);
	for (k = hash_str(name) & (t->nslots - 1); t->slot[k]; k = (k + 1) & (t->nslots - 1))
		if (!strcmp(t->v[t->slot[k] - 1], name))
			return t->slot[k] - 1;
	if (t->n == SNAPNAMES_MAX)
		return (uint32_t)t->n - 1;
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n] = xstrdup(name);
	t->slot[k] = (uint32_t)t->n + 1;
	return (uint32_t)t->n++;
}

uint32_t snapnames_idf(struct snapnames *t, const char *fmt, ...)
{
	char buf[SNAPNAME_LEN + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return snapnames_id(t, buf);
}

const char *snapnames_name(const struct snapnames *t, uint32_t id)
{
	return id < t->n ? t->v[id] : "?";
}

void snapnames_free(struct snapnames *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* Names are at the even pseudo-PCs from SYMBOLIZE_SNAPSHOT_BASE + 16: a
 * frame's pc - 1, which the symbolizer looks up, stays inside its name's. */
uint64_t snapnames_pc(uint32_t id)
{
	return SYMBOLIZE_SNAPSHOT_BASE + 16 + 2 * (uint64_t)id + 1;
}

int snapnames_namer(const void *arg, uint64_t addr, struct sym_info *out)
{
	const struct snapnames *t = arg;
	uint64_t k;

	if (addr < SYMBOLIZE_SNAPSHOT_BASE + 16 || addr >= SYMBOLIZE_RETIRED_BASE)
		return -ENOENT;
	k = (addr - SYMBOLIZE_SNAPSHOT_BASE - 16) / 2;
	if (k >= t->n)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->function = t->v[k];
	out->addr = addr;
	return 0;
}
