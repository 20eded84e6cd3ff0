/* A target's CPython, made ready for Python frames: the agent's block, the decoder, the merge. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYATTACH_H
#define HEAPATTACH_PYATTACH_H

#include <stdint.h>

struct target;
struct symbolizer;
struct shm_py;
struct pyframes;
struct pymerge_code;
struct pyattach;

/*
 * Find the target's interpreter (pyfind.c) and get ready to name its
 * frames through sym. NULL when there is none, or one heapattach does
 * not know (said in one line on stderr), or it is not initialised yet
 * (said with -v). max_frames bounds the Python frames of a sample;
 * keep_c: --python-c-frames.
 */
struct pyattach *pyattach_new(struct target *t, struct symbolizer *sym, unsigned max_frames,
			      int keep_c);
/* What the fast backend's link takes of pa (agentlink.h's parameters):
 * the agent's view of the interpreter, the frames' decoder and where they
 * go in the native stacks; NULL for NULL pa (no Python frames). */
const struct shm_py *pyattach_shm(const struct pyattach *pa);
struct pyframes *pyattach_frames(const struct pyattach *pa);
const struct pymerge_code *pyattach_merge(const struct pyattach *pa);
/* The interpreter object's code [*lo, *hi); both 0 for NULL pa. */
void pyattach_interp(const struct pyattach *pa, uint64_t *lo, uint64_t *hi);
void pyattach_free(struct pyattach *pa);

#endif
