/* Unit tests for pycode.c (pyframes): code objects made up in this process's memory, read back through a target on it. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "output/dump.h"
#include "harness.h"
#include "profile/profile.h"
#include "python/pyfind.h"
#include "python/pyframes.h"
#include "shm.h"
#include "stacks/symbolize.h"
#include "model/target.h"

/*
 * A made-up layout (3.12-like objects): the test writes code, str and
 * bytes objects into its own memory and decodes them through a target on
 * its own pid, as the tool reads a Python target's.
 */
static const struct py_layout lay = {
	.minor = 12,
	.ob_type = 8, .ob_size = 16,
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 48,
	.co_linetable = 136,
	.bytes_sval = 32,
	.uni_length = 16, .uni_state = 32, .uni_ascii_size = 40, .uni_compact_size = 56,
};

static uint64_t code_type_obj[4];	/* stands for PyCode_Type */

struct fake_code {
	uint8_t b[256];
};

/* The made-up objects, freed at the end. */
static void *objs[256];
static size_t nobjs;

static void *obj_alloc(size_t n)
{
	void *p = calloc(1, n);

	if (nobjs < sizeof(objs) / sizeof(objs[0]))
		objs[nobjs++] = p;
	return p;
}

static void put64(void *base, uint32_t off, uint64_t v)
{
	memcpy((uint8_t *)base + off, &v, 8);
}

/* A compact str object of n characters of kind (1, 2, 4) from c[]. */
static void *make_str(const uint32_t *c, size_t n, int kind, int ascii)
{
	uint8_t *o = obj_alloc(64 + n * 4 + 4);
	uint32_t state = (uint32_t)kind << 2 | 1u << 5 | (uint32_t)ascii << 6;
	uint8_t *d = o + (ascii ? lay.uni_ascii_size : lay.uni_compact_size);

	put64(o, lay.uni_length, n);
	memcpy(o + lay.uni_state, &state, 4);
	for (size_t i = 0; i < n; i++)
		memcpy(d + i * kind, &c[i], kind);
	return o;
}

static void *make_ascii(const char *s)
{
	uint32_t c[512];
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		c[i] = (uint8_t)s[i];
	return make_str(c, n, 1, 1);
}

static void *make_bytes(const uint8_t *p, size_t n)
{
	uint8_t *o = obj_alloc(lay.bytes_sval + n + 1);

	put64(o, lay.ob_size, n);
	memcpy(o + lay.bytes_sval, p, n);
	return o;
}

/* A code object: qualname (may be NULL), name, file, first line, table. */
static struct fake_code *make_code(void *qual, void *name, void *file, int first, void *table)
{
	struct fake_code *c = obj_alloc(sizeof(*c));

	put64(c->b, lay.ob_type, (uintptr_t)code_type_obj);
	put64(c->b, lay.co_qualname, (uintptr_t)qual);
	put64(c->b, lay.co_name, (uintptr_t)name);
	put64(c->b, lay.co_filename, (uintptr_t)file);
	memcpy(c->b + lay.co_firstlineno, &first, 4);
	put64(c->b, lay.co_linetable, (uintptr_t)table);
	return c;
}

static uint64_t word(const void *code, uint32_t idx, int end)
{
	return (uint64_t)(uintptr_t)code | (uint64_t)idx << SHM_PY_INSTR_SHIFT |
	       (end ? SHM_PY_WORD_END : 0);
}

/* Location table (3.11+ format): unit 0 line +0, units 1-2 line +2, unit 3 none. */
static const uint8_t table311[] = {
	0x80 | (10 << 3) | 0, 1, 2,
	0x80 | (12 << 3) | 1, 1, 2,
	0x80 | (15 << 3) | 0,
};

static struct target *t;
static struct pyframes *pf;

static struct pyframes *new_pf(const struct py_layout *l)
{
	struct py_target pt = { .minor = l->minor, .lay = *l,
				.code_type = (uintptr_t)code_type_obj };

	return pyframes_new(t, &pt);
}

static void setup(void)
{
	t = target_new(getpid(), 0);
	expect_true(t != NULL);
	pf = new_pf(&lay);
}

