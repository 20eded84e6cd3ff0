/* Unit tests for the agent link: events from the agent in a fake target (this process) into the profile. */
/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "fake_target.h"
#include "fast/agentlink.h"
#include "implant/implant.h"
#include "profile/profile.h"
#include "profile/sampler.h"
#include "shm.h"
#include "ptrace/tracee.h"
#include "xacct_arch.h"

static struct profile *prof;
static struct sampler sampler;
static struct run_stats stats;
static struct agent_link *link_;
static struct implant *im;
static uint64_t (*fmalloc)(uint64_t);
static void (*ffree)(uint64_t);

/* The fake allocator hooked through a link at rate (in exact mode with an
 * accounting table of xlive_slots slots), or -1. */
static int start_x(uint64_t rate, int count_bytes, uint64_t xlive_slots)
{
	struct agent_link_params lp;
	struct implant_params ip;

	if (fake_alloc_setup(0, 0))
		return -1;
	memset(&stats, 0, sizeof(stats));
	prof = profile_new(rate);
	sampler_init(&sampler, rate, 42);
	lp = (struct agent_link_params){
		.pid = fake.pid, .target = fake.t, .rate = rate, .ring_size = 64 << 10,
		.count_bytes = count_bytes, .sc = &fake.sc, .prof = prof, .sampler = &sampler,
		.unw = fake_unw, .stats = &stats, .xlive_slots = xlive_slots,
	};
	link_ = agent_link_new(&lp);
	ip = fake_implant_params(&agent_link_implant_ops, link_, fake_unw);
	im = implant_new(&ip);
	fmalloc = (void *)(fake.text + OFF_MALLOC);
	ffree = (void *)(fake.text + OFF_FREE);
	if (implant_install(im, &fake_hooks)) {
		expect_true(0);
		return -1;
	}
	return 0;
}

static int start(uint64_t rate, int count_bytes)
{
	return start_x(rate, count_bytes, 0);
}

static void stop(void)
{
	implant_remove(im);
	expect_true(!memcmp(fake.text, fake_orig, FAKE_TEXT));
	agent_link_free(link_);
	implant_free(im);
	profile_free(prof);
}

struct totals {
	uint64_t alloc_count, inuse_count, buckets;
	size_t maxdepth;
};

static int add_bucket(const struct profile_bucket *b, void *arg)
{
	struct totals *t = arg;

	t->alloc_count += b->alloc_count;
	t->inuse_count += b->inuse_count;
	t->buckets++;
	if (b->npcs > t->maxdepth)
		t->maxdepth = b->npcs;
	return 0;
}

static struct totals totals(void)
{
	struct totals t = { 0 };

	profile_foreach(prof, add_bucket, &t);
	return t;
}

/* One call site, called n times: the same stack every time. */
static __attribute__((noinline)) void alloc_here(uint64_t size)
{
	fmalloc(size);
	__asm__ __volatile__("" ::: "memory");	/* not a tail call */
}

/* Exact mode: the first walk misses (a stack copy, unwound and learnt),
 * later ones walk the table, then send the stack's id. */
static void test_learn_then_ids(void)
{
	struct totals t;

	if (start(1, 0))
		return;
	for (int i = 0; i < 8; i++) {
		alloc_here(0x100000 + 16 * (uint64_t)i);
		expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 1);
	}
	agent_link_reconcile(link_);
	expect_int_eq(stats.events, 8);
	expect_int_eq(stats.walks, 8);
	expect_true(stats.walk_misses >= 1 && stats.walk_misses < 8);
	/* rules learnt move walk_gen: the first complete walk is kept, the
	 * next ones come from the walk memo */
	expect_true(stats.memo_hits >= 1 && stats.memo_hits < 8);
	expect_int_eq(stats.unwind_errors, 0);
	expect_int_eq(profile_nstacks(prof), 1);
	t = totals();
	expect_int_eq(t.alloc_count, 8);
	expect_int_eq(t.inuse_count, 8);
	expect_true(t.maxdepth >= 2);	/* alloc_here, then its callers */
	expect_true(!agent_link_hostile(link_));
	stop();
}

/* Sampled mode: a free the agent finds in its live table costs no event;
 * the sweep of agent_link_reconcile frees the block in the profile. */
