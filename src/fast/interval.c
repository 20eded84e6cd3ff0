/* The agent link's sampling interval, raised while heapattach cannot keep up (adapt.c judges). */
/* SPDX-License-Identifier: MIT */
/*
 * In sampled mode a writer that finds its ring full drops its event, and
 * dropped samples bias the profile (whatever allocates fastest loses
 * most). So while the rings fill faster than we empty them, we sample
 * less: the agent draws each gap with the header's gap_mul, and we raise
 * the mean interval to rate << shift, then lower it step by step once we
 * keep up. Each sample is scaled by the interval it was drawn with (its
 * bucket's rate, profile.h), so the estimates stay unbiased, only
 * coarser. A change is stamped with our time stamp, the clock of the
 * records: an event stamped before it was sampled at the interval before
 * (a sample taken a moment before and stamped after, the walk in between,
 * is counted at the new one: a few events a change). The counters are
 * set to fresh gaps of the new interval at once (the marks are memoryless,
 * so this is the new sampling from then on), rather than running out
 * gaps of the old one. What the target writes can only make us raise our
 * own interval, up to PROFILE_MAX_SHIFT (its drops, its rings' fill).
 */
#include <math.h>
#include "base/log.h"
#include "fast/link_priv.h"
#include "profile/sampler.h"
#include "timestamp.h"

/* shm_exp_gap's multiplier for a mean interval of rate bytes; rates above
 * 2^46 (64 TiB) sample as that. */
uint64_t interval_gap_mul(uint64_t rate)
{
	return (uint64_t)((double)(rate < (1ull << 46) ? rate : 1ull << 46) * M_LN2 * 65536.0 + 0.5);
}

/* The shift in force when an event stamped tsc was sampled. */
unsigned interval_shift_at(const struct agent_link *l, uint64_t tsc)
{
	uint64_t n = l->iv.nshifts, k;
	unsigned before = l->iv.ad.shift;

	for (k = 0; k < n && k < SHIFT_HIST; k++) {
		const struct shift_change *c = &l->iv.shifts[(n - 1 - k) % SHIFT_HIST];

		if (tsc >= c->tsc)
			return c->shift;
		before = c->before;
	}
	return before;	/* older than every change kept */
}

/* Sample at rate << shift from now on, after rate << before (adapt_judge's
 * verdict): the header's gap_mul (ours first), then every counter to a
 * fresh gap; the profile keeps the period. */
static void set_shift(struct agent_link *l, unsigned before, unsigned shift, uint64_t now)
{
	struct shift_change *c = &l->iv.shifts[l->iv.nshifts % SHIFT_HIST];
	uint64_t gm = interval_gap_mul(l->p.rate << shift);
	char a[32], b[32];

	c->before = (uint8_t)before;
	c->shift = (uint8_t)shift;
	c->tsc = arch_timestamp();
	l->iv.nshifts++;
	((struct shm_hdr *)l->want)->gap_mul = gm;
	__atomic_store_n(&l->shm->gap_mul, gm, __ATOMIC_RELEASE);
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		struct shm_counter *k = (struct shm_counter *)(data_of(l) + SHM_OFF_COUNTERS +
							       i * SHM_COUNTER_STRIDE);

		__atomic_store_n(&k->left, (int64_t)shm_exp_gap(sampler_rand(l->p.sampler), gm),
				 __ATOMIC_RELAXED);
	}
	profile_set_shift(l->p.prof, shift, now);
	if (!before) {
		l->iv.raised_from_ns = now;
		pr_warn("%d allocates faster than heapattach can follow at a sampling interval of "
			"%s: raised to %s while it cannot keep up (each sample is scaled by the "
			"interval it was taken at; the profile's comments say for how long)",
			(int)l->p.pid, profile_interval_text(l->p.rate, a, sizeof(a)),
			profile_interval_text(l->p.rate << shift, b, sizeof(b)));
	} else if (!shift) {
		pr_debug("sampling interval back to %s after %.1f s",
			 profile_interval_text(l->p.rate, a, sizeof(a)), (now - l->iv.raised_from_ns) / 1e9);
	} else {
		pr_debug("sampling interval now %s",
			 profile_interval_text(l->p.rate << shift, a, sizeof(a)));
	}
}

/* The largest shift: PROFILE_MAX_SHIFT, and the rate within PROFILE_MAX_RATE. */
static unsigned max_shift(const struct agent_link *l)
{
	unsigned s = 0;

	while (s < PROFILE_MAX_SHIFT && l->p.rate <= (PROFILE_MAX_RATE >> (s + 1)))
		s++;
	return s;
}

/* The bytes our readers have consumed from all rings. */
static uint64_t tails_total(const struct agent_link *l)
{
	uint64_t t = 0;

	for (unsigned r = 0; r < SHM_NRINGS; r++)
		t += l->rings.tail[r];
	return t;
}

/* After a drain: the window's figures to the controller (adapt.h), and
 * its verdict applied. */
void interval_adapt(struct agent_link *l, uint64_t now)
{
	unsigned top = max_shift(l), before = l->iv.ad.shift;
	struct adapt_verdict v;
	struct adapt_window w;

	if (l->exact || l->hostile || l->final || !top)
		return;
	w = (struct adapt_window){
		.now = now,
		.drops = __atomic_load_n(&l->shm->drops, __ATOMIC_RELAXED),
		.heads = ring_heads_total(&l->rings),
		.tails = tails_total(l),
		.napped = l->napped_ns,
		.allocs = l->nallocs,
		.frees = l->nfrees,
		.most = ring_pending_max(&l->rings),
		.size = l->rings.size,
		.top = top,
	};
	adapt_judge(&l->iv.ad, &w, &v);
	if (v.say & ADAPT_SAY_DROPS)
		pr_debug("%llu events dropped in %.0f ms, the fullest ring %llu%% full, busy %.0f%%",
			 (unsigned long long)v.dropped, v.span_ns / 1e6,
			 (unsigned long long)(w.most * 100 / w.size), v.busy * 100);
	if (v.say & ADAPT_SAY_FUTILE)
		pr_debug("behind on frees of overflowed live buckets: no interval helps");
	if (v.shift != before)
		set_shift(l, before, v.shift, now);
}
