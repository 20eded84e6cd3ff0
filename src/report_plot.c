/* SVG time plot: live bytes over time (total and chosen sites) and each site's share of the total. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report_fmt.h"
#include "report_plot.h"
#include "xmalloc.h"

#define PL_W      1000.0
#define PL_LEFT   90.0
#define PL_RIGHT  20.0
/* three panels: memory (live total, RSS), the sites in bytes, their shares */
#define PL_TOP1   50.0
#define PL_H1     220.0
#define PL_TOP2   (PL_TOP1 + PL_H1 + 60.0)
#define PL_H2     220.0
#define PL_TOP3   (PL_TOP2 + PL_H2 + 60.0)
#define PL_H3     160.0
#define PL_LEG    (PL_TOP3 + PL_H3 + 50.0)
#define PL_ROW    18.0

const char *const rplot_colors[RPLOT_NCOLORS] = {
	"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
	"#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
};

/* A step of 1, 2 or 5 times a power of ten giving about 5 ticks up to max. */
static double nice_step(double max)
{
	double raw = max / 5, p, m;

	if (!(raw > 0))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

struct axis {
	double x0, xspan, xunit;        /* seconds per unit of the labels */
	const char *xname;
	double ymax, yunit;
	const char *yname;
};

static double px(const struct axis *a, double t)
{
	return PL_LEFT + (a->xspan > 0 ? (t - a->x0) / a->xspan : 0.5) * (PL_W - PL_LEFT - PL_RIGHT);
}

static double py(double top, double h, double v, double max)
{
	return top + h - (max > 0 ? v / max : 0) * h;
}

/* Axes, grid and tick labels of one panel; frac: a 0-100% y axis. */
static void panel(FILE *f, const struct axis *a, double top, double h, int frac, const char *title)
{
	double ymax = frac ? 100 : a->ymax / a->yunit;
	double ys = nice_step(ymax), xs = nice_step(a->xspan / a->xunit);
	double right = PL_W - PL_RIGHT;

	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"15\">%s</text>\n", PL_LEFT, top - 12, title);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" "
		"stroke=\"#999\"/>\n", PL_LEFT, top, right - PL_LEFT, h);
	for (double v = 0; v <= ymax * 1.0001 && ys > 0; v += ys) {
		double y = py(top, h, v, ymax);

		fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g%s</text>\n",
			PL_LEFT, right, y, y, PL_LEFT - 6, y + 4, v, frac ? "%" : "");
	}
	if (!frac)
		fprintf(f, "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" "
			"text-anchor=\"middle\">%s</text>\n", top + h / 2, top + h / 2, a->yname);
	for (double v = 0; v <= a->xspan / a->xunit * 1.0001 && xs > 0; v += xs) {
		double x = px(a, a->x0 + v * a->xunit);

		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
			x, x, top, top + h, x, top + h + 16, v);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\" fill=\"#555\">time since the first "
		"dump (%s)</text>\n", right, top + h + 34, a->xname);
}

/* One line over the dumps: v[i] / div[i] (div NULL: 1) scaled to max. */
static void line(FILE *f, const struct rseries *s, const struct axis *a, double top, double h,
		 const double *v, const double *div, double max, const char *id, const char *color,
		 double width)
{
	fprintf(f, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
		"stroke-linejoin=\"round\" points=\"", id, color, width);
	for (size_t i = 0; i < s->ndumps; i++) {
		double y = div ? (div[i] > 0 ? 100 * v[i] / div[i] : 0) : v[i];

		fprintf(f, "%s%.1f,%.1f", i ? " " : "", px(a, s->dumps[i].t), py(top, h, y, max));
	}
	fputs("\"/>\n", f);
	for (size_t i = 0; i < s->ndumps; i++) {
		double y = div ? (div[i] > 0 ? 100 * v[i] / div[i] : 0) : v[i];

		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>",
			px(a, s->dumps[i].t), py(top, h, y, max), width + 0.5, color);
	}
	fputc('\n', f);
}

static const struct {
	const char *id, *color, *dash, *label;
} rss_style[RS_NRSS] = {
	{ "rss", "#444", "7,4", "RSS (resident memory)" },
	{ "rss-anon", "#999", "3,3", "RSS: anonymous" },
	{ "rss-file", "#bbb", "1,3", "RSS: file-backed" },
	{ "rss-shmem", "#c9a", "8,2,2,2", "RSS: shared memory (heapattach's rings count here)" },
};

/* Unit and top of a bytes axis reaching max: the last tick at or above it. */
static void y_axis(struct axis *a, double max)
{
	double top;

	a->yunit = 1;
	a->yname = "B";
	for (unsigned u = 0; u < 3 && max / a->yunit >= 1024; u++) {
		a->yunit *= 1024;
		a->yname = (const char *[]){ "KiB", "MiB", "GiB" }[u];
	}
	top = max / a->yunit;
	top = ceil(top / nice_step(top)) * nice_step(top);
	a->ymax = (top > 0 ? top : 1) * a->yunit;
}