static void test_sampled_sweep(void)
{
	struct totals t;

	if (start(64, 1))
		return;
	alloc_here(1 << 20);	/* 16384 times the rate: sampled */
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 1);
	expect_true(stats.bytes >= 1 << 20);	/* --interval counts unsampled bytes */
	t = totals();
	expect_int_eq(t.inuse_count, 1);
	ffree(1 << 20);
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 0);
	t = totals();
	expect_int_eq(t.inuse_count, 1);	/* not yet swept */
	agent_link_reconcile(link_);
	t = totals();
	expect_int_eq(t.inuse_count, 0);
	expect_int_eq(t.alloc_count, 1);
	ffree(0x4000000);	/* never sampled: not in the table, nothing happens */
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 0);
	stop();
}

/* Sampled mode: a block freed before its event is read (its pointer gone
 * from the agent's live table) is counted as allocated and never live. */
static void test_sampled_gone(void)
{
	struct totals t;

	if (start(64, 0))
		return;
	alloc_here(1 << 20);
	alloc_here(2 << 20);
	ffree(1 << 20);		/* the first dies before we read it */
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 2);
	t = totals();
	expect_int_eq(t.alloc_count, 2);
	expect_int_eq(t.inuse_count, 1);	/* no sweep needed */
	expect_int_eq(profile_nlive(prof), 1);
	agent_link_reconcile(link_);
	t = totals();
	expect_int_eq(t.inuse_count, 1);	/* the second stays */
	ffree(2 << 20);
	agent_link_reconcile(link_);
	t = totals();
	expect_int_eq(t.inuse_count, 0);
	expect_int_eq(t.alloc_count, 2);
	stop();
}

struct cuts {
	uint64_t cut, whole;	/* samples whose stack ends in [truncated], and the others */
};

static int count_cuts(const struct profile_bucket *b, void *arg)
{
	struct cuts *c = arg;

	if (b->npcs && b->pcs[b->npcs - 1] == PROFILE_PC_TRUNCATED)
		c->cut += b->alloc_count;
	else
		c->whole += b->alloc_count;
	return 0;
}

/* Stacks recorded (not as shown) that end in [truncated]. */
static int stored_cuts(void)
{
	int n = 0;

	for (size_t id = 0; id < profile_nstacks(prof); id++) {
		size_t npcs;
		const uint64_t *pcs = profile_stack_pcs(prof, (uint32_t)id, &npcs);

		n += pcs && npcs && pcs[npcs - 1] == PROFILE_PC_TRUNCATED;
	}
	return n;
}

/*
 * Sampled mode: with the ring past half (the first misses' stack copies,
 * none drained yet), a miss comes without its copy (NOCOPY): the sample is
 * kept with its stack cut where the agent's walk stopped, marked
 * [truncated], and nothing is dropped.
 */
static void test_sampled_nocopy(void)
{
	struct cuts c = { 0, 0 };

	if (start(64, 0))
		return;
	for (int i = 0; i < 6; i++)	/* each misses: no rule learnt before a drain */
		alloc_here((1 << 20) + 16 * (uint64_t)i);
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 6);
	expect_u64_eq(agent_link_shm(link_)->drops, 0);
	expect_int_eq(stats.events, 6);
	expect_int_eq(stats.unwind_errors, 0);
	profile_foreach(prof, count_cuts, &c);
	/* 64 KiB rings, copies of 8 KiB: four with one, then none; a cut
	 * stack is shown as the whole one it begins (stackfill.c) when that
	 * is the only one, as it is where the walk stopped past a frame */
	expect_int_eq(c.whole + c.cut, 6);
	expect_true((c.whole == 4 && c.cut == 2) || (c.whole == 6 && c.cut == 0));
	expect_int_eq(stored_cuts(), 1);
	expect_true(!agent_link_hostile(link_));
	stop();
}

/*
 * Write an allocation record as a target could into ring 0: nframes
 * frames (at most 1), then len bytes in all (the registers of a miss, a
 * stack copy, as flags say), and drain it: whether the link took it (not
 * hostile after).
 */
