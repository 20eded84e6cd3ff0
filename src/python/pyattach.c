/* A target's CPython, made ready for Python frames: the agent's block, the decoder, the merge. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "python/pyattach.h"
#include "python/pyfind.h"
#include "python/pyframes.h"
#include "python/pylayout.h"
#include "python/pymerge.h"
#include "shm.h"
#include "stacks/symbolize.h"

struct pyattach {
	struct py_target pt;
	struct shm_py shm;
	struct pyframes *pf;
	struct pymerge_code merge;
};

/* The agent's frame model of a minor version; SHM_PY_NONE if none. */
static uint32_t shm_kind(int minor)
{
	switch (minor) {
	case 8:
	case 9:
		return SHM_PY_38;
	case 10:
		return SHM_PY_310;
	case 11:
		return SHM_PY_311;
	case 12:
		return SHM_PY_312;
	case 13:
		return SHM_PY_313;
	default:
		return SHM_PY_NONE;
	}
}

/* The agent's block for pt: 0, or -ENOTSUP if an offset is out of its
 * bounds or the layout lacks a field the agent's model of it reads. */
static int shm_block(const struct py_target *pt, unsigned max_frames, struct shm_py *out)
{
	const struct py_layout *y = &pt->lay;
	uint32_t offs[] = { y->ts_next, y->ts_thread_id, y->ts_frame, y->cf_current_frame,
			    y->fr_back, y->fr_code, y->fr_lasti, y->fr_owner, y->fr_is_entry,
			    y->co_code_adaptive, y->co_firsttraceable };
	uint32_t kind = shm_kind(pt->minor), need = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] >= SHM_PY_MAX_OFF)
			return -ENOTSUP;
	/* the fields the agent's model of that version reads */
	if (kind >= SHM_PY_311)
		need = PY_HAS_OWNER | PY_HAS_CODE_ADAPTIVE;
	if (kind == SHM_PY_311 || kind == SHM_PY_312)
		need |= PY_HAS_CFRAME;
	if (kind == SHM_PY_311)
		need |= PY_HAS_IS_ENTRY;
	if (!kind || (y->has & need) != need || (kind == SHM_PY_313 && (y->has & PY_HAS_CFRAME)))
		return -ENOTSUP;
	out->max_frames = max_frames < SHM_PY_MAX_FRAMES ? max_frames : SHM_PY_MAX_FRAMES;
	out->holder = pt->holder;
	out->threads_head = pt->threads_head;
	out->ts_next = y->ts_next;
	out->ts_thread_id = y->ts_thread_id;
	out->ts_frame = y->ts_frame;
	out->cf_current_frame = y->cf_current_frame;
	out->fr_back = y->fr_back;
	out->fr_code = y->fr_code;
	out->fr_lasti = y->fr_lasti;
	out->fr_owner = y->fr_owner;
	out->fr_is_entry = y->fr_is_entry;
	out->co_code_adaptive = y->co_code_adaptive;
	out->co_firsttraceable = y->co_firsttraceable;
	out->kind = kind;
	return 0;
}

struct pyattach *pyattach_new(struct target *t, struct symbolizer *sym, unsigned max_frames,
			      int keep_c)
{
	struct pyattach *pa;
	char err[256] = "";
	int rc;

	if (!t)
		return NULL;
	pa = xcalloc(1, sizeof(*pa));
	rc = py_target_find(t, &pa->pt, err, sizeof(err));
	if (rc == -ENOENT)
		goto none;
	if (rc == -EAGAIN) {
		pr_debug("python: the interpreter is not initialised yet: native frames only");
		goto none;
	}
	if (!rc && !pa->pt.eval_lo) {
		snprintf(err, sizeof(err), "Python %.15s: no _PyEval_EvalFrameDefault in %.150s: "
			 "native frames only", pa->pt.version, pa->pt.object);
		rc = -ENOTSUP;
	}
	if (!rc)
		rc = shm_block(&pa->pt, max_frames, &pa->shm);
	if (rc) {
		fprintf(stderr, "heapattach: %s\n",
			err[0] ? err : "a Python heapattach does not know: native frames only");
		goto none;
	}
	pa->pf = pyframes_new(t, &pa->pt);
	if (!pa->pf)
		goto none;
	pa->merge = (struct pymerge_code){ pa->pt.eval_lo, pa->pt.eval_hi, pa->pt.interp_lo,
					    pa->pt.interp_hi, keep_c };
	if (sym)
		symbolizer_set_namer(sym, pyframes_namer, pa->pf);
	return pa;	/* pyfind said what it found (-v) */
none:
	free(pa);
	return NULL;
}

void pyattach_interp(const struct pyattach *pa, uint64_t *lo, uint64_t *hi)
{
	*lo = pa ? pa->pt.interp_lo : 0;
	*hi = pa ? pa->pt.interp_hi : 0;
}

const struct shm_py *pyattach_shm(const struct pyattach *pa)
{
	return pa ? &pa->shm : NULL;
}

struct pyframes *pyattach_frames(const struct pyattach *pa)
{
	return pa ? pa->pf : NULL;
}

const struct pymerge_code *pyattach_merge(const struct pyattach *pa)
{
	return pa ? &pa->merge : NULL;
}

void pyattach_free(struct pyattach *pa)
{
	if (!pa)
		return;
	pyframes_free(pa->pf);
	free(pa);
}
