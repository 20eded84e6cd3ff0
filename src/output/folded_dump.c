/* The folded-stack dump writer (--format folded): live bytes per stack, frames named by the symbolizer. */
/* SPDX-License-Identifier: MIT */

/*
 * A profile has one bucket per (stack, size); a folded file wants one line
 * per stack. Each bucket's line is built in memory, the lines are sorted,
 * and equal stacks are written once with their bytes added up.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/xmalloc.h"
#include "output/dump.h"
#include "output/folded.h"
#include "profile/profile.h"

#define HEX_NAME 20

struct fline {
	char *stack;            /* "root;...;leaf" (folded_line without the value) */
	uint64_t bytes;
};

struct fw {
	const struct dump_info *d;
	struct fline *l;
	size_t n, cap;
};

/* profile_foreach callback: the stack of each bucket holding live bytes. */
static int put_bucket(const struct profile_bucket *b, void *arg)
{
	struct fw *w = arg;
	const char *names[PROFILE_MAX_FRAMES];
	char hex[PROFILE_MAX_FRAMES][HEX_NAME];
	size_t n = b->npcs < PROFILE_MAX_FRAMES ? b->npcs : PROFILE_MAX_FRAMES, len;
	int64_t count, bytes;
	char *buf = NULL;
	FILE *m;

	profile_scale(b->inuse_count, b->inuse_bytes, b->rate, &count, &bytes);
	if (bytes <= 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct sym_info si;
		uint64_t addr = b->pcs[i] - 1;	/* inside the call, as pprof's Location */

		if (profile_mark_name(b->pcs[i])) {
			names[i] = profile_mark_name(b->pcs[i]);
			continue;
		}
		if (w->d->sym && !symbolizer_lookup(w->d->sym, addr, &si) && si.function) {
			names[i] = si.function;
			continue;
		}
		snprintf(hex[i], HEX_NAME, "0x%" PRIx64, addr);
		names[i] = hex[i];
	}
	m = open_memstream(&buf, &len);
	if (!m)
		return -ENOMEM;
	folded_line(m, names, n, 0);
	if (fclose(m)) {
		free(buf);
		return -ENOMEM;
	}
	buf[len > 3 ? len - 3 : 0] = 0;	/* drop " 0\n" */
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 256;
		w->l = xrealloc(w->l, w->cap * sizeof(*w->l));
	}
	w->l[w->n++] = (struct fline){ .stack = buf, .bytes = (uint64_t)bytes };
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->stack, ((const struct fline *)b)->stack);
}

int folded_write(FILE *f, const struct profile *p, const struct dump_info *d)
{
	struct fw w = { .d = d };
	int rc = profile_foreach(p, put_bucket, &w);

	if (!rc) {
		if (w.n)
			qsort(w.l, w.n, sizeof(*w.l), cmp_line);
		for (size_t i = 0; i < w.n; i++) {
			uint64_t sum = w.l[i].bytes;

			while (i + 1 < w.n && !strcmp(w.l[i].stack, w.l[i + 1].stack))
				sum += w.l[++i].bytes;
			fprintf(f, "%s %" PRIu64 "\n", w.l[i].stack, sum);
		}
		rc = ferror(f) ? -EIO : 0;
	}
	for (size_t i = 0; i < w.n; i++)
		free(w.l[i].stack);
	free(w.l);
	return rc;
}