static int forged_rec(uint64_t rate, uint32_t flags, uint16_t nframes, uint32_t len)
{
	struct shm_hdr *h;
	struct shm_ev_alloc *e;
	uint64_t *head;
	int ok;

	if (start(rate, 0))
		return -1;
	h = agent_link_shm(link_);
	head = (uint64_t *)((char *)h + SHM_OFF_HEADS);
	e = (struct shm_ev_alloc *)((char *)h + SHM_OFF_RING + (*head & (h->ring_size - 1)));
	memset(e, 0, len);
	e->kind = SHM_EV_ALLOC;
	e->nframes = nframes;
	e->tsc = 1;
	e->flags = flags;
	e->size = 64;
	e->ptr = 0x10000;
	if (nframes)
		e->frames[0] = (uintptr_t)alloc_here;
	__atomic_store_n(head, *head + len, __ATOMIC_RELEASE);
	__atomic_store_n(&e->len, len, __ATOMIC_RELEASE);
	agent_link_drain(link_, AGENT_LINK_DRAIN_ALL);
	ok = !agent_link_hostile(link_);
	stop();
	return ok;
}

/* forged_rec of one frame, the registers of a miss and copy bytes. */
static int forged_ok(uint64_t rate, uint32_t flags, uint32_t copy)
{
	return forged_rec(rate, flags, 1, sizeof(struct shm_ev_alloc) + 8 +
			  sizeof(struct frame_regs) + copy);
}

/*
 * A call made while every scratch is held (thousands of threads inside
 * the agent, waiting for ring room) comes with no frames, cut at 0: the
 * link takes it, in both modes; a cut short of the depth with frames does
 * not come from an agent.
 */
static void test_noscratch(void)
{
	uint32_t len = sizeof(struct shm_ev_alloc);

	expect_int_eq(forged_rec(1, SHM_EVF_TRUNC, 0, len), 1);
	expect_int_eq(forged_rec(64, SHM_EVF_TRUNC, 0, len), 1);
	expect_int_eq(forged_rec(1, SHM_EVF_TRUNC, 1, len + 8), 0);
	expect_int_eq(forged_rec(1, SHM_EVF_TRUNC | SHM_EVF_MISS, 0,
				 len + sizeof(struct frame_regs)), 0);
}

/* A NOCOPY record is taken only as the agent writes it: sampled mode, a
 * miss, no copy after the registers, no STACK flag. */
static void test_nocopy_forged(void)
{
	expect_int_eq(forged_ok(64, SHM_EVF_MISS | SHM_EVF_NOCOPY, 0), 1);
	expect_int_eq(forged_ok(64, SHM_EVF_MISS, 0), 1);	/* a refused copy: as before */
	expect_int_eq(forged_ok(1, SHM_EVF_MISS, 0), 1);
	expect_int_eq(forged_ok(1, SHM_EVF_MISS | SHM_EVF_NOCOPY, 0), 0);	/* exact mode */
	expect_int_eq(forged_ok(64, SHM_EVF_NOCOPY, 0), 0);	/* no miss */
	expect_int_eq(forged_ok(64, SHM_EVF_MISS | SHM_EVF_NOCOPY, SHM_STACK_COPY), 0);
	expect_int_eq(forged_ok(64, SHM_EVF_MISS | SHM_EVF_NOCOPY | SHM_EVF_STACK,
				SHM_STACK_COPY), 0);
}

/* What the rings hold when the implant goes is still read afterwards,
 * from the view the implant handed over. */
static void test_drain_after_remove(void)
{
	if (start(1, 0))
		return;
	alloc_here(0x200000);
	ffree(0x200000);
	implant_remove(im);
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 2);
	expect_int_eq(stats.events, 2);
	expect_int_eq(totals().inuse_count, 0);
	agent_link_free(link_);
	implant_free(im);
	profile_free(prof);
}

/* The nap: 1 ms before any rate is known; the rings not busy when empty. */
static void test_nap(void)
{
	if (start(4096, 0))
		return;
	expect_int_eq(agent_link_nap_ns(link_), 1000000);
	expect_true(!agent_link_busy(link_));
	expect_true(agent_link_nap_ns(link_) >= 1000000);
	stop();
}

/* Before the area exists (no implant yet), and with no link at all, the
 * link's calls do nothing. */
static void test_not_ready(void)
{
	struct agent_link_params lp = { .rate = 1, .ring_size = 64 << 10, .stats = &stats };
	struct agent_link *l = agent_link_new(&lp);

	expect_int_eq(agent_link_drain(l, AGENT_LINK_DRAIN_ALL), 0);
	agent_link_reconcile(l);
	agent_link_heartbeat(l);
	agent_link_final(l);
	expect_true(!agent_link_busy(l));
	expect_true(!agent_link_hostile(l));
	expect_true(!agent_link_hostile(NULL));
	agent_link_free(l);
	agent_link_free(NULL);
}

