/* Test tool: builds a synthetic heap profile with known values and writes it. */
/* SPDX-License-Identifier: MIT */

/*
 * usage: synthprof --format pprof|legacy|folded [--rate R] [--self] [--nosym]  [--nofree] [--many N] -o PATH
 *
 * Default: stacks in a fake mapping /usr/bin/fake (r-xp 0x400000-0x402000,
 * offset 0) plus /usr/lib/libfake.so, named by a fake symbolizer (see below).
 * --self: the stacks are the entry addresses + 1 of this tool's own functions
 * and the maps are /proc/self/maps, so pprof and google-pprof can symbolize
 * them from the real binary. --nosym: write no Function entries (sym = NULL).
 * --nofree: skip every free (alloc and in-use figures then agree).
 * --many N: N more live 256-byte allocations, each from its own stack
 * (leaf inside leaf_b's range, caller, main), for size and streaming tests.
 *
 * The profile (sizes and counts are the same in both modes):
 * (main is synth_top in --self mode; go tool pprof's DWARF reader misses main.)
 *   A  leaf_a <- caller <- main: 3 x 1024 allocated, 2 freed
 *   A' same stack, 5 x 64 allocated, all freed (inuse 0, still a sample)
 *   B  leaf_b <- caller <- main: 2 x 512 allocated, 1 freed
 *   C  leaf_c <- helper <- caller <- main: 1 x 4 MiB, live
 *   D  (fake mode only) lib_ok <- lib_unknown (libfake.so; lib_unknown has
 *      no symbol: the mapping claims has_functions all the same, so that
 *      pprof keeps lib_ok's name and leaves lib_unknown unnamed): 1 x 100, live
 * drops: 7. time_nanos 1700000000000000000, duration 5 s.
 *
 * The symbolizer functions below stand in for src/stacks/symbolize.c (link-time fake:
 * the archive member is not pulled in while these are defined here).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "output/dump.h"
#include "base/xmalloc.h"

/* ---- real functions for --self ---- */

__attribute__((noinline)) int synth_leaf_a(int x) { return x * 3 + 1; }
enum { LINE_LEAF_A = __LINE__ - 1 };
__attribute__((noinline)) int synth_leaf_b(int x) { return x * 5 + 2; }
enum { LINE_LEAF_B = __LINE__ - 1 };
__attribute__((noinline)) int synth_leaf_c(int x) { return x * 7 + 3; }
enum { LINE_LEAF_C = __LINE__ - 1 };
__attribute__((noinline)) int synth_helper(int x) { return synth_leaf_c(x) + 1; }
enum { LINE_HELPER = __LINE__ - 1 };
__attribute__((noinline)) int synth_caller(int x) { return synth_leaf_a(x) + synth_leaf_b(x) + synth_helper(x); }
enum { LINE_CALLER = __LINE__ - 1 };
__attribute__((noinline)) int synth_top(int x) { return synth_caller(x) + 1; }
enum { LINE_TOP = __LINE__ - 1 };

/* ---- the fake symbolizer ---- */

struct fake_sym {
	uint64_t lo, hi;        /* [lo, hi) */
	const char *name, *system_name, *file;
	int line;
};

static struct fake_sym fake_syms[8];
static size_t nfake_syms;
static int self_mode;

struct symbolizer {
	const struct proc_maps *maps;
};

struct symbolizer *symbolizer_new(struct target *t)
{
	(void)t;
	return xcalloc(1, sizeof(struct symbolizer));
}

void symbolizer_free(struct symbolizer *s)
{
	free(s);
}

int symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	(void)s;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < nfake_syms; i++) {
		const struct fake_sym *f = &fake_syms[i];

		if (addr >= f->lo && addr < f->hi) {
			out->function = f->name;
			out->system_name = f->system_name;
			out->file = f->file;
			out->line = f->line;
			out->offset = addr - f->lo;
			return 0;
		}
	}
	return -ENOENT;
}

const char *symbolizer_build_id(struct symbolizer *s, const struct proc_map *map)
{
	(void)s;
	if (!self_mode && map->path && !strcmp(map->path, "/usr/bin/fake"))
		return "0123456789abcdef0123456789abcdef01234567";
	return NULL;
}

