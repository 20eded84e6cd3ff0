/* Unit tests for the implant: install and remove hooks in a fake target (this process's own bytes). */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "fake_target.h"
#include "fast/agentlink.h"
#include "trap/collect.h"
#include "implant/implant.h"
#include "profile/profile.h"
#include "reloc.h"
#include "profile/sampler.h"
#include "shm.h"
#include "stacks/unwind.h"

static struct implant *new_trap_implant(void)
{
	struct implant_params p = fake_implant_params(&collect_implant_ops, NULL, fake_unw);

	return implant_new(&p);
}

/* The region header as the target sees it (the code view is readable here). */
static const struct shm_hdr *header_of(const struct patch *p)
{
	return (const struct shm_hdr *)((p->tramp & ~(uint64_t)(REGION_CODE - 1)) + REGION_CODE);
}

/* Check one installed patch: a jmp into its trampoline, recorded in the header. */
static void expect_patched(const struct implant *im, const struct patch *p)
{
	const uint8_t *at = (const uint8_t *)p->reloc.patch_addr;
	const struct shm_hdr *h;
	uint64_t to = 0;
	int found = 0;

	expect_true(p->installed);
	expect_int_eq(reloc_decode_jmp(at, p->reloc.patch_addr, &to), 0);
	expect_u64_eq(to, p->tramp);
	expect_true(implant_in_region(im, p->tramp));
	expect_true(implant_patch_at(im, p->tramp + 1) == p);
	expect_true(!memcmp(p->orig, fake_orig + (at - fake.text), RELOC_JMP_LEN));
	h = header_of(p);
	for (uint32_t k = 0; k < h->npatches && k < SHM_MAX_PATCHES; k++)
		found |= h->patches[k].addr == p->reloc.patch_addr &&
			 !memcmp(h->patches[k].orig, p->orig, RELOC_JMP_LEN);
	expect_true(found);
}

static void test_install_remove(void)
{
	struct implant_view v[4];
	const struct patch *pv;
	const struct shm_hdr *h;
	struct implant *im;
	size_t n;

	if (fake_alloc_setup(1, 0))
		return;
	im = new_trap_implant();
	expect_int_eq(implant_install(im, &fake_hooks), 0);
	pv = implant_patches(im, &n);
	expect_int_eq(n, 3);	/* valloc is too short to be hooked */
	for (size_t i = 0; i < n; i++)
		expect_patched(im, &pv[i]);
	expect_true(!memcmp(fake.text + OFF_SHORT, f_short, sizeof(f_short)));
	h = header_of(&pv[0]);
	expect_u64_eq(h->magic, SHM_MAGIC);
	expect_int_eq(h->version, SHM_VERSION);
	expect_int_eq(h->npatches, 3);
	expect_int_eq(h->target_pid, getpid());
	expect_u64_eq(h->code_remote, pv[0].tramp & ~(uint64_t)(REGION_CODE - 1));
	/* the allocator's own text is nested, the rest of the target is not */
	expect_true(implant_nested(im, (uint64_t)fake.text + OFF_FREE + 3));
	expect_true(!implant_nested(im, (uint64_t)fake.text + OFF_MANY));
	expect_true(!implant_in_region(im, (uint64_t)fake.text + OFF_MALLOC));
	expect_int_eq(implant_views(im, v, 4), 1);	/* trap mode: the code view only */
	expect_int_eq(fake.maps, 1);

	implant_remove(im);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	expect_int_eq(fake.unmaps, 1);
	expect_int_eq(implant_left(im), 0);
	expect_int_eq(implant_views(im, v, 4), 0);
	expect_true(!implant_in_region(im, pv[0].tramp));
	implant_free(im);
}

static void test_endbr(void)
{
	const struct patch *pv;
	struct implant *im;
	size_t n;

	if (fake_alloc_setup(0, 1))
		return;
	im = new_trap_implant();
	expect_int_eq(implant_install(im, &fake_hooks), 0);
	pv = implant_patches(im, &n);
	expect_int_eq(n, 4);
	for (size_t i = 0; i < n; i++) {
		if (pv[i].hook->addr != (uint64_t)fake.text + OFF_ENDBR)
			continue;
		expect_u64_eq(pv[i].reloc.patch_addr, pv[i].hook->addr + 4);
		expect_patched(im, &pv[i]);
	}
	expect_true(!memcmp(fake.text + OFF_ENDBR, f_endbr, 4));	/* endbr64 kept */
	implant_remove(im);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	implant_free(im);
}