/* ---- in-target accounting, the area filled by hand as the agent would ---- */

#define XSLOTS (1u << 16)

static struct shm_xlane *xlane(struct shm_hdr *h, unsigned r)
{
	return (struct shm_xlane *)((uint8_t *)h + SHM_OFF_XLANES(64 << 10)) + r;
}

/* Count key in lane r's xcounts, in the first free way of its window. */
static void xcount_put(struct shm_hdr *h, unsigned r, uint64_t key, uint64_t count)
{
	struct shm_xcount *c = (struct shm_xcount *)((uint8_t *)h + SHM_OFF_XCOUNTS(64 << 10)) +
			       (size_t)r * SHM_XCOUNTS;
	uint32_t i = shm_xcount_slot(key);

	while (c[i].key && c[i].key != key)
		i = (i + 1) & (SHM_XHASHED - 1);
	c[i].key = key;
	c[i].count += count;
}

/* Lane r's count page p, for the stack of directory word d (id + 1). */
static uint64_t *xpage_put(struct shm_hdr *h, unsigned r, unsigned p, uint64_t d)
{
	uint8_t *dir = (uint8_t *)h + SHM_OFF_XCOUNTS(64 << 10) +
		       ((size_t)r * SHM_XCOUNTS) * sizeof(struct shm_xcount) + SHM_XPAGES_OFF;

	((uint64_t *)dir)[p] = d;
	return (uint64_t *)(dir + SHM_XPAGE_AT(p));
}

static struct shm_xlive *xlive_tab(struct shm_hdr *h)
{
	return (struct shm_xlive *)((uint8_t *)h + SHM_OFF_XLIVE(64 << 10));
}

/* Enter a block in its window's first slot that is not live. */
static struct shm_xlive *xlive_put(struct shm_hdr *h, uint64_t ptr, uint64_t key)
{
	struct shm_xlive *t = xlive_tab(h);
	uint64_t i = shm_xlive_slot(ptr, XSLOTS);

	while (t[i].ptr > 2)
		i = (i + 1) & (XSLOTS - 1);
	t[i].key = key;
	t[i].ptr = ptr;
	return &t[i];
}

/* Exact mode with accounting: the header says so, the area has room for
 * it; the lanes' counts and the live blocks of known stacks and sizes are
 * the profile's, anything else is left out; the figures are read anew at
 * each sync, and for good after the final one. */
