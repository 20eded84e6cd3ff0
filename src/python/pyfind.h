/* Find the CPython interpreter in a target: its version, struct layout, and the addresses the agent reads. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYFIND_H
#define HEAPATTACH_PYFIND_H

#include <stddef.h>
#include <stdint.h>

#include "python/pylayout.h"

struct target;

struct py_target {
	int minor;			/* 8..13 */
	char version[16];		/* "3.11.7" when Py_Version gives it, else "3.11" */
	struct py_layout lay;		/* copied; for 3.13 taken from _Py_DebugOffsets */
	char object[4096];		/* the file holding _PyRuntime (the target's path) */
	uint64_t runtime;		/* &_PyRuntime in the target */
	uint64_t code_type;		/* &PyCode_Type in the target, 0 if not found */
	uint64_t type_type;		/* &PyType_Type in the target, 0 if not found */
	uint64_t eval_lo, eval_hi;	/* _PyEval_EvalFrameDefault's code; both 0 if not found */
	uint64_t interp_lo, interp_hi;	/* the interpreter object's executable mapping */
	uint64_t holder;		/* the word naming the GIL holder's PyThreadState */
	uint64_t threads_head;		/* the main interpreter's thread list head (a word) */
};

/*
 * Find the interpreter in t (its maps, objects and memory; everything read
 * is checked before use). 0 found; -ENOENT not a Python process; -ENOTSUP a
 * Python heapattach does not know (err gets a one-line reason, e.g.
 * "Python 3.7: not supported, native frames only"); -EAGAIN the interpreter
 * is not initialised yet (try again later); another -errno if the target
 * cannot be read. err (errlen bytes, may be NULL) gets a reason on every
 * error.
 */
int py_target_find(struct target *t, struct py_target *out, char *err, size_t errlen);

/*
 * Fill *lay from a copy of 3.13's _Py_DebugOffsets (the first len bytes
 * of _PyRuntime, read from the target) and check it against 3.13's table:
 * 0, or -ENOTSUP with a reason in err (no cookie, another version, a
 * free-threaded build, an offset outside its struct, or a layout other
 * than the table's).
 */
int py_debug_offsets_parse(const void *buf, size_t len, uint64_t py_version,
			   struct py_layout *lay, char *err, size_t errlen);
/* Bytes of _PyRuntime py_debug_offsets_parse needs. */
#define PY_DEBUG_OFFSETS_LEN 568

#endif
