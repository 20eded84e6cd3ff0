/* A series of heap profiles: sites and functions over time, their trends, and the leak ranking. */
/* SPDX-License-Identifier: MIT */

/*
 * Names are interned (one copy each, compared by pointer), so a site's key
 * is its array of name pointers. Two open-addressing tables map names and
 * stacks to their entries; the site and function arrays grow as new ones
 * appear in later dumps, each with a figure array of ndumps zeros.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/hash.h"
#include "base/xmalloc.h"
#include "profile/skipsites.h"
#include "report/report_series.h"

struct table {
	size_t *slot;           /* index + 1; 0 empty */
	size_t cap;
};

struct priv {
	struct table names, sites, funcs;
	char **name;            /* interned names */
	signed char *wrapper;   /* per name: -1 untested, else skipsites_match */
	size_t nnames;
	const struct skipsites *skip;
	size_t site_cap, func_cap;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return mix64(h);
}

static uint64_t hash_frames(const char *const *f, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = mix64(h ^ (uint64_t)(uintptr_t)f[i]);
	return h;
}

/* ---- name interning ---- */

static const char *intern(struct priv *p, const char *s)
{
	size_t len = strlen(s), i;
	uint64_t h = hash_bytes(s, len);

	if (p->nnames * 2 >= p->names.cap) {
		size_t cap = p->names.cap ? p->names.cap * 2 : 1024;
		size_t *slot = xcalloc(cap, sizeof(size_t));

		for (size_t k = 0; k < p->nnames; k++) {
			const char *n = p->name[k];

			for (i = hash_bytes(n, strlen(n)) & (cap - 1); slot[i]; i = (i + 1) & (cap - 1))
				;
			slot[i] = k + 1;
		}
		free(p->names.slot);
		p->names.slot = slot;
		p->names.cap = cap;
		p->name = xrealloc(p->name, cap / 2 * sizeof(char *));
		p->wrapper = xrealloc(p->wrapper, cap / 2);
	}
	for (i = h & (p->names.cap - 1); p->names.slot[i]; i = (i + 1) & (p->names.cap - 1))
		if (!strcmp(p->name[p->names.slot[i] - 1], s))
			return p->name[p->names.slot[i] - 1];
	p->name[p->nnames] = xstrdup(s);
	p->wrapper[p->nnames] = -1;
	p->names.slot[i] = ++p->nnames;
	return p->name[p->nnames - 1];
}

/* The index of interned name s. */
static size_t index_of(const struct priv *p, const char *s)
{
	size_t i = hash_bytes(s, strlen(s)) & (p->names.cap - 1);

	while (p->name[p->names.slot[i] - 1] != s)
		i = (i + 1) & (p->names.cap - 1);
	return p->names.slot[i] - 1;
}

/* SKIPSITES_* of interned name s (its list and --skip tested once per
 * name): WRAPPER alone for one found by its code (a heapattach-wrapper:
 * comment), which has no reach past it (the interpreter's calls a Python
 * target's profile names so sit rootward of its Python frames too). */
static unsigned wrapper_of(struct priv *p, const char *s)
{
	size_t i = index_of(p, s);

	if (p->wrapper[i] < 0)
		p->wrapper[i] = (signed char)(skipsites_match(p->skip, s) ?
					      SKIPSITES_WRAPPER | SKIPSITES_NAMED : 0);
	return (unsigned)p->wrapper[i];
}

/* A "heapattach-wrapper: NAME" comment (session.c): NAME was found an
 * allocator wrapper by its code, as --top finds them; from this dump on. */
static void read_wrapper(struct priv *p, const char *c)
{
	static const char tag[] = "heapattach-wrapper: ";
	const char *name;

	if (strncmp(c, tag, sizeof(tag) - 1) || !c[sizeof(tag) - 1])
		return;
	name = intern(p, c + sizeof(tag) - 1);	/* may move p->wrapper */
	p->wrapper[index_of(p, name)] = (signed char)(wrapper_of(p, name) | SKIPSITES_WRAPPER);
}

