/* Unit tests for zsection: compressed sections inflated by us within bounds of bytes and time, or emptied; libelf and libdw then read ours. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <elfutils/libdw.h>
#include <endian.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "model/elfobj.h"
#include "harness.h"
#include "model/zsection.h"

/* ---- an ELF image built by hand: .shstrtab, .strtab, .symtab, two payloads ---- */

struct img {
	unsigned char *b;
	size_t len;
	Elf64_Shdr sh[6];
};

static const char shstr[] = "\0.shstrtab\0.strtab\0.symtab\0.debug_info\0.zdebug_line";
static const char names[] = "\0foo\0bar";

static unsigned sh_name(const char *n)
{
	for (size_t i = 0; i < sizeof(shstr); i++)
		if (!strcmp(shstr + i, n))
			return (unsigned)i;
	return 0;
}

/* Append n bytes at 8-byte alignment; their offset. */
static size_t append(struct img *m, const void *p, size_t n)
{
	size_t off = (m->len + 7) & ~(size_t)7;

	m->b = realloc(m->b, off + n);
	memset(m->b + m->len, 0, off - m->len);
	memcpy(m->b + off, p, n);
	m->len = off + n;
	return off;
}

static void section(struct img *m, int i, const char *name, uint32_t type, uint64_t flags,
		    const void *p, size_t n, uint32_t link, uint64_t entsize)
{
	m->sh[i] = (Elf64_Shdr){
		.sh_name = sh_name(name), .sh_type = type, .sh_flags = flags,
		.sh_offset = append(m, p, n), .sh_size = n, .sh_link = link,
		.sh_entsize = entsize, .sh_addralign = 1,
	};
}

/* zlib of p[0..n) (malloc'd), its length in *out. */
static unsigned char *zip(const void *p, size_t n, size_t *out)
{
	uLongf len = compressBound(n);
	unsigned char *z = malloc(len);

	compress2(z, &len, p, n, 9);
	*out = len;
	return z;
}

/* A gABI compressed section's bytes: Elf64_Chdr declaring size, then z. */
static unsigned char *gabi(const unsigned char *z, size_t zl, uint64_t size, size_t *out)
{
	Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = size, .ch_addralign = 1 };
	unsigned char *b = malloc(sizeof(ch) + zl);

	memcpy(b, &ch, sizeof(ch));
	memcpy(b + sizeof(ch), z, zl);
	*out = sizeof(ch) + zl;
	return b;
}

/* A GNU compressed section's bytes: "ZLIB", size big-endian, then z. */
static unsigned char *gnu(const unsigned char *z, size_t zl, uint64_t size, size_t *out)
{
	unsigned char *b = malloc(12 + zl);
	uint64_t be = htobe64(size);

	memcpy(b, "ZLIB", 4);
	memcpy(b + 4, &be, 8);
	memcpy(b + 12, z, zl);
	*out = 12 + zl;
	return b;
}

/*
 * The image: .strtab plain or (strtab != NULL) those bytes with
 * SHF_COMPRESSED; .debug_info (info, SHF_COMPRESSED) and .zdebug_line
 * (line, GNU) when given. Opened with elfobj_open_mem.
 */
static struct elfobj *build(const unsigned char *strtab, size_t strtab_len,
			    const unsigned char *info, size_t info_len,
			    const unsigned char *line, size_t line_len)
{
	struct img m = { 0 };
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_ehsize = sizeof(Elf64_Ehdr), .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 6,
		.e_shstrndx = 1,
	};
	Elf64_Sym syms[3] = {
		{ 0 },
		{ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = 1,
		  .st_value = 0x1000, .st_size = 16 },
		{ .st_name = 5, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = 1,
		  .st_value = 0x2000, .st_size = 16 },
	};
	struct elfobj *e;

	append(&m, &eh, sizeof(eh));
	section(&m, 1, ".shstrtab", SHT_STRTAB, 0, shstr, sizeof(shstr), 0, 0);
	if (strtab)
		section(&m, 2, ".strtab", SHT_STRTAB, SHF_COMPRESSED, strtab, strtab_len, 0, 0);
	else
		section(&m, 2, ".strtab", SHT_STRTAB, 0, names, sizeof(names), 0, 0);
	section(&m, 3, ".symtab", SHT_SYMTAB, 0, syms, sizeof(syms), 2, sizeof(Elf64_Sym));
	if (info)
		section(&m, 4, ".debug_info", SHT_PROGBITS, SHF_COMPRESSED, info, info_len, 0, 0);
	if (line)
		section(&m, 5, ".zdebug_line", SHT_PROGBITS, 0, line, line_len, 0, 0);
	eh.e_shoff = append(&m, m.sh, sizeof(m.sh));
	memcpy(m.b, &eh, sizeof(eh));
	e = elfobj_open_mem(m.b, m.len);
	free(m.b);
	return e;
}

