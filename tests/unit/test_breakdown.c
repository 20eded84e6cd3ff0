/* Unit tests for heap vs RSS: smaps by kind (rss.c), the allocator's answers (allocstats.c), the table (breakdown.c). */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "output/breakdown.h"
#include "harness.h"
#include "profile/profile.h"

#define KB 1024ULL
#define MB (1024ULL * 1024)

/* One smaps entry: header, then its Rss and Swap in kB. */
static void put(FILE *f, const char *hdr, unsigned long long rss_kb, unsigned long long swap_kb)
{
	fprintf(f, "%s\nSize:  1 kB\nRss:   %llu kB\nPss:   %llu kB\nSwap:  %llu kB\n"
		   "VmFlags: rd wr mr mw me ac sd\n", hdr, rss_kb, rss_kb, swap_kb);
}

static int parse(const char *text, struct rss_smaps *sm)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	if (!f)
		return -1;
	rc = rss_smaps_parse(f, sm);
	fclose(f);
	return rc;
}

/* A process as glibc lays it out: text, data, [heap], two arenas (usable
 * part at 64 MiB, then the reservation), a thread stack over its guard, a
 * big anonymous mapping, a memfd of ours, another memfd, a shared file. */
static void kinds(void)
{
	char buf[8192];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	struct rss_smaps sm;

	put(f, "55d0a0000000-55d0a0001000 r--p 00000000 fd:01 123 /usr/bin/app", 4, 0);
	put(f, "55d0a0001000-55d0a0005000 r-xp 00001000 fd:01 123 /usr/bin/app", 16, 0);
	put(f, "55d0a0005000-55d0a0006000 rw-p 00005000 fd:01 123 /usr/bin/app", 4, 0);
	put(f, "55d0a1000000-55d0a9000000 rw-p 00000000 00:00 0 [heap]", 100 * 1024, 8);
	put(f, "7f0000000000-7f0002000000 rw-p 00000000 00:00 0 ", 30 * 1024, 0);
	put(f, "7f0002000000-7f0004000000 ---p 00000000 00:00 0 ", 0, 0);
	put(f, "7f0004000000-7f0008000000 rw-p 00000000 00:00 0 ", 60 * 1024, 0);
	put(f, "7f0010000000-7f0010001000 ---p 00000000 00:00 0 ", 0, 0);
	put(f, "7f0010001000-7f0010801000 rw-p 00000000 00:00 0 ", 40, 0);
	put(f, "7f0011000000-7f0017400000 rw-p 00000000 00:00 0 ", 100 * 1024, 0);
	put(f, "7f0020000000-7f0022000000 rw-s 00000000 00:01 77 /memfd:heapattach (deleted)", 900, 0);
	put(f, "7f0022000000-7f0022001000 rw-s 00000000 00:01 78 /memfd:other (deleted)", 4, 0);
	put(f, "7f0023000000-7f0023100000 r--s 00000000 fd:01 99 /var/db/file", 64, 0);
	put(f, "7f0024000000-7f0024010000 r--p 00000000 fd:01 98 /usr/share/locale", 32, 0);
	put(f, "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]", 20, 0);
	put(f, "7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0 [vdso]", 8, 0);
	fclose(f);
	expect_int_eq(parse(buf, &sm), 0);
	expect_u64_eq(sm.kind[RSS_CODE].rss, (16 + 8) * KB);
	expect_u64_eq(sm.kind[RSS_FILE].rss, (4 + 32) * KB);
	expect_u64_eq(sm.kind[RSS_FILE_DATA].rss, 4 * KB);
	expect_u64_eq(sm.kind[RSS_BRK].rss, 100 * MB);
	expect_u64_eq(sm.kind[RSS_BRK].swap, 8 * KB);
	/* the first arena with its reservation, and a full one */
	expect_u64_eq(sm.kind[RSS_ARENA].rss, 90 * MB);
	expect_u64_eq(sm.kind[RSS_ARENA].size, 128 * MB);
	expect_u64_eq(sm.kind[RSS_ARENA].maps, 3);
	expect_int_eq(sm.arenas, 3);
	/* the thread stack and its guard, and [stack] */
	expect_u64_eq(sm.kind[RSS_STACK].rss, 60 * KB);
	expect_u64_eq(sm.kind[RSS_STACK].maps, 3);
	expect_u64_eq(sm.kind[RSS_ANON].rss, 100 * MB);
	expect_u64_eq(sm.kind[RSS_OURS].rss, 900 * KB);
	expect_u64_eq(sm.kind[RSS_SHMEM].rss, (4 + 64) * KB);
	expect_u64_eq(sm.total.rss, 100 * MB + 90 * MB + 100 * MB + (16 + 8 + 4 + 32 + 4 + 60 + 900 +
								   4 + 64) * KB);
	expect_u64_eq(sm.total.swap, 8 * KB);
}

