/* libFuzzer target: the HTTP request head parser (httpreq.c) on arbitrary bytes, whole and cut where it said the head ends. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "serve/httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: ASan sees any read past them */
	char *buf = malloc(size ? size : 1);
	struct httpreq rq, again;
	char v[16];
	int rc;

	memcpy(buf, data, size);
	rc = httpreq_parse(buf, size, &rq);
	switch (rc) {
	case 0:
		if (size >= HTTPREQ_MAX_HEAD)
			abort();	/* a head that long is refused, never waited for */
		break;
	case 1:
		if (rq.head_len > size || rq.head_len > HTTPREQ_MAX_HEAD || rq.path[0] != '/' ||
		    strlen(rq.path) + strlen(rq.query) >= HTTPREQ_MAX_TARGET + 1 ||
		    (rq.method != HTTPREQ_GET && rq.method != HTTPREQ_OTHER) || rq.minor > 1)
			abort();
		/* the head alone parses the same */
		if (httpreq_parse(buf, rq.head_len, &again) != 1 || again.head_len != rq.head_len ||
		    strcmp(again.path, rq.path) || strcmp(again.query, rq.query))
			abort();
		httpreq_query(rq.query, "seconds", v, sizeof(v));
		if (strlen(v) >= sizeof(v))
			abort();
		break;
	case 400: case 414: case 431: case 505:
		break;
	default:
		abort();
	}
	free(buf);
	return 0;
}
