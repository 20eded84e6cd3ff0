/* Unit tests for httpreq.c: request heads whole, in pieces, malformed, oversized; query values. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "serve/httpreq.h"

static int parse(const char *s, struct httpreq *rq)
{
	return httpreq_parse(s, strlen(s), rq);
}

static void test_whole(void)
{
	static const char req[] = "GET /debug/pprof/heap?seconds=2&x HTTP/1.1\r\n"
				  "Host: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\n"
				  "Accept-Encoding: gzip\r\n\r\nleftover";
	struct httpreq rq;

	expect_int_eq(parse(req, &rq), 1);
	expect_int_eq(rq.method, HTTPREQ_GET);
	expect_int_eq(rq.minor, 1);
	expect_str_eq(rq.path, "/debug/pprof/heap");
	expect_str_eq(rq.query, "seconds=2&x");
	expect_int_eq(rq.head_len, strlen(req) - strlen("leftover"));
	expect_int_eq(parse("POST /metrics HTTP/1.0\n\n", &rq), 1);	/* bare LFs */
	expect_int_eq(rq.method, HTTPREQ_OTHER);
	expect_int_eq(rq.minor, 0);
	expect_str_eq(rq.path, "/metrics");
	expect_str_eq(rq.query, "");
	expect_int_eq(parse("GET /? HTTP/1.1\r\n\r\n", &rq), 1);
	expect_str_eq(rq.path, "/");
	expect_str_eq(rq.query, "");
	expect_int_eq(parse("GETX / HTTP/1.1\r\n\r\n", &rq), 1);
	expect_int_eq(rq.method, HTTPREQ_OTHER);
}

/* Every prefix of a good head is 0 (more to come), the whole one 1. */
static void test_prefixes(void)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nA: b\tc\r\n\r\n";
	struct httpreq rq;

	for (size_t i = 0; i < strlen(req); i++)
		expect_int_eq(httpreq_parse(req, i, &rq), 0);
	expect_int_eq(parse(req, &rq), 1);
}

static void test_bad(void)
{
	static const char *const bad[] = {
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",	/* a TLS hello, before its end */
		"GET\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET http://x/ HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1 \r\n\r\n", "GET / HTTX/1.1\r\n\r\n", "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
		"GET / HTTP/1.1\r\n folded: x\r\n\r\n", "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n: empty name\r\n\r\n", "GET / HTTP/1.11\r\n\r\n",
		"G\0T / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\rX\r\n\r\n",
		"GETTINGVERYLONGMETHOD / HTTP/1.1\r\n\r\n",
	};
	static const size_t lens[] = { 11, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 19, 0, 0 };
	struct httpreq rq;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = lens[i] ? lens[i] : strlen(bad[i]);
		int rc = httpreq_parse(bad[i], len, &rq);

		if (rc != 400)
			fprintf(stderr, "bad[%zu]: %d\n", i, rc);
		expect_int_eq(rc, 400);
	}
	expect_int_eq(parse("GET / HTTP/2.0\r\n\r\n", &rq), 505);
	expect_int_eq(parse("GET / HTTP/1", &rq), 0);	/* a beginning */
	expect_int_eq(parse("GET / HTTP/1.1\r\nHost: x\r", &rq), 0);
}

static void test_sizes(void)
{
	size_t n = HTTPREQ_MAX_HEAD + 100;
	char *b = malloc(n + 1);
	struct httpreq rq;

	/* a target too long: 414 as soon as it is seen, whole or not */
	memcpy(b, "GET /", 5);
	memset(b + 5, 'a', n - 5);
	expect_int_eq(httpreq_parse(b, 5 + HTTPREQ_MAX_TARGET, &rq), 414);
	expect_int_eq(httpreq_parse(b, 5 + HTTPREQ_MAX_TARGET - 2, &rq), 0);
	memcpy(b + 5 + HTTPREQ_MAX_TARGET, " HTTP/1.1\r\n\r\n", 13);
	expect_int_eq(httpreq_parse(b, 5 + HTTPREQ_MAX_TARGET + 13, &rq), 414);
	/* the longest target: taken */
	memcpy(b + 4 + HTTPREQ_MAX_TARGET, " HTTP/1.1\r\n\r\n", 13);
	expect_int_eq(httpreq_parse(b, 4 + HTTPREQ_MAX_TARGET + 13, &rq), 1);
	expect_int_eq(strlen(rq.path), HTTPREQ_MAX_TARGET);
	/* headers past the limit: 431, whether they end or not */
	n = (size_t)snprintf(b, 64, "GET / HTTP/1.1\r\nX: ");
	memset(b + n, 'v', HTTPREQ_MAX_HEAD + 100 - n);
	expect_int_eq(httpreq_parse(b, HTTPREQ_MAX_HEAD - 1, &rq), 0);
	expect_int_eq(httpreq_parse(b, HTTPREQ_MAX_HEAD, &rq), 431);
	memcpy(b + HTTPREQ_MAX_HEAD + 96, "\r\n\r\n", 4);
	expect_int_eq(httpreq_parse(b, HTTPREQ_MAX_HEAD + 100, &rq), 431);
	/* a head of exactly the limit: taken */
	memcpy(b + HTTPREQ_MAX_HEAD - 4, "\r\n\r\n", 4);
	expect_int_eq(httpreq_parse(b, HTTPREQ_MAX_HEAD, &rq), 1);
	expect_int_eq(rq.head_len, HTTPREQ_MAX_HEAD);
	free(b);
}

static void test_query(void)
{
	char v[8];

	expect_int_eq(httpreq_query("seconds=30&debug=1", "seconds", v, sizeof(v)), 0);
	expect_str_eq(v, "30");
	expect_int_eq(httpreq_query("seconds=30&debug=1", "debug", v, sizeof(v)), 0);
	expect_str_eq(v, "1");
	expect_int_eq(httpreq_query("secondsx=1&gc", "gc", v, sizeof(v)), 0);
	expect_str_eq(v, "");
	expect_int_eq(httpreq_query("secondsx=1", "seconds", v, sizeof(v)), -ENOENT);
	expect_int_eq(httpreq_query("", "seconds", v, sizeof(v)), -ENOENT);
	expect_int_eq(httpreq_query("&&seconds=123456789012", "seconds", v, sizeof(v)), 0);
	expect_str_eq(v, "1234567");	/* cut */
}

HARNESS_MAIN("httpreq", T(test_whole), T(test_prefixes), T(test_bad), T(test_sizes),
	     T(test_query))
