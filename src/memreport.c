/* The run's view of the target's memory: smaps and allocator figures gathered while attached, for the breakdown in every dump. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentlink.h"
#include "census.h"
#include "clock.h"
#include "log.h"
#include "memreport.h"
#include "remote.h"
#include "session.h"
#include "xmalloc.h"

#define ASK_EVERY_NS 1000000000ULL      /* a fresh answer a second is plenty */

void memreport_arm(struct session *s)
{
	struct memreport *m = &s->mr;

	if (!s->link || s->sc.no_alloc_stats || allocstats_find(s->ev.reader, &s->hooks, &m->fn))
		return;
	agent_link_stats_arm(s->link, &m->fn);
	pr_debug("allocator statistics: %s, through its function at %#llx", m->fn.allocator,
		 (unsigned long long)m->fn.addr);
	agent_link_stats_ask(s->link);
	m->asked_ns = clock_ns(CLOCK_MONOTONIC);
}

void memreport_poll(struct session *s)
{
	struct memreport *m = &s->mr;
	uint64_t val[SHM_STATS_MAX], now;

	if (!s->link || !m->fn.allocator)
		return;
	now = clock_ns(CLOCK_MONOTONIC);
	if (agent_link_stats_take(s->link, val, SHM_STATS_MAX)) {
		struct allocstats as;

		if (allocstats_decode(&m->fn, val, SHM_STATS_MAX, &as) == 0) {
			m->as = as;
			m->have_as = 1;
			m->as_ns = now;
		}
	}
	if (now - m->asked_ns >= ASK_EVERY_NS) {
		agent_link_stats_ask(s->link);
		m->asked_ns = now;
	}
}

void memreport_snapshot(struct session *s)
{
	struct rss_smaps sm;

	if (s->ev.gone || s->ev.exec_seen)
		return;
	memreport_poll(s);
	if (rss_smaps_read(s->ev.reader, &sm) == 0) {
		s->mr.sm = sm;
		s->mr.have_sm = 1;
	}
}

void memreport_compute(struct session *s, struct breakdown *b)
{
	struct breakdown_in in = {
		.sm = s->mr.have_sm ? &s->mr.sm : NULL,
		.as = s->mr.have_as ? &s->mr.as : NULL,
		.prof = s->prof,
	};

	breakdown_compute(&in, b);
}

static int census_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct session *s = arg;

	return remote_mem_read(s->ev.reader, addr, buf, len);
}

static void keep_census(void *arg, const char *text)
{
	struct memreport *m = arg;

	m->census = xrealloc(m->census, (m->ncensus + 1) * sizeof(*m->census));
	m->census[m->ncensus++] = xstrdup(text);
	fprintf(stderr, "heapattach: %s\n", text);
}

void memreport_census(struct session *s)
{
	struct census c;

	if (census_walk(&s->maps, census_read, s, &c)) {
		keep_census(&s->mr, "census: no glibc heap could be walked (another allocator, "
				    "or the heaps changed during the walk)");
		return;
	}
	census_print(&c, keep_census, &s->mr);
}

void memreport_free(struct memreport *m)
{
	for (size_t i = 0; i < m->ncensus; i++)
		free(m->census[i]);
	free(m->census);
	m->census = NULL;
	m->ncensus = 0;
}
