/* Unit tests for dump files: numbered names, atomic writes, pprof bytes decoded back. */
/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>
#include "harness.h"
#include "output/dump.h"

/* The writers call the symbolizer only when d->sym != NULL; these tests pass
 * NULL. Weak stubs let this test link before (or without) src/stacks/symbolize.c. */
__attribute__((weak)) int symbolizer_lookup(struct symbolizer *s, uint64_t addr,
					    struct sym_info *out)
{
	(void)s; (void)addr; (void)out;
	return -ENOENT;
}

__attribute__((weak)) const char *symbolizer_build_id(struct symbolizer *s,
						      const struct proc_map *map)
{
	(void)s; (void)map;
	return NULL;
}

static void test_numbered_path(void)
{
	static const struct { const char *in; unsigned n; const char *out; } c[] = {
		{ "out.heap", 3, "out.0003.heap" },
		{ "out", 3, "out.0003" },
		{ "dir.x/out", 3, "dir.x/out.0003" },
		{ "dir.x/out.pb.gz", 1, "dir.x/out.pb.0001.gz" },
		{ "/tmp/a/.heap", 2, "/tmp/a/.heap.0002" },
		{ "./out.heap", 12345, "./out.12345.heap" },
		{ "out.", 9, "out.0009." },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *s = dump_numbered_path(c[i].in, c[i].n);

		expect_str_eq(s, c[i].out);
		free(s);
	}
}

/* ---- a minimal profile.proto reader ---- */

