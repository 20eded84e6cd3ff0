/* Folded stack lines: the one format flamegraph.pl, inferno and speedscope all import. */
/* SPDX-License-Identifier: MIT */
#include "output/folded.h"

static void put_name(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		fputc(c == ';' ? ':' : c < 0x20 || c == 0x7f ? ' ' : c, f);
	}
}

void folded_line(FILE *f, const char *const *frames, size_t n, uint64_t value)
{
	if (!n)
		fputs("[no stack]", f);
	for (size_t i = n; i-- > 0;) {
		put_name(f, *frames[i] ? frames[i] : "?");
		if (i)
			fputc(';', f);
	}
	fprintf(f, " %llu\n", (unsigned long long)value);
}