static void test_xacct_sync(void)
{
	const uint64_t a[] = { 0x401124, 0x401457 }, b[] = { 0x401200 };
	struct shm_hdr *h;
	uint32_t sa, sb;
	struct totals t;

	if (start_x(1, 1, XSLOTS))
		return;
	h = agent_link_shm(link_);
	expect_true(h && (h->flags & SHM_F_XACCT) && (h->flags & SHM_F_EXACT));
	expect_u64_eq(h->xlive_slots, XSLOTS);
	expect_u64_eq(agent_link_data_size(64 << 10, XSLOTS),
		      SHM_OFF_XLIVE(64 << 10) + (uint64_t)XSLOTS * sizeof(struct shm_xlive));
	sa = profile_stack_id(prof, a, 2);
	sb = profile_stack_id(prof, b, 1);

	/* nothing accounted yet */
	agent_link_xacct_sync(link_);
	t = totals();
	expect_int_eq(t.alloc_count, 0);

	xlane(h, 0)->owner = 0x7f0000001000;
	xlane(h, 0)->alloc_count = 15;
	xlane(h, 0)->alloc_bytes = 15 * 64;
	xlane(h, 3)->owner = 0x7f0000002000;
	xlane(h, 3)->alloc_count = 7;
	xlane(h, 3)->alloc_bytes = 7 * 32;
	xlane(h, 3)->free_count = 4;
	h->xforeign_count = 1;
	xcount_put(h, 0, shm_xkey(sa, 64), 10);
	xcount_put(h, 3, shm_xkey(sa, 64), 5);	/* another lane, the same key */
	xcount_put(h, 3, shm_xkey(sb, 32), 7);
	/* hostile: a stack we never gave out, a key with no id, a count no
	 * agent reaches, a huge size (counted: the agent keys it) */
	xcount_put(h, 1, shm_xkey(999, 64), 3);
	xcount_put(h, 1, (uint64_t)64 << 24, 3);
	xcount_put(h, 2, shm_xkey(sb, 48), UINT64_MAX - 5);
	xcount_put(h, 2, shm_xkey(sb, SHM_XSIZE_MAX), 1);
	xcount_put(h, 2, shm_xkey(sb, 16), 0);	/* claimed, not counted yet */
	/* count pages: a stack's (the same key as a hashed entry's: both
	 * count), its last size; a stack we never gave out, a word that is
	 * no id, a count no agent reaches: left out */
	xpage_put(h, 4, 0, sa + 1)[64] = 6;
	xpage_put(h, 4, 3, sb + 1)[SHM_XPAGE_SIZES - 1] = 2;
	xpage_put(h, 4, 1, 1000)[64] = 9;
	xpage_put(h, 4, 2, 1ULL << 30)[64] = 9;
	xpage_put(h, 5, 0, sa + 1)[100] = UINT64_MAX - 1;

	xlive_put(h, 0x10000, shm_xkey(sa, 64));
	xlive_put(h, 0x10040, shm_xkey(sa, 64));
	xlive_put(h, 0x20000, shm_xkey(sb, 32));
	xlive_put(h, 0x30000, shm_xkey(999, 32));	/* no such stack */
	xlive_put(h, 0x30040, 0);			/* no key */
	xlive_put(h, SHM_ADDR_LIMIT, shm_xkey(sb, 32));	/* no user address */
	xlive_put(h, 0x30080, shm_xkey(sb, SHM_XSIZE_MAX));
	xlive_tab(h)[5].ptr = 1;			/* freed */
	xlive_tab(h)[5].key = shm_xkey(sb, 32);
	xlive_tab(h)[6].ptr = 2;			/* being filled */
	xlive_tab(h)[6].key = shm_xkey(sb, 32);
	xlive_tab(h)[XSLOTS - 1].ptr = 0x40000;		/* the last slot */
	xlive_tab(h)[XSLOTS - 1].key = shm_xkey(sb, 32);

	agent_link_xacct_sync(link_);
	t = totals();
	expect_int_eq(t.alloc_count, 10 + 5 + 7 + 1 + 6 + 2);
	expect_int_eq(t.inuse_count, 2 + 1 + 1 + 1);
	expect_int_eq(t.buckets, 4);
	expect_int_eq(profile_nlive(prof), 5);
	expect_u64_eq(profile_total_alloc_bytes(prof), 21 * 64 + 7 * 32 + SHM_XSIZE_MAX +
		      2 * (SHM_XPAGE_SIZES - 1));
	expect_true(!agent_link_hostile(link_));

	/* read anew: a block freed, more counted; nothing doubles */
	xlive_tab(h)[shm_xlive_slot(0x10040, XSLOTS)].ptr = 1;
	xcount_put(h, 0, shm_xkey(sa, 64), 2);
	agent_link_xacct_sync(link_);
	t = totals();
	expect_int_eq(t.alloc_count, 25 + 8);
	expect_int_eq(t.inuse_count, 4);

	/* the shared lane (of threads whose ring's lane is another's, no
	 * owner) counts like the others */
	xcount_put(h, SHM_XLANE_SHARED, shm_xkey(sb, 32), 3);
	xlane(h, SHM_XLANE_SHARED)->alloc_count = 3;
	xlane(h, SHM_XLANE_SHARED)->alloc_bytes = 3 * 32;
	xlane(h, SHM_XLANE_SHARED)->free_count = 1;
	agent_link_xacct_sync(link_);
	t = totals();
	expect_int_eq(t.alloc_count, 25 + 8 + 3);
	expect_int_eq(t.inuse_count, 4);

	/* the lanes' totals: -v, and --interval's bytes */
	agent_link_reconcile(link_);
	expect_int_eq(stats.xacct_allocs, 22 + 3);
	expect_int_eq(stats.xacct_frees, 5 + 1);
	expect_int_eq(stats.bytes, 15 * 64 + 7 * 32 + 3 * 32);
	xlane(h, 0)->alloc_bytes += 1000;
	agent_link_drain(link_, AGENT_LINK_DRAIN_ALL);
	expect_int_eq(stats.bytes, 15 * 64 + 7 * 32 + 3 * 32 + 1000);
	xlane(h, 0)->alloc_bytes = 0;			/* a total going back adds nothing */
	agent_link_drain(link_, AGENT_LINK_DRAIN_ALL);
	expect_int_eq(stats.bytes, 15 * 64 + 7 * 32 + 3 * 32 + 1000);
	xlane(h, 0)->alloc_bytes = 50;
	agent_link_drain(link_, AGENT_LINK_DRAIN_ALL);
	expect_int_eq(stats.bytes, 15 * 64 + 7 * 32 + 3 * 32 + 1050);
	xlane(h, SHM_XLANE_SHARED)->alloc_count = UINT64_MAX;	/* implausible: the figures stay */
	agent_link_reconcile(link_);
	expect_int_eq(stats.xacct_allocs, 22 + 3);
	expect_true(!agent_link_hostile(link_));

	/* after the writers are gone, the first reading is the last */
	agent_link_final(link_);
	agent_link_xacct_sync(link_);			/* the last reading */
	xcount_put(h, 0, shm_xkey(sa, 64), 100);
	agent_link_xacct_sync(link_);
	t = totals();
	expect_int_eq(t.alloc_count, 25 + 8 + 3);
	stop();
}

