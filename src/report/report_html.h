/* The report as one offline HTML page: tables, time plot and flame graph inline. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_HTML_H
#define HEAPATTACH_REPORT_HTML_H

#include <stddef.h>
#include <stdio.h>
#include "report/report_flame.h"
#include "report/report_series.h"

/*
 * Write the page: the leak suspects, the time plot of sites idx[0..n),
 * the flame graph of the st[0..nst) stacks (titled flame_title), the other
 * sites, the functions and the dumps (at most top rows per table). Nothing
 * in it is fetched: styles and scripts are inline and a
 * Content-Security-Policy forbids every request. 0 or -EIO.
 */
int rhtml_write(FILE *f, const struct rseries *s, const size_t *idx, size_t n,
		const struct rflame_stack *st, size_t nst, const char *flame_title, size_t top);

#endif
