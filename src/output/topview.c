/* The live view (--top): RSS, allocation rate and the top allocation sites, refreshed every second. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "model/allocstats.h"
#include "output/topview.h"
#include "output/wrapfind.h"
#include "profile/profile.h"
#include "stacks/symbolize.h"

/*
 * A site is the first frame of a bucket's stack whose function is not an
 * allocator wrapper (named so, skipsites.h, or found so by its code,
 * wrapfind.h; the leaf when all are): buckets are summed by it every
 * second, and each site keeps its live bytes of the last HIST seconds, so
 * that growth over that window and the allocation rate can be shown beside
 * the live bytes. Plain ANSI escapes (the alternate screen, home and
 * clear), as top does without curses for a screen this simple; the
 * terminal's settings are put back on every way out of the view
 * (topview_free, which session.c calls on its one exit).
 */

#define REFRESH_NS 1000000000ULL
#define HIST 10                 /* seconds of growth shown */
#define MAX_SITES 65536         /* beyond: one "(other sites)" row */
#define NAME_LEN 72

enum sort_by { BY_LIVE, BY_GROWTH, BY_RATE, NSORTS };

struct site {
	uint64_t pc;            /* 0: empty slot */
	char name[NAME_LEN];
	int64_t live, alloc;    /* scaled bytes, this refresh */
	int64_t prev_alloc;     /* alloc at the refresh before */
	int64_t hist[HIST];     /* live at the last HIST refreshes */
	int64_t growth, rate;
};

struct totals {
	int64_t live, bytes, calls;     /* unsampled */
};

struct topview {
	int in, out;
	int tty;                        /* out is a terminal: full screen */
	int raw;                        /* in's settings were changed (saved in term) */
	struct termios term;
	struct site *sites;             /* open addressing by pc */
	size_t nsites;
	uint64_t next_ns;
	unsigned refreshes;
	enum sort_by sort;
	struct totals tot, prev;        /* this refresh's and the one before */
	int redraw;                     /* the sort changed: draw again now */
	const struct topview_in *ti;    /* during a tick */
	char said[256];                 /* topview_say's line, or "" */
};

static const char *const sort_names[NSORTS] = { "live", "growth", "alloc rate" };
static const char sort_keys[NSORTS] = { 'l', 'g', 'a' };

struct topview *topview_new(int in, int out)
{
	struct topview *tv = xcalloc(1, sizeof(*tv));

	tv->in = in;
	tv->out = out;
	tv->tty = isatty(out);
	tv->sites = xcalloc(MAX_SITES, sizeof(*tv->sites));
	if (tv->tty && in >= 0 && isatty(in) && tcgetpgrp(in) == getpgrp() &&
	    tcgetattr(in, &tv->term) == 0) {
		struct termios t = tv->term;

		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		tv->raw = tcsetattr(in, TCSANOW, &t) == 0;
	}
	if (tv->tty)
		dprintf(out, "\033[?1049h\033[?25l");	/* alternate screen, no cursor */
	return tv;
}

void topview_free(struct topview *tv)
{
	if (!tv)
		return;
	if (tv->tty)
		dprintf(tv->out, "\033[?25h\033[?1049l");
	if (tv->raw)
		tcsetattr(tv->in, TCSANOW, &tv->term);
	free(tv->sites);
	free(tv);
}

/* ---- the sites ---- */

static struct site *site_of(struct topview *tv, uint64_t pc)
{
	size_t i = (size_t)((pc * 0x9E3779B97F4A7C15ULL) >> 48) & (MAX_SITES - 1);

	for (size_t n = 0; n < MAX_SITES; n++, i = (i + 1) & (MAX_SITES - 1)) {
		struct site *s = &tv->sites[i];

		if (s->pc == pc)
			return s;
		if (!s->pc) {
			if (tv->nsites >= MAX_SITES / 2)
				break;	/* full enough: pc 1 stands for the rest */
			s->pc = pc;
			tv->nsites++;
			return s;
		}
	}
	return pc == 1 ? NULL : site_of(tv, 1);
}

static void name_site(struct topview *tv, struct site *s)
{
	struct sym_info si;

	if (s->pc == 1) {
		snprintf(s->name, sizeof(s->name), "(other sites)");
		return;
	}
	if (tv->ti->sym && s->pc > 1 && symbolizer_lookup(tv->ti->sym, s->pc - 1, &si) == 0 &&
	    si.function) {
		if (si.file)
			snprintf(s->name, sizeof(s->name), "%s (%s:%d)", si.function,
				 strrchr(si.file, '/') ? strrchr(si.file, '/') + 1 : si.file, si.line);
		else
			snprintf(s->name, sizeof(s->name), "%s", si.function);
		return;
	}
	snprintf(s->name, sizeof(s->name), s->pc ? "0x%llx" : "(no stack)",
		 (unsigned long long)s->pc);
}

