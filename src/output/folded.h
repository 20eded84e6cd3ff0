/* Folded stacks ("root;caller;leaf VALUE" lines), the input of flamegraph.pl, inferno and speedscope. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FOLDED_H
#define HEAPATTACH_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One line: the frames root first, joined by ';', a space, the value.
 * frames come leaf first (as profiles hold them). A ';' in a name becomes
 * ':' and a control character a space, so that every name stays one frame
 * of one line; no frames at all is written "[no stack]".
 */
void folded_line(FILE *f, const char *const *frames, size_t n, uint64_t value);

#endif
