/* --keep N: the newest N numbered profiles of the run stay, older ones this run wrote are removed. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/log.h"
#include "base/xmalloc.h"
#include "session/rotate.h"

/*
 * Remove numbered profile e, only if its name in dd's directory is still
 * the regular file written there: a name renamed away, or replaced (by a
 * symbolic link, another file), is left alone. unlinkat never follows a
 * link; between the fstatat and the unlinkat someone who may write the
 * directory could swap the name again, but then could remove it as well.
 */
static void remove_old(const struct dump_dir *dd, const char *output, const struct rotate_entry *e)
{
	char *path = dump_numbered_path(output, e->seq);
	const char *name = dump_base_name(path);
	struct stat st;

	if (fstatat(dd->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			pr_debug("--keep: not removing %s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode) || st.st_dev != e->dev || st.st_ino != e->ino) {
		pr_debug("--keep: not removing %s: no longer the file heapattach wrote", path);
	} else if (unlinkat(dd->fd, name, 0) < 0) {
		pr_warn("--keep: cannot remove %s: %s", path, strerror(errno));
	}
	free(path);
}

/* Room for one more entry (below keep): the ring doubles, oldest first again. */
static void grow(struct rotate *r, unsigned keep)
{
	size_t cap = r->cap ? r->cap * 2 : 8;
	struct rotate_entry *v;

	if (cap > keep)
		cap = keep;
	v = xcalloc(cap, sizeof(*v));
	for (size_t i = 0; i < r->n; i++)
		v[i] = r->v[(r->head + i) % r->cap];
	free(r->v);
	r->v = v;
	r->cap = cap;
	r->head = 0;
}

void rotate_wrote(struct rotate *r, unsigned keep, const struct dump_dir *dd,
		  const char *output, unsigned seq, const struct stat *st)
{
	struct rotate_entry *e;

	if (!keep)
		return;
	if (r->n == r->cap && r->cap < keep)
		grow(r, keep);
	if (r->n == r->cap) {	/* full at keep: the oldest goes, its slot is the newest's */
		remove_old(dd, output, &r->v[r->head]);
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	e = &r->v[(r->head + r->n++) % r->cap];
	*e = (struct rotate_entry){ .seq = seq, .dev = st->st_dev, .ino = st->st_ino };
}

void rotate_free(struct rotate *r)
{
	free(r->v);
	*r = (struct rotate){ 0 };
}