/* Name, file and lines of one code object; same place, same pseudo-PC. */
static void test_decode(void)
{
	const uint32_t fname[] = { '/', 's', 0xe9, '.', 'p', 'y' };	/* "/sé.py", kind 1 */
	const uint32_t qname[] = { 'K', '.', 0x3b1, 0x1f600 };		/* kind 4 */
	struct fake_code *c = make_code(make_str(qname, 4, 4, 0), make_ascii("f"),
					make_str(fname, 6, 1, 0), 10,
					make_bytes(table311, sizeof(table311)));
	uint64_t w[6] = { word(c, 0, 0), word(c, 1, 0), word(c, 2, 1), word(c, 3, 0),
			  word(c, SHM_PY_INSTR_UNKNOWN, 0), word(c, 100, 1) };
	uint64_t pcs[6];
	uint8_t ends[6];
	struct sym_info si;

	expect_int_eq(pyframes_decode(pf, w, 6, pcs, ends), 6);
	expect_int_eq(ends[0], 0);
	expect_int_eq(ends[2], 1);
	expect_u64_eq(pcs[1], pcs[2]);		/* both line 12 */
	expect_u64_eq(pcs[0], pcs[3]);		/* no line: the first line, 10 */
	expect_u64_eq(pcs[0], pcs[4]);
	expect_u64_eq(pcs[0], pcs[5]);		/* past the table */
	expect_true(pcs[0] != pcs[1]);
	expect_true(pcs[0] > PYFRAMES_PC_BASE && pcs[0] < SYMBOLIZE_RETIRED_BASE);
	expect_int_eq(pyframes_lookup(pf, pcs[1] - 1, &si), 0);
	expect_str_eq(si.function, "K.\xce\xb1\xf0\x9f\x98\x80");
	expect_str_eq(si.file, "/s\xc3\xa9.py");
	expect_int_eq(si.line, 12);
	expect_true(si.map == NULL);
	expect_int_eq(pyframes_lookup(pf, pcs[0] - 1, &si), 0);
	expect_int_eq(si.line, 10);
	expect_int_eq(pyframes_lookup(pf, PYFRAMES_PC_BASE + 99999, &si), -ENOENT);
	expect_int_eq(pyframes_lookup(pf, 0x401000, &si), -ENOENT);
}

/* co_name when there is no co_qualname (<= 3.10: no such field, here NULL). */
static void test_name_only(void)
{
	uint8_t lnotab[] = { 4, 1, 4, 2 };	/* 3.8: bytes 0-3 +0, 4-7 +1, 8- +3 */
	struct py_layout l = lay;
	struct pyframes *p8;
	struct fake_code *c = make_code(NULL, make_ascii("g"), make_ascii("m.py"), 5,
					make_bytes(lnotab, sizeof(lnotab)));
	uint64_t w[3] = { word(c, 1, 0), word(c, 2, 0), word(c, 9, 0) }, pcs[3];
	uint8_t ends[3];
	struct sym_info si;

	l.minor = 8;
	l.co_qualname = 0;
	p8 = new_pf(&l);
	pyframes_decode(p8, w, 3, pcs, ends);
	expect_int_eq(pyframes_lookup(p8, pcs[0] - 1, &si), 0);
	expect_str_eq(si.function, "g");
	expect_str_eq(si.file, "m.py");
	expect_int_eq(si.line, 5);
	pyframes_lookup(p8, pcs[1] - 1, &si);
	expect_int_eq(si.line, 6);
	pyframes_lookup(p8, pcs[2] - 1, &si);
	expect_int_eq(si.line, 8);
	pyframes_free(p8);
}

/* Unreadable code, a wrong type, unreadable names: "[python]", no file. */
static void test_unreadable(void)
{
	void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fake_code *bad_name;
	struct fake_code *bad_type = make_code(NULL, make_ascii("x"), make_ascii("x.py"), 1, NULL);
	uint64_t w[4] = { word(hole, 0, 0), word(bad_type, 0, 0), 0,
			  0x1234 }, pcs[4];
	uint8_t ends[4];
	struct sym_info si;

	munmap(hole, 4096);	/* unmapped: no read of it succeeds */
	bad_name = make_code(hole, hole, make_ascii("x.py"), 1, NULL);
	w[2] = word(bad_name, 0, 1);
	put64(bad_type->b, lay.ob_type, 0x1234);
	pyframes_decode(pf, w, 4, pcs, ends);
	for (int i = 0; i < 4; i++) {
		expect_u64_eq(pcs[i], PYFRAMES_PC_BASE + 1);
		expect_int_eq(pyframes_lookup(pf, pcs[i] - 1, &si), 0);
		expect_str_eq(si.function, "[python]");
		expect_true(si.file == NULL);
	}
	expect_int_eq(ends[2], 1);
}

/* Hostile lengths: long names cut at a character, tables too long ignored,
 * non-compact strings and offsets past the bound refused. */
static void test_bounds(void)
{
	uint32_t big[600];
	struct fake_code *c;
	uint64_t w, pc;
	uint8_t end;
	struct sym_info si;
	uint8_t *huge = make_bytes(table311, sizeof(table311));
	void *noncompact = make_ascii("nc");
	struct py_layout l = lay;
	struct pyframes *p2;
	uint8_t *edge;

	for (int i = 0; i < 600; i++)
		big[i] = 0x3b1;		/* 2 bytes of UTF-8 each */
	put64(huge, lay.ob_size, PYFRAMES_TABLE_MAX + 1);
	put64(noncompact, lay.uni_state, 1u << 2 | 1u << 6);
	c = make_code(make_str(big, 600, 2, 0), make_ascii("n"), noncompact, 7, huge);
	w = word(c, 1, 0);
	pyframes_decode(pf, &w, 1, &pc, &end);
	expect_int_eq(pyframes_lookup(pf, pc - 1, &si), 0);
	expect_int_eq(strlen(si.function), PYFRAMES_NAME_MAX - 2);
	expect_true(si.file == NULL);
	expect_int_eq(si.line, 7);

	/* a length near SSIZE_MAX: the read stops at the next page, unmapped */
	edge = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(edge + 4096, 4096);
	memcpy(edge + 4096 - 64, make_ascii("n"), 64);
	put64(edge + 4096 - 64, lay.uni_length, ~0ULL >> 1);
	c = make_code(NULL, edge + 4096 - 64, make_ascii("f.py"), -5, NULL);
	w = word(c, 0, 0);
	pyframes_decode(pf, &w, 1, &pc, &end);
	pyframes_lookup(pf, pc - 1, &si);
	expect_str_eq(si.function, "[python]");
	munmap(edge, 4096);

	l.co_linetable = 1u << 20;	/* 3.13's offsets come from the target */
	p2 = new_pf(&l);
	c = make_code(NULL, make_ascii("n"), make_ascii("f.py"), 1, NULL);
	w = word(c, 0, 0);
	pyframes_decode(p2, &w, 1, &pc, &end);
	expect_u64_eq(pc, PYFRAMES_PC_BASE + 1);
	pyframes_free(p2);
}

