/* The report subcommand: its options, reading the dumps into a series, and writing each output asked for. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/xmalloc.h"
#include "output/folded.h"
#include "profile/skipsites.h"
#include "report/report.h"
#include "report/report_flame.h"
#include "report/report_html.h"
#include "report/report_plot.h"
#include "report/report_pprof.h"
#include "report/report_series.h"
#include "report/report_text.h"

#define REPORT_MAX_TOP   1000
#define REPORT_MAX_SITES RPLOT_NCOLORS

enum out_format { OUT_TEXT, OUT_JSON, OUT_FOLDED };

struct report_opts {
	enum out_format format;
	size_t top;
	const char *base, *plot, *flame, *html;
	regex_t re[REPORT_MAX_SITES];
	size_t nre;
	struct skipsites *skip;
	char **files;
	size_t nfiles;
};

enum { OPT_JSON = 256, OPT_FORMAT, OPT_TOP, OPT_SITE, OPT_BASE, OPT_PLOT, OPT_FLAME, OPT_HTML,
       OPT_SKIP };

static const struct option report_long[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "site", required_argument, NULL, OPT_SITE },
	{ "base", required_argument, NULL, OPT_BASE },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "flame", required_argument, NULL, OPT_FLAME },
	{ "html", required_argument, NULL, OPT_HTML },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void report_usage(FILE *f)
{
	fprintf(f,
"usage: heapattach report [options] FILE...\n"
"       heapattach report --base FILE [options] FILE\n"
"\n"
"Read heapattach's pprof dumps (a numbered series, or any set of heap\n"
"profiles) and rank the sites whose live bytes grow steadily: leak suspects.\n"
"Dumps of several processes (-p PID,PID or --tree): one report each, and\n"
"--plot/--flame/--html files named FILE.PID.EXT.\n"
"\n"
"      --format text|json|folded  on stdout: the tables (default text), the\n"
"                           same as JSON, or folded stacks of live bytes at\n"
"                           the last dump (growth with --base)\n"
"      --json               the same as --format json\n"
"      --top N              rows per table and sites plotted (default 8)\n"
"      --site REGEX         plot the sites with a frame matching REGEX\n"
"                           instead of the top ones (repeatable, up to %d)\n"
"      --plot FILE          write the time plot (SVG)\n"
"      --flame FILE         write a flame graph (SVG) of the live bytes at\n"
"                           the last dump (growth with --base)\n"
"      --html FILE          write one offline HTML page with it all\n"
"      --base FILE          what grew from FILE to the one FILE given\n"
"      --skip REGEX         a site is named by its first frame that is not an\n"
"                           allocator wrapper (known ones: zmalloc, ngx_alloc,\n"
"                           palloc, PyMem_Malloc, xmalloc, ...); also skip the\n"
"                           functions matching REGEX (grep -E; repeatable)\n"
"  -h, --help               this help\n"
"\n"
"Exit status: 0 done; 1 a file could not be read or written; 2 bad command line.\n",
		REPORT_MAX_SITES);
}

static int bad(const char *what, const char *val)
{
	fprintf(stderr, "heapattach report: invalid %s '%s' (try --help)\n", what, val);
	return 2;
}

/* Parse argv (argv[0] is "report"). 0 to run, 1 after --help, 2 after one error line. */
static int parse(int argc, char **argv, struct report_opts *o)
{
	int c;

	o->format = OUT_TEXT;
	o->top = 8;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", report_long, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case OPT_JSON:
			o->format = OUT_JSON;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text"))
				o->format = OUT_TEXT;
			else if (!strcmp(optarg, "json"))
				o->format = OUT_JSON;
			else if (!strcmp(optarg, "folded"))
				o->format = OUT_FOLDED;
			else
				return bad("format (text, json or folded)", optarg);
			break;
		case OPT_TOP:
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (*optarg < '1' || *optarg > '9' || *end || errno || v > REPORT_MAX_TOP)
				return bad("--top (1 to 1000)", optarg);
			o->top = v;
			break;
		case OPT_SITE:
			if (o->nre == REPORT_MAX_SITES)
				return bad("--site (too many)", optarg);
			if (regcomp(&o->re[o->nre], optarg, REG_EXTENDED | REG_NOSUB))
				return bad("regular expression", optarg);
			o->nre++;
			break;
		case OPT_SKIP:
			if (skipsites_add(o->skip, optarg))
				return bad("regular expression", optarg);
			break;
		case OPT_BASE:
			o->base = optarg;
			break;
		case OPT_PLOT:
			o->plot = optarg;
			break;
		case OPT_FLAME:
			o->flame = optarg;
			break;
		case OPT_HTML:
			o->html = optarg;
			break;
		case 'h':
			report_usage(stdout);
			return 1;
		case ':':
			fprintf(stderr, "heapattach report: option '%s' needs a value (try --help)\n",
				argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "heapattach report: unknown option '%s' (try --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	o->files = argv + optind;
	o->nfiles = (size_t)(argc - optind);
	if (!o->nfiles) {
		fprintf(stderr, "heapattach report: no profile given (try --help)\n");
		return 2;
	}
	if (o->base && o->nfiles != 1) {
		fprintf(stderr, "heapattach report: --base compares one FILE with the base (try --help)\n");
		return 2;
	}
	return 0;
}

/* Read one profile into dump i of s; 0, or 1 after one error line. */
static int add_file(struct rseries *s, size_t i, const char *path)
{
	struct rprof p;
	int rc = rprof_read_file(path, &p);

	if (rc) {
		fprintf(stderr, "heapattach report: cannot read %s: %s\n", path,
			rc == -EBADMSG ? "not a pprof profile, or a corrupt one" :
			rc == -E2BIG ? "too large" : rc == -EINVAL ? "not a regular file" :
			strerror(-rc));
		return 1;
	}
	rc = rseries_add(s, i, path, &p);
	rprof_free(&p);
	if (rc) {
		fprintf(stderr, "heapattach report: %s has no live bytes (no inuse_space sample type)\n",
			path);
		return 1;
	}
	return 0;
}

/* Sites to plot: those with a frame matching a --site expression, or the
 * first top that held any live bytes. */
static size_t pick_sites(const struct rseries *s, const struct report_opts *o, size_t *idx)
{
	size_t n = 0, max = o->top < REPORT_MAX_SITES ? o->top : REPORT_MAX_SITES;

	for (size_t i = 0; i < s->nsites && n < max; i++) {
		int hit = !o->nre && s->sites[i].trend.max > 0;

		for (size_t k = 0; k < s->sites[i].nframes && !hit; k++)
			for (size_t r = 0; r < o->nre && !hit; r++)
				hit = !regexec(&o->re[r], s->sites[i].frames[k], 0, NULL, 0);
		if (hit)
			idx[n++] = i;
	}
	return n;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* The stacks of the flame graph and folded output: live bytes at the last
 * dump, or growth from the base. *title gets what they show. */
static struct rflame_stack *flame_stacks(const struct rseries *s, int diff, size_t *n,
					 char *title, size_t tlen)
{
	struct rflame_stack *st = xcalloc(s->nsites + 1, sizeof(*st));
	size_t last = s->ndumps - 1;

	for (size_t i = 0; i < s->nsites; i++) {
		const double *v = s->sites[i].fig[RS_INUSE_B];

		st[i].frames = s->sites[i].frames;
		st[i].nframes = s->sites[i].nframes;
		st[i].value = diff ? v[1] - v[0] : v[last];
	}
	*n = s->nsites;
	if (diff)
		snprintf(title, tlen, "Growth of live bytes from %s to %s", base_name(s->dumps[0].path),
			 base_name(s->dumps[1].path));
	else
		snprintf(title, tlen, "Live bytes at %s", base_name(s->dumps[last].path));
	return st;
}

/* Write one output file through fn; 0, or 1 after one error line. */
static int write_out(const char *path, int (*fn)(FILE *f, void *arg), void *arg)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f) {
		fprintf(stderr, "heapattach report: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	rc = fn(f, arg);
	if (fclose(f) || rc) {
		fprintf(stderr, "heapattach report: cannot write %s: %s\n", path,
			strerror(rc ? -rc : errno));
		return 1;
	}
	return 0;
}

struct outs {
	const struct rseries *s;
	const size_t *idx;
	size_t n, nst, top;
	const struct rflame_stack *st;
	const char *title;
};

static int out_plot(FILE *f, void *arg)
{
	struct outs *o = arg;

	return rplot_svg(f, o->s, o->idx, o->n, "", 0);
}

static int out_flame(FILE *f, void *arg)
{
	struct outs *o = arg;

	return rflame_svg(f, o->st, o->nst, o->title, "", 0);
}

static int out_html(FILE *f, void *arg)
{
	struct outs *o = arg;

	return rhtml_write(f, o->s, o->idx, o->n, o->st, o->nst, o->title, o->top);
}

/* path with ".TAG" before its extension (plot.svg: plot.TAG.svg), or path
 * itself when tag is NULL. xmalloc'd. */
static char *tagged(const char *path, const char *tag)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	size_t stem = dot && dot > path && (!slash || dot > slash + 1) ? (size_t)(dot - path) :
		      strlen(path);
	char *t;

	if (!tag)
		return xstrdup(path);
	t = xmalloc(strlen(path) + strlen(tag) + 2);
	sprintf(t, "%.*s.%s%s", (int)stem, path, tag, path + stem);
	return t;
}

/* Write one output asked for (path not NULL), its name tagged. */
static int write_tagged(const char *path, const char *tag, int (*fn)(FILE *f, void *arg),
			void *arg)
{
	char *t;
	int rc;

	if (!path)
		return 0;
	t = tagged(path, tag);
	rc = write_out(t, fn, arg);
	free(t);
	return rc;
}

/*
 * One report: over files[0..n), or from o->base to files[0]. The tables
 * (or JSON, or folded stacks, each line's first frame "pid TAG" when tag
 * is given) on stdout, and the files asked for, each name tagged. 0, or
 * 1 after an error line.
 */
static int report_files(const struct report_opts *o, char **files, size_t n, const char *tag)
{
	struct rseries *s;
	struct rflame_stack *st;
	size_t idx[REPORT_MAX_SITES];
	struct outs out;
	char title[512];
	int diff = o->base != NULL, rc = 0;

	s = rseries_new(diff ? 2 : n);
	rseries_set_skip(s, o->skip);
	if (diff)
		rc = add_file(s, 0, o->base) || add_file(s, 1, files[0]);
	for (size_t i = 0; !diff && i < n && !rc; i++)
		rc = add_file(s, i, files[i]);
	if (rc) {
		rseries_free(s);
		return 1;
	}
	rseries_finish(s, diff);
	out = (struct outs){ .s = s, .idx = idx, .n = pick_sites(s, o, idx), .top = o->top,
			     .title = title };
	st = flame_stacks(s, diff, &out.nst, title, sizeof(title));
	out.st = st;
	if (o->format == OUT_FOLDED) {
		for (size_t i = 0; i < out.nst; i++) {
			if (st[i].value < 0.5)
				continue;
			if (tag)
				printf("pid %s;", tag);
			folded_line(stdout, st[i].frames, st[i].nframes,
				    (unsigned long long)(st[i].value + 0.5));
		}
	} else if (o->format == OUT_JSON) {
		(diff ? rtext_diff_json : rtext_suspects_json)(stdout, s, o->top);
	} else {
		(diff ? rtext_diff : rtext_suspects)(stdout, s, o->top);
	}
	rc |= write_tagged(o->plot, tag, out_plot, &out);
	rc |= write_tagged(o->flame, tag, out_flame, &out);
	rc |= write_tagged(o->html, tag, out_html, &out);
	free(st);
	rseries_free(s);
	return rc;
}

/* The process a dump is of: its "heapattach pid=N" comment; 0 when it has
 * none (or cannot be read: said when it is read for the report). */
static long file_pid(const char *path)
{
	struct rprof p;
	long pid = 0;

	if (rprof_read_file(path, &p))
		return 0;
	for (size_t i = 0; i < p.ncomments && !pid; i++)
		if (!strncmp(p.comments[i], "heapattach pid=", 15))
			pid = atol(p.comments[i] + 15);
	rprof_free(&p);
	return pid;
}

/*
 * Dumps of several processes (heapattach -p PID,PID or --tree): one
 * report a process, in the order each first appears, its dumps in the
 * order given. Text: a heading before each; JSON: an array of {"pid",
 * "report"}; folded: each stack under a "pid N" frame; output files named
 * FILE.PID.EXT. Returns -1 when the dumps are of one process only.
 */
static int report_each(const struct report_opts *o)
{
	long *pid = xcalloc(o->nfiles, sizeof(*pid));
	char **group = xcalloc(o->nfiles, sizeof(*group));
	size_t nprocs = 0;
	int rc = 0;

	for (size_t i = 0; i < o->nfiles; i++)
		pid[i] = file_pid(o->files[i]);
	for (size_t i = 1; i < o->nfiles && nprocs < 2; i++)
		nprocs = pid[i] != pid[0] ? 2 : 1;
	if (nprocs < 2) {
		rc = -1;
		goto out;
	}
	if (o->format == OUT_JSON)
		printf("[");
	for (size_t i = 0, first = 1; i < o->nfiles; i++) {
		size_t n = 0;
		char tag[24];

		for (size_t k = 0; k < i && n == 0; k++)
			n = pid[k] == pid[i];	/* done with its process */
		if (n)
			continue;
		for (size_t k = i; k < o->nfiles; k++)
			if (pid[k] == pid[i])
				group[n++] = o->files[k];
		snprintf(tag, sizeof(tag), "%ld", pid[i]);
		if (o->format == OUT_JSON)
			printf("%s{\"pid\":%ld,\"report\":", first ? "" : ",", pid[i]);
		else if (o->format == OUT_TEXT)
			printf("%s== process %s: %zu dump%s ==\n", first ? "" : "\n",
			       pid[i] ? tag : "(unknown)", n, n == 1 ? "" : "s");
		rc |= report_files(o, group, n, tag);
		if (o->format == OUT_JSON)
			printf("}");
		first = 0;
	}
	if (o->format == OUT_JSON)
		printf("]\n");
out:
	free(group);
	free(pid);
	return rc;
}

int report_main(int argc, char **argv)
{
	struct report_opts o = { 0 };
	int rc;

	o.skip = skipsites_new();
	if (!o.skip) {
		fprintf(stderr, "heapattach report: out of memory\n");
		return 1;
	}
	rc = parse(argc, argv, &o);
	if (rc) {
		rc = rc == 1 ? 0 : rc;	/* --help */
		goto out;
	}
	rc = o.base ? -1 : report_each(&o);
	if (rc < 0)
		rc = report_files(&o, o.files, o.nfiles, NULL);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "heapattach report: cannot write the standard output\n");
		rc = 1;
	}
out:
	for (size_t i = 0; i < o.nre; i++)
		regfree(&o.re[i]);
	skipsites_free(o.skip);
	return rc;
}