/* A dashed line of RSS part k over the dumps that carry it. */
static void rss_line(FILE *f, const struct rseries *s, const struct axis *a, int k, const char *pfx)
{
	const char *sep = "";

	fprintf(f, "<polyline id=\"%s%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
		"stroke-dasharray=\"%s\" points=\"", pfx, rss_style[k].id, rss_style[k].color,
		rss_style[k].dash);
	for (size_t i = 0; i < s->ndumps; i++) {
		if (!s->dumps[i].has_rss)
			continue;
		fprintf(f, "%s%.1f,%.1f", sep, px(a, s->dumps[i].t),
			py(PL_TOP1, PL_H1, s->dumps[i].rss[k], a->ymax));
		sep = " ";
	}
	fputs("\"/>\n", f);
}

int rplot_svg(FILE *f, const struct rseries *s, const size_t *idx, size_t n,
	      const char *pfx, int inline_svg)
{
	double *total = xcalloc(s->ndumps, sizeof(double));
	int has_rss = 0;
	double height;
	struct axis a = { .x0 = s->dumps[0].t, .xunit = 1, .xname = "s" }, sa;
	char id[64], b[32];
	double mem = 0, sites = 0;

	a.xspan = s->dumps[s->ndumps - 1].t - a.x0;
	if (a.xspan >= 7200) {
		a.xunit = 3600;
		a.xname = "h";
	} else if (a.xspan >= 120) {
		a.xunit = 60;
		a.xname = "min";
	}
	for (size_t i = 0; i < s->ndumps; i++) {
		total[i] = s->dumps[i].total[RS_INUSE_B];
		mem = fmax(mem, total[i]);
		if (s->dumps[i].has_rss)
			mem = fmax(mem, s->dumps[i].rss[RS_RSS]);
		has_rss |= s->dumps[i].has_rss;
		for (size_t k = 0; k < n; k++)
			sites = fmax(sites, s->sites[idx[k]].fig[RS_INUSE_B][i]);
	}
	height = PL_LEG + (double)(n + 1 + (has_rss ? RS_NRSS : 0)) * PL_ROW + 10;
	y_axis(&a, mem);
	sa = a;
	y_axis(&sa, sites);

	if (!inline_svg)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%splot\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"Verdana, sans-serif\" "
		"font-size=\"12\">\n", pfx, PL_W, height, PL_W, height);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\"/>\n",
		PL_W, height);
	fprintf(f, "<text x=\"%.0f\" y=\"20\" text-anchor=\"middle\" font-size=\"16\">Live heap over "
		"time: %zu dumps, %s at the last</text>\n", PL_W / 2, s->ndumps,
		rfmt_bytes(b, sizeof(b), total[s->ndumps - 1]));
	panel(f, &a, PL_TOP1, PL_H1, 0, has_rss ? "Total live bytes and RSS" : "Total live bytes");
	for (int k = 0; has_rss && k < RS_NRSS; k++)
		rss_line(f, s, &a, k, pfx);
	snprintf(id, sizeof(id), "%stotal", pfx);
	line(f, s, &a, PL_TOP1, PL_H1, total, NULL, a.ymax, id, "#000", 2.5);
	panel(f, &sa, PL_TOP2, PL_H2, 0, "Live bytes by site");
	for (size_t k = 0; k < n; k++) {
		snprintf(id, sizeof(id), "%ssite-%zu", pfx, k + 1);
		line(f, s, &sa, PL_TOP2, PL_H2, s->sites[idx[k]].fig[RS_INUSE_B], NULL, sa.ymax, id,
		     rplot_colors[k % RPLOT_NCOLORS], 2);
	}
	panel(f, &a, PL_TOP3, PL_H3, 1, "Share of the live bytes");
	for (size_t k = 0; k < n; k++) {
		snprintf(id, sizeof(id), "%sfrac-%zu", pfx, k + 1);
		line(f, s, &a, PL_TOP3, PL_H3, s->sites[idx[k]].fig[RS_INUSE_B], total, 100, id,
		     rplot_colors[k % RPLOT_NCOLORS], 2);
	}
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"18\" height=\"4\" fill=\"#000\"/>"
		"<text x=\"%.0f\" y=\"%.0f\">total live bytes</text>\n",
		PL_LEFT, PL_LEG - 6, PL_LEFT + 26, PL_LEG);
	for (size_t k = 0; k < n; k++) {
		char *name = rseries_site_name(&s->sites[idx[k]], 4);
		double y = PL_LEG + (double)(k + 1) * PL_ROW;

		fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"18\" height=\"4\" fill=\"%s\"/>"
			"<text id=\"%slegend-%zu\" x=\"%.0f\" y=\"%.0f\">", PL_LEFT, y - 6,
			rplot_colors[k % RPLOT_NCOLORS], pfx, k + 1, PL_LEFT + 26, y);
		rfmt_xml(f, name);
		fprintf(f, " (%s)</text>\n",
			rfmt_bytes(b, sizeof(b), s->sites[idx[k]].fig[RS_INUSE_B][s->ndumps - 1]));
		free(name);
	}
	for (int k = 0; has_rss && k < RS_NRSS; k++) {
		double y = PL_LEG + (double)(n + 1 + (size_t)k) * PL_ROW;

		fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
			"stroke-width=\"2\" stroke-dasharray=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
			PL_LEFT, PL_LEFT + 18, y - 4, y - 4, rss_style[k].color, rss_style[k].dash,
			PL_LEFT + 26, y, rss_style[k].label);
	}
	fputs("</svg>\n", f);
	free(total);
	return ferror(f) ? -EIO : 0;
}