/* ---- maps ---- */

static struct proc_map fake_map_v[] = {
	{ .start = 0x400000, .end = 0x402000, .offset = 0,
	  .prot = PROC_MAP_R | PROC_MAP_X, .dev_major = 8, .dev_minor = 1,
	  .inode = 123456, .path = "/usr/bin/fake" },
	{ .start = 0x402000, .end = 0x403000, .offset = 0x2000,
	  .prot = PROC_MAP_R | PROC_MAP_W, .dev_major = 8, .dev_minor = 1,
	  .inode = 123456, .path = "/usr/bin/fake" },
	{ .start = 0x7f0000000000, .end = 0x7f0000010000, .offset = 0x1000,
	  .prot = PROC_MAP_R | PROC_MAP_X, .dev_major = 8, .dev_minor = 1,
	  .inode = 654321, .path = "/usr/lib/libfake.so" },
};

/* A tiny /proc/self/maps parser (the real one lives in src/model/proc.c). */
static int load_self_maps(struct proc_maps *out)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096], perms[8], path[4096];
	size_t cap = 0;

	if (!f)
		return -errno;
	memset(out, 0, sizeof(*out));
	while (fgets(line, sizeof(line), f)) {
		struct proc_map m;
		int n;

		memset(&m, 0, sizeof(m));
		path[0] = 0;
		n = sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %4095[^\n]",
			   &m.start, &m.end, perms, &m.offset, &m.dev_major, &m.dev_minor,
			   &m.inode, path);
		if (n < 7)
			continue;
		m.prot = (perms[0] == 'r' ? PROC_MAP_R : 0) | (perms[1] == 'w' ? PROC_MAP_W : 0) |
			 (perms[2] == 'x' ? PROC_MAP_X : 0) | (perms[3] == 's' ? PROC_MAP_SHARED : 0);
		m.path = path[0] ? xstrdup(path) : NULL;
		if (out->n == cap) {
			cap = cap ? cap * 2 : 32;
			out->v = xrealloc(out->v, cap * sizeof(*out->v));
		}
		out->v[out->n++] = m;
	}
	fclose(f);
	return 0;
}

static void add_sym(uint64_t lo, uint64_t hi, const char *name, const char *sys,
		    const char *file, int line)
{
	fake_syms[nfake_syms++] = (struct fake_sym){ lo, hi, name, sys, file, line };
}

