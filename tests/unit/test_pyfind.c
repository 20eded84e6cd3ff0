/* Unit tests for the CPython layout table and the 3.13 _Py_DebugOffsets reader. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "python/pyfind.h"
#include "python/pylayout.h"

static void test_layout_range(void)
{
	expect_true(py_layout_for(7) == NULL);
	expect_true(py_layout_for(14) == NULL);
	expect_true(py_layout_for(-1) == NULL);
	expect_true(py_layout_for(0) == NULL);
	for (int m = 8; m <= 13; m++)
		expect_true(py_layout_for(m) != NULL);
}

/* Facts of every 3.8-3.13 release build, and each field present where the
 * version has it. */
static void test_layout_sane(void)
{
	for (int m = 8; m <= 13; m++) {
		const struct py_layout *l = py_layout_for(m);

		if (!l)
			continue;
		expect_int_eq(l->minor, m);
		expect_int_eq(l->ob_type, 8);
		expect_int_eq(l->ob_size, 16);
		expect_int_eq(l->bytes_sval, 32);
		expect_int_eq(l->uni_length, 16);
		expect_int_eq(l->ts_next, 8);	/* after prev */
		expect_true(l->rt_interp_main && l->rt_interp_main < 4096);
		expect_true(l->is_threads_head && l->is_threads_head < 65536);
		expect_true(l->ts_thread_id > l->ts_interp && l->ts_thread_id < 1024);
		expect_true(l->ts_frame && l->fr_back && l->fr_lasti);
		expect_true(l->co_filename && l->co_name && l->co_firstlineno && l->co_linetable);
		expect_true(l->uni_ascii_size > l->uni_state);
		expect_true(l->uni_compact_size > l->uni_ascii_size);
		expect_int_eq(!!(l->has & PY_HAS_TSTATE_CURRENT), m <= 11);
		expect_int_eq(!!(l->rt_tstate_current), m <= 11);
		expect_int_eq(!!(l->has & PY_HAS_GIL), m >= 12);
		expect_int_eq(!!(l->is_gil && l->gil_last_holder), m >= 12);
		expect_int_eq(!!(l->has & PY_HAS_CFRAME), m == 11 || m == 12);
		expect_int_eq(!!(l->has & PY_HAS_OWNER), m >= 11);
		expect_int_eq(!!l->fr_owner, m >= 11);
		expect_int_eq(!!(l->has & PY_HAS_IS_ENTRY), m == 11);
		expect_int_eq(!!l->fr_is_entry, m == 11);
		expect_int_eq(!!(l->has & PY_HAS_QUALNAME), m >= 11);
		expect_int_eq(!!l->co_qualname, m >= 11);
		expect_int_eq(!!(l->has & PY_HAS_CODE_ADAPTIVE), m >= 11);
		expect_int_eq(!!(l->co_code_adaptive && l->co_firsttraceable), m >= 11);
		expect_int_eq(!!(l->has & PY_HAS_CO_CODE), m <= 10);
		expect_int_eq(!!l->co_code, m <= 10);
	}
	/* the offsets that are 0 for real (pylayout.h) */
	expect_int_eq(py_layout_for(12)->cf_current_frame, 0);
	expect_int_eq(py_layout_for(12)->fr_code, 0);
	expect_int_eq(py_layout_for(13)->fr_code, 0);
}

