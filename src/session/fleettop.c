/* --top over several processes: a table of them, one line a process, every second. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "model/proc.h"
#include "output/topview.h"
#include "session/fleettop.h"

static int by_live(const void *a, const void *b)
{
	const struct fleettop_line *x = a, *y = b;

	if (x->live != y->live)
		return x->live < y->live ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

void fleettop_draw(FILE *out, int tty, int rows, struct fleettop_line *lines, size_t n,
		   uint64_t elapsed_ns)
{
	size_t attached = 0, shown = n;
	uint64_t s = elapsed_ns / 1000000000ULL;

	qsort(lines, n, sizeof(*lines), by_live);
	for (size_t i = 0; i < n; i++)
		attached += !strcmp(lines[i].state, "attached");
	if (tty && rows > 3 && shown > (size_t)rows - 3)
		shown = (size_t)rows - 3;
	fputs(tty ? "\033[H\033[2J" : "\n", out);
	fprintf(out, "heapattach: %zu processes, %zu attached, %02llu:%02llu:%02llu%s\n", n,
		attached, (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60),
		(unsigned long long)(s % 60), tty ? " (Ctrl-C: write the profiles and detach)" : "");
	fprintf(out, "%8s  %-9s  %8s  %8s  %8s  %9s  %s\n", "PID", "STATE", "RSS", "LIVE",
		"ALLOC/S", "EVENTS", "COMMAND");
	for (size_t i = 0; i < shown; i++) {
		const struct fleettop_line *l = &lines[i];
		char rss[24], live[24], rate[24], comm[32];
		int64_t r = topview_rss(l->pid);

		topview_fmt_bytes(rss, sizeof(rss), r, 0);
		topview_fmt_bytes(live, sizeof(live), (int64_t)l->live, 0);
		topview_fmt_bytes(rate, sizeof(rate), (int64_t)l->rate, 0);
		proc_comm_read(l->pid, comm, sizeof(comm));
		fprintf(out, "%8d  %-9s  %8s  %8s  %8s  %9llu  %s\n", (int)l->pid, l->state,
			r < 0 ? "-" : rss, live, rate, (unsigned long long)l->events, comm);
	}
	if (shown < n)
		fprintf(out, "(%zu more)\n", n - shown);
	fflush(out);
}
