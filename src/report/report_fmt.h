/* Small formatters shared by the report's outputs: bytes, XML and JSON text. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_FMT_H
#define HEAPATTACH_REPORT_FMT_H

#include <stddef.h>
#include <stdio.h>

/* "512 B", "1.5 KiB", "200.0 MiB", "-3.2 GiB" into buf; returns buf. */
char *rfmt_bytes(char *buf, size_t len, double v);
/* s with & < > " ' escaped for XML text and attributes; bytes below 0x20
 * (but tab) and invalid UTF-8 become '?'. */
void rfmt_xml(FILE *f, const char *s);
/* s as a JSON string, quotes included. */
void rfmt_json(FILE *f, const char *s);

#endif