static void usage(void)
{
	fprintf(stderr, "usage: synthprof --format pprof|legacy|folded [--rate R] [--self] [--nosym] [--nofree] [--many N] -o PATH\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *fmt = "pprof", *out = NULL;
	const char *comments[] = { "synthetic profile" };
	uint64_t rate = 524288, leaf_a, leaf_b, leaf_c, helper, caller, main_pc;
	int nosym = 0, nofree = 0, ret;
	unsigned long many = 0;
	struct proc_maps maps = { fake_map_v, 3 };
	struct profile *p;
	struct dump_info d = {
		.pid = 4242, .time_nanos = 1700000000000000000ULL,
		.duration_nanos = 5000000000ULL, .maps = &maps,
		.comments = comments, .ncomments = 1,
	};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--format") && i + 1 < argc)
			fmt = argv[++i];
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			rate = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--self"))
			self_mode = 1;
		else if (!strcmp(argv[i], "--nosym"))
			nosym = 1;
		else if (!strcmp(argv[i], "--nofree"))
			nofree = 1;
		else if (!strcmp(argv[i], "--many") && i + 1 < argc)
			many = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else
			usage();
	}
	if (!out || (strcmp(fmt, "pprof") && strcmp(fmt, "legacy") && strcmp(fmt, "folded")))
		usage();

	if (self_mode) {
		/* Return addresses one past each function's entry: ret - 1 is the entry. */
		leaf_a = (uint64_t)(uintptr_t)synth_leaf_a + 1;
		leaf_b = (uint64_t)(uintptr_t)synth_leaf_b + 1;
		leaf_c = (uint64_t)(uintptr_t)synth_leaf_c + 1;
		helper = (uint64_t)(uintptr_t)synth_helper + 1;
		caller = (uint64_t)(uintptr_t)synth_caller + 1;
		main_pc = (uint64_t)(uintptr_t)synth_top + 1;
		if (load_self_maps(&maps) < 0)
			return 1;
		add_sym(leaf_a - 1, leaf_a, "synth_leaf_a", NULL, "synthprof.c", LINE_LEAF_A);
		add_sym(leaf_b - 1, leaf_b, "synth_leaf_b", NULL, "synthprof.c", LINE_LEAF_B);
		add_sym(leaf_c - 1, leaf_c, "synth_leaf_c", NULL, "synthprof.c", LINE_LEAF_C);
		add_sym(helper - 1, helper, "synth_helper", NULL, "synthprof.c", LINE_HELPER);
		add_sym(caller - 1, caller, "synth_caller", NULL, "synthprof.c", LINE_CALLER);
		add_sym(main_pc - 1, main_pc, "synth_top", NULL, "synthprof.c", LINE_TOP);
	} else {
		leaf_a = 0x401124;
		leaf_b = 0x401200;
		leaf_c = 0x401310;
		helper = 0x401357;
		caller = 0x401457;
		main_pc = 0x401800;
		add_sym(0x401100, 0x401180, "ns::Widget::make(int)", "_ZN2ns6Widget4makeEi", "widget.cc", 12);
		add_sym(0x401180, 0x401280, "leaf_b", NULL, "fake.c", 20);
		add_sym(0x401300, 0x401340, "leaf_c", NULL, "fake.c", 30);
		add_sym(0x401340, 0x401400, "helper", NULL, "fake.c", 35);
		add_sym(0x401400, 0x401500, "caller", NULL, "fake.c", 44);
		add_sym(0x401700, 0x401900, "main", NULL, "fake.c", 50);
		add_sym(0x7f0000001000, 0x7f0000001100, "lib_ok", NULL, "lib.c", 7);
	}

	p = profile_new(rate);
	{
		const uint64_t a[] = { leaf_a, caller, main_pc };
		const uint64_t b[] = { leaf_b, caller, main_pc };
		const uint64_t c[] = { leaf_c, helper, caller, main_pc };
		const uint64_t dd[] = { 0x7f0000001010, 0x7f0000002021, main_pc };
		uint64_t ptr = 0x10000;

		for (int i = 0; i < 3; i++)
			profile_record_alloc(p, a, 3, 1024, ptr + i * 0x1000);
		if (!nofree) {
			profile_record_free(p, ptr);
			profile_record_free(p, ptr + 0x1000);
		}
		ptr += 0x10000;
		for (int i = 0; i < 5; i++) {
			profile_record_alloc(p, a, 3, 64, ptr + i * 0x100);
			if (!nofree)
				profile_record_free(p, ptr + i * 0x100);
		}
		ptr += 0x10000;
		profile_record_alloc(p, b, 3, 512, ptr);
		profile_record_alloc(p, b, 3, 512, ptr + 0x1000);
		if (!nofree)
			profile_record_free(p, ptr);
		ptr += 0x10000;
		profile_record_alloc(p, c, 4, 4 << 20, ptr);
		ptr += 0x10000;
		if (!self_mode)
			profile_record_alloc(p, dd, 3, 100, ptr);
		ptr += 0x10000;
		for (unsigned long i = 0; i < many; i++) {
			/* distinct (leaf, middle) pairs; leaf stays inside leaf_b */
			uint64_t m[] = { leaf_b + i % 64, 0x7f0000100000 + i, caller, main_pc };

			profile_record_alloc(p, m, 4, 256, ptr + i * 256);
		}
	}
	profile_add_drops(p, 7);

	if (!nosym)
		d.sym = symbolizer_new(NULL);
	ret = dump_write_file(out, !strcmp(fmt, "pprof") ? DUMP_PPROF :
			      !strcmp(fmt, "folded") ? DUMP_FOLDED : DUMP_LEGACY, p, &d);
	symbolizer_free(d.sym);
	profile_free(p);
	if (self_mode) {
		for (size_t i = 0; i < maps.n; i++)
			free(maps.v[i].path);
		free(maps.v);
	}
	if (ret) {
		fprintf(stderr, "synthprof: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
