/* Unit tests for elfobj: an ELF built in memory (symbols, versions, bias, build id), corrupt and truncated images, real files. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>
#include "model/debugfile.h"
#include "model/elfobj.h"
#include "stacks/frametab.h"
#include "harness.h"
#include "model/mapguard.h"
#include "model/proc.h"
#include "shm.h"

/* ---- a small ELF image, built by hand ---- */

#define IMG_SIZE   0x600
#define OFF_PHDR   0x40
#define OFF_NOTE   0x120
#define OFF_DYN    0x140
#define OFF_SYMTAB 0x160
#define OFF_STRTAB 0x210
#define OFF_DYNSYM 0x260
#define OFF_DYNSTR 0x2b0
#define OFF_VERSYM 0x2b8
#define OFF_SHSTR  0x2c0
#define OFF_SHDR   0x380
#define NSHDR      10

static const char strtab[] = "\0malloc@@GLIBC_2.2.5\0foo@OLD\0foo@@NEW\0bar\0ifn\0loc";
static const char dynstr[] = "\0baz";
static const char shstr[] = "\0.note.gnu.build-id\0.dynamic\0.symtab\0.strtab\0"
			    ".shstrtab\0.dynsym\0.dynstr\0.gnu.version\0.gnu_debuglink";

static unsigned name_off(const char *tab, size_t len, const char *name)
{
	for (size_t i = 0; i < len; i++)
		if (!strcmp(tab + i, name))
			return i;
	return 0;
}

static void put_sym(unsigned char *img, size_t off, unsigned name, uint64_t value,
		    uint64_t size, int bind, int type, uint16_t shndx)
{
	Elf64_Sym s = {
		.st_name = name, .st_info = ELF64_ST_INFO(bind, type),
		.st_shndx = shndx, .st_value = value, .st_size = size,
	};

	memcpy(img + off, &s, sizeof(s));
}

static void put_shdr(unsigned char *img, int i, const char *name, uint32_t type,
		     uint64_t off, uint64_t size, uint32_t link, uint64_t entsize)
{
	Elf64_Shdr sh = {
		.sh_name = name ? name_off(shstr, sizeof(shstr), name) : 0,
		.sh_type = type, .sh_offset = off, .sh_size = size,
		.sh_link = link, .sh_entsize = entsize, .sh_addralign = 1,
	};

	memcpy(img + OFF_SHDR + i * sizeof(sh), &sh, sizeof(sh));
}

/* Fill img (IMG_SIZE bytes) with an ET_DYN x86-64 image. */
static void build_image(unsigned char *img)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_phoff = OFF_PHDR, .e_shoff = OFF_SHDR, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 4,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = NSHDR, .e_shstrndx = 5,
	};
	Elf64_Phdr ph[4] = {
		/* text at offset 0, data whose first byte shares a file page with nothing */
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0,
		  .p_filesz = 0x1000, .p_memsz = 0x1000, .p_align = 0x1000 },
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = 0x1d30, .p_vaddr = 0x2d30,
		  .p_filesz = 0x300, .p_memsz = 0x400, .p_align = 0x1000 },
		{ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = OFF_NOTE, .p_vaddr = OFF_NOTE,
		  .p_filesz = 24, .p_memsz = 24, .p_align = 4 },
		{ .p_type = PT_DYNAMIC, .p_flags = PF_R | PF_W, .p_offset = OFF_DYN, .p_vaddr = 0x2e00,
		  .p_filesz = 32, .p_memsz = 32, .p_align = 8 },
	};
	uint32_t note[3] = { 4, 8, NT_GNU_BUILD_ID };
	static const unsigned char id[8] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	Elf64_Dyn dyn[2] = { { .d_tag = DT_DEBUG }, { .d_tag = DT_NULL } };
	uint16_t versym[3] = { 0, 0x8002, 3 };
	static const char link[] = "image.debug\0\x78\x56\x34\x12";

	memset(img, 0, IMG_SIZE);
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + OFF_PHDR, ph, sizeof(ph));
	memcpy(img + OFF_NOTE, note, sizeof(note));
	memcpy(img + OFF_NOTE + 12, "GNU", 4);
	memcpy(img + OFF_NOTE + 16, id, sizeof(id));
	memcpy(img + OFF_DYN, dyn, sizeof(dyn));
	memcpy(img + OFF_STRTAB, strtab, sizeof(strtab));
	memcpy(img + OFF_DYNSTR, dynstr, sizeof(dynstr));
	memcpy(img + OFF_VERSYM, versym, sizeof(versym));
	memcpy(img + OFF_SHSTR, shstr, sizeof(shstr));
	memcpy(img + OFF_SHSTR + sizeof(shstr), link, sizeof(link) - 1);

