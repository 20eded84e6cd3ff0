/* Text tables and JSON of the report: leak suspects, other sites, functions, and two-dump diffs. */
/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/xmalloc.h"
#include "report/report_fmt.h"
#include "report/report_text.h"

#define NAME_DEPTH 4

static double frees_of(const struct rseries_site *st, size_t d)
{
	double fr = st->fig[RS_ALLOC_N][d] - st->fig[RS_INUSE_N][d];

	return fr > 0 ? fr : 0;
}

static void header(FILE *f, const struct rseries *s)
{
	const struct rseries_dump *a = &s->dumps[0], *z = &s->dumps[s->ndumps - 1];
	char b1[32], b2[32];

	fprintf(f, "heapattach report: %zu dump%s over %.1f s (%s .. %s)\n", s->ndumps,
		s->ndumps == 1 ? "" : "s", z->t - a->t, a->path, z->path);
	fprintf(f, "live bytes: %s at the first, %s at the last\n",
		rfmt_bytes(b1, sizeof(b1), a->total[RS_INUSE_B]),
		rfmt_bytes(b2, sizeof(b2), z->total[RS_INUSE_B]));
	if (a->has_rss && z->has_rss) {
		fprintf(f, "RSS: %s at the first, %s at the last (", rfmt_bytes(b1, sizeof(b1), a->rss),
			rfmt_bytes(b2, sizeof(b2), z->rss));
		for (int k = 0, first = 1; k < RS_NPARTS; k++) {
			if (!z->part[k])
				continue;
			fprintf(f, "%s%s %s", first ? "" : ", ", rseries_rss_keys[k],
				rfmt_bytes(b1, sizeof(b1), z->part[k]));
			first = 0;
		}
		fputs(")\n", f);
	}
	fputc('\n', f);
}

/* One row of the trend tables. */
static void trend_row(FILE *f, const struct rseries *s, const struct rseries_site *st, size_t rank,
		      int why)
{
	const struct rseries_trend *t = &st->trend;
	size_t last = s->ndumps - 1;
	char g[32], fi[32], la[32];
	char *name = rseries_site_name(st, NAME_DEPTH);

	if (s->ndumps < 2)	/* no trend: growth, grew and fit mean nothing */
		fprintf(f, "%4zu  %11s  %5s  %4s  ", rank, "-", "-", "-");
	else
		fprintf(f, "%4zu  %11s  %4.0f%%  %4.2f  ", rank,
			rfmt_bytes(g, sizeof(g), t->slope * 3600), 100 * t->grew, t->r2);
	fprintf(f, "%10s  %10s  %9.0f  %9.0f  ", rfmt_bytes(fi, sizeof(fi), t->first),
		rfmt_bytes(la, sizeof(la), t->last), st->fig[RS_ALLOC_N][last], frees_of(st, last));
	if (why)
		fprintf(f, "[%s] ", rseries_why(t, s->ndumps));
	fprintf(f, "%s\n", name);
	free(name);
}

static void trend_head(FILE *f, const char *what)
{
	fprintf(f, "%4s  %11s  %5s  %4s  %10s  %10s  %9s  %9s  %s\n", "#", "growth/h", "grew", "R2",
		"first", "last", "allocs", "frees", what);
}

void rtext_suspects(FILE *f, const struct rseries *s, size_t top)
{
	size_t nsus = 0, k;

	header(f, s);
	for (size_t i = 0; i < s->nsites; i++)
		nsus += s->sites[i].trend.suspect;
	if (s->ndumps < RSERIES_MIN_DUMPS)
		fprintf(f, "Leak suspects: none can be told from %zu dump%s (give %d or more)\n",
			s->ndumps, s->ndumps == 1 ? "" : "s", RSERIES_MIN_DUMPS);
	else
		fprintf(f, "Leak suspects: %zu site%s whose live bytes grow steadily\n", nsus,
			nsus == 1 ? "" : "s");
	if (nsus) {
		trend_head(f, "site (leaf < callers)");
		for (k = 0; k < nsus && k < top; k++)
			trend_row(f, s, &s->sites[k], k + 1, 0);
	}
	if (nsus < s->nsites) {
		fprintf(f, "\nOther sites, by live bytes at the last dump:\n");
		trend_head(f, "[why not] site");
		for (k = nsus; k < s->nsites && k - nsus < top; k++)
			trend_row(f, s, &s->sites[k], k + 1, 1);
	}
	fprintf(f, "\nFunctions (the first caller past the allocator's wrappers, over all "
		   "its stacks):\n");
	trend_head(f, "function");
	for (k = 0; k < s->nfuncs && k < top; k++) {
		trend_row(f, s, &s->funcs[k], k + 1, !s->funcs[k].trend.suspect);
	}
}

