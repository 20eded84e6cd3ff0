/* Unit tests for the report: the pprof reader (round trip, hostile input), the leak ranking, diffs, folded lines, escaping. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "output/dump.h"
#include "output/folded.h"
#include "harness.h"
#include "profile/profile.h"
#include "report/report_fmt.h"
#include "report/report_pprof.h"
#include "report/report_series.h"
#include "profile/skipsites.h"

/* Our writer's output for a small exact profile, in *len bytes (malloc'd). */
static uint8_t *written_profile(size_t *len)
{
	const uint64_t a[] = { 0x1001, 0x2001, 0x3001 }, b[] = { 0x1101, 0x3001 };
	const char *comments[] = { "extra note" };
	struct dump_info di = { .pid = 7, .time_nanos = 1700000000000000000ULL,
				.duration_nanos = 5000000000ULL, .comments = comments,
				.ncomments = 1 };
	struct profile *p = profile_new(1);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	profile_record_alloc(p, a, 3, 1000, 0x10000);
	profile_record_alloc(p, a, 3, 1000, 0x20000);
	profile_record_alloc(p, b, 2, 64, 0x30000);
	profile_record_free(p, 0x30000);
	expect_int_eq(pprof_write(f, p, &di), 0);
	fclose(f);
	profile_free(p);
	return (uint8_t *)buf;
}

static const struct rprof_sample *find_leaf(const struct rprof *p, const char *leaf)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].nframes && !strcmp(p->samples[i].frames[0], leaf))
			return &p->samples[i];
	return NULL;
}

/* What our writer writes, the reader reads back: types, times, stacks, values. */
static void test_roundtrip(void)
{
	size_t len;
	uint8_t *buf = written_profile(&len);
	struct rprof p;
	const struct rprof_sample *s;
	int live;

	expect_int_eq(rprof_parse(buf, len, &p), 0);
	expect_int_eq(p.ntypes, 4);
	expect_str_eq(p.type[3], "inuse_space");
	expect_str_eq(p.unit[3], "bytes");
	live = rprof_type_index(&p, "inuse_space");
	expect_int_eq(live, 3);
	expect_int_eq(rprof_type_index(&p, "cpu"), -1);
	expect_u64_eq(p.time_nanos, 1700000000000000000ULL);
	expect_u64_eq(p.duration_nanos, 5000000000ULL);
	expect_int_eq(p.period, 1);
	expect_int_eq(p.nsamples, 2);
	s = find_leaf(&p, "0x1000");	/* no symbolizer: the address inside the call */
	expect_true(s != NULL);
	if (s) {
		expect_int_eq(s->nframes, 3);
		expect_str_eq(s->frames[2], "0x3000");
		expect_int_eq(s->values[live], 2000);
		expect_int_eq(s->values[rprof_type_index(&p, "alloc_objects")], 2);
	}
	s = find_leaf(&p, "0x1100");
	expect_true(s && s->values[live] == 0 && s->values[1] == 64);
	expect_true(p.ncomments >= 3);
	expect_str_eq(p.comments[p.ncomments - 1], "extra note");
	rprof_free(&p);
	free(buf);
}

/* Every truncation and many byte flips: an error or a profile, never a crash
 * (run under ASan by make asan). */