#define S(n) name_off(strtab, sizeof(strtab), n)
	put_sym(img, OFF_SYMTAB + 24 * 1, S("malloc@@GLIBC_2.2.5"), 0x100, 0x20, STB_GLOBAL, STT_FUNC, 1);
	put_sym(img, OFF_SYMTAB + 24 * 2, S("foo@OLD"), 0x200, 8, STB_GLOBAL, STT_FUNC, 1);
	put_sym(img, OFF_SYMTAB + 24 * 3, S("foo@@NEW"), 0x300, 8, STB_GLOBAL, STT_FUNC, 1);
	put_sym(img, OFF_SYMTAB + 24 * 4, S("bar"), 0x400, 0, STB_GLOBAL, STT_FUNC, SHN_UNDEF);
	put_sym(img, OFF_SYMTAB + 24 * 5, S("ifn"), 0x500, 16, STB_GLOBAL, STT_GNU_IFUNC, 1);
	put_sym(img, OFF_SYMTAB + 24 * 6, S("loc"), 0x580, 16, STB_LOCAL, STT_FUNC, 1);
#undef S
	/* .dynsym: baz twice, the hidden (non-default) version first */
	put_sym(img, OFF_DYNSYM + 24 * 1, 1, 0x600, 4, STB_GLOBAL, STT_FUNC, 1);
	put_sym(img, OFF_DYNSYM + 24 * 2, 1, 0x700, 4, STB_GLOBAL, STT_FUNC, 1);

	put_shdr(img, 1, ".note.gnu.build-id", SHT_NOTE, OFF_NOTE, 24, 0, 0);
	put_shdr(img, 2, ".dynamic", SHT_DYNAMIC, OFF_DYN, 32, 0, sizeof(Elf64_Dyn));
	put_shdr(img, 3, ".symtab", SHT_SYMTAB, OFF_SYMTAB, 24 * 7, 4, 24);
	put_shdr(img, 4, ".strtab", SHT_STRTAB, OFF_STRTAB, sizeof(strtab), 0, 0);
	put_shdr(img, 5, ".shstrtab", SHT_STRTAB, OFF_SHSTR, sizeof(shstr), 0, 0);
	put_shdr(img, 6, ".dynsym", SHT_DYNSYM, OFF_DYNSYM, 24 * 3, 7, 24);
	put_shdr(img, 7, ".dynstr", SHT_STRTAB, OFF_DYNSTR, sizeof(dynstr), 0, 0);
	put_shdr(img, 8, ".gnu.version", SHT_GNU_versym, OFF_VERSYM, 6, 6, 2);
	put_shdr(img, 9, ".gnu_debuglink", SHT_PROGBITS, OFF_SHSTR + sizeof(shstr),
		 sizeof(link) - 1, 0, 0);
}

