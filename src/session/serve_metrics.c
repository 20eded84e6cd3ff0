/* --listen's /metrics: the run's figures in Prometheus text exposition format 0.0.4, the top sites' label values bounded. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/idmap.h"
#include "base/xmalloc.h"
#include "output/breakdown.h"
#include "output/wrapfind.h"
#include "profile/profile.h"
#include "session/state.h"
#include "stacks/symbolize.h"

#define TOP_SITES 20            /* heapattach_site_live_bytes series, at most */
#define SITE_LABEL_MAX 120      /* bytes of a site's name in its label, before escaping */
#define MAX_SITES 65536         /* sites told apart; beyond: "(other sites)" */

struct site {
	uint64_t pc;            /* 1: the other sites; 2 (wrapfind): no stack */
	int64_t live;
};

struct sums {
	struct session *s;
	struct wrapfind_src src;
	int64_t alloc_objects, alloc_bytes, live_objects, live_bytes;
	struct idmap ids;       /* pc -> index + 1 into v */
	struct site *v;
	size_t n, cap;
};

/* profile_foreach callback: totals as pprof shows them, live bytes by site. */
static int add_bucket(const struct profile_bucket *b, void *arg)
{
	struct sums *u = arg;
	int64_t ac, ab, lc, lb;
	uint64_t k[3] = { 0, 0, 0 }, id;

	profile_scale(b->alloc_count, b->alloc_bytes, b->rate, &ac, &ab);
	profile_scale(b->inuse_count, b->inuse_bytes, b->rate, &lc, &lb);
	u->alloc_objects += ac;
	u->alloc_bytes += ab;
	u->live_objects += lc;
	u->live_bytes += lb;
	if (!lb)
		return 0;
	k[0] = u->s->wf ? wrapfind_site_pc(u->s->wf, &u->src, b) : (b->npcs ? b->pcs[0] : 2);
	id = idmap_get(&u->ids, k);
	if (!id) {
		if (u->n >= MAX_SITES)
			k[0] = 1;
		id = idmap_get(&u->ids, k);
	}
	if (!id) {
		if (u->n == u->cap) {
			u->cap = u->cap ? 2 * u->cap : 256;
			u->v = xrealloc(u->v, u->cap * sizeof(*u->v));
		}
		u->v[u->n++] = (struct site){ k[0], 0 };
		id = u->n;
		idmap_put(&u->ids, k, id);
	}
	u->v[id - 1].live += lb;
	return 0;
}

static int by_live(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->live < y->live ? 1 : x->live > y->live ? -1 : (x->pc > y->pc) - (x->pc < y->pc);
}

/* A site's name as --top says it: "function (file:line)", else its address. */
static void site_name(struct session *s, uint64_t pc, char *buf, size_t len)
{
	struct sym_info si;

	if (pc == 1) {
		snprintf(buf, len, "(other sites)");
	} else if (pc == 2 || pc == 0) {
		snprintf(buf, len, "(no stack)");
	} else if (s->sym && symbolizer_lookup(s->sym, pc - 1, &si) == 0 && si.function) {
		const char *f = si.file ? strrchr(si.file, '/') : NULL;

		if (si.file)
			snprintf(buf, len, "%s (%s:%d)", si.function, f ? f + 1 : si.file, si.line);
		else
			snprintf(buf, len, "%s", si.function);
	} else {
		snprintf(buf, len, "0x%llx", (unsigned long long)pc);
	}
}

/* name cut to SITE_LABEL_MAX bytes, not inside a UTF-8 sequence. */
static void cut_name(char *name)
{
	size_t n = strlen(name);

	if (n <= SITE_LABEL_MAX)
		return;
	n = SITE_LABEL_MAX;
	while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--;
	name[n] = 0;
}

/* The length of the UTF-8 sequence at p (a lead byte >= 0x80), or 0 if
 * it is not a well-formed one (overlong forms of two bytes included). */
