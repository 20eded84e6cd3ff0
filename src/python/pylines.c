/* The line of a Python instruction from its code object's line table: the three formats of CPython 3.8-3.13. */
/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdint.h>

#include "python/pyframes.h"

/*
 * The tables come from the target: every byte is taken as it is, every
 * read is bounded by n, and the line is summed in 64 bits, so that no table
 * can make these functions read out of bounds, overflow or loop long (one
 * pass over at most n bytes). A sum outside 0..INT_MAX is "no line" (-1).
 */

static int line_ok(int64_t line)
{
	return line < 0 || line > INT_MAX ? -1 : (int)line;
}

/*
 * co_lnotab (3.8, 3.9): pairs (byte offset increment, unsigned; line
 * increment, signed), starting at offset 0 and co_firstlineno. The line of
 * byte offset off is the sum of the line increments of the pairs whose
 * offset (summed so far) is at most off. A table ending early leaves the
 * last line; there is no "no line".
 */
int pylines_lnotab(const uint8_t *t, size_t n, int firstlineno, uint32_t idx)
{
	uint64_t off = (uint64_t)idx * 2, addr = 0;
	int64_t line = firstlineno;

	for (size_t i = 0; i + 1 < n; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += (int8_t)t[i + 1];
	}
	return line_ok(line);
}

/*
 * 3.10's co_linetable: pairs (length in bytes, unsigned; line delta,
 * signed, -128 for "no line", which leaves the running line as it was).
 * Entry k covers the bytes from the sum of the lengths before it, and its
 * line is the running line after its delta. Empty entries only carry a
 * delta. An offset past the last entry has no line.
 */
int pylines_310(const uint8_t *t, size_t n, int firstlineno, uint32_t idx)
{
	uint64_t off = (uint64_t)idx * 2, start = 0;
	int64_t line = firstlineno;

	for (size_t i = 0; i + 1 < n; i += 2) {
		uint64_t end = start + t[i];
		int8_t d = (int8_t)t[i + 1];

		if (d != -128)
			line += d;
		if (off >= start && off < end)
			return d == -128 ? -1 : line_ok(line);
		start = end;
	}
	return -1;
}

/* 3.11+ location table entry codes (bits 3-6 of an entry's first byte). */
#define LOC_ONE_LINE0	10	/* 0-9: same line, short columns; 10-12: line + 0, 1, 2; two bytes of columns */
#define LOC_ONE_LINE2	12
#define LOC_NO_COLUMNS	13	/* svarint line delta */
#define LOC_LONG	14	/* svarint line delta, varint end line delta, columns */
#define LOC_NONE	15	/* no location */

/* A varint of the table at t[*i..n): 6-bit chunks, low first, 0x40 set on
 * all but the last. Stops at n or at the next entry (bit 7). */
static uint64_t varint(const uint8_t *t, size_t n, size_t *i)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*i < n && !(t[*i] & 0x80)) {
		uint8_t b = t[(*i)++];

		if (shift < 64)
			v |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
		if (!(b & 0x40))
			break;
	}
	return v;
}

/* A signed varint: the varint's low bit is the sign, the rest the magnitude. */
static int64_t svarint(const uint8_t *t, size_t n, size_t *i)
{
	uint64_t u = varint(t, n, i);
	int64_t mag = (int64_t)((u >> 1) & INT32_MAX);

	return u & 1 ? -mag : mag;
}

/*
 * 3.11+ location table: entries of a first byte (bit 7 set; bits 3-6 the
 * code; bits 0-2 the length in code units, minus 1) and the bytes up to the
 * next first byte. Each entry's line is the running line plus its delta,
 * except "no location" entries, which have no line and keep the running
 * line. An index past the last entry has no line.
 */
int pylines_311(const uint8_t *t, size_t n, int firstlineno, uint32_t idx)
{
	uint64_t start = 0;
	int64_t line = firstlineno;
	size_t i = 0;

	while (i < n) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15;
		uint64_t end = start + (b & 7) + 1;
		int64_t delta = 0;

		if (!(b & 0x80))
			continue;	/* no entry starts here: skip to the next */
		if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
			delta = code - LOC_ONE_LINE0;
		else if (code == LOC_NO_COLUMNS || code == LOC_LONG)
			delta = svarint(t, n, &i);
		line += delta;
		if (idx >= start && idx < end)
			return code == LOC_NONE ? -1 : line_ok(line);
		start = end;
	}
	return -1;
}