static void test_image(void)
{
	unsigned char img[IMG_SIZE];
	const struct elfobj_sym *s;
	struct elfobj *e;
	uint64_t v;
	uint32_t crc;
	size_t n;

	_Static_assert(OFF_SYMTAB + 24 * 7 <= OFF_STRTAB, "layout");
	_Static_assert(OFF_STRTAB + sizeof(strtab) <= OFF_DYNSYM, "layout");
	_Static_assert(OFF_DYNSYM + 24 * 3 <= OFF_DYNSTR, "layout");
	_Static_assert(OFF_DYNSTR + sizeof(dynstr) <= OFF_VERSYM, "layout");
	_Static_assert(OFF_VERSYM + 6 <= OFF_SHSTR, "layout");
	_Static_assert(OFF_SHSTR + sizeof(shstr) + 16 <= OFF_SHDR, "layout");
	_Static_assert(OFF_SHDR + NSHDR * sizeof(Elf64_Shdr) <= IMG_SIZE, "layout");
	build_image(img);
	e = elfobj_open_mem(img, sizeof(img));
	expect_true(e != NULL);
	if (!e)
		return;
	expect_int_eq(elfobj_type(e), ET_DYN);
	expect_int_eq(elfobj_has_interp(e), 0);
	expect_int_eq(elfobj_has_dynamic(e), 1);
	expect_str_eq(elfobj_build_id(e), "0123456789abcdef");
	expect_str_eq(elfobj_debuglink(e, &crc), "image.debug");
	expect_u64_eq(crc, 0x12345678);
	expect_int_eq(elfobj_dt_debug_vaddr(e, &v), 0);
	expect_u64_eq(v, 0x2e08);
	elfobj_segments(e, &n);
	expect_int_eq(n, 2);
	elfobj_syms(e, &n);
	expect_int_eq(n, 8);

	s = elfobj_lookup(e, "malloc", 0);
	expect_true(s && s->value == 0x100 && s->size == 0x20 && s->type == STT_FUNC);
	expect_true(elfobj_lookup(e, "malloc@@GLIBC_2.2.5", 0) == NULL);
	/* .symtab only: invisible to the dynamic linker */
	expect_true(elfobj_lookup(e, "malloc", 1) == NULL);
	s = elfobj_lookup(e, "foo", 0);
	expect_true(s && s->value == 0x300);
	expect_true(elfobj_lookup(e, "bar", 0) == NULL);
	s = elfobj_lookup(e, "ifn", 0);
	expect_true(s && s->type == STT_GNU_IFUNC);
	expect_true(elfobj_lookup(e, "loc", 0) != NULL);
	expect_true(elfobj_lookup(e, "loc", 1) == NULL);
	/* versym: the default version wins over the hidden one listed first */
	s = elfobj_lookup(e, "baz", 1);
	expect_true(s && s->value == 0x700 && (s->flags & ELFOBJ_SYM_DYNAMIC));
	elfobj_free(e);
}

static void test_load_bias(void)
{
	unsigned char img[IMG_SIZE];
	struct proc_map text = { .start = 0x7f0000000000, .end = 0x7f0000001000,
				 .offset = 0, .prot = PROC_MAP_R | PROC_MAP_X };
	struct proc_map data = { .start = 0x7f0000002000, .end = 0x7f0000003000,
				 .offset = 0x1000, .prot = PROC_MAP_R | PROC_MAP_W };
	struct proc_map beyond = { .start = 0x7f0000009000, .end = 0x7f000000a000,
				   .offset = 0x5000, .prot = PROC_MAP_R };
	struct elfobj *e;
	uint64_t bias = 0;

	build_image(img);
	e = elfobj_open_mem(img, sizeof(img));
	expect_true(e != NULL);
	if (!e)
		return;
	expect_int_eq(elfobj_load_bias(e, &text, &bias), 0);
	expect_u64_eq(bias, 0x7f0000000000);
	/* data: p_offset 0x1d30 is not page aligned; the mapping starts at file 0x1000 */
	bias = 0;
	expect_int_eq(elfobj_load_bias(e, &data, &bias), 0);
	expect_u64_eq(bias, 0x7f0000000000);
	expect_int_eq(elfobj_load_bias(e, &beyond, &bias), -ENOENT);
	elfobj_free(e);
}

/* Every truncation and many random corruptions must fail cleanly or load sanely. */
static void exercise(const unsigned char *buf, size_t len)
{
	struct proc_map m = { .start = 0x10000, .end = 0x11000, .prot = PROC_MAP_R | PROC_MAP_X };
	struct elfobj *e = elfobj_open_mem(buf, len);
	const struct elfobj_sym *syms;
	uint64_t v;
	size_t n;

	if (!e)
		return;
	syms = elfobj_syms(e, &n);
	for (size_t i = 0; i < n; i++)
		expect_true(syms[i].name != NULL);
	elfobj_lookup(e, "malloc", 0);
	elfobj_lookup(e, "baz", 1);
	elfobj_build_id(e);
	elfobj_debuglink(e, NULL);
	elfobj_dt_debug_vaddr(e, &v);
	elfobj_load_bias(e, &m, &v);
	elfobj_segments(e, &n);
	elfobj_free(e);
}

static void test_truncated(void)
{
	unsigned char img[IMG_SIZE];

	build_image(img);
	for (size_t len = 0; len < sizeof(Elf64_Ehdr); len++)
		expect_true(elfobj_open_mem(img, len) == NULL);
	for (size_t len = 0; len <= IMG_SIZE; len++)
		exercise(img, len);
	expect_true(elfobj_open_mem("\x7f" "ELF", 4) == NULL);
	expect_true(elfobj_open_mem("#!/bin/sh\n", 10) == NULL);
	expect_true(elfobj_open_fd(-1) == NULL);
}

