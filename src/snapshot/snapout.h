/* A snapshot's results: the profile (a sample per block, its stack type <- owner chain <- root) and the summary people read. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPOUT_H
#define HEAPATTACH_SNAPOUT_H

#include "snapshot/glibcblocks.h"
#include "snapshot/heapgraph.h"
#include "snapshot/names.h"
#include "snapshot/snapshot.h"

struct allocsites;
struct target;

/* Count st's totals from g, print the summary on stderr and write the
 * profile to cfg's output; blocks with a stack in as (NULL: none) get it
 * under their type: 0 or -errno (said). */
int snapout_write(const struct snapshot_config *cfg, const struct heapgraph *g,
		  struct snapnames *names, struct allocsites *as, struct target *t,
		  const struct glibcblocks_stats *bs, struct snapshot_stats *st);

#endif
