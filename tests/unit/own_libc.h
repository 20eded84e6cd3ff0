/* For tests that read this process's own glibc: the mapping of its libc's text. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TEST_OWN_LIBC_H
#define HEAPATTACH_TEST_OWN_LIBC_H

#include <string.h>
#include "model/target.h"

static inline const struct proc_map *libc_map(struct target *t)
{
	const struct proc_maps *maps = target_maps(t);

	for (size_t i = 0; maps && i < maps->n; i++)
		if (maps->v[i].path && strstr(maps->v[i].path, "/libc.so") &&
		    (maps->v[i].prot & PROC_MAP_X))
			return &maps->v[i];
	return NULL;
}

#endif