static int add_bucket(const struct profile_bucket *b, void *arg)
{
	struct topview *tv = arg;
	uint64_t pc = wrapfind_site_pc(tv->ti->wf, &tv->ti->src, b);
	struct site *s = site_of(tv, pc);
	int64_t lc, lb, ac, ab;

	if (!s)
		return 0;
	profile_scale(b->inuse_count, b->inuse_bytes, b->rate, &lc, &lb);
	profile_scale(b->alloc_count, b->alloc_bytes, b->rate, &ac, &ab);
	s->live += lb;
	s->alloc += ab;
	tv->tot.live += lb;
	tv->tot.bytes += ab;
	tv->tot.calls += ac;
	return 0;
}

static int cmp_sites(const void *a, const void *b, void *arg)
{
	const struct site *x = *(const struct site *const *)a, *y = *(const struct site *const *)b;
	enum sort_by by = *(const enum sort_by *)arg;
	int64_t kx = by == BY_LIVE ? x->live : by == BY_GROWTH ? x->growth : x->rate;
	int64_t ky = by == BY_LIVE ? y->live : by == BY_GROWTH ? y->growth : y->rate;

	return kx < ky ? 1 : kx > ky ? -1 : (x->pc > y->pc) - (x->pc < y->pc);
}

/* Sum the profile by site (once a second): live bytes, growth over the
 * window, allocation rate. */
static void gather(struct topview *tv)
{
	unsigned slot = tv->refreshes % HIST;

	tv->prev = tv->tot;
	memset(&tv->tot, 0, sizeof(tv->tot));
	for (size_t i = 0; i < MAX_SITES; i++) {
		tv->sites[i].prev_alloc = tv->sites[i].alloc;
		tv->sites[i].live = tv->sites[i].alloc = 0;
	}
	wrapfind_scan(tv->ti->wf, &tv->ti->src, tv->ti->prof);
	profile_foreach(tv->ti->prof, add_bucket, tv);
	for (size_t i = 0; i < MAX_SITES; i++) {
		struct site *s = &tv->sites[i];

		if (!s->pc)
			continue;
		/* the oldest of the window is the slot about to be overwritten */
		s->growth = tv->refreshes >= HIST ? s->live - s->hist[slot] : s->live - s->hist[0];
		s->hist[slot] = s->live;
		s->rate = tv->refreshes ? s->alloc - s->prev_alloc : 0;
		if (!s->name[0])
			name_site(tv, s);
	}
	tv->refreshes++;
}

/* The sites sorted as asked (caller frees). */
static struct site **sorted(struct topview *tv, size_t *n)
{
	struct site **v = xmalloc(MAX_SITES * sizeof(*v));

	*n = 0;
	for (size_t i = 0; i < MAX_SITES; i++)
		if (tv->sites[i].pc)
			v[(*n)++] = &tv->sites[i];
	qsort_r(v, *n, sizeof(*v), cmp_sites, &tv->sort);
	return v;
}

/* ---- drawing ---- */

void topview_fmt_bytes(char *buf, size_t len, int64_t v, int sign)
{
	double a = v < 0 ? -(double)v : (double)v;
	const char *sg = v < 0 ? "-" : sign ? "+" : "";

	if (a >= 1024.0 * 1024 * 1024)
		snprintf(buf, len, "%s%.2fG", sg, a / (1024.0 * 1024 * 1024));
	else if (a >= 1024.0 * 1024)
		snprintf(buf, len, "%s%.1fM", sg, a / (1024.0 * 1024));
	else if (a >= 1024.0)
		snprintf(buf, len, "%s%.1fK", sg, a / 1024.0);
	else
		snprintf(buf, len, "%s%.0f", sg, a);
}

int64_t topview_rss(pid_t pid)
{
	char path[64];
	unsigned long long size, res;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fscanf(f, "%llu %llu", &size, &res) == 2;
	fclose(f);
	return ok && res < (1ULL << 50) ? (int64_t)res * sysconf(_SC_PAGESIZE) : -1;
}