/* An anonymous mapping right above an arena's reservation is not a
 * stack; nor is one above a reservation bigger than a guard. */
static void not_stacks(void)
{
	char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	struct rss_smaps sm;

	put(f, "7f0000000000-7f0001000000 rw-p 00000000 00:00 0 ", 16 * 1024, 0);
	put(f, "7f0001000000-7f0004000000 ---p 00000000 00:00 0 ", 0, 0);
	put(f, "7f0004000000-7f000a400000 rw-p 00000000 00:00 0 ", 100 * 1024, 0);
	put(f, "7f0010000000-7f0010200000 ---p 00000000 00:00 0 ", 0, 0);
	put(f, "7f0010200000-7f0010300000 rw-p 00000000 00:00 0 ", 1024, 0);
	fclose(f);
	expect_int_eq(parse(buf, &sm), 0);
	expect_u64_eq(sm.kind[RSS_ARENA].rss, 16 * MB);
	expect_u64_eq(sm.kind[RSS_STACK].rss, 0);
	expect_u64_eq(sm.kind[RSS_ANON].rss, 101 * MB);
}

/* Garbage, overlong lines and absurd figures: skipped or saturated. */
static void hostile(void)
{
	char buf[8192], longpath[3000];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	struct rss_smaps sm;

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = 0;
	fprintf(f, "not a line at all\n");
	fprintf(f, "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 /%s\n", longpath);
	fprintf(f, "Rss: 99999999999999999999999 kB\n");
	put(f, "7f0000001000-7f0000000000 rw-p 00000000 00:00 0 ", 5, 0);
	put(f, "7f0000002000-7f0000003000 rw-p 00000000 00:00 0 ", 18014398509481983ULL, 0);
	put(f, "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 ", 18014398509481983ULL, 0);
	fclose(f);
	expect_int_eq(parse(buf, &sm), 0);
	/* the line with the long path counts, its absurd Rss saturates the sum */
	expect_u64_eq(sm.total.maps, 3);
	expect_u64_eq(sm.total.rss, UINT64_MAX);
}

static void decode(void)
{
	struct allocstats_fn fn = { .allocator = "jemalloc", .kind = ALLOCSTATS_MALLCTL, .n = 6 };
	struct glibc_figures mi = { .arena = 300 * MB, .fordblks = 190 * MB, .hblks = 2,
				    .hblkhd = 7 * MB };
	uint64_t je[ALLOCSTATS_MAX_NAMES] = { 80 * MB, 90 * MB, 11 * MB, 270 * MB, 300 * MB, 0 };
	struct allocstats as;

	/* glibc: what mallinfo2 would say, read from its arenas */
	allocstats_from_glibc(&mi, &as);
	expect_u64_eq(as.in_use, 117 * MB);	/* uordblks + hblkhd */
	expect_u64_eq(as.free, 190 * MB);
	expect_u64_eq(as.mmapped, 7 * MB);
	expect_u64_eq(as.system, 300 * MB);
	expect_u64_eq(as.metadata, 0);
	expect_u64_eq(as.resident, UINT64_MAX);
	mi.hblkhd = UINT64_MAX;			/* mp_ not found: no mmapped figure */
	allocstats_from_glibc(&mi, &as);
	expect_u64_eq(as.in_use, 110 * MB);
	expect_u64_eq(as.mmapped, UINT64_MAX);

	expect_int_eq(allocstats_decode(&fn, je, ALLOCSTATS_MAX_NAMES, &as), 0);
	expect_u64_eq(as.in_use, 80 * MB);
	expect_u64_eq(as.resident, 270 * MB);
	expect_u64_eq(as.free, 179 * MB);
	expect_u64_eq(as.metadata, 11 * MB);
	je[3] = 1ULL << 60;	/* no allocator reports that */
	expect_int_eq(allocstats_decode(&fn, je, ALLOCSTATS_MAX_NAMES, &as), -EINVAL);
	fn.kind = 99;
	expect_int_eq(allocstats_decode(&fn, je, ALLOCSTATS_MAX_NAMES, &as), -EINVAL);
}