/*
 * A block whose slot changes while it is read: the agent frees it and
 * enters another there, again and again. The blocks of key k1 have user
 * addresses, those of k2 none (SHM_ADDR_LIMIT and up), and no pointer
 * comes twice: a reader that took a k1 block's pointer with a k2 block's
 * key would count a k2 block, which no reading may.
 */
struct flipper {
	struct shm_xlive *e;
	uint64_t k1, k2;
	volatile int stop;
};

static void *flip_main(void *arg)
{
	struct flipper *f = arg;

	for (uint64_t i = 1; !f->stop; i++) {
		f->e->ptr = 2;
		f->e->key = f->k1;
		f->e->ptr = 0x50000 + 16 * i;
		f->e->ptr = 1;
		f->e->ptr = 2;
		f->e->key = f->k2;
		f->e->ptr = SHM_ADDR_LIMIT + 16 * i;
		f->e->ptr = 1;
	}
	return NULL;
}

/* In-use blocks of size 32 (the k2 ones). */
static int inuse_32(const struct profile_bucket *b, void *arg)
{
	if (b->size == 32)
		*(uint64_t *)arg += b->inuse_count;
	return 0;
}

static void test_xacct_torn(void)
{
	const uint64_t a[] = { 0x401124 }, b[] = { 0x401200 };
	struct flipper f = { 0 };
	struct shm_hdr *h;
	uint64_t wrong = 0;
	pthread_t th;
	uint32_t sa, sb;

	if (start_x(1, 0, XSLOTS))
		return;
	h = agent_link_shm(link_);
	sa = profile_stack_id(prof, a, 1);
	sb = profile_stack_id(prof, b, 1);
	f.k1 = shm_xkey(sa, 64);
	f.k2 = shm_xkey(sb, 32);
	f.e = xlive_put(h, 0x50000, f.k1);
	expect_int_eq(pthread_create(&th, NULL, flip_main, &f), 0);
	for (int i = 0; i < 20000; i++) {
		struct totals t;

		agent_link_xacct_sync(link_);
		profile_foreach(prof, inuse_32, &wrong);
		t = totals();
		expect_true(t.inuse_count <= 1);
	}
	f.stop = 1;
	pthread_join(th, NULL);
	expect_int_eq(wrong, 0);
	stop();
}

/* Without a table (sampled mode, or none asked) nothing changes. */
static void test_xacct_off(void)
{
	struct shm_hdr *h;

	if (start_x(64 << 10, 0, XSLOTS))	/* sampled: ignored */
		return;
	h = agent_link_shm(link_);
	expect_true(h && !(h->flags & SHM_F_XACCT) && !h->xlive_slots);
	agent_link_xacct_sync(link_);
	stop();
	if (start_x(1, 0, 3))			/* not a power of two */
		return;
	h = agent_link_shm(link_);
	expect_true(h && !(h->flags & SHM_F_XACCT) && !h->xlive_slots);
	stop();
	if (start_x(1, 0, XSLOTS))		/* the slots are ours: the target may not change them */
		return;
	h = agent_link_shm(link_);
	h->xlive_slots = (uint64_t)XSLOTS << 4;
	agent_link_drain(link_, AGENT_LINK_DRAIN_ALL);
	expect_true(agent_link_hostile(link_));
	stop();
	expect_u64_eq(agent_link_xacct_slots(0), 0);
	expect_u64_eq(agent_link_xacct_slots(XSLOTS),
		      XSLOTS);	/* rdfsbase or %fs:0 (agent_link_xacct_threads) */
	setenv("HEAPATTACH_NO_XACCT", "1", 1);
	expect_u64_eq(agent_link_xacct_slots(XSLOTS), 0);
	unsetenv("HEAPATTACH_NO_XACCT");
}

