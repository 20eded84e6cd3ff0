/* The folded-stack dump writer (--format folded): live bytes per stack, frames named by the symbolizer. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "dump.h"
#include "folded.h"
#include "profile.h"

#define HEX_NAME 20

struct fw {
	FILE *f;
	const struct dump_info *d;
	uint64_t rate;
};

/* profile_foreach callback: one line per bucket holding live bytes. */
static int put_bucket(const struct profile_bucket *b, void *arg)
{
	struct fw *w = arg;
	const char *names[PROFILE_MAX_FRAMES];
	char hex[PROFILE_MAX_FRAMES][HEX_NAME];
	size_t n = b->npcs < PROFILE_MAX_FRAMES ? b->npcs : PROFILE_MAX_FRAMES;
	int64_t count, bytes;

	profile_scale(b->inuse_count, b->inuse_bytes, w->rate, &count, &bytes);
	if (bytes <= 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct sym_info si;
		uint64_t addr = b->pcs[i] - 1;	/* inside the call, as pprof's Location */

		if (w->d->sym && !symbolizer_lookup(w->d->sym, addr, &si) && si.function) {
			names[i] = si.function;
			continue;
		}
		snprintf(hex[i], HEX_NAME, "0x%" PRIx64, addr);
		names[i] = hex[i];
	}
	folded_line(w->f, names, n, (uint64_t)bytes);
	return ferror(w->f) ? -EIO : 0;
}

int folded_write(FILE *f, const struct profile *p, const struct dump_info *d)
{
	struct fw w = { .f = f, .d = d, .rate = profile_rate(p) };

	return profile_foreach(p, put_bucket, &w);
}
