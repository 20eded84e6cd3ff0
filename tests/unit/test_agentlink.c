/* Unit tests for the agent link: events from the agent in a fake target (this process) into the profile. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "fake_target.h"
#include "agentlink.h"
#include "implant.h"
#include "profile.h"
#include "sampler.h"
#include "shm.h"

static struct profile *prof;
static struct sampler sampler;
static struct run_stats stats;
static struct agent_link *link_;
static struct implant *im;
static uint64_t (*fmalloc)(uint64_t);
static void (*ffree)(uint64_t);

/* The fake allocator hooked through a link at rate, or -1. */
static int start(uint64_t rate, int count_bytes)
{
	struct agent_link_params lp;
	struct implant_params ip;

	if (fake_alloc_setup(0, 0))
		return -1;
	memset(&stats, 0, sizeof(stats));
	prof = profile_new(rate);
	sampler_init(&sampler, rate, 42);
	lp = (struct agent_link_params){
		.pid = fake.pid, .proc_tid = fake.pid, .rate = rate, .ring_size = 64 << 10,
		.count_bytes = count_bytes, .sc = &fake.sc, .prof = prof, .sampler = &sampler,
		.unw = fake_unw, .stats = &stats,
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

static void test_teardown(void)
{
	fake_target_release();
}

HARNESS_MAIN("agentlink",
	T(test_learn_then_ids),
	T(test_sampled_sweep),
	T(test_drain_after_remove),
	T(test_nap),
	T(test_not_ready),
	T(test_teardown))
