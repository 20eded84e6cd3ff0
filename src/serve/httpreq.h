/* An HTTP/1.x request head parser: a pure function over the bytes received so far. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_HTTPREQ_H
#define HEAPATTACH_HTTPREQ_H

#include <stddef.h>

#define HTTPREQ_MAX_HEAD   8192	/* request line and headers, the empty line included */
#define HTTPREQ_MAX_TARGET 2048	/* the request target (path and query) */
#define HTTPREQ_MAX_METHOD 16

enum httpreq_method { HTTPREQ_GET = 1, HTTPREQ_OTHER };

/* A request head as parsed: the target split at its '?'. */
struct httpreq {
	enum httpreq_method method;
	int minor;                      /* HTTP/1.minor: 0 or 1 */
	size_t head_len;                /* bytes of the head, its last empty line included */
	char path[HTTPREQ_MAX_TARGET + 1];
	char query[HTTPREQ_MAX_TARGET + 1];	/* "" when there is none */
};

/*
 * Parse the first len bytes a client sent. Return codes: 1 - a whole head
 * (out filled); 0 - not yet (more bytes may complete it); other - the HTTP
 * status that refuses it: 400 malformed, 414 target too long, 431 head too
 * long (HTTPREQ_MAX_HEAD), 505 another HTTP version. Never reads beyond
 * buf[len - 1]; any bytes are allowed in.
 */
int httpreq_parse(const char *buf, size_t len, struct httpreq *out);

/* The value of key in a query ("a=1&b=2"), raw (no %-decoding), into v
 * (cut to vlen - 1 bytes): 0, or -ENOENT. */
int httpreq_query(const char *query, const char *key, char *v, size_t vlen);

#endif
