/* The snapshot's names (roots, types, owners), interned: each a small id, and a pseudo-PC the symbolizer names. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPNAMES_H
#define HEAPATTACH_SNAPNAMES_H

#include <stddef.h>
#include <stdint.h>

struct sym_info;

struct snapnames {
	char **v;                       /* id -> name */
	size_t n, cap;
	uint32_t *slot;                 /* hash slots: id + 1, 0 empty */
	size_t nslots;
};

#define SNAPNAMES_MAX (1u << 24)        /* names at most; more share the last */
#define SNAPNAME_LEN 240                /* bytes of a name kept */

/* The id of name (added if new, cut at SNAPNAME_LEN). */
uint32_t snapnames_id(struct snapnames *t, const char *name);
/* The same from a printf format. */
uint32_t snapnames_idf(struct snapnames *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *snapnames_name(const struct snapnames *t, uint32_t id);
void snapnames_free(struct snapnames *t);
/* Name id as a frame of a profile: a pseudo-PC the namer below names. */
uint64_t snapnames_pc(uint32_t id);
/* symbolize_namer_fn over a struct snapnames. */
int snapnames_namer(const void *arg, uint64_t addr, struct sym_info *out);

#endif