static int64_t line_of(const struct breakdown *b, const char *key)
{
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->v[i].key, key))
			return b->v[i].bytes;
	return -12345;
}

/* The top lines add up to the RSS; the heap's lines come from the
 * allocator and the profile. */
static void table(void)
{
	struct rss_smaps sm = { 0 };
	struct allocstats as = { "glibc", 107 * MB, 190 * MB, 0, UINT64_MAX, 7 * MB, 300 * MB,
				 "read from glibc's memory" };
	struct profile *p = profile_new(1);
	uint64_t pcs[1] = { 0x401000 };
	struct breakdown b;
	int64_t sum = 0;

	sm.kind[RSS_BRK].rss = 100 * MB;
	sm.kind[RSS_ARENA].rss = 190 * MB;
	sm.kind[RSS_ANON].rss = 110 * MB;
	sm.kind[RSS_STACK].rss = 1 * MB;
	sm.kind[RSS_CODE].rss = 5 * MB;
	sm.kind[RSS_OURS].rss = 2 * MB;
	sm.total.rss = 408 * MB;
	for (int i = 0; i < 20; i++)
		profile_record_alloc(p, pcs, 1, 1 * MB, 0x1000000 + (uint64_t)i * MB);
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as = &as, .prof = p }, &b);
	for (size_t i = 0; i < b.n; i++)
		if (!b.v[i].depth)
			sum += b.v[i].bytes;
	expect_int_eq(sum, (int64_t)(408 * MB));
	expect_int_eq(line_of(&b, "heap"), (int64_t)(297 * MB));
	/* 1 MiB asked: glibc maps 1 MiB and a page */
	expect_int_eq(line_of(&b, "live_seen"), (int64_t)(20 * (MB + 4096)));
	expect_int_eq(line_of(&b, "live_seen_requested"), (int64_t)(20 * MB));
	expect_int_eq(line_of(&b, "live_before"), (int64_t)(87 * MB - 20 * 4096));
	expect_int_eq(line_of(&b, "free"), (int64_t)(190 * MB));
	expect_int_eq(line_of(&b, "anon_other"), (int64_t)(103 * MB));
	expect_int_eq(line_of(&b, "unexplained"), 0);
	/* the mmapped blocks measured: only their resident pages are heap */
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as = &as, .prof = p,
						  .mmc = &(struct mmchunks){ .count = 3, .mapped = 7 * MB,
								    .resident = MB } }, &b);
	expect_int_eq(line_of(&b, "heap"), (int64_t)(291 * MB));
	expect_int_eq(line_of(&b, "heap_mmapped"), (int64_t)MB);
	expect_int_eq(line_of(&b, "anon_other"), (int64_t)(109 * MB));
	expect_int_eq(line_of(&b, "mmapped"), (int64_t)(7 * MB));
	for (size_t i = 0; i < b.n; i++)
		expect_true(b.v[i].bytes >= 0);
	/* more seen since attach than the allocator counts in use: 0 before, not less */
	as.in_use = 10 * MB;
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as = &as, .prof = p }, &b);
	expect_int_eq(line_of(&b, "live_before"), 0);
	/* without smaps: said, not made up */
	breakdown_compute(&(struct breakdown_in){ .as = &as, .prof = p }, &b);
	expect_int_eq(b.measured, 0);
	profile_free(p);
}

/* Collects what breakdown_print writes. */
struct lines {
	char text[32][600];
	int n;
};

static void keep(void *arg, const char *text)
{
	struct lines *l = arg;

	if (l->n < 32)
		snprintf(l->text[l->n++], sizeof(l->text[0]), "%s", text);
}