/* A code object's address reused: named anew once the cached one is
 * PYFRAMES_RECHECK_NS old. */
static void test_reuse(void)
{
	struct fake_code *c = make_code(NULL, make_ascii("old"), make_ascii("a.py"), 3, NULL);
	uint64_t w = word(c, 0, 0), pc;
	uint8_t end;
	struct sym_info si;

	pyframes_decode(pf, &w, 1, &pc, &end);
	pyframes_lookup(pf, pc - 1, &si);
	expect_str_eq(si.function, "old");
	put64(c->b, lay.co_name, (uintptr_t)make_ascii("new"));
	pyframes_decode(pf, &w, 1, &pc, &end);
	pyframes_lookup(pf, pc - 1, &si);
	expect_str_eq(si.function, "old");	/* cached */
	usleep(PYFRAMES_RECHECK_NS / 1000 + 20000);
	pyframes_decode(pf, &w, 1, &pc, &end);
	pyframes_lookup(pf, pc - 1, &si);
	expect_str_eq(si.function, "new");
	expect_str_eq(si.file, "a.py");
	expect_int_eq(si.line, 3);
}

/* The symbolizer names pseudo-PCs through pyframes; pprof gives them a
 * Function with file and line, in a mapping "[python]" that says its
 * locations are named (go tool pprof, when there). */
static void test_symbolizer_pprof(void)
{
	struct fake_code *c = make_code(make_ascii("Py.leaf"), make_ascii("leaf"),
					make_ascii("/app/py_mod.py"), 40,
					make_bytes(table311, sizeof(table311)));
	struct symbolizer *s = symbolizer_new(t);
	uint64_t w = word(c, 1, 1), stack[2];
	uint8_t end;
	struct sym_info si;
	struct profile *p = profile_new(1);
	struct proc_maps maps = { 0 };
	struct dump_info di = { .pid = 1, .sym = s, .maps = &maps };
	char path[] = "/tmp/test_pycode.XXXXXX", cmd[256], line[512];
	int fd = mkstemp(path), found = 0;
	FILE *f, *out;

	expect_true(s != NULL);
	pyframes_decode(pf, &w, 1, &stack[1], &end);
	stack[0] = (uint64_t)(uintptr_t)&getpid + 1;
	expect_int_eq(symbolizer_lookup(s, stack[1] - 1, &si), -ENOENT);
	symbolizer_set_namer(s, pyframes_namer, pf);
	expect_int_eq(symbolizer_lookup(s, stack[1] - 1, &si), 0);
	expect_str_eq(si.function, "Py.leaf");
	expect_str_eq(si.file, "/app/py_mod.py");
	expect_int_eq(si.line, 42);
	expect_int_eq(symbolizer_lookup(s, PYFRAMES_PC_BASE + (1u << 30), &si), -ENOENT);

	profile_record_alloc(p, stack, 2, 4096, 0x10000);
	f = fdopen(fd, "w");
	expect_int_eq(pprof_write(f, p, &di), 0);
	fclose(f);
	if (system("go version >/dev/null 2>&1")) {
		printf("pycode: no go, pprof output not read back\n");
	} else {
		snprintf(cmd, sizeof(cmd), "go tool pprof -raw %s 2>&1", path);
		out = popen(cmd, "r");
		while (out && fgets(line, sizeof(line), out))
			if (strstr(line, "Py.leaf /app/py_mod.py:42 s=0"))
				found |= 1;
			else if (strstr(line, " [python]  [FN][FL][LN]"))
				found |= 2;
		if (out)
			pclose(out);
		expect_int_eq(found, 3);
	}
	unlink(path);
	profile_free(p);
	symbolizer_free(s);
}

static void test_teardown(void)
{
	pyframes_free(pf);
	target_free(t);
	while (nobjs)
		free(objs[--nobjs]);
}

static void test_setup(void) { setup(); }

HARNESS_MAIN("pycode", T(test_setup), T(test_decode), T(test_name_only), T(test_unreadable),
	     T(test_bounds), T(test_reuse), T(test_symbolizer_pprof), T(test_teardown))
