/* Allocator wrappers found by their code: functions whose every allocating call seen returns what it got. */
/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "disasm.h"
#include "output/wrapfind.h"
#include "profile/profile.h"
#include "profile/skipsites.h"
#include "python/pyframes.h"
#include "stacks/symbolize.h"

#define PC_CACHE 16384          /* frames whose wrapper test is remembered */
#define WRAP_CODE 512           /* bytes of code read after a call to follow its result */
#define IMPURE_MAX 4096         /* functions found impure at most (a power of 2) */

struct wrapfind {
	const struct skipsites *skip;
	struct pc_wrap {                /* a direct-mapped cache of frames tested */
		uint64_t pc;
		uint64_t fn;            /* its function's start; 0 unknown */
		int named, in_map;      /* skipsites_match; in an object file */
		int tested, pure;       /* returns_result, once tested */
		int py;                 /* the interpreter's, passed over for a Python frame */
	} *pcs;
	uint64_t *impure;               /* open addressing: functions with a call site
					 * whose result they do not return */
};

struct wrapfind *wrapfind_new(const struct skipsites *skip)
{
	struct wrapfind *wf = xcalloc(1, sizeof(*wf));

	wf->skip = skip;
	/* pages of its own, touched as frames come: a session's attach
	 * clears none of its 640 KiB (64 sessions at once: 2.5 ms each) */
	wf->pcs = xmap(PC_CACHE * sizeof(*wf->pcs));
	wf->impure = xcalloc(IMPURE_MAX, sizeof(*wf->impure));
	return wf;
}

void wrapfind_free(struct wrapfind *wf)
{
	if (!wf)
		return;
	xunmap(wf->pcs, PC_CACHE * sizeof(*wf->pcs));
	free(wf->impure);
	free(wf);
}

/* 1 if the target's code at return address pc (in an object file's
 * function) returns the result of the call before it: that function is a
 * pure wrapper of it (disasm.h). */
static int returns_result(const struct wrapfind_src *src, uint64_t pc)
{
	uint8_t code[WRAP_CODE];
	size_t len = sizeof(code);

	/* a short read near the end of a mapping: as far as its page goes */
	if (src->read(src->arg, pc, code, len)) {
		len = 4096 - (pc & 4095);
		if (len > sizeof(code) || src->read(src->arg, pc, code, len))
			return 0;
	}
	return disasm_returns_result(code, len, pc);
}

/* The slot of function start fn among the impure ones: its own, or the
 * empty one where it would go; NULL when the table is full. */
static uint64_t *impure_slot(struct wrapfind *wf, uint64_t fn)
{
	size_t i = (size_t)(fn * 0x9E3779B97F4A7C15ULL >> 52) & (IMPURE_MAX - 1);

	for (size_t n = 0; n < IMPURE_MAX; n++, i = (i + 1) & (IMPURE_MAX - 1))
		if (wf->impure[i] == fn || !wf->impure[i])
			return &wf->impure[i];
	return NULL;
}

/* Return address pc's entry in the cache: its function and whether it is
 * named a wrapper (its code not tested yet unless tested). */
static struct pc_wrap *entry(struct wrapfind *wf, const struct wrapfind_src *src, uint64_t pc)
{
	struct pc_wrap *c = &wf->pcs[(pc * 0x9E3779B97F4A7C15ULL >> 50) & (PC_CACHE - 1)];
	struct sym_info si;

	if (c->pc != pc) {
		*c = (struct pc_wrap){ .pc = pc };
		if (src->sym && pc > 1 && symbolizer_lookup(src->sym, pc - 1, &si) == 0 &&
		    si.function) {
			c->named = skipsites_match(wf->skip, si.function);
			c->fn = pc - 1 - si.offset;
			c->in_map = si.map != NULL;
		}
	}
	return c;
}

/* 1 if c's function, not named a wrapper, was found one by its code and
 * not found impure since (a full impure table: none is one). */
static int still_pure(struct wrapfind *wf, const struct pc_wrap *c)
{
	uint64_t *slot;

	if (!c->pure || !c->fn)
		return 0;
	slot = impure_slot(wf, c->fn);
	return slot && !*slot;
}