/* Nothing can be hooked: refused, and nothing is left behind. */
static void test_nothing_hookable(void)
{
	struct implant *im;

	if (fake_target_init(1))
		return;
	fake_alloc_begin();
	fake_alloc_add(HOOK_ALLOC, "valloc", OFF_SHORT, f_short, sizeof(f_short));
	fake_alloc_end();
	im = new_trap_implant();
	expect_int_eq(implant_install(im, &fake_hooks), -ENOENT);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	expect_int_eq(fake.maps, fake.unmaps);
	implant_free(im);
}

/* The region cannot be mapped: the error comes back, the text is untouched. */
static void test_map_fails(void)
{
	struct implant *im;

	if (fake_alloc_setup(0, 0))
		return;
	fake.map_err = -ENOMEM;
	im = new_trap_implant();
	expect_int_eq(implant_install(im, &fake_hooks), -ENOMEM);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	expect_int_eq(fake.maps, 0);
	implant_free(im);
}

/* More hooks than a header has records for: the rest are left alone. */
static void test_records_full(void)
{
	const struct patch *pv;
	struct implant *im;
	size_t n, patched = 0;

	if (fake_target_init(1))
		return;
	fake_alloc_begin();
	for (int i = 0; i < SHM_MAX_PATCHES + 2; i++)
		fake_alloc_add(HOOK_ALLOC, "malloc", OFF_MANY + 32 * (size_t)i, f_malloc,
			       sizeof(f_malloc));
	fake_alloc_end();
	im = new_trap_implant();
	expect_int_eq(implant_install(im, &fake_hooks), 0);
	pv = implant_patches(im, &n);
	for (size_t i = 0; i < n; i++)
		patched += pv[i].installed;
	expect_int_eq(patched, SHM_MAX_PATCHES);
	expect_int_eq(header_of(&pv[0])->npatches, SHM_MAX_PATCHES);
	for (size_t i = SHM_MAX_PATCHES; i < n; i++)
		expect_true(!memcmp((void *)pv[i].hook->addr, f_malloc, sizeof(f_malloc)));
	implant_remove(im);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	implant_free(im);
}

/* A thread inside a region keeps it mapped; the target gone, nothing is unmapped. */
static void test_leftover_ranges(void)
{
	struct implant *im;

	if (fake_alloc_setup(0, 0))
		return;
	im = new_trap_implant();
	expect_int_eq(implant_add_leftover(im, 0x10000, 0x20000), 0);
	expect_true(implant_in_region(im, 0x10000));
	expect_true(implant_in_region(im, 0x1ffff));
	expect_true(!implant_in_region(im, 0x20000));
	implant_clear_leftovers(im);
	expect_true(!implant_in_region(im, 0x10000));
	for (int i = 0; i < IMPLANT_MAX_REGIONS; i++)
		expect_int_eq(implant_add_leftover(im, 0x1000 * (uint64_t)i, 0x1000 * (uint64_t)i + 1), 0);
	expect_int_eq(implant_add_leftover(im, 1, 2), -ENOSPC);
	implant_clear_leftovers(im);

	expect_int_eq(implant_install(im, &fake_hooks), 0);
	fake.gone = 1;		/* every thread exited: nothing to restore or unmap */
	implant_remove(im);
	expect_int_eq(fake.unmaps, 0);
	expect_int_eq(implant_left(im), 0);
	fake.gone = 0;
	implant_free(im);
}

/* ---- fast mode: the agent link as the backend, the hooks called for real ---- */

static char notes[4][192];
static int nnotes;

static void note(void *arg, const char *msg)
{
	(void)arg;
	if (nnotes < 4)
		snprintf(notes[nnotes++], sizeof(notes[0]), "%s", msg);
}

struct fast {
	struct profile *prof;
	struct sampler sampler;
	struct run_stats stats;
	struct agent_link *link;
	struct implant *im;
	uint8_t *data;          /* the target's data view */
};

/* The data view: the view that is not the code view. */
static uint8_t *data_view(struct fast *f)
{
	struct implant_view v[4];
	size_t n = implant_views(f->im, v, 4), np;
	const struct patch *p = implant_patches(f->im, &np);

	for (size_t i = 0; i < n; i++)
		if (np && !(p[0].tramp >= v[i].remote && p[0].tramp < v[i].remote + v[i].size))
			return (uint8_t *)v[i].remote + REGION_CODE;
	return NULL;
}

static void fast_teardown(struct fast *f)
{
	agent_link_free(f->link);
	implant_free(f->im);
	profile_free(f->prof);
}

/* The fake allocator hooked through an agent link at rate, its data
 * view found: 0, or -1 (nothing left to tear down). */