static void json_num(FILE *f, const char *key, double v)
{
	if (isfinite(v))
		fprintf(f, "\"%s\":%.17g", key, v);
	else
		fprintf(f, "\"%s\":null", key);
}

static void json_stack(FILE *f, const struct rseries_site *st)
{
	fputs("\"stack\":[", f);
	for (size_t k = 0; k < st->nframes; k++) {
		if (k)
			fputc(',', f);
		rfmt_json(f, st->frames[k]);
	}
	fputc(']', f);
	if (st->nframes) {
		fputs(",\"site\":", f);
		rfmt_json(f, st->frames[st->skip]);
	}
}

static void json_trend(FILE *f, const struct rseries *s, const struct rseries_site *st, size_t rank)
{
	const struct rseries_trend *t = &st->trend;
	size_t last = s->ndumps - 1;
	const char *why = rseries_why(t, s->ndumps);

	fprintf(f, "{\"rank\":%zu,\"suspect\":%s,\"why_not\":", rank, t->suspect ? "true" : "false");
	if (why)
		rfmt_json(f, why);
	else
		fputs("null", f);
	fputc(',', f);
	json_num(f, "growth_bytes_per_hour", t->slope * 3600);
	fputc(',', f);
	json_num(f, "recent_bytes_per_hour", t->recent * 3600);
	fputc(',', f);
	json_num(f, "grew", t->grew);
	fputc(',', f);
	json_num(f, "r2", t->r2);
	fputc(',', f);
	json_num(f, "first_live_bytes", t->first);
	fputc(',', f);
	json_num(f, "last_live_bytes", t->last);
	fputc(',', f);
	json_num(f, "max_live_bytes", t->max);
	fputc(',', f);
	json_num(f, "allocs", st->fig[RS_ALLOC_N][last]);
	fputc(',', f);
	json_num(f, "frees", frees_of(st, last));
	fputc(',', f);
	json_num(f, "alloc_bytes", st->fig[RS_ALLOC_B][last]);
	fputs(",\"live_bytes\":[", f);
	for (size_t d = 0; d < s->ndumps; d++)
		fprintf(f, "%s%.17g", d ? "," : "", st->fig[RS_INUSE_B][d]);
	fputs("],", f);
	json_stack(f, st);
	fputc('}', f);
}

static void json_dumps(FILE *f, const struct rseries *s)
{
	fputs("\"dumps\":[", f);
	for (size_t d = 0; d < s->ndumps; d++) {
		fputs(d ? ",{\"path\":" : "{\"path\":", f);
		rfmt_json(f, s->dumps[d].path);
		fputc(',', f);
		json_num(f, "time", s->dumps[d].t);
		fputc(',', f);
		json_num(f, "live_bytes", s->dumps[d].total[RS_INUSE_B]);
		fputc(',', f);
		json_num(f, "live_objects", s->dumps[d].total[RS_INUSE_N]);
		fputc(',', f);
		json_num(f, "alloc_bytes", s->dumps[d].total[RS_ALLOC_B]);
		if (s->dumps[d].has_rss) {
			fputs(",\"rss\":{", f);
			json_num(f, "rss", s->dumps[d].rss);
			for (int k = 0; k < RS_NPARTS; k++) {
				fputc(',', f);
				json_num(f, rseries_rss_keys[k], s->dumps[d].part[k]);
			}
			fputc('}', f);
		}
		fputc('}', f);
	}
	fputc(']', f);
}

