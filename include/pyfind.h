/* Finding the CPython interpreter in a target: its version, layout and runtime addresses. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYFIND_H
#define HEAPATTACH_PYFIND_H

#include <stddef.h>
#include <stdint.h>

#include "pylayout.h"

struct target;

struct py_target {
	int minor;			/* 8..13 */
	char version[16];		/* "3.11.7" when found, else "3.11" */
	struct py_layout lay;		/* copied; for 3.13+ taken from _Py_DebugOffsets */
	char object[4096];		/* the file holding _PyRuntime */
	uint64_t runtime;		/* &_PyRuntime in the target */
	uint64_t code_type;		/* &PyCode_Type in the target */
	uint64_t eval_lo, eval_hi;	/* _PyEval_EvalFrameDefault's code in the target */
	uint64_t interp_lo, interp_hi;	/* the interpreter object's executable mapping */
	uint64_t holder, threads_head;	/* for shm_py */
};

/* 0 found; -ENOENT not a Python process; -ENOTSUP a Python heapattach does not
 * know (err gets a one-line reason, e.g. "Python 3.7: not supported, native frames only");
 * -EAGAIN interpreter not initialised yet. */
int py_target_find(struct target *t, struct py_target *out, char *err, size_t errlen);

#endif