static int fast_setup(struct fast *f, uint64_t rate)
{
	struct agent_link_params lp;
	struct implant_params ip;

	memset(f, 0, sizeof(*f));
	if (fake_alloc_setup(0, 0))
		return -1;
	nnotes = 0;
	f->prof = profile_new(rate);
	sampler_init(&f->sampler, rate, 1);
	lp = (struct agent_link_params){
		.pid = fake.pid, .target = fake.t, .rate = rate, .ring_size = 64 << 10,
		.sc = &fake.sc, .prof = f->prof, .sampler = &f->sampler, .unw = fake_unw,
		.stats = &f->stats, .note = note,
	};
	f->link = agent_link_new(&lp);
	ip = fake_implant_params(&agent_link_implant_ops, f->link, fake_unw);
	f->im = implant_new(&ip);
	expect_int_eq(implant_install(f->im, &fake_hooks), 0);
	f->data = data_view(f);
	expect_true(f->data != NULL);
	if (f->data)
		return 0;
	implant_remove(f->im);
	fast_teardown(f);
	return -1;
}

static void test_fast_events(void)
{
	uint64_t (*fmalloc)(uint64_t), (*fcalloc)(uint64_t, uint64_t);
	void (*ffree)(uint64_t);
	const struct shm_hdr *h;
	struct fast f;
	size_t n;

	if (fast_setup(&f, 1))
		return;
	implant_patches(f.im, &n);
	expect_int_eq(n, 3);
	expect_int_eq(fake.maps, 2);	/* code and data views */
	h = (const struct shm_hdr *)f.data;
	expect_u64_eq(h->magic, SHM_MAGIC);
	expect_true(h->flags & SHM_F_EXACT);
	expect_u64_eq(h->ring_size, 64 << 10);
	expect_u64_eq(h->rate, 1);
	expect_u64_eq(h->data_remote, (uint64_t)f.data);

	/* Through the jumps, the trampolines and the agent, into the rings. */
	fmalloc = (void *)(fake.text + OFF_MALLOC);
	fcalloc = (void *)(fake.text + OFF_CALLOC);
	ffree = (void *)(fake.text + OFF_FREE);
	expect_u64_eq(fmalloc(0x1234560), 0x1234560);
	expect_u64_eq(fcalloc(0x10, 0x300), 0x3000);
	ffree(0x1234560);
	expect_int_eq(agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL), 3);
	expect_int_eq(f.stats.events, 3);
	expect_true(!agent_link_hostile(f.link));
	agent_link_reconcile(f.link);
	expect_true(f.stats.walks >= 2);

	/* Removed: the original bytes back, the calls no longer reach us. */
	implant_remove(f.im);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	expect_int_eq(fake.unmaps, 2);
	expect_u64_eq(fmalloc(77), 77);
	expect_int_eq(agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL), 0);
	fast_teardown(&f);
}

/* A target that writes over the shared header is trusted no more. */
static void test_fast_hostile_header(void)
{
	struct shm_hdr *h;
	struct fast f;

	if (fast_setup(&f, 1))
		return;
	h = (struct shm_hdr *)f.data;
	expect_int_eq(agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL), 0);
	expect_true(!agent_link_hostile(f.link));
	h->rate = 4096;			/* what the target may do through its view */
	agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL);
	expect_true(agent_link_hostile(f.link));
	expect_int_eq(nnotes, 1);
	expect_true(strstr(notes[0], "rate changed") != NULL);
	h->rate = 1;
	implant_remove(f.im);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	fast_teardown(&f);
}

/* A record no agent writes. */
static void test_fast_hostile_record(void)
{
	struct shm_ev_free *rec;
	uint64_t *heads;
	struct fast f;

	if (fast_setup(&f, 1))
		return;
	/* a free record of the wrong length, committed in ring 0 */
	heads = (uint64_t *)(f.data + SHM_OFF_HEADS);
	rec = (struct shm_ev_free *)(f.data + SHM_OFF_RING);
	rec->kind = SHM_EV_FREE;
	rec->tsc = 1;
	rec->ptr = 0x1000;
	heads[0] = 32;
	rec->len = 32;
	agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL);
	expect_true(agent_link_hostile(f.link));
	expect_true(nnotes == 1 && strstr(notes[0], "a record no agent writes"));
	implant_remove(f.im);
	fast_teardown(&f);
}

/* Put an allocation record of nframes frames (0x401000 + i) and flags in
 * ring 0 at byte off; returns its length. */
static uint32_t put_alloc(struct fast *f, uint64_t off, unsigned nframes, uint32_t flags)
{
	struct shm_ev_alloc *e = (struct shm_ev_alloc *)(f->data + SHM_OFF_RING + off);
	uint32_t len = (uint32_t)(sizeof(*e) + nframes * 8);

	e->kind = SHM_EV_ALLOC;
	e->nframes = (uint16_t)nframes;
	e->tsc = 1 + off;
	e->flags = flags;
	e->stack_len = 0;
	e->size = 16;
	e->ptr = 0x10000 + off;
	for (unsigned i = 0; i < nframes; i++)
		e->frames[i] = 0x401000 + i;
	((uint64_t *)(f->data + SHM_OFF_HEADS))[0] = off + len;
	e->len = len;
	return len;
}