/*
 * 1 if the function of return address pc is an allocator wrapper: named
 * so, or its code returns the call's result (tested once, here: pc must be
 * a frame reached past wrappers only, its call an allocating one; a call
 * that does not return its result makes the function impure for good).
 */
static int is_wrapper(struct wrapfind *wf, const struct wrapfind_src *src, uint64_t pc)
{
	struct pc_wrap *c = entry(wf, src, pc);
	uint64_t *slot;

	if (c->named || !c->fn)
		return c->named;
	if (!c->tested) {
		c->tested = 1;
		c->pure = c->in_map && returns_result(src, pc);
		slot = c->pure ? NULL : impure_slot(wf, c->fn);
		if (slot)
			*slot = c->fn;
	}
	return still_pure(wf, c);
}

/* 1 if return address pc is in the Python interpreter's code. */
static int in_interp(const struct wrapfind_src *src, uint64_t pc)
{
	return pc - 1 >= src->interp_lo && pc - 1 < src->interp_hi;
}

struct walk {
	struct wrapfind *wf;
	const struct wrapfind_src *src;
	const struct profile_bucket *b;
};

/* skipsites_pass's kind of frame i: its code is tested only where reached. */
static unsigned frame_kind(void *arg, size_t i, int reached)
{
	struct walk *w = arg;
	uint64_t pc = w->b->pcs[i];

	if (entry(w->wf, w->src, pc)->named)
		return SKIPSITES_WRAPPER | SKIPSITES_NAMED;
	return reached && is_wrapper(w->wf, w->src, pc) ? SKIPSITES_WRAPPER : 0;
}

uint64_t wrapfind_site_pc(struct wrapfind *wf, const struct wrapfind_src *src,
			  const struct profile_bucket *b)
{
	struct walk w = { wf, src, b };
	size_t k = skipsites_pass(b->npcs, frame_kind, &w), j;

	if (k == b->npcs)
		return b->npcs ? b->pcs[0] : 2;
	for (j = k; j < b->npcs && in_interp(src, b->pcs[j]); j++)
		;
	if (j == k || j == b->npcs || b->pcs[j] < PYFRAMES_PC_BASE)
		return b->pcs[k];
	/* the interpreter allocating for the Python code that called it */
	while (k < j)
		entry(wf, src, b->pcs[k++])->py = 1;
	return b->pcs[j];
}

struct scan {
	struct wrapfind *wf;
	const struct wrapfind_src *src;
};

static int scan_bucket(const struct profile_bucket *b, void *arg)
{
	struct scan *sc = arg;

	wrapfind_site_pc(sc->wf, sc->src, b);
	return 0;
}

void wrapfind_scan(struct wrapfind *wf, const struct wrapfind_src *src, const struct profile *prof)
{
	struct scan sc = { wf, src };

	profile_foreach(prof, scan_bucket, &sc);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

size_t wrapfind_found(struct wrapfind *wf, const struct wrapfind_src *src,
		      char (*v)[WRAPFIND_NAME], size_t max)
{
	uint64_t *seen = xcalloc(max ? max : 1, sizeof(*seen));
	size_t n = 0;

	for (size_t i = 0; i < PC_CACHE && n < max && src->sym; i++) {
		const struct pc_wrap *c = &wf->pcs[i];
		struct sym_info si;
		uint64_t key;
		size_t k;

		if (!c->pc || c->named || !(c->py || still_pure(wf, c)))
			continue;
		key = c->fn ? c->fn : c->pc;
		for (k = 0; k < n && seen[k] != key; k++)
			;
		if (k < n)
			continue;
		if (symbolizer_lookup(src->sym, c->pc - 1, &si) || !si.function)
			snprintf(v[n], WRAPFIND_NAME, "0x%" PRIx64, c->pc - 1);
		else if ((size_t)snprintf(v[n], WRAPFIND_NAME, "%s", si.function) >= WRAPFIND_NAME)
			continue;	/* cut: it would name another function */
		seen[n++] = key;
	}
	free(seen);
	qsort(v, n, sizeof(*v), by_name);
	return n;
}
