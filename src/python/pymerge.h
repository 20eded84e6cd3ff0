/* Python frames in place of the eval loop's native frames of a stack. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYMERGE_H
#define HEAPATTACH_PYMERGE_H

#include <stddef.h>
#include <stdint.h>

/* Where the interpreter's code lies in the target (from struct py_target). */
struct pymerge_code {
	uint64_t eval_lo, eval_hi;      /* _PyEval_EvalFrameDefault */
	uint64_t interp_lo, interp_hi;  /* the interpreter object's code */
	int keep_c;                     /* --python-c-frames: drop nothing */
};

/*
 * Merge native return addresses (leaf first) with Python pseudo-PCs
 * (leaf first; ends[i]: the rootmost frame of its eval-loop call) into
 * out (at most max): each native frame in the eval loop gives way to
 * the next group of Python frames; the interpreter's own frames between
 * the leafmost and the rootmost eval frame only dispatch and are dropped
 * unless keep_c (the eval frames too). Groups left over go at the root
 * end. Returns the frames written.
 */
size_t pymerge(const struct pymerge_code *c, const uint64_t *native, size_t n,
	       const uint64_t *py, const uint8_t *ends, size_t npy, uint64_t *out, size_t max);

#endif