struct frames {
	struct priv *p;
	const char **f;
};

static unsigned frame_kind(void *arg, size_t i, int reached)
{
	struct frames *fr = arg;

	(void)reached;
	return wrapper_of(fr->p, fr->f[i]);
}

/* Frames of f[0..n) to pass over to name its site (skipsites_pass): 0
 * when all are. */
static size_t wrappers_of(struct priv *p, const char **f, size_t n)
{
	struct frames fr = { p, f };
	size_t k = p->skip ? skipsites_pass(n, frame_kind, &fr) : 0;

	return k < n ? k : 0;
}

/* ---- site tables ---- */

static void site_rehash(struct table *t, const struct rseries_site *sites, size_t n, size_t cap)
{
	size_t *slot = xcalloc(cap, sizeof(size_t));

	for (size_t k = 0; k < n; k++) {
		size_t i = hash_frames(sites[k].frames, sites[k].nframes) & (cap - 1);

		while (slot[i])
			i = (i + 1) & (cap - 1);
		slot[i] = k + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
}

/* The entry of stack f[0..n) in (*arr, *count), created with zero figures when new. */
static struct rseries_site *site_get(struct table *t, struct rseries_site **arr, size_t *count,
				     size_t *cap, const char **f, size_t n, size_t ndumps)
{
	struct rseries_site *site;
	size_t i;

	if (*count * 2 >= t->cap)
		site_rehash(t, *arr, *count, t->cap ? t->cap * 2 : 1024);
	for (i = hash_frames(f, n) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
		site = &(*arr)[t->slot[i] - 1];
		if (site->nframes == n && (!n || !memcmp(site->frames, f, n * sizeof(*f))))
			return site;
	}
	if (*count == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*arr = xrealloc(*arr, *cap * sizeof(**arr));
	}
	site = &(*arr)[*count];
	memset(site, 0, sizeof(*site));
	site->frames = xmalloc((n ? n : 1) * sizeof(*f));
	if (n)
		memcpy(site->frames, f, n * sizeof(*f));
	site->nframes = n;
	for (int k = 0; k < RS_NFIG; k++)
		site->fig[k] = xcalloc(ndumps, sizeof(double));
	t->slot[i] = ++*count;
	return site;
}

const char *const rseries_rss_keys[RS_NPARTS] = {
	"heap", "anon_other", "stacks", "code", "file_data", "files", "shmem", "heapattach",
	"unexplained",
};

/* The "heapattach-rss: rss=B vsize=B ... key=B ..." record, if c is one:
 * space-separated key=integer words (others, and unknown keys, skipped). */
static void read_rss(struct rseries_dump *d, const char *c)
{
	static const char tag[] = "heapattach-rss: rss=";
	const char *w = c + sizeof(tag) - 1 - 4;	/* at "rss=" */

	if (strncmp(c, tag, sizeof(tag) - 1))
		return;
	while (*w) {
		const char *eq = strchr(w, '='), *sp = strchr(w, ' ');
		char *end;
		long long v;

		if (!sp)
			sp = w + strlen(w);
		if (eq && eq < sp) {
			errno = 0;
			v = strtoll(eq + 1, &end, 10);
			if (!errno && end == sp) {
				size_t klen = (size_t)(eq - w);

				if (klen == 3 && !strncmp(w, "rss", 3) && v >= 0) {
					d->rss = (double)v;
					d->has_rss = 1;
				}
				for (int k = 0; k < RS_NPARTS; k++)
					if (strlen(rseries_rss_keys[k]) == klen &&
					    !strncmp(w, rseries_rss_keys[k], klen))
						d->part[k] = (double)v;
			}
		}
		w = *sp ? sp + 1 : sp;
	}
}

struct rseries *rseries_new(size_t ndumps)
{
	struct rseries *s = xcalloc(1, sizeof(*s));

	s->ndumps = ndumps ? ndumps : 1;
	s->dumps = xcalloc(s->ndumps, sizeof(*s->dumps));
	s->priv = xcalloc(1, sizeof(struct priv));
	return s;
}

void rseries_set_skip(struct rseries *s, const struct skipsites *ss)
{
	((struct priv *)s->priv)->skip = ss;
}

int rseries_add(struct rseries *s, size_t d, const char *path, const struct rprof *p)
{
	struct priv *pv = s->priv;
	struct rseries_dump *dump;
	int col[RS_NFIG] = {
		rprof_type_index(p, "inuse_space"), rprof_type_index(p, "inuse_objects"),
		rprof_type_index(p, "alloc_space"), rprof_type_index(p, "alloc_objects"),
	};
	const char **frames = NULL;
	size_t fcap = 0;

	if (d >= s->ndumps)
		return -EINVAL;
	if (col[RS_INUSE_B] < 0 && p->ntypes == 1)
		col[RS_INUSE_B] = 0;
	if (col[RS_INUSE_B] < 0)
		return -EINVAL;
	dump = &s->dumps[d];
	dump->path = xstrdup(path);
	dump->t = (double)p->time_nanos / 1e9 + (double)p->duration_nanos / 1e9;
	dump->period = p->period;
	dump->ncomments = p->ncomments;
	dump->comments = xcalloc(p->ncomments + 1, sizeof(char *));
	for (size_t i = 0; i < p->ncomments; i++) {
		dump->comments[i] = xstrdup(p->comments[i]);
		read_rss(dump, p->comments[i]);
		read_wrapper(pv, p->comments[i]);
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct rprof_sample *sm = &p->samples[i];
		struct rseries_site *site, *fn;
		const char *leaf;

		if (sm->nframes > fcap) {
			fcap = sm->nframes * 2;
			frames = xrealloc(frames, fcap * sizeof(*frames));
		}
		for (size_t k = 0; k < sm->nframes; k++)
			frames[k] = intern(pv, sm->frames[k]);
		site = site_get(&pv->sites, &s->sites, &s->nsites, &pv->site_cap, frames,
				sm->nframes, s->ndumps);
		site->skip = wrappers_of(pv, frames, sm->nframes);
		leaf = sm->nframes ? frames[site->skip] : intern(pv, "[no stack]");
		fn = site_get(&pv->funcs, &s->funcs, &s->nfuncs, &pv->func_cap, &leaf, 1, s->ndumps);
		for (int k = 0; k < RS_NFIG; k++) {
			double v = col[k] < 0 ? 0 : (double)sm->values[col[k]];

			site->fig[k][d] += v;
			fn->fig[k][d] += v;
			dump->total[k] += v;
		}
	}
	free(frames);
	return 0;
}

/* ---- trends ---- */

/* Least-squares slope of y over x[lo..hi); *r2 gets the fit (1 for a flat line). */
static double fit(const double *x, const double *y, size_t lo, size_t hi, double *r2)
{
	double n = (double)(hi - lo), mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0;

	for (size_t i = lo; i < hi; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= n;
	my /= n;
	for (size_t i = lo; i < hi; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
		syy += (y[i] - my) * (y[i] - my);
	}
	if (r2)
		*r2 = syy > 0 && sxx > 0 ? sxy * sxy / (sxx * syy) : 1;
	return sxx > 0 ? sxy / sxx : 0;
}

/*
 * A leak suspect's rule (the man page's "heapattach report" says it to
 * users): at least RSERIES_MIN_DUMPS dumps; a positive least-squares slope
 * of live bytes over time; grew in at least SUSPECT_GREW of the intervals;
 * a line that fits (R^2 at least SUSPECT_R2); over the second half of the
 * dumps, a slope of at least SUSPECT_RECENT of the whole one (it has not
 * stopped); and the last dump within SUSPECT_PEAK of the highest (it was
 * not freed again). A spike, a cache that filled and stays flat, a
 * sawtooth: none is a suspect, and rseries_why says which test failed.
 */
#define SUSPECT_GREW   0.6
#define SUSPECT_R2     0.8
#define SUSPECT_RECENT 0.5
#define SUSPECT_PEAK   0.9

/* The trend of one site's (or function's) live bytes y over dump times x[0..n). */
static void trend(struct rseries_trend *t, const double *x, const double *y, size_t n)
{
	size_t up = 0;

	memset(t, 0, sizeof(*t));
	t->first = y[0];
	t->last = y[n - 1];
	for (size_t i = 0; i < n; i++)
		if (y[i] > t->max)
			t->max = y[i];
	for (size_t i = 1; i < n; i++)
		up += y[i] > y[i - 1];
	t->grew = n > 1 ? (double)up / (double)(n - 1) : 0;
	t->slope = fit(x, y, 0, n, &t->r2);
	t->recent = n > 1 ? fit(x, y, n / 2, n, NULL) : 0;
	t->suspect = n >= RSERIES_MIN_DUMPS && t->slope > 0 && t->grew >= SUSPECT_GREW &&
		     t->r2 >= SUSPECT_R2 && t->recent >= t->slope * SUSPECT_RECENT &&
		     t->last >= SUSPECT_PEAK * t->max;
}

const char *rseries_why(const struct rseries_trend *t, size_t ndumps)
{
	if (t->suspect)
		return NULL;
	if (ndumps < RSERIES_MIN_DUMPS)
		return "too few dumps";
	if (!(t->slope > 0))
		return "not growing";
	if (t->last < SUSPECT_PEAK * t->max)
		return "fell from its peak";
	if (t->recent < t->slope * SUSPECT_RECENT)
		return "stopped growing";
	if (t->grew < SUSPECT_GREW)
		return "grew in too few intervals";
	return "irregular (poor line fit)";
}

static int cmp_rank(const void *a, const void *b)
{
	const struct rseries_site *x = a, *y = b;
	double kx, ky;

	if (x->trend.suspect != y->trend.suspect)
		return y->trend.suspect - x->trend.suspect;
	kx = x->trend.suspect ? x->trend.slope : x->trend.last;
	ky = y->trend.suspect ? y->trend.slope : y->trend.last;
	return kx > ky ? -1 : kx < ky;
}

static const struct rseries_dump *g_dumps;

static int cmp_dump_idx(const void *a, const void *b)
{
	const struct rseries_dump *x = &g_dumps[*(const size_t *)a], *y = &g_dumps[*(const size_t *)b];

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Reorder every figure array by perm (new i = old perm[i]). */
static void permute(double *v, const size_t *perm, size_t n, double *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = v[perm[i]];
	memcpy(v, tmp, n * sizeof(*v));
}

static void rank(struct rseries_site *arr, size_t n, const double *x, size_t nd)
{
	for (size_t i = 0; i < n; i++)
		trend(&arr[i].trend, x, arr[i].fig[RS_INUSE_B], nd);
	if (n)
		qsort(arr, n, sizeof(*arr), cmp_rank);
}

void rseries_finish(struct rseries *s, int keep_order)
{
	size_t nd = s->ndumps;
	size_t *perm = xcalloc(nd, sizeof(size_t));
	double *tmp = xcalloc(nd, sizeof(double)), *x = xcalloc(nd, sizeof(double));
	struct rseries_dump *dumps = xcalloc(nd, sizeof(*dumps));
	struct priv *pv = s->priv;

	for (size_t i = 0; i < nd; i++)
		perm[i] = i;
	if (!keep_order) {
		g_dumps = s->dumps;
		qsort(perm, nd, sizeof(size_t), cmp_dump_idx);
		g_dumps = NULL;
	}
	for (size_t i = 0; i < nd; i++)
		dumps[i] = s->dumps[perm[i]];
	memcpy(s->dumps, dumps, nd * sizeof(*dumps));
	for (size_t i = 0; i < s->nsites; i++)
		for (int k = 0; k < RS_NFIG; k++)
			permute(s->sites[i].fig[k], perm, nd, tmp);
	for (size_t i = 0; i < s->nfuncs; i++)
		for (int k = 0; k < RS_NFIG; k++)
			permute(s->funcs[i].fig[k], perm, nd, tmp);
	for (size_t i = 0; i < nd; i++)
		x[i] = s->dumps[i].t - s->dumps[0].t;
	rank(s->sites, s->nsites, x, nd);
	rank(s->funcs, s->nfuncs, x, nd);
	/* the tables' indices are stale now; nothing is added after finish */
	free(pv->sites.slot);
	free(pv->funcs.slot);
	pv->sites = pv->funcs = (struct table){ 0 };
	free(dumps);
	free(perm);
	free(tmp);
	free(x);
}

static size_t g_a, g_b;
static const struct rseries_site *g_arr;

static int cmp_growth(const void *pa, const void *pb)
{
	const struct rseries_site *x = &g_arr[*(const size_t *)pa], *y = &g_arr[*(const size_t *)pb];
	double dx = x->fig[RS_INUSE_B][g_b] - x->fig[RS_INUSE_B][g_a];
	double dy = y->fig[RS_INUSE_B][g_b] - y->fig[RS_INUSE_B][g_a];

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

void rseries_diff_order(const struct rseries *s, int funcs, size_t a, size_t b, size_t *idx)
{
	size_t n = funcs ? s->nfuncs : s->nsites;

	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	g_arr = funcs ? s->funcs : s->sites;
	g_a = a;
	g_b = b;
	if (n)
		qsort(idx, n, sizeof(size_t), cmp_growth);
	g_arr = NULL;
}

/* A frame the profile gave no name: report_pprof.c writes its address. */
static int unnamed(const char *frame)
{
	return frame[0] == '0' && frame[1] == 'x';
}

char *rseries_site_name(const struct rseries_site *site, size_t depth)
{
	size_t len = 64, i, shown = 0;
	char *out, *p;

	if (!site->nframes)
		return xstrdup("[no stack]");
	for (i = 0; i < site->nframes; i++)
		len += strlen(site->frames[i]) + 24;
	out = p = xmalloc(len + 6);
	/* leaf first, depth names; a run of unnamed frames (a stripped
	 * library's) is one, so that the named callers behind it show */
	for (i = site->skip; i < site->nframes && shown < depth; shown++) {
		size_t run = 0;

		while (i + run < site->nframes && unnamed(site->frames[i + run]))
			run++;
		if (run > 1)
			p += sprintf(p, "%s[%zu unnamed]", shown ? " < " : "", run);
		else
			p += sprintf(p, "%s%s", shown ? " < " : "", site->frames[i]);
		i += run > 1 ? run : 1;
	}
	if (i < site->nframes)
		p = stpcpy(p, " < ...");
	for (i = 0; i < site->skip && i < 3; i++)
		p += sprintf(p, "%s%s", i ? " < " : " [via ", site->frames[i]);
	if (site->skip > 3)
		p += sprintf(p, " < %zu more", site->skip - 3);
	if (site->skip)
		strcpy(p, "]");
	return out;
}

static void free_sites(struct rseries_site *arr, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(arr[i].frames);
		for (int k = 0; k < RS_NFIG; k++)
			free(arr[i].fig[k]);
	}
	free(arr);
}

void rseries_free(struct rseries *s)
{
	struct priv *pv;

	if (!s)
		return;
	pv = s->priv;
	free_sites(s->sites, s->nsites);
	free_sites(s->funcs, s->nfuncs);
	for (size_t i = 0; i < s->ndumps; i++) {
		free(s->dumps[i].path);
		for (size_t k = 0; k < s->dumps[i].ncomments; k++)
			free(s->dumps[i].comments[k]);
		free(s->dumps[i].comments);
	}
	free(s->dumps);
	for (size_t i = 0; i < pv->nnames; i++)
		free(pv->name[i]);
	free(pv->name);
	free(pv->wrapper);
	free(pv->names.slot);
	free(pv->sites.slot);
	free(pv->funcs.slot);
	free(pv);
	free(s);
}
