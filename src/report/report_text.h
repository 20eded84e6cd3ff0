/* The report as text tables and as JSON: leak suspects over a series, growth between two dumps. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_TEXT_H
#define HEAPATTACH_REPORT_TEXT_H

#include <stddef.h>
#include <stdio.h>
#include "report/report_series.h"

/* Leak suspects, then the largest other sites (with why they are not
 * suspects), then functions: at most top rows each. */
void rtext_suspects(FILE *f, const struct rseries *s, size_t top);
void rtext_suspects_json(FILE *f, const struct rseries *s, size_t top);
/* What grew from dump 0 (the base) to dump 1, by site and by function. */
void rtext_diff(FILE *f, const struct rseries *s, size_t top);
void rtext_diff_json(FILE *f, const struct rseries *s, size_t top);

#endif
