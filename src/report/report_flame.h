/* An interactive flame graph (click to zoom, search) as one self-contained SVG. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_FLAME_H
#define HEAPATTACH_REPORT_FLAME_H

#include <stddef.h>
#include <stdio.h>

/* One stack and what it holds (bytes): frames leaf first. */
struct rflame_stack {
	const char *const *frames;
	size_t nframes;
	double value;
};

/*
 * Write the flame graph of the n stacks (values <= 0 are left out) to f:
 * the root at the bottom, each frame as wide as the bytes under it,
 * children ordered largest first (left heavy, as speedscope's view), frames
 * colored by a hash of their name. A script zooms on a click and
 * highlights the frames a search matches; the frames are there without
 * it. Each frame is a <g class="frame"> holding a <title> "NAME (BYTES,
 * PCT%)", a <rect> and a <text>. id_prefix names the elements (so that
 * two graphs can live in one HTML page); inline leaves out the XML
 * declaration, for a page. 0 or -EIO.
 */
int rflame_svg(FILE *f, const struct rflame_stack *st, size_t n, const char *title,
	       const char *id_prefix, int inline_svg);

#endif
