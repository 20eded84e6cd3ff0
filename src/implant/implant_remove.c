/* Taking the implant out: original bytes back, threads let out of the trampolines, regions unmapped. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "implant/implant.h"
#include "implant/implant_int.h"
#include "model/mapguard.h"
#include "model/target.h"

#define INFLIGHT_WAIT_MS 3000
#define UNMAP_ROUNDS 8		/* tries to find a thread that can unmap the regions */

/* ---- removal ---- */

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

/*
 * Once the original bytes are back no thread can enter a trampoline again,
 * so only the threads still inside one need to run: resume just those for
 * a moment, re-stop them, look again. Every eighth round everyone runs, in
 * case a thread inside waits for a lock that a stopped one holds. A
 * thread found outside stays outside: after the first round only those
 * found inside are looked at again (with thousands of threads each look,
 * a walk of the live stack, is what the target waits for).
 */
int implant_wait_quiet(struct implant *im, int *busy)
{
	struct tracee *tr = im->p.tr;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	for (int round = 1;; round++) {
		*busy = 0;
		for (size_t i = 0; i < tr->n; i++) {
			struct thread *th = &tr->t[i];

			if (round > 1 && !th->mark)
				continue;
			th->mark = !th->vfork_child && th->state == TS_STOPPED &&
				   implant_in_flight(im, th->tid);
			*busy += th->mark;
		}
		if (round == 1 || !*busy)
			pr_debug("%d thread(s) inside a hooked call after round %d, %.1f ms",
				 *busy, round, (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
		if (!*busy || implant_gone(im))
			return 0;
		if (clock_ns(CLOCK_MONOTONIC) - t0 >= INFLIGHT_WAIT_MS * 1000000ULL)
			return -EBUSY;
		if (round % 8 == 0) {
			tracee_resume_all(tr);
			sleep_us(1000);
		} else {
			for (size_t i = 0; i < tr->n; i++)
				if (tr->t[i].mark)
					tracee_resume(tr, &tr->t[i]);
			sleep_us(round < 4 ? 50 : 300);
		}
		implant_stop_all(im);
		/* exact mode: a thread inside may be waiting for ring room */
		if (im->p.ops->quiesce)
			im->p.ops->quiesce(im->p.ops_arg);
	}
}

/*
 * Unmap every region's views, each in the first stopped thread that can
 * run a syscall. Under heavy thread churn every stopped thread may sit in
 * a clone or exit stop, where none can: then let the threads run for a
 * moment (the original bytes are back and no thread is inside a region,
 * so none can enter one) and try again, UNMAP_ROUNDS times. Returns how
 * many views stay mapped, with the last error in *err.
 */
static size_t unmap_regions(struct implant *im, int *err)
{
	size_t left = 0;

	for (int round = 1;; round++) {
		left = 0;
		for (size_t i = 0; i < im->nregions && !implant_gone(im); i++) {
			struct inject_region *v[2] = { im->regions[i].alias, im->regions[i].inj };

			for (int k = 0; k < 2; k++) {
				int rc = 0;

				if (implant_view_mapped(v[k])) {
					if (!v[k]->alias && v[k]->local)
						mapguard_remove(v[k]->local);	/* unmapped now */
					rc = im->p.sys->unmap(im, v[k]);
				}

				if (rc) {
					*err = rc;
					left++;
				}
			}
		}
		if (!left || implant_gone(im))
			return 0;
		if (round == UNMAP_ROUNDS)
			return left;
		pr_debug("%zu view(s) not unmapped (%s): round %d", left, strerror(-*err), round);
		tracee_resume_all(im->p.tr);
		sleep_us(round < 4 ? 200 : 2000);
		implant_stop_all(im);
	}
}

/* The first region's local view goes to the backend, which reads what the
 * agent left once the target runs again (session.c): it outlives the regions. */
static void hand_over(struct implant *im)
{
	struct inject_region *inj = im->nregions ? im->regions[0].inj : NULL;

	if (!im->p.ops->removed || im->handed_over || !inj || !inj->local)
		return;
	im->p.ops->removed(im->p.ops_arg, inj->local, inj->size);
	inj->local = NULL;
	im->handed_over = 1;
}

/* Threads that tracee_stop_all could not stop (tracee.h): they run no
 * user code before they stop, but may be inside a trampoline. */
static int unstopped(const struct implant *im)
{
	int n = 0;

	for (size_t i = 0; i < im->p.tr->n; i++)
		n += im->p.tr->t[i].state != TS_STOPPED;
	return n;
}

void implant_remove(struct implant *im)
{
	int busy = 0, unrestored = 0, err = 0, stuck;

	/* 1. The original bytes back (trampolines have no trap that could
	 * hurt without us: nothing to disarm first). */
	for (size_t i = 0; i < im->npatches; i++) {
		struct patch *p = &im->patches[i];

		if (!p->installed)
			continue;
		if (target_write(im->p.target, p->reloc.patch_addr, p->orig, RELOC_JMP_LEN)) {
			pr_err("cannot restore %s at %#lx in %d", p->hook->names[0],
			       (unsigned long)p->reloc.patch_addr, im->p.pid);
			unrestored++;
		} else {
			p->installed = 0;
		}
	}
	/* 2. Let threads still inside a trampoline (or a call made through one)
	 * leave it before the regions go. */
	if (im->nregions && !implant_gone(im))
		implant_wait_quiet(im, &busy);
	hand_over(im);
	if (implant_gone(im))
		goto out;
	stuck = unstopped(im);
	if (unrestored || busy || stuck) {
		/* A jump or a thread still leads there: unmapping would crash it. */
		for (size_t i = 0; i < im->nregions; i++)
			im->left += implant_view_mapped(im->regions[i].inj) +
				    implant_view_mapped(im->regions[i].alias);
		if (busy)
			pr_err("%d thread(s) of %d still inside a hooked call after %d ms: "
			       "leaving %zu heapattach mapping(s) in it (they work without "
			       "heapattach)", busy, im->p.pid, INFLIGHT_WAIT_MS, im->left);
		else if (stuck)
			pr_err("%d thread(s) of %d did not stop (%d: a vfork parent waiting for its "
			       "child, or an uninterruptible sleep): leaving %zu heapattach "
			       "mapping(s) in it (they work without heapattach)", stuck, im->p.pid,
			       im->p.tr->unstopped, im->left);
		else
			pr_err("leaving %zu heapattach mapping(s) in %d: %d entry point(s) still "
			       "jump there", im->left, im->p.pid, unrestored);
		goto out;
	}
	im->left = unmap_regions(im, &err);
	if (im->left)
		pr_err("cannot unmap %zu heapattach mapping(s) from %d (%s, in every thread, "
		       "%d tries): they stay, unused (no jump leads there any more)",
		       im->left, im->p.pid, strerror(-err), UNMAP_ROUNDS);
out:
	for (size_t i = 0; i < im->nregions; i++) {
		free(im->regions[i].inj);
		free(im->regions[i].alias);
		im->regions[i].inj = im->regions[i].alias = NULL;
	}
	im->nregions = 0;
	im->npatches = 0;
}