static void test_corrupt(void)
{
	unsigned char img[IMG_SIZE], bad[IMG_SIZE];
	uint32_t seed = 12345;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)bad;
	Elf64_Shdr *sh = (Elf64_Shdr *)(bad + OFF_SHDR);

	build_image(img);
	/* targeted: offsets and counts pointing far outside the image */
	memcpy(bad, img, IMG_SIZE); eh->e_shoff = 0xfffffffffff0; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); eh->e_phoff = 0x7fffffff; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); eh->e_phnum = 0xffff; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); eh->e_shnum = 0xffff; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); eh->e_shstrndx = 0x7777; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[3].sh_link = 99; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[3].sh_entsize = 0; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[3].sh_size = 1ULL << 40; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[4].sh_offset = 1ULL << 40; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[4].sh_size = 3; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[8].sh_size = 2; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); sh[9].sh_size = 5; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); ((uint32_t *)(bad + OFF_NOTE))[1] = 0xfffffff0; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); ((uint32_t *)(bad + OFF_NOTE))[0] = 0xfffffff0; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); ((Elf64_Sym *)(bad + OFF_SYMTAB))[1].st_name = 0xffffff; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); bad[OFF_STRTAB + sizeof(strtab) - 1] = 'x'; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); bad[EI_CLASS] = ELFCLASS32; exercise(bad, IMG_SIZE);
	memcpy(bad, img, IMG_SIZE); bad[EI_DATA] = ELFDATA2MSB; exercise(bad, IMG_SIZE);
	/* random: a few bytes flipped anywhere in the headers and tables */
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(bad, img, IMG_SIZE);
		for (int k = 0; k < 1 + iter % 4; k++) {
			seed = seed * 1103515245 + 12345;
			bad[(seed >> 8) % (OFF_SHDR + NSHDR * sizeof(Elf64_Shdr))] ^= 1 << ((seed >> 4) & 7);
		}
		exercise(bad, IMG_SIZE);
	}
}

/* Resolve one of our own functions through our executable's file and maps. */
static void test_self(void)
{
	struct proc_maps m;
	const struct proc_map *p;
	const struct elfobj_sym *s;
	struct elfobj *e;
	uint64_t bias = 0;

	expect_int_eq(proc_maps_read(getpid(), &m), 0);
	p = proc_maps_find(&m, (uint64_t)(uintptr_t)&test_self);
	expect_true(p != NULL);
	if (!p)
		goto out;
	e = elfobj_open_fd(proc_open_mapped(getpid(), p));
	expect_true(e != NULL);
	if (!e)
		goto out;
	s = elfobj_lookup(e, "test_self", 0);
	expect_true(s != NULL);
	/* bias from the r-x mapping, whose offset is not its address */
	expect_int_eq(elfobj_load_bias(e, p, &bias), 0);
	if (s)
		expect_u64_eq(bias + s->value, (uint64_t)(uintptr_t)&test_self);
	/* and from every other mapping of the file that is not a shared page */
	for (size_t i = 0; i < m.n; i++) {
		uint64_t b = 0;

		if (!m.v[i].path || strcmp(m.v[i].path, p->path) || m.v[i].prot != p->prot)
			continue;
		expect_int_eq(elfobj_load_bias(e, &m.v[i], &b), 0);
		expect_u64_eq(b, bias);
	}
	expect_true(elfobj_build_id(e) != NULL);
	if (elfobj_build_id(e)) {
		const char *id = elfobj_build_id(e);

		expect_int_eq(strlen(id), 40);
		expect_int_eq(strspn(id, "0123456789abcdef"), 40);
	}
	expect_int_eq(elfobj_has_interp(e), 1);
	elfobj_free(e);
out:
	proc_maps_free(&m);
}

/* Open BUILD/fixtures/name; NULL (and a failed check) if it is missing. */
static struct elfobj *open_fixture(const char *name, char *path, size_t len)
{
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	struct elfobj *e;

	snprintf(path, len, "%s/fixtures/%s", b, name);
	e = elfobj_open_fd(open(path, O_RDONLY));
	if (!e)
		fprintf(stderr, "cannot open %s (run make fixtures)\n", path);
	expect_true(e != NULL);
	return e;
}

/* The build id as readelf sees it. */
static void readelf_build_id(const char *path, char *out, size_t len)
{
	char cmd[4200], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " Build ID: %200s", out) == 1)
			break;
	pclose(f);
	(void)len;
}

