/* Tiny unit-test harness: expect_* macros that print file:line, one summary. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TEST_HARNESS_H
#define HEAPATTACH_TEST_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int harness_failed_checks;
static int harness_cur_failed;

#define expect_true(c) do { if (!(c)) { \
	fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c); \
	harness_failed_checks++; harness_cur_failed = 1; } } while (0)

#define expect_int_eq(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
	__FILE__, __LINE__, #a, _a, #b, _b); harness_failed_checks++; harness_cur_failed = 1; } } while (0)

#define expect_u64_eq(a, b) do { uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b); \
	if (_a != _b) { fprintf(stderr, "%s:%d: %s == 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", \
	__FILE__, __LINE__, #a, _a, _b); harness_failed_checks++; harness_cur_failed = 1; } } while (0)

#define expect_str_eq(a, b) do { const char *_a = (a), *_b = (b); \
	if (!_a || !_b || strcmp(_a, _b)) { fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
	__FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
	harness_failed_checks++; harness_cur_failed = 1; } } while (0)

struct harness_test { const char *name; void (*fn)(void); };

/* Run each test, print one line per failing test and a summary; exit 0/1. */
static inline int harness_run(const char *suite, const struct harness_test *t, size_t n)
{
	int passed = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		harness_cur_failed = 0;
		t[i].fn();
		if (harness_cur_failed) {
			fprintf(stderr, "FAIL %s.%s\n", suite, t[i].name);
			failed++;
		} else {
			passed++;
		}
	}
	printf("%s: %d tests, %d passed, %d failed\n", suite, passed + failed, passed, failed);
	return failed ? 1 : 0;
}

#define HARNESS_MAIN(suite, ...) int main(void) { \
	static const struct harness_test t[] = { __VA_ARGS__ }; \
	return harness_run(suite, t, sizeof(t) / sizeof(t[0])); }
#define T(fn) { #fn, fn }

#endif
