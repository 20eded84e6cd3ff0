/* Time plot of a series: total live bytes and a few sites, in bytes and as a fraction, as one SVG. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_PLOT_H
#define HEAPATTACH_REPORT_PLOT_H

#include <stddef.h>
#include <stdio.h>
#include "report/report_series.h"

/* The palette of the plotted sites, in order (then again). */
extern const char *const rplot_colors[];
#define RPLOT_NCOLORS 10

/*
 * Two panels over the dumps' times: live bytes (the total in black as
 * <polyline id="PFXtotal">, site k of idx, counted from 1, as
 * id="PFXsite-k" in rplot_colors[k-1]), and each site's fraction of the
 * total (id="PFXfrac-k"); a legend names the sites. inline_svg: no XML
 * declaration (for a page). 0 or -EIO.
 */
int rplot_svg(FILE *f, const struct rseries *s, const size_t *idx, size_t n,
	      const char *pfx, int inline_svg);

#endif
