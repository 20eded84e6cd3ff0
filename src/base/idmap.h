/* A hash map from a key of three u64 to a nonzero id, shared by the tool's interning tables. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_IDMAP_H
#define HEAPATTACH_IDMAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/xmalloc.h"

/* Open addressing, grows at 50%; zero-initialised is empty. */
struct idmap {
	struct idmap_ent {
		uint64_t k[3];
		uint64_t id;    /* 0: empty */
	} *e;
	size_t n, cap;
};

static inline uint64_t idmap_hash(const uint64_t k[3])
{
	return mix64(k[0] ^ mix64(k[1] ^ mix64(k[2])));
}

/* The slot holding k, or the empty slot where k would go. */
static inline struct idmap_ent *idmap_slot(struct idmap_ent *e, size_t cap, const uint64_t k[3])
{
	size_t mask = cap - 1, i = idmap_hash(k) & mask;

	while (e[i].id && memcmp(e[i].k, k, sizeof(e[i].k)))
		i = (i + 1) & mask;
	return &e[i];
}

/* The id stored for k, or 0. */
static inline uint64_t idmap_get(const struct idmap *m, const uint64_t k[3])
{
	return m->cap ? idmap_slot(m->e, m->cap, k)->id : 0;
}

static inline void idmap_put(struct idmap *m, const uint64_t k[3], uint64_t id)
{
	struct idmap_ent *s;

	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct idmap_ent *e = xcalloc(cap, sizeof(*e));

		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].id)
				*idmap_slot(e, cap, m->e[i].k) = m->e[i];
		free(m->e);
		m->e = e;
		m->cap = cap;
	}
	s = idmap_slot(m->e, m->cap, k);
	if (!s->id)
		m->n++;
	memcpy(s->k, k, sizeof(s->k));
	s->id = id;
}

/* Empty m and free its memory. */
static inline void idmap_clear(struct idmap *m)
{
	free(m->e);
	m->e = NULL;
	m->n = m->cap = 0;
}

#endif