/* A child of ours stopped under PTRACE_SEIZE: it has our thread pointer,
 * as a thread cloned without CLONE_SETTLS would. Its pid, or -1. */
static pid_t stopped_fork(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	if (pid < 0)
		return -1;
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0 || ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0 ||
	    waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	return pid;
}

/* What the lanes counted so far. */
static uint64_t lanes_allocs(struct shm_hdr *h)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < SHM_NRINGS; i++)
		n += xlane(h, i)->alloc_count;
	return n;
}

/*
 * A new thread the agent cannot tell from another (its fs base the same,
 * seen at its first stop): the lanes close (SHM_F_XSHARED, in the header
 * and in our copy of it, said once); what they counted stays, later
 * allocations of a known stack are events, and the totals stay exact.
 * An exiting thread's pointer (its stack may be reused) does not count.
 */
static void test_xacct_shared(void)
{
	struct thread th[2];
	struct tracee tr = { .t = th, .n = 2, .cap = 2 };
	unsigned long fs = 0;
	uint64_t counted;
	struct shm_hdr *h;
	struct totals t;
	int status;
	pid_t child;

	if (start_x(1, 0, XSLOTS))
		return;
	h = agent_link_shm(link_);
	for (int i = 0; i < 32; i++) {	/* the fake malloc returns its size: a new block each */
		alloc_here(0x100000 + 64 * (uint64_t)i);
		agent_link_drain(link_, AGENT_LINK_DRAIN_ALL);
	}
	counted = lanes_allocs(h);
	expect_true(counted > 0 && counted < 32);	/* the first ones learnt the stack */
	child = stopped_fork();
	expect_true(child > 0);
	syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs);
	if (child > 0) {
		memset(th, 0, sizeof(th));
		tr.pid = child;
		th[0] = (struct thread){ .tid = child, .state = TS_STOPPED };	/* the new one */
		th[1] = (struct thread){ .tid = getpid(), .tp = fs, .exiting = 1 };
		expect_int_eq(agent_link_xacct_thread(link_, &tr, &th[0]), 1);
		expect_u64_eq(th[0].tp, fs);
		expect_true(!(h->flags & SHM_F_XSHARED));
		th[1].exiting = 0;
		th[1].tp = fs + 64;	/* another pointer */
		expect_int_eq(agent_link_xacct_thread(link_, &tr, &th[0]), 1);
		th[1].tp = fs;
		expect_int_eq(agent_link_xacct_thread(link_, &tr, &th[0]), 0);
		expect_true(h->flags & SHM_F_XSHARED);
		expect_int_eq(agent_link_xacct_thread(link_, &tr, &th[0]), 0);	/* said once */
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	for (int i = 32; i < 40; i++) {
		alloc_here(0x100000 + 64 * (uint64_t)i);
		expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 1);
	}
	expect_u64_eq(lanes_allocs(h), counted);
	ffree(0x100000 + 64 * 31);	/* accounted in a lane: taken out, counted foreign */
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 0);
	expect_u64_eq(h->xforeign_count, 1);
	ffree(0x100000 + 64 * 39);	/* an event's block: an event */
	expect_int_eq(agent_link_drain(link_, AGENT_LINK_DRAIN_ALL), 1);
	expect_true(!agent_link_hostile(link_));	/* the header is as we wrote it */
	agent_link_reconcile(link_);
	agent_link_xacct_sync(link_);
	t = totals();
	expect_int_eq(t.alloc_count, 32 + 8);
	expect_int_eq(t.inuse_count, 32 + 8 - 2);
	stop();
}

static void test_teardown(void)
{
	fake_target_release();
}

HARNESS_MAIN("agentlink",
	T(test_learn_then_ids),
	T(test_sampled_sweep),
	T(test_sampled_gone),
	T(test_sampled_nocopy),
	T(test_nocopy_forged),
	T(test_noscratch),
	T(test_drain_after_remove),
	T(test_nap),
	T(test_not_ready),
	T(test_xacct_sync),
	T(test_xacct_torn),
	T(test_xacct_off),
	T(test_xacct_shared),
	T(test_teardown))