/* A 3.13 _Py_DebugOffsets as a release build of 3.13.0 carries it, from the table. */
static void make_offsets(uint8_t *buf)
{
	const struct py_layout *l = py_layout_for(13);
	const uint64_t big = 1 << 20;
	uint64_t w[PY_DEBUG_OFFSETS_LEN / 8] = { 0 };

	memcpy(w, "xdebugpy", 8);
	w[1] = 0x030d00f0;		/* version */
	w[3] = 2048;			/* runtime_state.size */
	w[5] = l->rt_interp_main - 8;	/* interpreters.head */
	w[6] = big;			/* interpreter_state.size */
	w[9] = l->is_threads_head;
	w[14] = l->is_gil;
	w[15] = 4096;			/* gil_runtime_state */
	w[18] = 4096 + l->gil_last_holder;
	w[19] = 512;			/* thread_state.size */
	w[21] = l->ts_next;
	w[22] = l->ts_interp;
	w[23] = l->ts_frame;
	w[24] = l->ts_thread_id;
	w[28] = 80;			/* interpreter_frame.size */
	w[29] = l->fr_back;
	w[30] = l->fr_code;
	w[31] = l->fr_lasti;
	w[33] = l->fr_owner;
	w[34] = 220;			/* code_object.size */
	w[35] = l->co_filename;
	w[36] = l->co_name;
	w[37] = l->co_qualname;
	w[38] = l->co_linetable;
	w[39] = l->co_firstlineno;
	w[43] = l->co_code_adaptive;
	w[44] = 16;			/* pyobject.size */
	w[45] = l->ob_type;
	w[64] = 40;			/* bytes_object.size */
	w[65] = l->ob_size;
	w[66] = l->bytes_sval;
	w[67] = 72;			/* unicode_object.size */
	w[68] = l->uni_state;
	w[69] = l->uni_length;
	w[70] = l->uni_ascii_size;
	memcpy(buf, w, sizeof(w));
}

static void test_debug_offsets_ok(void)
{
	uint8_t buf[PY_DEBUG_OFFSETS_LEN];
	struct py_layout l;
	char err[256];

	make_offsets(buf);
	memset(&l, 0xee, sizeof(l));
	expect_int_eq(py_debug_offsets_parse(buf, sizeof(buf), 0x030d00f0, &l, err, sizeof(err)), 0);
	expect_true(!memcmp(&l, py_layout_for(13), sizeof(l)));
	/* Py_Version unknown (0): the cookie's version alone */
	expect_int_eq(py_debug_offsets_parse(buf, sizeof(buf), 0, &l, err, sizeof(err)), 0);
}

/* Each way a hostile or foreign _PyRuntime start is refused, with a reason. */
static void test_debug_offsets_refused(void)
{
	static const struct {
		unsigned word;
		uint64_t val;
		const char *why;
	} bad[] = {
		{ 0, 0x7a70677562656478ULL, "cookie" },		/* "xdebugpz" */
		{ 1, 0x030e00f0, "version" },
		{ 2, 1, "free-threaded" },
		{ 3, 0, "outside" },				/* runtime size 0 */
		{ 5, 2048 - 8, "outside" },			/* head + main past the end */
		{ 6, 1ULL << 40, "outside" },			/* huge interpreter size */
		{ 9, ~0ULL, "outside" },
		{ 18, 4000, "GIL" },				/* holder before the GIL */
		{ 33, 80, "outside" },				/* owner at the frame's end */
		{ 24, 160, "differs" },				/* thread_id elsewhere */
		{ 22, 24, "differs" },				/* interp elsewhere */
		{ 70, 73, "outside" },				/* ascii size > unicode size */
	};
	uint8_t buf[PY_DEBUG_OFFSETS_LEN];
	struct py_layout l;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make_offsets(buf);
		memcpy(buf + bad[i].word * 8, &bad[i].val, 8);
		err[0] = 0;
		expect_int_eq(py_debug_offsets_parse(buf, sizeof(buf), 0, &l, err, sizeof(err)),
			      -ENOTSUP);
		if (!strstr(err, bad[i].why))
			fprintf(stderr, "case %zu: \"%s\" lacks \"%s\"\n", i, err, bad[i].why);
		expect_true(strstr(err, bad[i].why) != NULL);
	}
	make_offsets(buf);
	expect_int_eq(py_debug_offsets_parse(buf, sizeof(buf), 0x030d01f0, &l, err, sizeof(err)),
		      -ENOTSUP);	/* Py_Version says 3.13.1 */
	expect_int_eq(py_debug_offsets_parse(buf, sizeof(buf) - 1, 0, &l, err, sizeof(err)),
		      -ENOTSUP);	/* short read */
}

HARNESS_MAIN("pyfind",
	T(test_layout_range),
	T(test_layout_sane),
	T(test_debug_offsets_ok),
	T(test_debug_offsets_refused))