void rtext_suspects_json(FILE *f, const struct rseries *s, size_t top)
{
	fputc('{', f);
	json_dumps(f, s);
	fputs(",\"sites\":[", f);
	for (size_t k = 0; k < s->nsites && (k < top || s->sites[k].trend.suspect); k++) {
		if (k)
			fputc(',', f);
		json_trend(f, s, &s->sites[k], k + 1);
	}
	fputs("],\"functions\":[", f);
	for (size_t k = 0; k < s->nfuncs && (k < top || s->funcs[k].trend.suspect); k++) {
		if (k)
			fputc(',', f);
		json_trend(f, s, &s->funcs[k], k + 1);
	}
	fputs("]}\n", f);
}

/* ---- diff of two dumps ---- */

static void diff_table(FILE *f, const struct rseries *s, int funcs, size_t top)
{
	size_t n = funcs ? s->nfuncs : s->nsites;
	const struct rseries_site *arr = funcs ? s->funcs : s->sites;
	size_t *idx = xcalloc(n + 1, sizeof(size_t));
	char g[32], a[32], b[32];

	rseries_diff_order(s, funcs, 0, 1, idx);
	fprintf(f, "%4s  %11s  %9s  %11s  %11s  %s\n", "#", "growth", "objects", "base", "live",
		funcs ? "function" : "site (leaf < callers)");
	for (size_t k = 0; k < n && k < top; k++) {
		const struct rseries_site *st = &arr[idx[k]];
		const double *v = st->fig[RS_INUSE_B], *o = st->fig[RS_INUSE_N];
		char *name;

		if (v[1] - v[0] <= 0)
			break;
		name = rseries_site_name(st, NAME_DEPTH);
		fprintf(f, "%4zu  %11s  %+9.0f  %11s  %11s  %s\n", k + 1,
			rfmt_bytes(g, sizeof(g), v[1] - v[0]), o[1] - o[0],
			rfmt_bytes(a, sizeof(a), v[0]), rfmt_bytes(b, sizeof(b), v[1]), name);
		free(name);
	}
	free(idx);
}

void rtext_diff(FILE *f, const struct rseries *s, size_t top)
{
	char a[32], b[32], g[32];
	double d = s->dumps[1].total[RS_INUSE_B] - s->dumps[0].total[RS_INUSE_B];

	fprintf(f, "heapattach report: growth from %s to %s (%.1f s later)\n", s->dumps[0].path,
		s->dumps[1].path, s->dumps[1].t - s->dumps[0].t);
	fprintf(f, "live bytes: %s -> %s (%s%s)\n\n", rfmt_bytes(a, sizeof(a), s->dumps[0].total[RS_INUSE_B]),
		rfmt_bytes(b, sizeof(b), s->dumps[1].total[RS_INUSE_B]), d >= 0 ? "+" : "",
		rfmt_bytes(g, sizeof(g), d));
	fprintf(f, "By site:\n");
	diff_table(f, s, 0, top);
	fprintf(f, "\nBy function (the first caller past the allocator's wrappers):\n");
	diff_table(f, s, 1, top);
}

static void diff_json(FILE *f, const struct rseries *s, int funcs, size_t top)
{
	size_t n = funcs ? s->nfuncs : s->nsites;
	const struct rseries_site *arr = funcs ? s->funcs : s->sites;
	size_t *idx = xcalloc(n + 1, sizeof(size_t));

	rseries_diff_order(s, funcs, 0, 1, idx);
	for (size_t k = 0; k < n && k < top; k++) {
		const struct rseries_site *st = &arr[idx[k]];

		fputs(k ? ",{" : "{", f);
		json_num(f, "growth_bytes", st->fig[RS_INUSE_B][1] - st->fig[RS_INUSE_B][0]);
		fputc(',', f);
		json_num(f, "growth_objects", st->fig[RS_INUSE_N][1] - st->fig[RS_INUSE_N][0]);
		fputc(',', f);
		json_num(f, "base_live_bytes", st->fig[RS_INUSE_B][0]);
		fputc(',', f);
		json_num(f, "live_bytes", st->fig[RS_INUSE_B][1]);
		fputc(',', f);
		json_stack(f, st);
		fputc('}', f);
	}
	free(idx);
}

void rtext_diff_json(FILE *f, const struct rseries *s, size_t top)
{
	fputc('{', f);
	json_dumps(f, s);
	fputs(",\"sites\":[", f);
	diff_json(f, s, 0, top);
	fputs("],\"functions\":[", f);
	diff_json(f, s, 1, top);
	fputs("]}\n", f);
}
