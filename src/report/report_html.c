/* One self-contained HTML page of the report: tables, the time plot and the flame graph, all inline. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include "report/report_fmt.h"
#include "report/report_html.h"
#include "report/report_plot.h"

static void row(FILE *f, const struct rseries *s, const struct rseries_site *st, size_t rank,
		const char *color)
{
	const struct rseries_trend *t = &st->trend;
	const char *why = rseries_why(t, s->ndumps);
	size_t last = s->ndumps - 1;
	double frees = st->fig[RS_ALLOC_N][last] - st->fig[RS_INUSE_N][last];
	char g[32], fi[32], la[32];

	fprintf(f, "<tr><td>%zu</td><td class=\"n\">%s</td><td class=\"n\">%.0f%%</td>"
		"<td class=\"n\">%.2f</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
		"<td class=\"n\">%.0f</td><td class=\"n\">%.0f</td><td>%s</td><td class=\"s\">",
		rank, rfmt_bytes(g, sizeof(g), t->slope * 3600), 100 * t->grew, t->r2,
		rfmt_bytes(fi, sizeof(fi), t->first), rfmt_bytes(la, sizeof(la), t->last),
		st->fig[RS_ALLOC_N][last], frees > 0 ? frees : 0, why ? why : "suspect");
	if (color)
		fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", color);
	/* the site in bold, the wrappers skipped to reach it grey */
	for (size_t k = 0; k < st->nframes; k++) {
		if (k)
			fputs("<br>&lt; ", f);
		fputs(k < st->skip ? "<span class=\"w\">" : k == st->skip ? "<b>" : "", f);
		rfmt_xml(f, st->frames[k]);
		fputs(k < st->skip ? "</span>" : k == st->skip ? "</b>" : "", f);
	}
	if (!st->nframes)
		fputs("[no stack]", f);
	fputs("</td></tr>\n", f);
}

static void table(FILE *f, const char *id, const char *what)
{
	fprintf(f, "<table id=\"%s\"><tr><th>#</th><th>growth/h</th><th>grew</th><th>R&#178;</th>"
		"<th>first</th><th>last</th><th>allocs</th><th>frees</th><th>verdict</th>"
		"<th>%s</th></tr>\n", id, what);
}

/* The plot's color of site i, or NULL when it is not plotted. */
static const char *color_of(const size_t *idx, size_t n, size_t i)
{
	for (size_t k = 0; k < n; k++)
		if (idx[k] == i)
			return rplot_colors[k % RPLOT_NCOLORS];
	return NULL;
}

int rhtml_write(FILE *f, const struct rseries *s, const size_t *idx, size_t n,
		const struct rflame_stack *st, size_t nst, const char *flame_title, size_t top)
{
	size_t nsus = 0, k;
	char b[32];

	for (size_t i = 0; i < s->nsites; i++)
		nsus += s->sites[i].trend.suspect;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
	      "<title>heapattach report</title>\n<style>\n"
	      "body{font-family:Verdana,sans-serif;font-size:13px;margin:16px;color:#222}\n"
	      "table{border-collapse:collapse;margin:8px 0 20px}\n"
	      "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}\n"
	      "th{background:#eee}td.n{text-align:right;white-space:nowrap}\n"
	      "td.s{font-family:monospace;font-size:12px}\n.w{color:#888}\n"
	      ".sw{display:inline-block;width:12px;height:12px;margin-right:6px}\n"
	      "svg{display:block;margin:8px 0;max-width:100%;height:auto}\n"
	      "</style></head><body>\n<h1>heapattach report</h1>\n", f);
	fprintf(f, "<p>%zu dump%s over %.1f s, from <code>", s->ndumps, s->ndumps == 1 ? "" : "s",
		s->dumps[s->ndumps - 1].t - s->dumps[0].t);
	rfmt_xml(f, s->dumps[0].path);
	fputs("</code> to <code>", f);
	rfmt_xml(f, s->dumps[s->ndumps - 1].path);
	fprintf(f, "</code>; live bytes at the last: %s.</p>\n",
		rfmt_bytes(b, sizeof(b), s->dumps[s->ndumps - 1].total[RS_INUSE_B]));
	fprintf(f, "<h2 id=\"suspects-title\">Leak suspects: %zu</h2>\n", nsus);
	if (nsus) {
		table(f, "suspects", "site (leaf &lt; callers)");
		for (k = 0; k < nsus && k < top; k++)
			row(f, s, &s->sites[k], k + 1, color_of(idx, n, k));
		fputs("</table>\n", f);
	} else {
		fputs("<p>No site's live bytes grow steadily.</p>\n", f);
	}
	fputs("<h2>Live bytes over time</h2>\n", f);
	rplot_svg(f, s, idx, n, "p-", 1);
	fputs("<h2>Flame graph</h2>\n", f);
	rflame_svg(f, st, nst, flame_title, "f-", 1);
	fputs("<h2>Other sites, by live bytes at the last dump</h2>\n", f);
	table(f, "others", "site (leaf &lt; callers)");
	for (k = nsus; k < s->nsites && k - nsus < top; k++)
		row(f, s, &s->sites[k], k + 1, color_of(idx, n, k));
	fputs("</table>\n<h2>Functions (the first caller past the allocator's wrappers, over "
	      "all its stacks)</h2>\n", f);
	table(f, "functions", "function");
	for (k = 0; k < s->nfuncs && k < top; k++)
		row(f, s, &s->funcs[k], k + 1, NULL);
	fputs("</table>\n<h2>Dumps</h2>\n<table id=\"dumps\"><tr><th>file</th><th>time (s)</th>"
	      "<th>live bytes</th><th>live objects</th></tr>\n", f);
	for (k = 0; k < s->ndumps; k++) {
		fputs("<tr><td>", f);
		rfmt_xml(f, s->dumps[k].path);
		fprintf(f, "</td><td class=\"n\">%.3f</td><td class=\"n\">%s</td><td class=\"n\">%.0f</td>"
			"</tr>\n", s->dumps[k].t - s->dumps[0].t,
			rfmt_bytes(b, sizeof(b), s->dumps[k].total[RS_INUSE_B]),
			s->dumps[k].total[RS_INUSE_N]);
	}
	fputs("</table>\n</body></html>\n", f);
	return ferror(f) ? -EIO : 0;
}