static void test_hostile(void)
{
	size_t len;
	uint8_t *buf = written_profile(&len);
	uint8_t *raw = NULL, *copy = malloc(len);
	struct rprof p;
	int ok = 0;

	for (size_t n = 0; n < len; n++) {
		int rc = rprof_parse(buf, n, &p);

		expect_true(rc == -EBADMSG);
		rprof_free(&p);
	}
	for (size_t i = 0; i < len * 8; i += 3) {
		memcpy(copy, buf, len);
		copy[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (rprof_parse(copy, len, &p) == 0)
			ok++;
		rprof_free(&p);
	}
	expect_true(ok < (int)(len * 8 / 3));	/* the gzip CRC catches most */
	free(raw);
	free(copy);
	free(buf);
}

/* A heap profile written by Go's runtime/pprof reads too: same sample
 * types, Lines naming functions, a time and no duration. */
static void test_go_profile(void)
{
	struct rprof p;
	struct rseries *s = rseries_new(1);
	const struct rseries_site *top;

	expect_int_eq(rprof_read_file("fixtures/pprof/go119-heap.pb.gz", &p), 0);
	expect_int_eq(p.ntypes, 4);
	expect_true(p.time_nanos > 0 && p.duration_nanos == 0);
	expect_int_eq(rseries_add(s, 0, "go", &p), 0);
	rprof_free(&p);
	rseries_finish(s, 0);
	top = &s->sites[0];
	expect_true(top->nframes >= 3);
	if (top->nframes >= 3) {
		expect_str_eq(top->frames[0], "main.leaky");
		expect_str_eq(top->frames[1], "main.main");
		expect_str_eq(top->frames[2], "runtime.main");
	}
	/* 1000 blocks of 4096 bytes live, as Go counted them */
	expect_true(top->fig[RS_INUSE_B][0] >= 4096000.0 && top->fig[RS_INUSE_B][0] < 4200000.0);
	expect_int_eq(rprof_read_file("fixtures/pprof/README", &p), -EBADMSG);
	expect_int_eq(rprof_read_file("fixtures/pprof", &p), -EINVAL);
	expect_int_eq(rprof_read_file("fixtures/pprof/none", &p), -ENOENT);
	rseries_free(s);
}

/* Raw protobuf (no gzip) with dangling references is refused. */
static void test_bad_refs(void)
{
	/* string_table "" "x"; sample with location id 5 that no Location has */
	static const uint8_t dangling[] = { 0x32, 0x00, 0x32, 0x01, 'x', 0x12, 0x02, 0x08, 0x05 };
	/* sample_type naming string 9 of a table of 1 */
	static const uint8_t badstr[] = { 0x32, 0x00, 0x0a, 0x02, 0x08, 0x09 };
	/* a sample with 2 values and no sample type */
	static const uint8_t badvals[] = { 0x32, 0x00, 0x12, 0x04, 0x12, 0x02, 0x01, 0x02 };
	/* a varint of 11 bytes */
	static const uint8_t longvar[] = { 0x48, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					   0x80, 0x80, 0x01 };
	/* a length beyond the end */
	static const uint8_t overrun[] = { 0x32, 0x7f, 'a' };
	/* the smallest valid one: an empty string table */
	static const uint8_t empty[] = { 0x32, 0x00 };
	struct rprof p;

	expect_int_eq(rprof_parse(dangling, sizeof(dangling), &p), -EBADMSG);
	expect_int_eq(rprof_parse(badstr, sizeof(badstr), &p), -EBADMSG);
	expect_int_eq(rprof_parse(badvals, sizeof(badvals), &p), -EBADMSG);
	expect_int_eq(rprof_parse(longvar, sizeof(longvar), &p), -EBADMSG);
	expect_int_eq(rprof_parse(overrun, sizeof(overrun), &p), -EBADMSG);
	expect_int_eq(rprof_parse(NULL, 0, &p), -EBADMSG);
	expect_int_eq(rprof_parse(empty, sizeof(empty), &p), 0);
	expect_int_eq(p.nsamples, 0);
	rprof_free(&p);
}

/* ---- the ranking, on made-up series ---- */

#define ND 12
#define NSITES 5

static const char *t_types[] = { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" };
static const char *t_units[] = { "count", "bytes", "count", "bytes" };

/* Dump d of five sites with known curves; dumps 10 s apart. */
static void make_dump(struct rprof *p, struct rprof_sample *sm, int64_t (*vals)[4],
		      const char *(*frames)[2], int d)
{
	static const char *leaf[NSITES] = { "leak", "churn", "spike", "cache", "slowleak" };
	/* churn: a fixed pseudo-random walk around 1 MB */
	static const int churn[ND] = { 5, -3, 8, -6, 2, -9, 7, 1, -4, 6, -8, 3 };
	int64_t live[NSITES] = {
		1000000 + 36000 * d,                    /* 3600 B/s = 12.96 MB/h */
		1000000 + 20000 * churn[d],
		d >= 3 && d <= 5 ? 50000000 : 0,        /* freed again */
		d < 3 ? 3000000 * d : 9000000,          /* fills, then flat */
		500000 + 700 * d + (d % 2) * 300,       /* small but every interval */
	};

	static const char *rss[] = { "rate=1", "heapattach-rss: rss=1048576 vsize=9999 swap=0 "
				     "arenas=1 allocator=glibc heap=524288 live_seen=1000 code=262144 "
				     "shmem=262144 bogus=7 unexplained=-5 files=12x" };

	memset(p, 0, sizeof(*p));
	p->comments = rss;
	p->ncomments = d % 2 ? 1 : 2;	/* odd dumps carry no RSS */
	p->time_nanos = 1700000000000000000ULL;
	p->duration_nanos = (uint64_t)d * 10000000000ULL;
	p->ntypes = 4;
	p->type = t_types;
	p->unit = t_units;
	p->nsamples = NSITES;
	p->samples = sm;
	for (int i = 0; i < NSITES; i++) {
		frames[i][0] = leaf[i];
		frames[i][1] = "main";
		vals[i][3] = live[i];
		vals[i][2] = live[i] / 100;
		vals[i][1] = live[i] * 3;
		vals[i][0] = live[i] / 50;
		sm[i] = (struct rprof_sample){ .frames = frames[i], .nframes = 2, .values = vals[i] };
	}
}

static const struct rseries_site *site_named(const struct rseries *s, const char *leaf, size_t *rank)
{
	for (size_t i = 0; i < s->nsites; i++)
		if (!strcmp(s->sites[i].frames[0], leaf)) {
			*rank = i;
			return &s->sites[i];
		}
	return NULL;
}

static void test_ranking(void)
{
	struct rseries *s = rseries_new(ND);
	struct rprof p;
	struct rprof_sample sm[NSITES];
	int64_t vals[NSITES][4];
	const char *frames[NSITES][2];
	const struct rseries_site *st;
	size_t rank = 99;

	/* added out of time order: finish sorts them */
	for (int d = ND - 1; d >= 0; d--) {
		char path[32];

		make_dump(&p, sm, vals, frames, d);
		snprintf(path, sizeof(path), "d%02d", d);
		expect_int_eq(rseries_add(s, (size_t)(ND - 1 - d), path, &p), 0);
	}
	rseries_finish(s, 0);
	expect_str_eq(s->dumps[0].path, "d00");
	expect_str_eq(s->dumps[ND - 1].path, "d11");
	expect_true(s->dumps[0].has_rss && !s->dumps[1].has_rss);
	expect_true(s->dumps[0].rss == 1048576 && s->dumps[0].part[0] == 524288);	/* heap */
	expect_true(s->dumps[0].part[3] == 262144 && s->dumps[0].part[6] == 262144);	/* code, shmem */
	expect_true(s->dumps[0].part[8] == -5 && s->dumps[0].part[5] == 0);	/* "12x" is no number */
	st = site_named(s, "leak", &rank);
	expect_true(st && st->trend.suspect);
	expect_int_eq(rank, 0);
	if (st) {
		expect_true(fabs(st->trend.slope - 3600) < 1);
		expect_true(st->trend.grew == 1.0 && st->trend.r2 > 0.99);
		expect_true(rseries_why(&st->trend, ND) == NULL);
	}
	st = site_named(s, "slowleak", &rank);
	expect_true(st && st->trend.suspect);
	expect_int_eq(rank, 1);
	st = site_named(s, "churn", &rank);
	expect_true(st && !st->trend.suspect);
	st = site_named(s, "spike", &rank);
	expect_true(st && !st->trend.suspect);
	if (st)
		expect_str_eq(rseries_why(&st->trend, ND), "not growing");
	st = site_named(s, "cache", &rank);
	expect_true(st && !st->trend.suspect);
	if (st)
		expect_str_eq(rseries_why(&st->trend, ND), "stopped growing");
	/* functions: the leaf frames, ranked alike */
	expect_str_eq(s->funcs[0].frames[0], "leak");
	expect_true(s->funcs[0].trend.suspect);
	expect_true(fabs(s->dumps[0].total[RS_INUSE_B] - 2600000) < 1);
	rseries_free(s);
}

/* Two dumps kept in the order given (the base first): growth order. */
static void test_diff(void)
{
	struct rseries *s = rseries_new(2);
	struct rprof p;
	struct rprof_sample sm[NSITES];
	int64_t vals[NSITES][4];
	const char *frames[NSITES][2];
	size_t idx[NSITES];
	char *name;

	make_dump(&p, sm, vals, frames, 11);
	expect_int_eq(rseries_add(s, 0, "late", &p), 0);
	make_dump(&p, sm, vals, frames, 4);
	expect_int_eq(rseries_add(s, 1, "early", &p), 0);
	rseries_finish(s, 1);
	expect_str_eq(s->dumps[0].path, "late");
	rseries_diff_order(s, 0, 0, 1, idx);
	/* from dump 11 back to dump 4: the spike grew (+50 MB), the leak fell most */
	name = rseries_site_name(&s->sites[idx[0]], 4);
	expect_str_eq(name, "spike < main");
	free(name);
	name = rseries_site_name(&s->sites[idx[NSITES - 1]], 1);
	expect_str_eq(name, "leak < ...");
	free(name);
	rseries_free(s);
}

/* A profile without inuse_space and more than one type is refused. */
/* A site's name: depth names, leaf first; a run of unnamed frames (a
 * stripped library's) counts as one, so that its named callers show. */
static void test_site_name(void)
{
	const char *f[] = { "0x7f01", "0x7f02", "0x7f03", "ones", "load_batch", "0x55aa",
			    "<module>", "main" };
	struct rseries_site site = { .frames = f, .nframes = 8 };
	char *name;

	name = rseries_site_name(&site, 4);
	expect_str_eq(name, "[3 unnamed] < ones < load_batch < 0x55aa < ...");
	free(name);
	name = rseries_site_name(&site, 6);
	expect_str_eq(name, "[3 unnamed] < ones < load_batch < 0x55aa < <module> < main");
	free(name);
	site.nframes = 3;
	name = rseries_site_name(&site, 1);
	expect_str_eq(name, "[3 unnamed]");
	free(name);
	site.nframes = 0;
	name = rseries_site_name(&site, 1);
	expect_str_eq(name, "[no stack]");
	free(name);
}

/* Sites past the wrappers: known ones (xmalloc, zmalloc, operator new) and
 * --skip's; a function that all frames are wrappers of keeps its leaf. */
static void test_skip(void)
{
	static const char *ty[] = { "inuse_space" };
	const char *a[] = { "xmalloc", "buf_get", "site_a", "main" };
	const char *b[] = { "zmalloc_usable", "site_b", "main" };
	const char *c[] = { "operator new(unsigned long)", "xmalloc" };
	const int64_t va = 100, vb = 20, vc = 3;
	struct rprof_sample sm[] = { { a, 4, &va }, { b, 3, &vb }, { c, 2, &vc } };
	struct rprof p = { .ntypes = 1, .type = ty, .unit = ty, .nsamples = 3, .samples = sm };
	struct skipsites *ss = skipsites_new();
	struct rseries *s = rseries_new(1);
	char *name;

	expect_true(ss != NULL);
	expect_int_eq(skipsites_match(ss, "xmalloc"), 1);
	expect_int_eq(skipsites_match(ss, "ngx_palloc"), 1);
	expect_int_eq(skipsites_match(ss, "PyObject_Malloc"), 1);
	expect_int_eq(skipsites_match(ss, "std::__new_allocator<int>::allocate(unsigned long, void const*)"), 1);
	expect_int_eq(skipsites_match(ss, "xmalloc_table"), 0);
	expect_int_eq(skipsites_match(ss, "buf_get"), 0);
	expect_int_eq(skipsites_add(ss, "("), -EINVAL);
	expect_int_eq(skipsites_add(ss, "^buf_"), 0);
	expect_int_eq(skipsites_match(ss, "buf_get"), 1);
	expect_int_eq(skipsites_count(ss, c, 2), 0);
	{
		/* unnamed helpers under a wrapper are its: the site is past it */
		const char *d[] = { "0x55a9edd538fb", "MemoryContextAlloc", "0x55a9edbcc671",
				    "LocalBufferAlloc", "ReadBuffer", "main" };
		const char *e[] = { "site_x", "0x1", "0x2", "0x3", "0x4", "0x5", "0x6", "0x7", "0x8",
				    "0x9", "0xa", "0xb", "0xc", "0xd", "0xe", "0xf", "xmalloc", "main" };

		expect_int_eq(skipsites_count(ss, d, 6), 2);
		/* a wrapper beyond the reach is not looked for */
		expect_int_eq(skipsites_count(ss, e, 18), 0);
		expect_int_eq(skipsites_count(ss, e + 1, 17), 16);
	}
	rseries_set_skip(s, ss);
	expect_int_eq(rseries_add(s, 0, "x", &p), 0);
	rseries_finish(s, 0);
	expect_int_eq(s->nfuncs, 3);
	expect_str_eq(s->funcs[0].frames[0], "site_a");
	expect_str_eq(s->funcs[1].frames[0], "site_b");
	expect_str_eq(s->funcs[2].frames[0], "operator new(unsigned long)");
	expect_int_eq(s->sites[0].skip, 2);
	name = rseries_site_name(&s->sites[0], 4);
	expect_str_eq(name, "site_a < main [via xmalloc < buf_get]");
	free(name);
	name = rseries_site_name(&s->sites[2], 1);
	expect_str_eq(name, "operator new(unsigned long) < ...");
	free(name);
	rseries_free(s);
	skipsites_free(ss);
}

static void test_no_live(void)
{
	static const char *ty[] = { "samples", "cpu" };
	struct rprof p = { .ntypes = 2, .type = ty, .unit = ty };
	struct rseries *s = rseries_new(1);

	expect_int_eq(rseries_add(s, 0, "x", &p), -EINVAL);
	expect_int_eq(rseries_add(s, 5, "x", &p), -EINVAL);
	rseries_free(s);
}

static void test_folded_line(void)
{
	const char *frames[] = { "leaf;x", "mid\nline", "root" };
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	folded_line(f, frames, 3, 42);
	folded_line(f, NULL, 0, 7);
	fclose(f);
	expect_str_eq(buf, "root;mid line;leaf:x 42\n[no stack] 7\n");
	free(buf);
}

static void test_escaping(void)
{
	char *buf = NULL, b[32];
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	rfmt_xml(f, "a<b>&\"'\x01\xff\xc3\xa9");
	fputc('|', f);
	rfmt_json(f, "q\"\\\n\xc3\xa9\xfe");
	fclose(f);
	expect_str_eq(buf, "a&lt;b&gt;&amp;&quot;&#39;??\xc3\xa9|\"q\\\"\\\\\\u000a\xc3\xa9\\ufffd\"");
	free(buf);
	expect_str_eq(rfmt_bytes(b, sizeof(b), 512), "512 B");
	expect_str_eq(rfmt_bytes(b, sizeof(b), 1536), "1.5 KiB");
	expect_str_eq(rfmt_bytes(b, sizeof(b), -3.0 * 1024 * 1024), "-3.0 MiB");
}

HARNESS_MAIN("report", T(test_site_name), T(test_skip), T(test_roundtrip), T(test_hostile), T(test_go_profile), T(test_bad_refs), T(test_ranking),
	     T(test_diff), T(test_no_live), T(test_folded_line), T(test_escaping))