/* The last frame of the profile's only stack, through its bucket. */
static int last_pc(const struct profile_bucket *b, void *arg)
{
	*(uint64_t *)arg = b->npcs ? b->pcs[b->npcs - 1] : 0;
	((uint64_t *)arg)[1] = b->npcs;
	return 0;
}

/*
 * The depth (the default 128 here) bounds records: 128 frames cut there
 * are taken (the stack ends in the mark), more frames than the depth, or a
 * cut walk shorter than it, is a record no agent writes; and the
 * header's max_depth is the tool's, not the target's.
 */
static void test_fast_hostile_depth(void)
{
	static const struct {
		unsigned nframes;
		uint32_t flags;
	} bad[] = {
		{ SHM_DEFAULT_DEPTH + 1, 0 },
		{ SHM_DEFAULT_DEPTH + 1, SHM_EVF_TRUNC },
		{ 5, SHM_EVF_TRUNC },
		{ SHM_MAX_DEPTH, SHM_EVF_TRUNC },
	};
	uint64_t last[2] = { 0, 0 }, off;
	struct fast f;

	if (fast_setup(&f, 1))
		return;
	expect_int_eq(((struct shm_hdr *)f.data)->max_depth, SHM_DEFAULT_DEPTH);
	off = put_alloc(&f, 0, SHM_DEFAULT_DEPTH, SHM_EVF_TRUNC);
	put_alloc(&f, off, 3, 0);
	expect_int_eq(agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL), 2);
	expect_true(!agent_link_hostile(f.link));
	expect_int_eq(profile_nstacks(f.prof), 2);
	profile_foreach(f.prof, last_pc, last);	/* the last bucket: 3 frames, whole */
	expect_u64_eq(last[0], 0x401002);
	expect_u64_eq(last[1], 3);
	{
		uint64_t pcs[SHM_DEFAULT_DEPTH + 1];

		for (unsigned i = 0; i < SHM_DEFAULT_DEPTH; i++)
			pcs[i] = 0x401000 + i;
		pcs[SHM_DEFAULT_DEPTH] = PROFILE_PC_TRUNCATED;
		/* the cut stack is the one with the mark: no third stack */
		profile_stack_id(f.prof, pcs, SHM_DEFAULT_DEPTH + 1);
		expect_int_eq(profile_nstacks(f.prof), 2);
		profile_stack_id(f.prof, pcs, SHM_DEFAULT_DEPTH);
		expect_int_eq(profile_nstacks(f.prof), 3);
	}
	implant_remove(f.im);
	fast_teardown(&f);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fast_setup(&f, 1))
			return;
		nnotes = 0;
		put_alloc(&f, 0, bad[i].nframes, bad[i].flags);
		agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL);
		expect_true(agent_link_hostile(f.link));
		expect_true(nnotes == 1 && strstr(notes[0], "a record no agent writes"));
		implant_remove(f.im);
		fast_teardown(&f);
	}

	if (fast_setup(&f, 1))
		return;
	nnotes = 0;
	((struct shm_hdr *)f.data)->max_depth = 5000;
	agent_link_drain(f.link, AGENT_LINK_DRAIN_ALL);
	expect_true(agent_link_hostile(f.link));
	expect_true(nnotes == 1 && strstr(notes[0], "max_depth changed"));
	((struct shm_hdr *)f.data)->max_depth = SHM_DEFAULT_DEPTH;
	implant_remove(f.im);
	fast_teardown(&f);
}

/* A drop count no agent could have reached. */
static void test_fast_hostile_drops(void)
{
	struct fast f;

	if (fast_setup(&f, 1))
		return;
	((struct shm_hdr *)f.data)->drops = 1ULL << 60;
	agent_link_reconcile(f.link);
	expect_true(agent_link_hostile(f.link));
	expect_true(nnotes == 1 && strstr(notes[0], "drop count"));
	implant_remove(f.im);
	fast_teardown(&f);
}

static void test_teardown(void)
{
	fake_target_release();
}

HARNESS_MAIN("implant",
	T(test_install_remove),
	T(test_endbr),
	T(test_nothing_hookable),
	T(test_map_fails),
	T(test_records_full),
	T(test_leftover_ranges),
	T(test_fast_events),
	T(test_fast_hostile_header),
	T(test_fast_hostile_record),
	T(test_fast_hostile_depth),
	T(test_fast_hostile_drops),
	T(test_teardown))
