/* --keep N: the newest N numbered profiles of the run stay, older ones this run wrote are removed. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SESSION_ROTATE_H
#define HEAPATTACH_SESSION_ROTATE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "output/dump.h"

/* One numbered profile this run wrote: its number and the file it was. */
struct rotate_entry {
	unsigned seq;
	dev_t dev;
	ino_t ino;
};

/*
 * The numbered profiles kept, oldest first: a ring of n entries from head,
 * grown by doubling up to keep entries (never more: its memory is bounded
 * by --keep, whatever the length of the run). All zero: nothing yet.
 */
struct rotate {
	struct rotate_entry *v;
	size_t cap, head, n;
};

/*
 * Numbered profile seq (output's name, dump_numbered_path) was written in
 * dd's directory as the file st: remember it, and remove the oldest ones
 * remembered until keep are left. keep 0: keep all, remember nothing.
 */
void rotate_wrote(struct rotate *r, unsigned keep, const struct dump_dir *dd,
		  const char *output, unsigned seq, const struct stat *st);
void rotate_free(struct rotate *r);

#endif