static size_t utf8_len(const unsigned char *p)
{
	size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;

	if (p[0] > 0xf4)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* name as a label value: backslash, double quote and newline escaped,
 * other control bytes left out, bytes of no UTF-8 sequence as '?'
 * (Prometheus refuses a scrape with one). */
static void put_label(FILE *f, const char *name)
{
	for (; *name; name++) {
		unsigned char c = (unsigned char)*name;

		if (c >= 0x80) {
			size_t n = utf8_len((const unsigned char *)name);

			if (!n) {
				fputc('?', f);
				continue;
			}
			fwrite(name, 1, n, f);
			name += n - 1;
		} else if (c == '\\')
			fputs("\\\\", f);
		else if (c == '"')
			fputs("\\\"", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c >= 0x20 && c != 0x7f)
			fputc(c, f);
	}
}

/* A site by its label: sites whose names are one once cut add up (two
 * series with one label would fail the whole scrape). */
struct named {
	char name[SITE_LABEL_MAX + 1];
	int64_t live;
};

static int named_by_live(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	return x->live < y->live ? 1 : x->live > y->live ? -1 : strcmp(x->name, y->name);
}

/* The top sites by their labels, from the NAMED_MAX first of u's sorted
 * sites (a name shared past them is missed). */
#define NAMED_MAX 256
static void top_sites(struct session *s, const struct sums *u, FILE *f)
{
	struct named *v = xcalloc(NAMED_MAX, sizeof(*v));
	char name[512];
	size_t n = 0;

	for (size_t i = 0; i < u->n && i < NAMED_MAX; i++) {
		size_t k;

		site_name(s, u->v[i].pc, name, sizeof(name));
		cut_name(name);
		for (k = 0; k < n && strcmp(v[k].name, name); k++)
			;
		if (k == n)
			memcpy(v[n++].name, name, strlen(name) + 1);	/* cut: it fits */
		v[k].live += u->v[i].live;
	}
	qsort(v, n, sizeof(*v), named_by_live);
	fprintf(f, "# HELP heapattach_site_live_bytes Bytes in use by allocation site (the first "
		"frame past allocator wrappers, as --top names it), the top %d.\n"
		"# TYPE heapattach_site_live_bytes gauge\n", TOP_SITES);
	for (size_t i = 0; i < n && i < TOP_SITES; i++) {
		fputs("heapattach_site_live_bytes{site=\"", f);
		put_label(f, v[i].name);
		fprintf(f, "\"} %lld\n", (long long)v[i].live);
	}
	free(v);
}

static void metric(FILE *f, const char *name, const char *type, const char *help, int64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name,
		(long long)v);
}

/* The heap-vs-RSS table's lines, by their keys. */
static void memory_parts(struct session *s, FILE *f)
{
	struct breakdown bd;

	memreport_compute(&s->mr, &bd);
	if (bd.measured)
		metric(f, "heapattach_rss_bytes", "gauge",
		       "Resident memory of the target (smaps), as of the last snapshot.",
		       (int64_t)bd.rss);
	fputs("# HELP heapattach_memory_bytes The heap-vs-RSS table: resident parts of the RSS "
	      "(those of depth 0 add up to it) and the allocator's counts (unit allocated).\n"
	      "# TYPE heapattach_memory_bytes gauge\n", f);
	for (size_t i = 0; i < bd.n; i++)
		fprintf(f, "heapattach_memory_bytes{part=\"%s\",unit=\"%s\",depth=\"%d\"} %lld\n",
			bd.v[i].key, bd.v[i].unit == BREAKDOWN_RESIDENT ? "resident" : "allocated",
			bd.v[i].depth, (long long)bd.v[i].bytes);
}

char *session_metrics(struct session *s, size_t *len)
{
	struct sums u = { .s = s, .src = session_wrapfind_src(s) };
	char *buf = NULL;
	size_t blen = 0;
	FILE *f;

	if (s->wf)
		wrapfind_scan(s->wf, &u.src, s->prof);
	profile_foreach(s->prof, add_bucket, &u);
	qsort(u.v, u.n, sizeof(*u.v), by_live);
	f = open_memstream(&buf, &blen);
	if (!f) {
		free(u.v);
		free(u.ids.e);
		return NULL;
	}
	metric(f, "heapattach_live_bytes", "gauge",
	       "Bytes in use in the blocks allocated since the attach (the profile's inuse_space).",
	       u.live_bytes);
	metric(f, "heapattach_live_objects", "gauge",
	       "Blocks in use of those allocated since the attach (inuse_objects).", u.live_objects);
	metric(f, "heapattach_allocated_bytes_total", "counter",
	       "Bytes allocated since the attach (alloc_space).", u.alloc_bytes);
	metric(f, "heapattach_allocated_objects_total", "counter",
	       "Allocations since the attach (alloc_objects).", u.alloc_objects);
	metric(f, "heapattach_sampling_interval_bytes", "gauge",
	       "Mean bytes between samples now (1: every allocation).",
	       (int64_t)profile_interval_now(s->prof));
	metric(f, "heapattach_events_dropped_total", "counter",
	       "Events heapattach could not record.", (int64_t)profile_drops(s->prof));
	memory_parts(s, f);
	top_sites(s, &u, f);
	fclose(f);
	free(u.v);
	free(u.ids.e);
	*len = blen;
	return buf;
}
