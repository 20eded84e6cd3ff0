/* Unit tests for reading spans through /proc/PID/mem (memread.c): this process's own memory, spans merged or apart, in order or not, and a hole. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "snapshot/memread.h"

#define AREA (3 * MEMREAD_GAP + (64u << 10))

static uint8_t area[AREA];              /* bytes i: (uint8_t)(i * 7 + 3) */

static uint64_t at(size_t off)
{
	return (uint64_t)(uintptr_t)(area + off);
}

/* Read spans s[0..n) and compare each with the area. */
static void check(struct memread *m, const struct hg_span *s, size_t n)
{
	size_t total = 0, off = 0;
	uint8_t *buf;

	for (size_t i = 0; i < n; i++)
		total += s[i].len;
	buf = malloc(total + 1);
	expect_true(buf != NULL);
	expect_int_eq(memread_spans(m, getpid(), s, n, buf), 0);
	for (size_t i = 0; i < n; i++) {
		expect_int_eq(memcmp(buf + off, (const void *)(uintptr_t)s[i].addr, s[i].len), 0);
		off += s[i].len;
	}
	free(buf);
}

static void setup(void)
{
	for (size_t i = 0; i < AREA; i++)
		area[i] = (uint8_t)(i * 7 + 3);
}

/* Spans a few bytes apart (one read), a gap wider than MEMREAD_GAP (two),
 * out of order, empty. */
static void spans(void)
{
	struct memread m = { 0 };
	struct hg_span near[] = { { at(0), 64 }, { at(80), 64 }, { at(160), 8 } };
	struct hg_span apart[] = { { at(0), 100 }, { at(2 * MEMREAD_GAP + 50), 200 } };
	struct hg_span mixed[] = { { at(5000), 16 }, { at(16), 16 }, { at(40), 0 }, { at(48), 8 } };

	setup();
	check(&m, near, 3);
	check(&m, apart, 2);
	check(&m, mixed, 4);
	memread_close(&m);
}

/* A span over a page that is not mapped fails, and so does its batch. */
static void hole(void)
{
	struct memread m = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	uint8_t buf[64];
	struct hg_span s[] = { { (uint64_t)(uintptr_t)p, 8 },
			       { (uint64_t)(uintptr_t)(p + page + 8), 8 } };

	expect_true(p != MAP_FAILED);
	munmap(p + page, (size_t)page);
	expect_true(memread_spans(&m, getpid(), s, 2, buf) < 0);
	expect_int_eq(memread_spans(&m, getpid(), s, 1, buf), 0);
	memread_close(&m);
	munmap(p, (size_t)page);
	munmap(p + 2 * page, (size_t)page);
}

HARNESS_MAIN("memread", T(spans), T(hole))
