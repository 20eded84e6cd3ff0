/* An HTTP/1.x request head parser: request line and header fields checked byte by byte, nothing kept but the method and target. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include "serve/httpreq.h"

/* RFC 9110 tchar: what a method or a field name is made of. */
static int is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A byte of a field value: visible, space, tab or obs-text. */
static int is_vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* The "HTTP/d.d" of a request line; rest is n bytes, all of it when complete. */
static int parse_version(const char *rest, size_t n, int complete, struct httpreq *out)
{
	static const char pat[] = "HTTP/#.#";

	if (n > 8 || (complete && n != 8))
		return 400;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)rest[i];

		if (pat[i] == '#' ? !(c >= '0' && c <= '9') : c != (unsigned char)pat[i])
			return 400;
	}
	if (!complete)
		return 0;
	if (rest[5] != '1')
		return 505;
	out->minor = rest[7] == '0' ? 0 : 1;
	return 1;
}

/*
 * The request line, n bytes without its line end; when not complete, the
 * bytes received of it so far. 1 parsed (out's method and target set), 0
 * a good beginning, or a status.
 */
static int parse_line(const char *b, size_t n, int complete, struct httpreq *out)
{
	size_t i = 0, t, tlen;
	const char *q;
	int rc;

	while (i < n && i <= HTTPREQ_MAX_METHOD && is_tchar((unsigned char)b[i]))
		i++;
	if (i > HTTPREQ_MAX_METHOD)
		return 400;
	if (i == n)
		return complete ? 400 : 0;
	if (i == 0 || b[i] != ' ')
		return 400;
	t = ++i;
	while (i < n && i - t <= HTTPREQ_MAX_TARGET && (unsigned char)b[i] > 0x20 &&
	       (unsigned char)b[i] < 0x7f)
		i++;
	tlen = i - t;
	if (tlen > HTTPREQ_MAX_TARGET)
		return 414;
	if (tlen && b[t] != '/')
		return 400;	/* origin-form only */
	if (i == n)
		return complete ? 400 : 0;
	if (b[i] != ' ' || !tlen)
		return 400;
	rc = parse_version(b + i + 1, n - i - 1, complete, out);
	if (rc != 1)
		return rc;
	out->method = (t - 1 == 3 && !memcmp(b, "GET", 3)) ? HTTPREQ_GET : HTTPREQ_OTHER;
	q = memchr(b + t, '?', tlen);
	if (q) {
		memcpy(out->path, b + t, (size_t)(q - (b + t)));
		out->path[q - (b + t)] = 0;
		memcpy(out->query, q + 1, (size_t)(b + t + tlen - q - 1));
		out->query[b + t + tlen - q - 1] = 0;
	} else {
		memcpy(out->path, b + t, tlen);
		out->path[tlen] = 0;
		out->query[0] = 0;
	}
	return 1;
}

/* One header field line, n bytes without its line end (or all received of
 * it so far): 0 good (so far), or 400. */
static int check_field(const char *b, size_t n, int complete)
{
	size_t i = 0;

	while (i < n && is_tchar((unsigned char)b[i]))
		i++;
	if (i == n)
		return complete ? 400 : 0;
	if (i == 0 || b[i] != ':')
		return 400;	/* also a folded line (obs-fold) */
	for (i++; i < n; i++)
		if (!is_vchar((unsigned char)b[i]))
			return 400;
	return 0;
}

/* The length of the line at b (n bytes there), its line end left out
 * (LF, or CR LF); *end past the LF. -1: no LF yet. */
static long line_at(const char *b, size_t n, size_t *end)
{
	const char *lf = memchr(b, '\n', n);
	size_t l;

	if (!lf)
		return -1;
	l = (size_t)(lf - b);
	*end = l + 1;
	if (l && b[l - 1] == '\r')
		l--;
	return (long)l;
}

int httpreq_parse(const char *buf, size_t len, struct httpreq *out)
{
	size_t n = len > HTTPREQ_MAX_HEAD ? HTTPREQ_MAX_HEAD : len, pos, end;
	long l;
	int rc;

	l = line_at(buf, n, &end);
	if (l < 0) {
		size_t m = n && buf[n - 1] == '\r' ? n - 1 : n;

		rc = parse_line(buf, m, 0, out);
		return rc ? rc : len >= HTTPREQ_MAX_HEAD ? 431 : 0;
	}
	if (memchr(buf, '\r', (size_t)l))
		return 400;	/* a bare CR */
	rc = parse_line(buf, (size_t)l, 1, out);
	if (rc != 1)
		return rc;
	for (pos = end;;) {
		l = line_at(buf + pos, n - pos, &end);
		if (l < 0) {
			size_t m = n - pos;

			if (m && buf[n - 1] == '\r')
				m--;
			if (memchr(buf + pos, '\r', m))
				return 400;
			rc = check_field(buf + pos, m, 0);
			return rc ? rc : len >= HTTPREQ_MAX_HEAD ? 431 : 0;
		}
		if (l == 0) {
			out->head_len = pos + end;
			return 1;
		}
		if (memchr(buf + pos, '\r', (size_t)l))
			return 400;
		rc = check_field(buf + pos, (size_t)l, 1);
		if (rc)
			return rc;
		pos += end;
	}
}

int httpreq_query(const char *query, const char *key, char *v, size_t vlen)
{
	size_t klen = strlen(key);
	const char *p = query;

	while (*p) {
		size_t plen = strcspn(p, "&");

		if (plen >= klen && !strncmp(p, key, klen) && (plen == klen || p[klen] == '=')) {
			size_t vl = plen > klen ? plen - klen - 1 : 0;

			if (vlen) {
				if (vl >= vlen)
					vl = vlen - 1;
				memcpy(v, p + klen + (plen > klen), vl);
				v[vl] = 0;
			}
			return 0;
		}
		p += plen;
		if (*p)
			p++;
	}
	return -ENOENT;
}
