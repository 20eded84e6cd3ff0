/* SVG time plot: live bytes over time (total and chosen sites) and each site's share of the total. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/xmalloc.h"
#include "report/report_fmt.h"
#include "report/report_plot.h"

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

/* Fill colors and labels of the RSS parts (rseries_rss_keys' order). */
static const char *const part_color[RS_NPARTS] = {
	"#fbb4ae", "#b3cde3", "#ccebc5", "#decbe4", "#fed9a6", "#ffffcc", "#e5d8bd", "#fddaec",
	"#e0e0e0",
};
static const char *const part_label[RS_NPARTS] = {
	"RSS: heap (the allocator's memory)", "RSS: anonymous memory outside the heap",
	"RSS: thread stacks", "RSS: code", "RSS: data of executables and libraries",
	"RSS: other mapped files", "RSS: shared memory", "RSS: heapattach's shared area",
	"RSS: unexplained",
};

/* Height of part k's top at dump i, stacked on the parts before it. */
static double stacked(const struct rseries_dump *d, int k)
{
	double sum = 0;

	for (int j = 0; j <= k; j++)
		sum += d->part[j] > 0 ? d->part[j] : 0;
	return sum;
}

/* The RSS of the dumps that carry it: each part as a band stacked on the
 * ones before it (<polygon id="PFXrss-KEY">), the total as a dashed line
 * (id="PFXrss"). Returns a bit per part drawn (for the legend). */
static unsigned rss_bands(FILE *f, const struct rseries *s, const struct axis *a, const char *pfx)
{
	unsigned drawn = 0;
	const char *sep = "";

	for (int k = 0; k < RS_NPARTS; k++) {
		int any = 0;

		for (size_t i = 0; i < s->ndumps; i++)
			any |= s->dumps[i].has_rss && s->dumps[i].part[k] > 0;
		if (!any)
			continue;
		drawn |= 1u << k;
		fprintf(f, "<polygon id=\"%srss-%s\" fill=\"%s\" stroke=\"none\" points=\"", pfx,
			rseries_rss_keys[k], part_color[k]);
		sep = "";
		for (size_t i = 0; i < s->ndumps; i++) {
			if (!s->dumps[i].has_rss)
				continue;
			fprintf(f, "%s%.1f,%.1f", sep, px(a, s->dumps[i].t),
				py(PL_TOP1, PL_H1, stacked(&s->dumps[i], k), a->ymax));
			sep = " ";
		}
		for (size_t i = s->ndumps; i-- > 0;) {
			if (!s->dumps[i].has_rss)
				continue;
			fprintf(f, " %.1f,%.1f", px(a, s->dumps[i].t),
				py(PL_TOP1, PL_H1, k ? stacked(&s->dumps[i], k - 1) : 0, a->ymax));
		}
		fputs("\"/>\n", f);
	}
	fprintf(f, "<polyline id=\"%srss\" fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\" "
		"stroke-dasharray=\"7,4\" points=\"", pfx);
	sep = "";
	for (size_t i = 0; i < s->ndumps; i++) {
		if (!s->dumps[i].has_rss)
			continue;
		fprintf(f, "%s%.1f,%.1f", sep, px(a, s->dumps[i].t),
			py(PL_TOP1, PL_H1, s->dumps[i].rss, a->ymax));
		sep = " ";
	}
	fputs("\"/>\n", f);
	return drawn;
}

int rplot_svg(FILE *f, const struct rseries *s, const size_t *idx, size_t n,
	      const char *pfx, int inline_svg)
{
	double *total = xcalloc(s->ndumps, sizeof(double));
	int has_rss = 0;
	unsigned parts = 0;
	size_t nleg;
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
			mem = fmax(mem, fmax(s->dumps[i].rss, stacked(&s->dumps[i], RS_NPARTS - 1)));
		for (int k = 0; k < RS_NPARTS; k++)
			if (s->dumps[i].has_rss && s->dumps[i].part[k] > 0)
				parts |= 1u << k;
		has_rss |= s->dumps[i].has_rss;
		for (size_t k = 0; k < n; k++)
			sites = fmax(sites, s->sites[idx[k]].fig[RS_INUSE_B][i]);
	}
	nleg = n + 1 + (has_rss ? 1 + (size_t)__builtin_popcount(parts) : 0);
	height = PL_LEG + (double)nleg * PL_ROW + 10;
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
	if (has_rss)
		rss_bands(f, s, &a, pfx);
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
	if (has_rss) {
		size_t row = n + 1;

		fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#444\" "
			"stroke-width=\"2\" stroke-dasharray=\"7,4\"/><text x=\"%.0f\" y=\"%.0f\">RSS "
			"(resident memory), and its parts:</text>\n", PL_LEFT, PL_LEFT + 18,
			PL_LEG + (double)row * PL_ROW - 4, PL_LEG + (double)row * PL_ROW - 4,
			PL_LEFT + 26, PL_LEG + (double)row * PL_ROW);
		for (int k = 0; k < RS_NPARTS; k++) {
			double y;

			if (!(parts & (1u << k)))
				continue;
			y = PL_LEG + (double)++row * PL_ROW;
			fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"18\" height=\"10\" fill=\"%s\" "
				"stroke=\"#aaa\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n", PL_LEFT, y - 10,
				part_color[k], PL_LEFT + 26, y, part_label[k]);
		}
	}
	fputs("</svg>\n", f);
	free(total);
	return ferror(f) ? -EIO : 0;
}
