/* --top over several processes: a table of them, one line a process, every second. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FLEETTOP_H
#define HEAPATTACH_FLEETTOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct fleettop_line {
	pid_t pid;
	const char *state;       /* "attaching", "attached", "ended", "failed" */
	uint64_t live;           /* live bytes since its attach */
	uint64_t rate;           /* bytes allocated a second, over the last refresh */
	uint64_t events;
};

/* One refresh on out: a title (processes by state, time since the start),
 * then the lines by live bytes, highest first, each with the process's RSS
 * and command; tty: the screen cleared first and at most rows - 3 lines
 * (the rest counted), else appended whole with a blank line before. lines
 * is sorted in place. */
void fleettop_draw(FILE *out, int tty, int rows, struct fleettop_line *lines, size_t n,
		   uint64_t elapsed_ns);

#endif
