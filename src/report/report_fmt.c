/* Formatters for the report: byte counts with binary units, XML-escaped and JSON-quoted text. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdint.h>
#include "report/report_fmt.h"

char *rfmt_bytes(char *buf, size_t len, double v)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double a = fabs(v);
	unsigned u = 0;

	while (a >= 1024 && u < 5) {
		a /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.1f %s", v < 0 ? -a : a, unit[u]);
	return buf;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0 && s[0] >= 0xc2)
		n = 2;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3;
	else if ((s[0] & 0xf8) == 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void rfmt_xml(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	while (*c) {
		size_t n = utf8_len(c);

		if (!n || (*c < 0x20 && *c != '\t') || *c == 0x7f) {
			fputc('?', f);
			c++;
			continue;
		}
		switch (*c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fwrite(c, 1, n, f); break;
		}
		c += n;
	}
}

void rfmt_json(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	fputc('"', f);
	while (*c) {
		size_t n = utf8_len(c);

		if (!n) {
			fputs("\\ufffd", f);
			c++;
			continue;
		}
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\u%04x", *c);
		else
			fwrite(c, 1, n, f);
		c += n;
	}
	fputc('"', f);
}