static void draw(struct topview *tv)
{
	const struct topview_in *ti = tv->ti;
	const struct totals *t = &tv->tot;
	size_t n;
	struct site **v = sorted(tv, &n);
	struct winsize ws = { .ws_row = 24, .ws_col = 100 };
	char a[32], b[32], c[32], d[32];
	FILE *f = fdopen(dup(tv->out), "w");
	size_t rows;
	unsigned secs = (unsigned)(ti->elapsed_ns / 1000000000ULL);
	int64_t rss = topview_rss(ti->pid);

	if (!f) {
		free(v);
		return;
	}
	if (tv->tty) {
		ioctl(tv->out, TIOCGWINSZ, &ws);
		fprintf(f, "\033[H\033[2J");
	}
	rows = tv->tty ? (ws.ws_row > 9 ? ws.ws_row - 7u - !!tv->said[0] : 1u) : 15;
	topview_fmt_bytes(a, sizeof(a), rss, 0);
	topview_fmt_bytes(b, sizeof(b), t->live, 0);
	fprintf(f, "heapattach --top  pid %d  attached %02u:%02u:%02u  dumps %u  sorted by %s\n",
		(int)ti->pid, secs / 3600, secs / 60 % 60, secs % 60, ti->dumps,
		sort_names[tv->sort]);
	if (tv->said[0])
		fprintf(f, "%s\n", tv->said);
	fprintf(f, "RSS %s  live since attach %s", rss >= 0 ? a : "?", b);
	if (ti->as && ti->as->in_use != UINT64_MAX) {
		topview_fmt_bytes(a, sizeof(a), (int64_t)ti->as->in_use, 0);
		topview_fmt_bytes(c, sizeof(c), ti->as->free == UINT64_MAX ? 0 : (int64_t)ti->as->free, 0);
		fprintf(f, "  %s: in use %s, free %s", ti->as->allocator, a, c);
	}
	topview_fmt_bytes(a, sizeof(a), tv->refreshes > 1 ? t->bytes - tv->prev.bytes : 0, 0);
	fprintf(f, "\nallocating %s/s  %lld calls/s\n", a,
		tv->refreshes > 1 ? (long long)(t->calls - tv->prev.calls) : 0LL);
	if (tv->tty)
		fprintf(f, "keys: q write the profile and quit  d write a profile now  "
			   "s sort (l live, g growth, a alloc rate)\n");
	fprintf(f, "\n%10s %10s %10s  %s\n", "LIVE", "GROWTH/10s", "ALLOC/s", "SITE");
	for (size_t i = 0; i < n && i < rows; i++) {
		topview_fmt_bytes(a, sizeof(a), v[i]->live, 0);
		topview_fmt_bytes(b, sizeof(b), v[i]->growth, 1);
		topview_fmt_bytes(d, sizeof(d), v[i]->rate, 0);
		fprintf(f, "%10s %10s %10s  %.*s\n", a, b, d,
			tv->tty && ws.ws_col > 36 ? ws.ws_col - 36 : NAME_LEN, v[i]->name);
	}
	if (!tv->tty)
		fputc('\n', f);
	fclose(f);
	free(v);
}

void topview_say(struct topview *tv, const char *msg)
{
	if (!tv)
		return;
	snprintf(tv->said, sizeof(tv->said), "%s", msg);
	tv->redraw = 1;
}

enum topview_action topview_tick(struct topview *tv, const struct topview_in *ti, uint64_t now_ns)
{
	enum topview_action act = TOPVIEW_NONE;
	char keys[16];
	ssize_t r;

	tv->ti = ti;
	while (tv->raw && (r = read(tv->in, keys, sizeof(keys))) > 0) {
		for (ssize_t i = 0; i < r; i++) {
			switch (keys[i]) {
			case 'q': case 'Q':
				return TOPVIEW_QUIT;
			case 'd': case 'D':
				act = TOPVIEW_DUMP;
				break;
			case 's':
				tv->sort = (tv->sort + 1) % NSORTS;
				tv->redraw = 1;
				break;
			default:
				for (int k = 0; k < NSORTS; k++)
					if (keys[i] == sort_keys[k]) {
						tv->sort = (enum sort_by)k;
						tv->redraw = 1;
					}
				break;
			}
		}
	}
	if (now_ns >= tv->next_ns) {
		gather(tv);
		tv->redraw = 1;
		tv->next_ns = now_ns + REFRESH_NS;
	}
	if (tv->redraw) {
		tv->redraw = 0;
		draw(tv);
	}
	return act;
}