struct pbr {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_varint(struct pbr *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end) {
			r->bad = 1;
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

struct decoded {
	char *strs[64];
	int nstrs;
	uint64_t sample_type[8][2];
	int ntypes;
	uint64_t period, period_type[2];
	uint64_t values[8][4];
	int nsamples, nlocs, nmappings, ntime;
	uint64_t comments[8];
	int ncomments;
	uint64_t default_type;  /* field 14, 0 when absent */
};

/* Fields 1 and 2 of a ValueType. */
static void rd_value_type(const uint8_t *p, size_t n, uint64_t out[2])
{
	struct pbr r = { p, p + n, 0 };

	while (r.p < r.end && !r.bad) {
		uint64_t k = rd_varint(&r);

		if ((k & 7) != 0 || (k >> 3) < 1 || (k >> 3) > 2) {
			r.bad = 1;
			break;
		}
		out[(k >> 3) - 1] = rd_varint(&r);
	}
}

/* Packed field 2 (values) of a Sample. */
static void rd_sample(const uint8_t *p, size_t n, uint64_t v[4])
{
	struct pbr r = { p, p + n, 0 };

	while (r.p < r.end && !r.bad) {
		uint64_t k = rd_varint(&r);

		if ((k & 7) == 0) {
			rd_varint(&r);
			continue;
		}
		uint64_t len = rd_varint(&r);
		if (k >> 3 == 2) {
			struct pbr s = { r.p, r.p + len, 0 };

			for (int i = 0; i < 4; i++)
				v[i] = rd_varint(&s);
		}
		r.p += len;
	}
}

static int decode(const char *path, struct decoded *d)
{
	static uint8_t buf[16 << 20];
	gzFile gz = gzopen(path, "rb");
	struct pbr r;
	int n;

	memset(d, 0, sizeof(*d));
	if (!gz)
		return -1;
	n = gzread(gz, buf, sizeof(buf));
	gzclose(gz);
	if (n <= 0)
		return -1;
	r.p = buf;
	r.end = buf + n;
	r.bad = 0;
	while (r.p < r.end && !r.bad) {
		uint64_t k = rd_varint(&r), f = k >> 3, v, len;

		if ((k & 7) == 0) {
			v = rd_varint(&r);
			if (f == 12)
				d->period = v;
			else if (f == 9)
				d->ntime++;
			else if (f == 13 && d->ncomments < 8)
				d->comments[d->ncomments++] = v;
			else if (f == 14)
				d->default_type = v;
			continue;
		}
		if ((k & 7) != 2)
			return -1;
		len = rd_varint(&r);
		if (len > (uint64_t)(r.end - r.p))
			return -1;
		if (f == 1 && d->ntypes < 8)
			rd_value_type(r.p, len, d->sample_type[d->ntypes++]);
		else if (f == 11)
			rd_value_type(r.p, len, d->period_type);
		else if (f == 2 && ++d->nsamples <= 8)
			rd_sample(r.p, len, d->values[d->nsamples - 1]);
		else if (f == 3)
			d->nmappings++;
		else if (f == 4)
			d->nlocs++;
		else if (f == 6 && d->nstrs < 64)
			d->strs[d->nstrs++] = strndup((const char *)r.p, len);
		r.p += len;
	}
	return r.bad ? -1 : 0;
}

static const char *dstr(const struct decoded *d, uint64_t i)
{
	return i < (uint64_t)d->nstrs ? d->strs[i] : "(bad index)";
}

static void decoded_free(struct decoded *d)
{
	for (int i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
}

/* ---- fixtures ---- */

static struct proc_map fake_maps[] = {
	{ .start = 0x400000, .end = 0x401000, .offset = 0, .prot = PROC_MAP_R,
	  .dev_major = 8, .dev_minor = 1, .inode = 123456, .path = "/usr/bin/fake" },
	{ .start = 0x401000, .end = 0x402000, .offset = 0x1000, .prot = PROC_MAP_R | PROC_MAP_X,
	  .dev_major = 8, .dev_minor = 1, .inode = 123456, .path = "/usr/bin/fake" },
	{ .start = 0x7ffd000, .end = 0x7fff000, .prot = PROC_MAP_R | PROC_MAP_W, .path = NULL },
};
static const struct proc_maps fake = { fake_maps, 3 };

/* Stack a: 3 x 1024 allocated, 2 freed; stack b: 2 x 512, none freed. */
static struct profile *make_profile(uint64_t rate)
{
	const uint64_t a[] = { 0x401124, 0x401457 }, b[] = { 0x401200, 0x401457 };
	struct profile *p = profile_new(rate);

	profile_record_alloc(p, a, 2, 1024, 0x10000);
	profile_record_alloc(p, a, 2, 1024, 0x20000);
	profile_record_alloc(p, a, 2, 1024, 0x30000);
	profile_record_alloc(p, b, 2, 512, 0x40000);
	profile_record_alloc(p, b, 2, 512, 0x50000);
	profile_record_free(p, 0x10000);
	profile_record_free(p, 0x20000);
	profile_add_drops(p, 3);
	return p;
}

static char tmpdir[64];

static int count_dir_entries(void)
{
	DIR *dir = opendir(tmpdir);
	struct dirent *e;
	int n = 0;

	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

static void test_pprof_decoded(void)
{
	const char *extra[] = { "hello world" };
	struct dump_info di = { .pid = 42, .time_nanos = 1700000000000000000ULL,
				.duration_nanos = 5000000000ULL, .maps = &fake,
				.comments = extra, .ncomments = 1 };
	struct profile *p = make_profile(524288);
	char path[128];
	struct decoded d;
	FILE *f;
	uint8_t magic[2] = { 0 };

	snprintf(path, sizeof(path), "%s/out.pb.gz", tmpdir);
	expect_int_eq(dump_write_file(path, DUMP_PPROF, p, &di), 0);
	f = fopen(path, "rb");
	expect_true(f && fread(magic, 1, 2, f) == 2);
	if (f)
		fclose(f);
	expect_int_eq(magic[0], 0x1f);
	expect_int_eq(magic[1], 0x8b);
	expect_int_eq(count_dir_entries(), 1);  /* no temporary file left */

	expect_int_eq(decode(path, &d), 0);
	expect_true(d.nstrs > 0 && d.strs[0][0] == '\0');
	expect_int_eq(d.ntypes, 4);
	expect_str_eq(dstr(&d, d.sample_type[0][0]), "alloc_objects");
	expect_str_eq(dstr(&d, d.sample_type[0][1]), "count");
	expect_str_eq(dstr(&d, d.sample_type[1][0]), "alloc_space");
	expect_str_eq(dstr(&d, d.sample_type[2][0]), "inuse_objects");
	expect_str_eq(dstr(&d, d.sample_type[3][0]), "inuse_space");
	expect_str_eq(dstr(&d, d.sample_type[3][1]), "bytes");
	expect_str_eq(dstr(&d, d.period_type[0]), "space");
	expect_str_eq(dstr(&d, d.period_type[1]), "bytes");
	expect_int_eq(d.period, 524288);
	expect_int_eq(d.ntime, 1);
	expect_int_eq(d.nsamples, 2);
	expect_int_eq(d.nlocs, 3);
	expect_int_eq(d.nmappings, 1);          /* only the r-x line */
	expect_int_eq(d.values[0][0], 1537);
	expect_int_eq(d.values[0][1], 1574400);
	expect_int_eq(d.values[0][2], 512);
	expect_int_eq(d.values[0][3], 524800);
	expect_int_eq(d.values[1][0], 2049);    /* 2 x 512 at 512 KiB */
	expect_int_eq(d.values[1][1], 1049088);
	expect_int_eq(d.values[1][2], 2049);
	expect_int_eq(d.values[1][3], 1049088);
	expect_int_eq(d.ncomments, 4);
	expect_str_eq(dstr(&d, d.comments[0]), "heapattach pid=42");
	expect_str_eq(dstr(&d, d.comments[1]), "rate=524288");
	expect_str_eq(dstr(&d, d.comments[2]), "dropped events: 3");
	expect_str_eq(dstr(&d, d.comments[3]), "hello world");
	decoded_free(&d);
	unlink(path);
	profile_free(p);
}

/* p written as pprof to path with di, then decoded into d: 0 or -1. */
static int write_decode(const char *path, const struct profile *p, const struct dump_info *di,
			struct decoded *d)
{
	FILE *f = fopen(path, "wb");
	int rc = f ? pprof_write(f, p, di) : -1;

	if (f)
		fclose(f);
	return rc ? -1 : decode(path, d);
}

/* A delta (pprof_base): each bucket's figures since the base, a bucket
 * where nothing changed left out, a negative in-use figure kept; and the
 * default sample type. */
static void test_pprof_delta(void)
{
	const uint64_t a[] = { 0x401124, 0x401457 }, c[] = { 0x401300, 0x401457 };
	struct dump_info di = { .pid = 42, .maps = &fake, .default_type = "alloc_space" };
	struct profile *p = make_profile(1);
	struct pprof_base base;
	struct decoded d;
	char path[128];

	pprof_base_take(p, &base);
	expect_int_eq(base.n, 2);
	profile_record_alloc(p, a, 2, 1024, 0x60000);
	profile_record_free(p, 0x30000);		/* a: one more, one less in use */
	profile_record_alloc(p, c, 2, 256, 0x70000);	/* c: new */
	di.base = &base;
	snprintf(path, sizeof(path), "%s/delta.pb.gz", tmpdir);
	expect_int_eq(write_decode(path, p, &di, &d), 0);
	expect_int_eq(d.nsamples, 2);			/* b: nothing changed */
	expect_u64_eq(d.values[0][0], 1);
	expect_u64_eq(d.values[0][1], 1024);
	expect_u64_eq(d.values[0][2], 0);
	expect_u64_eq(d.values[0][3], 0);
	expect_u64_eq(d.values[1][0], 1);
	expect_u64_eq(d.values[1][3], 256);
	expect_str_eq(dstr(&d, d.default_type), "alloc_space");
	decoded_free(&d);

	profile_record_free(p, 0x40000);		/* b: one fewer in use than at the base */
	expect_int_eq(write_decode(path, p, &di, &d), 0);
	expect_int_eq(d.nsamples, 3);
	expect_u64_eq(d.values[1][0], 0);
	expect_u64_eq(d.values[1][2], (uint64_t)-1);	/* two's complement, as int64 */
	expect_u64_eq(d.values[1][3], (uint64_t)-512);
	decoded_free(&d);

	di.base = NULL;				/* no delta, no default type: as before */
	di.default_type = NULL;
	expect_int_eq(write_decode(path, p, &di, &d), 0);
	expect_int_eq(d.nsamples, 3);
	expect_u64_eq(d.values[0][0], 4);
	expect_u64_eq(d.default_type, 0);
	decoded_free(&d);
	unlink(path);
	pprof_base_free(&base);
	profile_free(p);
}

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static void test_legacy_text(void)
{
	struct dump_info di = { .pid = 7, .maps = &fake };
	struct profile *p = make_profile(524288);
	char path[128];
	const char *want =
		"heap profile:      3:     2048 [     5:     4096] @ heap_v2/524288\n"
		"# heapattach pid=7\n"
		"# rate=524288\n"
		"# dropped events: 3\n"
		"     1:     1024 [     3:     3072] @ 0x0000000000401124 0x0000000000401457\n"
		"     2:     1024 [     2:     1024] @ 0x0000000000401200 0x0000000000401457\n"
		"\n"
		"MAPPED_LIBRARIES:\n"
		"00400000-00401000 r--p 00000000 08:01 123456                             /usr/bin/fake\n"
		"00401000-00402000 r-xp 00001000 08:01 123456                             /usr/bin/fake\n"
		"07ffd000-07fff000 rw-p 00000000 00:00 0\n";

	snprintf(path, sizeof(path), "%s/out.heap", tmpdir);
	/* replaces an existing file */
	expect_int_eq(dump_write_file(path, DUMP_LEGACY, p, &di), 0);
	profile_free(p);
	p = make_profile(524288);
	expect_int_eq(dump_write_file(path, DUMP_LEGACY, p, &di), 0);
	expect_str_eq(slurp(path), want);
	expect_int_eq(count_dir_entries(), 1);
	unlink(path);
	profile_free(p);
}

/* Nothing freed, rate 1: "heapprofile", alloc bytes bumped so pprof keeps 4 values. */
static void test_legacy_exact(void)
{
	const uint64_t a[] = { 0xabc };
	struct dump_info di = { .pid = 1 };
	struct profile *p = profile_new(1);
	char path[128];
	const char *want =
		"heap profile:      1:       16 [     1:       17] @ heapprofile\n"
		"# heapattach pid=1\n"
		"# rate=1\n"
		"     1:       16 [     1:       16] @ 0x0000000000000abc\n";

	profile_record_alloc(p, a, 1, 16, 0x1000);
	snprintf(path, sizeof(path), "%s/exact.heap", tmpdir);
	expect_int_eq(dump_write_file(path, DUMP_LEGACY, p, &di), 0);
	expect_str_eq(slurp(path), want);
	unlink(path);
	profile_free(p);
}

/*
 * Write p (two samples, the marks' stacks) to name as legacy, which must
 * read want, and as pprof: nlocs Locations, and nmarks of the marks'
 * names among its strings.
 */
static void check_marks(struct profile *p, const char *name, const char *want, int nlocs,
			int nmarks)
{
	struct dump_info di = { .pid = 1 };
	char path[128];
	struct decoded d;
	int named = 0;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	expect_int_eq(dump_write_file(path, DUMP_LEGACY, p, &di), 0);
	expect_str_eq(slurp(path), want);
	expect_int_eq(dump_write_file(path, DUMP_PPROF, p, &di), 0);
	expect_int_eq(decode(path, &d), 0);
	expect_int_eq(d.nsamples, 2);
	expect_int_eq(d.nlocs, nlocs);
	for (int i = 0; i < (int)d.nstrs; i++)
		named += !strcmp(d.strs[i], PROFILE_TRUNCATED_NAME) ||
			 !strcmp(d.strs[i], PROFILE_UNWALKABLE_NAME);
	expect_int_eq(named, nmarks);
	decoded_free(&d);
	expect_int_eq(dump_write_file(path, DUMP_FOLDED, p, &di), 0);
	expect_true(strstr(slurp(path), "];0xabb ") != NULL);	/* the mark by its name */
	unlink(path);
}

/* A stack cut short ends in the mark: a frame "[truncated]" in pprof, and
 * in legacy the mark's address, a comment and a mapping that names it. */
static void test_truncated(void)
{
	const uint64_t a[] = { 0xabc, PROFILE_PC_TRUNCATED }, b[] = { 0xabc };
	struct profile *p = profile_new(1);
	const char *want =
		"heap profile:      2:       48 [     2:       49] @ heapprofile\n"
		"# heapattach pid=1\n"
		"# rate=1\n"
		"# stacks cut short end in 0x7ffffffffffff001, the mapping [truncated]\n"
		"     1:       16 [     1:       16] @ 0x0000000000000abc 0x7ffffffffffff001\n"
		"     1:       32 [     1:       32] @ 0x0000000000000abc\n"
		"\n"
		"MAPPED_LIBRARIES:\n"
		"7ffffffffffff000-7ffffffffffff002 r-xp 00000000 00:00 0"
		"                  [truncated]\n";

	profile_record_alloc(p, a, 2, 16, 0x1000);
	profile_record_alloc(p, b, 1, 32, 0x2000);
	check_marks(p, "trunc.heap", want, 2, 1);
	profile_free(p);
}

/* A stack no unwinder could follow on ends in its mark: a frame
 * "[unwalkable]" in pprof and folded, and in legacy the mark's address,
 * a comment and a mapping that names it (beside the truncation mark's). */
static void test_unwalkable(void)
{
	const uint64_t a[] = { 0xabc, PROFILE_PC_UNWALKABLE }, b[] = { 0xabc, PROFILE_PC_TRUNCATED };
	struct profile *p = profile_new(1);
	const char *want =
		"heap profile:      2:       48 [     2:       49] @ heapprofile\n"
		"# heapattach pid=1\n"
		"# rate=1\n"
		"# stacks cut short end in 0x7ffffffffffff001, the mapping [truncated]\n"
		"# stacks that no unwinder could follow on end in 0x7ffffffffffff011, "
		"the mapping [unwalkable]\n"
		"     1:       16 [     1:       16] @ 0x0000000000000abc 0x7ffffffffffff011\n"
		"     1:       32 [     1:       32] @ 0x0000000000000abc 0x7ffffffffffff001\n"
		"\n"
		"MAPPED_LIBRARIES:\n"
		"7ffffffffffff000-7ffffffffffff002 r-xp 00000000 00:00 0"
		"                  [truncated]\n"
		"7ffffffffffff010-7ffffffffffff012 r-xp 00000000 00:00 0"
		"                  [unwalkable]\n";

	profile_record_alloc(p, a, 2, 16, 0x1000);
	profile_record_alloc(p, b, 2, 32, 0x2000);
	check_marks(p, "unwalk.heap", want, 3, 2);
	profile_free(p);
}

/* Enough samples that the writer deflates in several pieces (FLUSH_AT). */
static void test_pprof_large(void)
{
	struct dump_info di = { .pid = 9, .maps = &fake };
	struct profile *p = profile_new(4096);
	const int n = 50000;
	char path[128];
	struct decoded d;

	for (int i = 0; i < n; i++) {
		uint64_t pcs[4] = { 0x401000 + i % 4000, 0x401000 + i / 4000, 0x401fff, 0xfff };

		profile_record_alloc(p, pcs, 4, 4096, 0x100000 + i * 16);
	}
	snprintf(path, sizeof(path), "%s/big.pb.gz", tmpdir);
	expect_int_eq(dump_write_file(path, DUMP_PPROF, p, &di), 0);
	expect_int_eq(decode(path, &d), 0);
	expect_int_eq(d.nsamples, n);
	expect_int_eq(d.nlocs, 4000 + 2);       /* 0x401fff also a leaf; 0xfff */
	expect_int_eq(d.period, 4096);
	/* 1 x 4096 at rate 4096: scale 1/(1-e^-1) */
	expect_int_eq(d.values[0][0], 1);
	expect_int_eq(d.values[0][1], 6479);
	decoded_free(&d);
	unlink(path);
	profile_free(p);
}

static void test_write_errors(void)
{
	struct dump_info di = { .pid = 1 };
	struct profile *p = make_profile(4096);
	char path[128];

	snprintf(path, sizeof(path), "%s/no/such/dir/out.heap", tmpdir);
	expect_int_eq(dump_write_file(path, DUMP_PPROF, p, &di), -ENOENT);
	/* rename onto a directory fails: the temp file must be gone */
	snprintf(path, sizeof(path), "%s/adir", tmpdir);
	expect_int_eq(mkdir(path, 0755), 0);
	expect_true(dump_write_file(path, DUMP_LEGACY, p, &di) < 0);
	expect_int_eq(count_dir_entries(), 1);
	rmdir(path);
	/* a full disk: /dev/full is not a directory we can create in, so use
	 * a write error through the FILE interface directly */
	FILE *f = fopen("/dev/full", "w");
	if (f) {
		expect_true(pprof_write(f, p, &di) < 0);
		fclose(f);
	}
	profile_free(p);
}

/* A FIFO, a device node (when mknod is allowed) and a symbolic link are
 * refused and left as they were; nothing is left behind. */
static void test_not_regular(void)
{
	struct dump_info di = { .pid = 1 };
	struct profile *p = make_profile(4096);
	struct dump_dir dd;
	char path[160], target[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	expect_int_eq(mkfifo(path, 0600), 0);
	expect_true(dump_write_file(path, DUMP_PPROF, p, &di) < 0);
	expect_true(dump_dir_open(&dd, path, 1) < 0);
	expect_int_eq(dd.fd, -1);
	expect_true(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode));
	unlink(path);

	snprintf(path, sizeof(path), "%s/null", tmpdir);
	if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0) {
		expect_true(dump_write_file(path, DUMP_LEGACY, p, &di) < 0);
		expect_true(lstat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
			    st.st_rdev == makedev(1, 3));
		unlink(path);
	}

	snprintf(path, sizeof(path), "%s/link.heap", tmpdir);
	snprintf(target, sizeof(target), "%s/target.heap", tmpdir);
	expect_int_eq(symlink(target, path), 0);
	expect_true(dump_write_file(path, DUMP_PPROF, p, &di) < 0);
	expect_true(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	expect_int_eq(access(target, F_OK), -1);
	unlink(path);
	expect_int_eq(count_dir_entries(), 0);
	profile_free(p);
}

/* Profiles hold the target's names and paths: mode 0600 whatever the umask,
 * also when they replace a file that was 0644. The probe leaves nothing. */
static void test_mode(void)
{
	struct dump_info di = { .pid = 1 };
	struct profile *p = make_profile(4096);
	struct dump_dir dd;
	char path[160];
	struct stat st;
	mode_t old = umask(0);
	int fd;

	snprintf(path, sizeof(path), "%s/m.heap", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	expect_true(fd >= 0);
	close(fd);
	expect_int_eq(dump_dir_open(&dd, path, 1), 0);
	expect_int_eq(count_dir_entries(), 1);
	expect_int_eq(dump_write_at(&dd, path, DUMP_PPROF, p, &di), 0);
	expect_true(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	dump_dir_close(&dd);
	expect_int_eq(dd.fd, -1);
	umask(old);
	unlink(path);
	profile_free(p);
}

static void setup(void)
{
	strcpy(tmpdir, "/tmp/test_dump.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(99);
	}
}

static void teardown(void)
{
	rmdir(tmpdir);
}

static void test_setup(void) { setup(); }
static void test_teardown(void) { teardown(); expect_int_eq(access(tmpdir, F_OK), -1); }

HARNESS_MAIN("dump",
	T(test_numbered_path),
	T(test_setup),
	T(test_pprof_decoded),
	T(test_pprof_delta),
	T(test_legacy_text),
	T(test_legacy_exact),
	T(test_truncated),
	T(test_unwalkable),
	T(test_pprof_large),
	T(test_write_errors),
	T(test_not_regular),
	T(test_mode),
	T(test_teardown))