/* The last line says where the allocator's figures come from, or why
 * there are none. */
static void source(void)
{
	struct rss_smaps sm = { 0 };
	struct allocstats as = { .allocator = "glibc", .in_use = MB, .free = MB,
				 .metadata = 0, .resident = UINT64_MAX, .mmapped = 0,
				 .system = 2 * MB, .how = "read from glibc's memory" };
	struct breakdown b;
	struct lines l = { .n = 0 };

	sm.kind[RSS_BRK].rss = 2 * MB;
	sm.total.rss = 2 * MB;
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as = &as }, &b);
	breakdown_print(&b, keep, &l);
	expect_true(l.n > 2);
	expect_str_eq(l.text[l.n - 1], "  allocator figures: read from glibc's memory");
	l.n = 0;
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as_why = "thread 7 inside jemalloc" },
			  &b);
	breakdown_print(&b, keep, &l);
	expect_str_eq(l.text[l.n - 1], "  no allocator figures: thread 7 inside jemalloc");
	expect_true(strstr(l.text[0], "allocator=none") != NULL);
}

static void count_big(uint64_t ptr, uint64_t size, void *arg)
{
	uint64_t *n = arg;

	(void)ptr;
	*n += size;
}

/* jemalloc's resident count less the untouched pages of the large blocks
 * the profile holds live (which profile_foreach_live lists). */
static void big_blocks(void)
{
	struct rss_smaps sm = { 0 };
	struct allocstats as = { .allocator = "jemalloc", .in_use = 90 * MB, .free = MB,
				 .metadata = MB, .resident = 100 * MB, .mmapped = UINT64_MAX,
				 .system = UINT64_MAX, .how = "jemalloc's mallctl" };
	struct mmchunks big = { .count = 20, .mapped = 80 * MB, .resident = MB };
	struct profile *p = profile_new(1);
	uint64_t pcs[1] = { 0x401000 }, sum = 0;
	struct breakdown b;

	profile_record_alloc(p, pcs, 1, 4 * MB, 0x1000000);
	profile_record_alloc(p, pcs, 1, 100, 0x2000000);
	profile_foreach_live(p, 64 << 10, count_big, &sum);
	expect_u64_eq(sum, 4 * MB);
	sm.kind[RSS_ANON].rss = 150 * MB;
	sm.total.rss = 150 * MB;
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as = &as, .big = &big }, &b);
	expect_int_eq(line_of(&b, "heap"), (int64_t)(21 * MB));
	expect_int_eq(line_of(&b, "anon_other"), (int64_t)(129 * MB));
	big.resident = 90 * MB;	/* more than it counts: the heap is never negative */
	big.mapped = 200 * MB;
	breakdown_compute(&(struct breakdown_in){ .sm = &sm, .as = &as, .big = &big }, &b);
	expect_int_eq(line_of(&b, "heap"), 0);
	profile_free(p);
}

/* Requested sizes rounded to what each allocator counts. */
static void usable(void)
{
	expect_u64_eq(breakdown_usable("glibc", 1), 32);
	expect_u64_eq(breakdown_usable("glibc", 24), 32);
	expect_u64_eq(breakdown_usable("glibc", 25), 48);
	expect_u64_eq(breakdown_usable("glibc", 256), 272);
	expect_u64_eq(breakdown_usable("glibc", 4 * MB), 4 * MB + 4096);
	expect_u64_eq(breakdown_usable("jemalloc", 1), 8);
	expect_u64_eq(breakdown_usable("jemalloc", 100), 112);
	expect_u64_eq(breakdown_usable("jemalloc", 129), 160);
	expect_u64_eq(breakdown_usable("jemalloc", 256), 256);
	expect_u64_eq(breakdown_usable("jemalloc", 257), 320);
	expect_u64_eq(breakdown_usable("jemalloc", 5000), 5120);
	expect_u64_eq(breakdown_usable("jemalloc", 4 * MB + 1), 5 * MB);
	expect_u64_eq(breakdown_usable(NULL, 0), 16);
}

HARNESS_MAIN("breakdown", T(kinds), T(not_stacks), T(hostile), T(decode), T(table), T(source),
	     T(usable), T(big_blocks))