/* 1 if e has a symbol called name. */
static int has_sym(const struct elfobj *e, const char *name)
{
	size_t n;
	const struct elfobj_sym *s = elfobj_syms(e, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return 1;
	return 0;
}

/* Section i's header in e. */
static GElf_Shdr shdr(const struct elfobj *e, size_t i)
{
	GElf_Shdr sh = { 0 };

	gelf_getshdr(elf_getscn(elfobj_elf(e), i), &sh);
	return sh;
}

/* The next note, which must hold what; none after it. */
static void expect_note(const char *what)
{
	char note[256];

	expect_int_eq(zsection_take_note(note, sizeof(note)), 1);
	if (!strstr(note, what))
		fprintf(stderr, "note: %s\n", note);
	expect_true(strstr(note, what) != NULL);
	expect_int_eq(zsection_take_note(note, sizeof(note)), 0);
}

/* A zlib stream of mib MiB of zeros, made fast: one 1 MiB chunk deflated
 * with a full flush, repeated, an empty final block, the Adler-32. */
static unsigned char *zeros_stream(unsigned mib, size_t *out)
{
	unsigned char *zero = calloc(1, 1 << 20), *a = malloc(1 << 21), *b = malloc(1 << 21), *s;
	uLong adler = adler32(0, NULL, 0), one;
	size_t la, lb, at;
	z_stream z = { 0 };

	deflateInit(&z, 9);
	z.next_in = zero;
	z.avail_in = 1 << 20;
	z.next_out = a;
	z.avail_out = 1 << 21;
	deflate(&z, Z_FULL_FLUSH);
	la = (1 << 21) - z.avail_out;
	z.next_in = zero;
	z.avail_in = 1 << 20;
	z.next_out = b;
	z.avail_out = 1 << 21;
	deflate(&z, Z_FULL_FLUSH);
	lb = (1 << 21) - z.avail_out;
	deflateEnd(&z);
	one = adler32(adler, zero, 1 << 20);
	for (unsigned i = 0; i < mib; i++)
		adler = adler32_combine(adler, one, 1 << 20);
	s = malloc(la + (size_t)(mib - 1) * lb + 6);
	memcpy(s, a, la);
	at = la;
	for (unsigned i = 1; i < mib; i++, at += lb)
		memcpy(s + at, b, lb);
	s[at++] = 0x03;
	s[at++] = 0x00;
	for (int k = 3; k >= 0; k--)
		s[at++] = (unsigned char)(adler >> (8 * k));
	free(zero);
	free(a);
	free(b);
	*out = at;
	return s;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- tests ---- */

/* A compressed .strtab is inflated by us: elf_strptr names the symbols. */
static void test_strtab(void)
{
	size_t zl, sl;
	unsigned char *z = zip(names, sizeof(names), &zl), *s = gabi(z, zl, sizeof(names), &sl);
	uint64_t before = zsection_inflated();
	struct elfobj *e = build(s, sl, NULL, 0, NULL, 0);

	expect_true(e != NULL);
	if (e) {
		expect_true(has_sym(e, "foo") && has_sym(e, "bar"));
		expect_true(!(shdr(e, 2).sh_flags & SHF_COMPRESSED));
		expect_int_eq(shdr(e, 2).sh_size, sizeof(names));
		elfobj_free(e);
	}
	expect_int_eq(zsection_inflated() - before, sizeof(names));
	free(s);
	free(z);
}

/* Declaring 2 GiB: never inflated, emptied; the file still opens. */
static void test_strtab_bomb(void)
{
	size_t zl, sl;
	unsigned char *z = zip(names, sizeof(names), &zl), *s = gabi(z, zl, 2ULL << 30, &sl);
	uint64_t before = zsection_inflated();
	struct elfobj *e = build(s, sl, NULL, 0, NULL, 0);

	expect_true(e != NULL);
	if (e) {
		expect_true(!has_sym(e, "foo"));
		expect_int_eq(shdr(e, 2).sh_type, SHT_NOBITS);
		elfobj_free(e);
	}
	expect_int_eq(zsection_inflated(), before);
	expect_note("compressed section .strtab (2048 MiB inflated) skipped, and any other over 256 MiB");
	free(s);
	free(z);
}

/* DWARF sections: inflated (or emptied) before libdw begins, never by it. */
static void test_dwarf(void)
{
	static unsigned char junk[4096];
	size_t zl, il, ll, gl;
	unsigned char *z = zip(junk, sizeof(junk), &zl);
	unsigned char *info = gabi(z, zl, sizeof(junk), &il), *line = gnu(z, zl, sizeof(junk), &ll);
	unsigned char *big = gabi(z, zl, 300ULL << 20, &gl);
	uint64_t before = zsection_inflated();
	struct elfobj *e = build(NULL, 0, info, il, line, ll);
	Dwarf *dw;

	expect_true(e != NULL);
	if (!e)
		goto out;
	/* opened: nothing inflated yet */
	expect_int_eq(zsection_inflated(), before);
	dw = elfobj_dwarf_begin(e);
	expect_int_eq(zsection_inflated() - before, 2 * sizeof(junk));
	expect_true(!(shdr(e, 4).sh_flags & SHF_COMPRESSED));
	expect_int_eq(shdr(e, 4).sh_size, sizeof(junk));
	expect_int_eq(shdr(e, 5).sh_size, sizeof(junk));
	if (dw)
		dwarf_end(dw);
	/* a second begin inflates nothing more */
	dw = elfobj_dwarf_begin(e);
	expect_int_eq(zsection_inflated() - before, 2 * sizeof(junk));
	if (dw)
		dwarf_end(dw);
	elfobj_free(e);

	/* over the per-section cap: emptied, the rest inflated */
	e = build(NULL, 0, big, gl, line, ll);
	expect_true(e != NULL);
	if (!e)
		goto out;
	before = zsection_inflated();
	dw = elfobj_dwarf_begin(e);
	expect_int_eq(shdr(e, 4).sh_type, SHT_NOBITS);
	expect_int_eq(shdr(e, 5).sh_size, sizeof(junk));
	expect_int_eq(zsection_inflated() - before, sizeof(junk));
	if (dw)
		dwarf_end(dw);
	elfobj_free(e);
	/* said at the .strtab bomb already: once per reason */
	expect_int_eq(zsection_take_note((char[256]){ 0 }, 256), 0);
out:
	free(z);
	free(info);
	free(line);
	free(big);
}

/* Streams that do not end at their declared size, a GNU section that
 * inflates to another GNU stream: emptied, said only with -v. */
static void test_bad(void)
{
	static unsigned char junk[4096];
	size_t zl, il, ll, dl, inl;
	unsigned char *z = zip(junk, sizeof(junk), &zl);
	unsigned char *shorter = gabi(z, zl, sizeof(junk) + 1, &il);
	unsigned char *longer = gnu(z, zl, sizeof(junk) - 1, &ll);
	unsigned char *inner, *zz, *dbl;
	struct elfobj *e;
	Dwarf *dw;

	/* .zdebug_line whose inflated bytes are a GNU stream again */
	inner = gnu(z, zl, sizeof(junk), &inl);
	zz = zip(inner, inl, &zl);
	dbl = gnu(zz, zl, inl, &dl);
	e = build(NULL, 0, shorter, il, longer, ll);
	expect_true(e != NULL);
	if (e) {
		dw = elfobj_dwarf_begin(e);
		expect_int_eq(shdr(e, 4).sh_type, SHT_NOBITS);
		expect_int_eq(shdr(e, 5).sh_type, SHT_NOBITS);
		if (dw)
			dwarf_end(dw);
		elfobj_free(e);
	}
	e = build(NULL, 0, NULL, 0, dbl, dl);
	expect_true(e != NULL);
	if (e) {
		dw = elfobj_dwarf_begin(e);
		expect_int_eq(shdr(e, 5).sh_type, SHT_NOBITS);
		if (dw)
			dwarf_end(dw);
		elfobj_free(e);
	}
	expect_int_eq(zsection_take_note((char[256]){ 0 }, 256), 0);
	free(z);
	free(zz);
	free(shorter);
	free(longer);
	free(inner);
	free(dbl);
}

/* The budget of all sections: past it, emptied and said once. */
static void test_budget(void)
{
	static unsigned char junk[4096];
	size_t zl, il;
	unsigned char *z = zip(junk, sizeof(junk), &zl), *info = gabi(z, zl, sizeof(junk), &il);
	uint64_t saved = zsection_total_max;
	struct elfobj *e;
	Dwarf *dw;

	zsection_total_max = zsection_inflated() + sizeof(junk) - 1;
	e = build(NULL, 0, info, il, NULL, 0);
	expect_true(e != NULL);
	if (e) {
		dw = elfobj_dwarf_begin(e);
		expect_int_eq(shdr(e, 4).sh_type, SHT_NOBITS);
		if (dw)
			dwarf_end(dw);
		elfobj_free(e);
	}
	/* spent to the last byte, or past it: still nothing */
	zsection_total_max = zsection_inflated() > 0 ? zsection_inflated() - 1 : 0;
	e = build(NULL, 0, info, il, NULL, 0);
	expect_true(e != NULL);
	if (e) {
		dw = elfobj_dwarf_begin(e);
		expect_int_eq(shdr(e, 4).sh_type, SHT_NOBITS);
		if (dw)
			dwarf_end(dw);
		elfobj_free(e);
	}
	expect_note("compressed section .debug_info (0.0 MiB inflated) skipped, and any other past");
	zsection_total_max = saved;
	free(z);
	free(info);
}

/* The time gate: a deadline, and a stop request, cut an inflation short
 * (256 MiB of zeros take about a second here) within the grace. */
static void test_gate(void)
{
	static volatile sig_atomic_t stop;
	size_t zl, il;
	unsigned char *z = zeros_stream(256, &zl), *info = gabi(z, zl, 256ULL << 20, &il);
	struct elfobj *e;
	double t0;
	Dwarf *dw;

	/* a deadline 100 ms away */
	e = build(NULL, 0, info, il, NULL, 0);
	expect_true(e != NULL);
	if (!e)
		goto out;
	t0 = now();
	zsection_set_deadline((uint64_t)((t0 + 0.1) * 1e9));
	dw = elfobj_dwarf_begin(e);
	if (shdr(e, 4).sh_type != SHT_NOBITS)
		printf("test_gate: 256 MiB inflated within 100 ms: the deadline is not tested\n");
	else
		expect_true(now() - t0 < 1.0);
	zsection_set_deadline(0);
	if (dw)
		dwarf_end(dw);
	elfobj_free(e);
	expect_note("compressed section .debug_info left unread, and any other after it");

	/* a stop request: ZSECTION_GRACE_NS more */
	e = build(NULL, 0, info, il, NULL, 0);
	expect_true(e != NULL);
	if (!e)
		goto out;
	stop = 1;
	zsection_watch_stop(&stop);
	t0 = now();
	dw = elfobj_dwarf_begin(e);
	if (shdr(e, 4).sh_type == SHT_NOBITS)
		expect_true(now() - t0 < ZSECTION_GRACE_NS / 1e9 + 1.0);
	zsection_watch_stop(NULL);
	if (dw)
		dwarf_end(dw);
	elfobj_free(e);
	/* once the watch is off, inflating goes on again */
	free(z);
	free(info);
	z = zeros_stream(4, &zl);
	info = gabi(z, zl, 4 << 20, &il);
	e = build(NULL, 0, info, il, NULL, 0);
	if (e) {
		dw = elfobj_dwarf_begin(e);
		expect_int_eq(shdr(e, 4).sh_size, 4 << 20);
		if (dw)
			dwarf_end(dw);
		elfobj_free(e);
	}
out:
	free(z);
	free(info);
}

/* system() of a formatted command. */
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A real object compressed by objcopy (gABI and GNU): libdw reads its
 * compile units and line tables from the sections we inflated. */
static void test_objcopy(void)
{
	static const char *const kinds[] = { "zlib-gabi", "zlib-gnu" };
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	char path[256];

	for (int k = 0; k < 2; k++) {
		struct elfobj *e;
		Dwarf_Off off = 0, next;
		size_t hsize, nlines = 0;
		Dwarf_Lines *lines;
		Dwarf_Die cu;
		Dwarf *dw;

		snprintf(path, sizeof(path), "/tmp/zsection-test.%d.%s", (int)getpid(), kinds[k]);
		if (sh("objcopy --compress-debug-sections=%s %s/fixtures/printaddrs %s", kinds[k], b,
		       path)) {
			printf("test_objcopy: objcopy --compress-debug-sections=%s failed, skipped\n",
			       kinds[k]);
			continue;
		}
		e = elfobj_open_fd(open(path, O_RDONLY | O_CLOEXEC));
		unlink(path);
		expect_true(e && elfobj_has_debug_info(e));
		if (!e)
			continue;
		dw = elfobj_dwarf_begin(e);
		expect_true(dw != NULL);
		if (dw && !dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) &&
		    dwarf_offdie(dw, off + hsize, &cu) && !dwarf_getsrclines(&cu, &lines, &nlines))
			expect_true(nlines > 0);
		else
			expect_true(!"no line table");
		if (dw)
			dwarf_end(dw);
		elfobj_free(e);
	}
}

static void setup(void)
{
	alarm(60);
}

HARNESS_MAIN("zsection", T(setup), T(test_strtab), T(test_strtab_bomb), T(test_dwarf), T(test_bad),
	     T(test_budget), T(test_gate), T(test_objcopy))
