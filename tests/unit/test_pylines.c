/* Unit tests for pylines.c: every instruction of tables dumped by CPython 3.8-3.13 gets the interpreter's own line. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "python/pyframes.h"

/*
 * tests/unit/data/pylines-3.X.txt come from tests/tools/pylines-dump.py run
 * by each interpreter: per code object its table and, per code unit, the
 * line PyCode_Addr2Line gives (-1: none).
 */
typedef int (*lines_fn)(const uint8_t *, size_t, int, uint32_t);

static lines_fn fn_for(const char *fmt)
{
	if (!strcmp(fmt, "lnotab"))
		return pylines_lnotab;
	if (!strcmp(fmt, "310"))
		return pylines_310;
	if (!strcmp(fmt, "311"))
		return pylines_311;
	return NULL;
}

/* Check every code object of one vector file; the number of units checked. */
static long check_file(const char *path, int *codes)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	char name[512] = "", fmt[16] = "";
	int first = 0, units = 0, bad = 0;
	uint8_t *tab = NULL;
	size_t tn = 0;
	long checked = 0;

	expect_true(f != NULL);
	if (!f)
		return 0;
	while ((len = getline(&buf, &cap, f)) > 0) {
		if (buf[len - 1] == '\n')
			buf[--len] = 0;
		if (!strncmp(buf, "code ", 5)) {
			expect_int_eq(sscanf(buf, "code %511s %15s %d %d", name, fmt, &first, &units), 4);
			(*codes)++;
		} else if (!strncmp(buf, "table ", 6)) {
			const char *h = buf + 6;

			free(tab);
			tn = strcmp(h, "-") ? strlen(h) / 2 : 0;
			tab = malloc(tn + 1);
			for (size_t i = 0; i < tn; i++)
				expect_int_eq(sscanf(h + 2 * i, "%2hhx", &tab[i]), 1);
		} else if (!strncmp(buf, "lines", 5)) {
			lines_fn fn = fn_for(fmt);
			char *p = buf + 5, *e;

			expect_true(fn != NULL);
			for (int u = 0; fn && u < units; u++) {
				long want = strtol(p, &e, 10);
				int got;

				expect_true(e != p);
				p = e;
				got = fn(tab, tn, first, (uint32_t)u);
				if (got != want && bad++ < 5)
					fprintf(stderr, "%s %s unit %d: line %d, python says %ld\n",
						path, name, u, got, want);
				checked++;
			}
		}
	}
	expect_int_eq(bad, 0);
	free(tab);
	free(buf);
	fclose(f);
	return checked;
}

static void check_version(const char *minor, long min_units)
{
	char path[128];
	int codes = 0;
	long n;

	snprintf(path, sizeof(path), "tests/unit/data/pylines-%s.txt", minor);
	n = check_file(path, &codes);
	expect_true(codes >= 19);
	expect_true(n >= min_units);
}

static void test_py38(void) { check_version("3.8", 1000); }
static void test_py39(void) { check_version("3.9", 1000); }
static void test_py310(void) { check_version("3.10", 1000); }
static void test_py311(void) { check_version("3.11", 1000); }
static void test_py312(void) { check_version("3.12", 1000); }
static void test_py313(void) { check_version("3.13", 1000); }

/* Empty, odd-length and truncated tables: no line (3.10+) or the first. */
static void test_short_tables(void)
{
	static const uint8_t odd[] = { 4, 1, 6 };
	static const uint8_t lv[] = { 0x80 | (14 << 3) | 7, 0x41 };	/* varint cut short */
	static const uint8_t cont[] = { 0x3f, 0x7f, 0x7f };		/* no entry start */

	expect_int_eq(pylines_lnotab(NULL, 0, 7, 0), 7);
	expect_int_eq(pylines_lnotab(odd, sizeof(odd), 7, 5), 8);
	expect_int_eq(pylines_310(NULL, 0, 7, 0), -1);
	expect_int_eq(pylines_310(odd, sizeof(odd), 7, 1), 8);
	expect_int_eq(pylines_310(odd, sizeof(odd), 7, 2), -1);
	expect_int_eq(pylines_311(NULL, 0, 7, 0), -1);
	/* long form, delta varint 0x41 (continues, then ends): +0 (u = 1 -> -0) */
	expect_int_eq(pylines_311(lv, sizeof(lv), 7, 3), 7);
	expect_int_eq(pylines_311(lv, sizeof(lv), 7, 8), -1);
	expect_int_eq(pylines_311(cont, sizeof(cont), 7, 0), -1);
}

/* Hand-made 3.11 entries: each form's line delta, no-location, lengths. */
static void test_311_forms(void)
{
	static const uint8_t t[] = {
		0x80 | (10 << 3) | 0, 1, 2,		/* one-line +0, 1 unit: 10 */
		0x80 | (12 << 3) | 1, 1, 2,		/* one-line +2, 2 units: 12 */
		0x80 | (15 << 3) | 0,			/* none, 1 unit */
		0x80 | (13 << 3) | 2, 0x07,		/* no columns, -3, 3 units: 9 */
		0x80 | (3 << 3) | 0, 0x12,		/* short, 1 unit: 9 */
		0x80 | (14 << 3) | 0, 0x48, 0x01, 0, 1, 2,	/* long, +36: 45 */
	};
	static const int want[] = { 10, 12, 12, -1, 9, 9, 9, 9, 45, -1 };

	for (uint32_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		expect_int_eq(pylines_311(t, sizeof(t), 10, i), want[i]);
}

/* Sums past int: no line, never a wrapped one. */
static void test_huge(void)
{
	size_t n = 1u << 20;
	uint8_t *t = malloc(n);

	for (size_t i = 0; i < n; i += 2) {
		t[i] = 0;
		t[i + 1] = 127;
	}
	expect_int_eq(pylines_lnotab(t, n, 0, 10), (int)(127 * (n / 2)));
	expect_int_eq(pylines_lnotab(t, n, 0x7fffffff, 10), -1);
	for (size_t i = 0; i < n; i++)
		t[i] = i % 6 == 0 ? 0x80 | (13 << 3) : i % 6 == 5 ? 0x1e : 0x7e;
	expect_int_eq(pylines_311(t, n, 0, 0x7ffe), -1);
	free(t);
}

HARNESS_MAIN("pylines", T(test_py38), T(test_py39), T(test_py310), T(test_py311),
	     T(test_py312), T(test_py313), T(test_short_tables), T(test_311_forms), T(test_huge))
