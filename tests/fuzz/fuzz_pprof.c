/* libFuzzer target: the report's pprof reader (report_pprof.c) on arbitrary bytes, raw and gzipped. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "report/report_pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a decoded profile promises: every frame a C string, every sample as
 * many values as types, every comment and type name a string. */
static void check(const struct rprof *p)
{
	volatile size_t sink = 0;

	for (size_t i = 0; i < p->ntypes; i++)
		sink += strlen(p->type[i]) + strlen(p->unit[i]);
	for (size_t i = 0; i < p->ncomments; i++)
		sink += strlen(p->comments[i]);
	for (size_t i = 0; i < p->nsamples; i++) {
		for (size_t k = 0; k < p->samples[i].nframes; k++)
			sink += strlen(p->samples[i].frames[k]);
		for (size_t k = 0; k < p->ntypes; k++)
			sink += (size_t)p->samples[i].values[k];
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rprof p;
	uLongf zlen = compressBound(size) + 32;
	uint8_t *z;

	if (!rprof_parse(data, size, &p))
		check(&p);
	rprof_free(&p);
	/* the same bytes as the payload of a gzip stream: the protobuf decoder
	 * behind a valid inflate */
	z = malloc(zlen);
	if (z) {
		z_stream s = { 0 };

		if (deflateInit2(&s, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
			s.next_in = (Bytef *)data;
			s.avail_in = (uInt)size;
			s.next_out = z;
			s.avail_out = (uInt)zlen;
			if (deflate(&s, Z_FINISH) == Z_STREAM_END && !rprof_parse(z, s.total_out, &p))
				check(&p);
			rprof_free(&p);
			deflateEnd(&s);
		}
		free(z);
	}
	return 0;
}
