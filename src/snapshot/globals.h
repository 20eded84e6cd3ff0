/* Where a global variable is declared (file:line from DWARF), to name the roots that hold memory. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPGLOBALS_H
#define HEAPATTACH_SNAPGLOBALS_H

#include <stddef.h>
#include <stdint.h>

struct elfobj;
struct snapglobals;

/* The variables of e's DWARF with a static address, read once (NULL when
 * it has none); e must outlive it. */
struct snapglobals *snapglobals_new(struct elfobj *e);
void snapglobals_free(struct snapglobals *g);
/* The declaration of the variable at link-time address vaddr: "file.c:41"
 * into buf (the file's base name). 0, or -ENOENT. */
int snapglobals_decl(const struct snapglobals *g, uint64_t vaddr, char *buf, size_t len);

#endif