static void test_fixtures(void)
{
	char path[4096], id[256];
	const struct elfobj_sym *s;
	struct elfobj *e;

	e = open_fixture("printaddrs_static", path, sizeof(path));
	if (e) {
		expect_int_eq(elfobj_has_interp(e), 0);
		s = elfobj_lookup(e, "malloc", 0);
		expect_true(s && s->type == STT_FUNC && s->size > 0);
		expect_true(elfobj_lookup(e, "malloc", 1) == NULL);
		readelf_build_id(path, id, sizeof(id));
		if (id[0])
			expect_str_eq(elfobj_build_id(e), id);
		elfobj_free(e);
	}
	e = open_fixture("printaddrs_stripped", path, sizeof(path));
	if (e) {
		expect_int_eq(elfobj_has_interp(e), 1);
		expect_true(elfobj_lookup(e, "main", 0) == NULL);
		/* an undefined reference is never a definition */
		expect_true(elfobj_lookup(e, "malloc", 1) == NULL);
		readelf_build_id(path, id, sizeof(id));
		if (id[0])
			expect_str_eq(elfobj_build_id(e), id);
		elfobj_free(e);
	}
	e = open_fixture("printaddrs_nopie", path, sizeof(path));
	if (e) {
		uint64_t v;

		expect_int_eq(elfobj_type(e), ET_EXEC);
		expect_int_eq(elfobj_dt_debug_vaddr(e, &v), 0);
		s = elfobj_lookup(e, "main", 0);
		expect_true(s && s->type == STT_FUNC);
		elfobj_free(e);
	}
}

/*
 * The file shrinks while open (the target can truncate its own files): what
 * is read past the new end reads as zeros instead of raising SIGBUS, in our
 * reads, libelf's and libdw's; and a FIFO or a device is no ELF file.
 */
static void test_shrinking_file(void)
{
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	char path[] = "/tmp/elfobj-trunc.XXXXXX", cmd[8192];
	const struct elfobj_segment *seg;
	struct debugfile_dwarf dd;
	unsigned long before = mapguard_zeroed();
	struct shm_frame r;
	struct elfobj *e;
	unsigned char buf[64];
	size_t nseg;
	int fd = mkstemp(path);

	expect_true(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp %s/fixtures/printaddrs %s", b, path);
	expect_int_eq(system(cmd), 0);
	e = elfobj_open_fd(open(path, O_RDONLY | O_CLOEXEC));
	expect_true(e && elfobj_has_debug_info(e));
	if (!e)
		goto out;
	seg = elfobj_segments(e, &nseg);
	expect_int_eq(truncate(path, 0), 0);
	for (size_t i = 0; i < nseg; i++) {
		memset(buf, 0xaa, sizeof(buf));
		if (seg[i].filesz >= sizeof(buf) && seg[i].offset >= 4096) {
			expect_int_eq(elfobj_read(e, seg[i].vaddr, buf, sizeof(buf)), 0);
			expect_int_eq(buf[0] | buf[sizeof(buf) - 1], 0);
		}
	}
	if (debugfile_dwarf_begin(&dd, e, -1, TFILE_SELF, NULL) == 0) {
		Dwarf_Die cu;

		dwarf_addrdie(dd.dw, seg[0].vaddr + 0x1000, &cu);
		debugfile_dwarf_end(&dd);
	}
	frametab_rule_elf(e, seg[nseg > 1].vaddr, &r);
	expect_true(mapguard_zeroed() > before);
	elfobj_free(e);
out:
	unlink(path);
	expect_true(elfobj_open_fd(open("/dev/zero", O_RDONLY)) == NULL);
}

/* An object keeps no descriptor: a target mapping thousands of objects
 * must not exhaust ours (the profile could not be written). */
static void test_no_fd_kept(void)
{
	struct rlimit old, low;
	struct elfobj *e[64];
	int fd;

	expect_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 32;
	expect_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (int i = 0; i < 64; i++) {
		e[i] = elfobj_open_fd(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
		expect_true(e[i] != NULL);
	}
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	expect_true(fd >= 0);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 64; i++)
		elfobj_free(e[i]);
	setrlimit(RLIMIT_NOFILE, &old);
}

HARNESS_MAIN("elfobj", T(test_image), T(test_load_bias), T(test_truncated), T(test_corrupt),
	     T(test_self), T(test_fixtures), T(test_shrinking_file), T(test_no_fd_kept))
