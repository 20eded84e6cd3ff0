/* A snapshot's results: the profile (a sample per block, its stack type <- owner chain <- root) and the summary people read. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/xmalloc.h"
#include "output/dump.h"
#include "model/target.h"
#include "profile/profile.h"
#include "profile/skipsites.h"
#include "snapshot/allocsites.h"
#include "snapshot/snapout.h"
#include "stacks/symbolize.h"

#define CHAIN_MAX 8             /* owners between a block and its root, at most */
#define LINE 512

/* Bytes and blocks per name id. */
struct tally {
	uint64_t *bytes, *blocks;
	size_t n;
};

static void tally_init(struct tally *t, size_t n)
{
	t->n = n;
	t->bytes = xcalloc(n + 1, sizeof(*t->bytes));
	t->blocks = xcalloc(n + 1, sizeof(*t->blocks));
}

static void tally_add(struct tally *t, uint32_t id, uint64_t bytes)
{
	if (id >= t->n)
		return;
	t->bytes[id] += bytes;
	t->blocks[id]++;
}

static void tally_free(struct tally *t)
{
	free(t->bytes);
	free(t->blocks);
}

/* Blocks in use by size class: the next power of two of their usable size. */
struct classes {
	uint64_t bytes[65], blocks[65];
};

static void classes_add(struct classes *c, uint64_t size)
{
	unsigned k = size <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(size - 1);

	c->bytes[k] += size;
	c->blocks[k]++;
}

static const uint64_t *sort_key;

static int by_key(const void *a, const void *b)
{
	uint64_t x = sort_key[*(const uint32_t *)a], y = sort_key[*(const uint32_t *)b];

	return x < y ? 1 : x > y ? -1 : 0;
}

static void mib(char *buf, size_t len, uint64_t b)
{
	if (b >= 10ULL << 20)
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
}

/* The top lines of t by bytes, each "  BYTES  BLOCKS  NAME", to line. */
static void print_top(const struct tally *t, const struct snapnames *names, unsigned top,
		      void (*line)(void *arg, const char *text), void *arg)
{
	uint32_t *ids = xcalloc(t->n + 1, sizeof(*ids));
	char text[LINE], b[32];
	size_t k = 0;

	for (uint32_t i = 0; i < t->n; i++)
		if (t->bytes[i])
			ids[k++] = i;
	sort_key = t->bytes;
	qsort(ids, k, sizeof(*ids), by_key);
	for (size_t i = 0; i < k && i < top; i++) {
		mib(b, sizeof(b), t->bytes[ids[i]]);
		snprintf(text, sizeof(text), "  %12s %10llu blocks  %s", b,
			 (unsigned long long)t->blocks[ids[i]], snapnames_name(names, ids[i]));
		line(arg, text);
	}
	free(ids);
}

/* The top classes of c by bytes, each "  BYTES  BLOCKS  [SIZE]", to line. */
static void print_classes(const struct classes *c, unsigned top,
			  void (*line)(void *arg, const char *text), void *arg)
{
	uint32_t ids[65];
	char text[LINE], b[32], name[32];
	size_t k = 0;

	for (uint32_t i = 0; i < 65; i++)
		if (c->blocks[i])
			ids[k++] = i;
	sort_key = c->bytes;
	qsort(ids, k, sizeof(*ids), by_key);
	for (size_t i = 0; i < k && i < top; i++) {
		unsigned e = ids[i];

		if (e >= 20)
			snprintf(name, sizeof(name), "[%llu MiB]", 1ULL << (e - 20));
		else if (e >= 10)
			snprintf(name, sizeof(name), "[%llu KiB]", 1ULL << (e - 10));
		else
			snprintf(name, sizeof(name), "[%llu B]", 1ULL << e);
		mib(b, sizeof(b), c->bytes[e]);
		snprintf(text, sizeof(text), "  %12s %10llu blocks  %s", b,
			 (unsigned long long)c->blocks[e], name);
		line(arg, text);
	}
}

/*
 * The root that first reached each block (the top of its parent chain),
 * into memo (g's worklist, free after the scan): a chain is walked up to
 * a block already known, then written down, so each block is walked once.
 */
static void first_roots(const struct heapgraph *g, uint32_t *memo)
{
	for (size_t i = 0; i < g->n; i++)
		memo[i] = HG_NONE;
	for (size_t i = 0; i < g->n; i++) {
		size_t at = i, p;
		uint32_t root = HG_NONE;
		int r = -1;

		while (memo[at] == HG_NONE && (r = heapgraph_parent(g, at, &p, &root)) > 0 &&
		       p != i)
			at = p;
		if (memo[at] != HG_NONE)
			root = memo[at];
		else if (r != 0)
			root = HG_NONE - 1;	/* no root: leaked (or a loop) */
		for (at = i; memo[at] == HG_NONE; at = p) {
			memo[at] = root;
			if (heapgraph_parent(g, at, &p, &(uint32_t){ 0 }) <= 0)
				break;
		}
	}
}

/* Whether pc is among pcs[0..n). */
static int among(const uint64_t *pcs, size_t n, uint64_t pc)
{
	for (size_t i = 0; i < n; i++)
		if (pcs[i] == pc)
			return 1;
	return 0;
}

/* The stack of block b, leaf first: where it was allocated when its
 * allocator sampled it (site, in as; or NULL), its type, the types of the blocks
 * between it and its root, each once (a list of entries and their values
 * reads "value < entry < root" however long; CHAIN_MAX at most), then its
 * first root, then "shared" when another root reaches it too; or
 * "leaked". How many frames. */
static size_t stack_of(const struct heapgraph *g, const uint32_t *memo,
		       const struct allocsites *as, const struct allocsite *site, size_t b,
		       uint64_t *pcs, uint32_t leaked, uint32_t shared)
{
	size_t n = 0, at = b, p;
	unsigned top;
	uint32_t root;

	if (site) {
		memcpy(pcs, as->pcs + site->at, site->depth * sizeof(*pcs));
		n = site->depth;
	}
	pcs[n++] = snapnames_pc(g->type[b]);
	if (g->owner[b] == HG_NONE) {
		pcs[n++] = snapnames_pc(leaked);
		return n;
	}
	top = (unsigned)n + CHAIN_MAX - 1;
	for (unsigned k = 0; n < top && heapgraph_parent(g, at, &p, &root) > 0; k++) {
		if (!among(pcs, n, snapnames_pc(g->type[p])))
			pcs[n++] = snapnames_pc(g->type[p]);
		at = p;
		if (k > 64)
			break;	/* a long chain: its root follows */
	}
	if (memo[b] < HG_NONE - 1)
		pcs[n++] = snapnames_pc(memo[b]);
	if (g->owner[b] < HG_SHARED && g->owner[b] != memo[b])
		pcs[n++] = snapnames_pc(g->owner[b]);	/* a thread, under its frame */
	if (g->owner[b] == HG_SHARED)
		pcs[n++] = snapnames_pc(shared);
	return n;
}

static void to_stderr(void *arg, const char *text)
{
	(void)arg;
	fprintf(stderr, "heapattach: %s\n", text);
}

/*
 * Each sampled block's site, as the live profile names one: the function
 * of its stack's first frame (a return address: looked up one byte
 * before) that is not an allocator wrapper (skipsites.h: zmalloc,
 * operator new...), as a name, into ids (by the site's index in as).
 */
static uint32_t *site_names(const struct allocsites *as, struct symbolizer *sym,
			    struct snapnames *names)
{
	uint32_t *ids = xcalloc(as->n + 1, sizeof(*ids));
	struct skipsites *ss = skipsites_new();

	for (size_t i = 0; i < as->n; i++) {
		const uint64_t *pcs = as->pcs + as->v[i].at;
		size_t n = as->v[i].depth < SKIPSITES_REACH ? as->v[i].depth : SKIPSITES_REACH, k;
		const char *fn[SKIPSITES_REACH];
		struct sym_info si;

		for (k = 0; k < n; k++)
			fn[k] = sym && !symbolizer_lookup(sym, pcs[k] - 1, &si) ? si.function : NULL;
		k = skipsites_count(ss, fn, n);
		if (fn[k])
			ids[i] = snapnames_id(names, fn[k]);
		else
			ids[i] = snapnames_idf(names, "0x%llx", (unsigned long long)pcs[k]);
	}
	skipsites_free(ss);
	return ids;
}

/* Lines kept for the profile's comments too. */
struct lines {
	char **v;
	size_t n;
};

static void keep(void *arg, const char *text)
{
	struct lines *l = arg;

	to_stderr(NULL, text);
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(text);
}

/* The profile, the names (moved: *names is left empty) and the summary's
 * lines handed over to k, for the attach's profiles. */
static void keep_for_attach(struct snapshot_keep *k, struct profile *p, struct snapnames *names,
			    struct lines *l)
{
	k->p = p;
	k->names = xmalloc(sizeof(*k->names));
	*k->names = *names;
	memset(names, 0, sizeof(*names));
	k->lines = l->v;
	k->nlines = l->n;
}

int snapout_write(const struct snapshot_config *cfg, const struct heapgraph *g,
		  struct snapnames *names, struct allocsites *as, struct target *t,
		  const struct glibcblocks_stats *bs, struct snapshot_stats *st)
{
	uint32_t leaked = snapnames_id(names, "leaked (no root reaches it)");
	uint32_t shared = snapnames_id(names, "shared (two roots or more reach it)");
	struct profile *p = profile_new(1);
	struct tally own, lk, fr, sh, at;
	struct classes *cls = xcalloc(1, sizeof(*cls));
	struct lines l = { 0 };
	struct symbolizer *sym = t ? symbolizer_new(t) : NULL;
	char text[LINE], a[32], b[32], c[32], defout[64], *path;
	uint64_t pcs[ALLOCSITE_DEPTH + CHAIN_MAX + 4];
	uint32_t *site_id = NULL;
	int rc;

	profile_set_caps(p, g->n + 16, (g->n + 16) * 4, g->n + 16, 0);
	if (as && as->n)
		site_id = site_names(as, sym, names);
	tally_init(&at, names->n);
	tally_init(&own, names->n);
	tally_init(&lk, names->n);
	tally_init(&fr, names->n);
	tally_init(&sh, names->n);
	first_roots(g, g->work);
	for (size_t i = 0; i < g->n; i++) {
		const struct allocsite *site = site_id ? allocsites_find(as, g->addr[i]) : NULL;
		size_t n = stack_of(g, g->work, as, site, i, pcs, leaked, shared);

		st->blocks++;
		st->bytes += heapgraph_size(g, i);
		classes_add(cls, heapgraph_size(g, i));
		profile_xacct_inuse(p, profile_stack_id(p, pcs, n), heapgraph_size(g, i));
		if (site) {
			st->sampled++;
			tally_add(&at, site_id[site - as->v], heapgraph_size(g, i));
		}
		if (g->owner[i] == HG_NONE) {
			st->leaked_blocks++;
			st->leaked_bytes += heapgraph_size(g, i);
			tally_add(&lk, g->type[i], heapgraph_size(g, i));
		} else if (g->owner[i] == HG_SHARED) {
			st->shared_bytes += heapgraph_size(g, i);
			if (g->work[i] < HG_NONE - 1)
				tally_add(&sh, g->work[i], heapgraph_size(g, i));
		} else {
			tally_add(&own, g->owner[i], heapgraph_size(g, i));
			if (g->work[i] < HG_NONE - 1 && g->work[i] != g->owner[i])
				tally_add(&fr, g->work[i], heapgraph_size(g, i));
		}
	}
	mib(a, sizeof(a), st->bytes);
	mib(b, sizeof(b), st->leaked_bytes);
	mib(c, sizeof(c), st->shared_bytes);
	snprintf(text, sizeof(text), "heapattach-snapshot: blocks=%llu bytes=%llu leaked_blocks=%llu "
		 "leaked_bytes=%llu shared_bytes=%llu classed=%llu roots=%llu pause_ns=%llu "
		 "words=%llu tcache_free=%llu fast_free=%llu fast_known=%d mmapped=%llu copied=%d "
		 "scan_ns=%llu sampled=%llu",
		 (unsigned long long)st->blocks, (unsigned long long)st->bytes,
		 (unsigned long long)st->leaked_blocks, (unsigned long long)st->leaked_bytes,
		 (unsigned long long)st->shared_bytes, (unsigned long long)st->classed,
		 (unsigned long long)st->roots, (unsigned long long)st->pause_ns,
		 (unsigned long long)st->words, (unsigned long long)bs->tcache_free,
		 (unsigned long long)bs->fast_free, bs->fast_known,
		 (unsigned long long)bs->mmapped, st->copied, (unsigned long long)st->scan_ns,
		 (unsigned long long)st->sampled);
	keep(&l, text);
	snprintf(text, sizeof(text), "snapshot of %d: %llu blocks in use (%s), %llu leaked (%s), "
		 "%s shared by several roots; read in %.1f ms from %s; %d stopped %.1f ms in all",
		 (int)cfg->pid, (unsigned long long)st->blocks, a,
		 (unsigned long long)st->leaked_blocks, b, c, st->scan_ns / 1e6,
		 st->copied ? "a copy it forked" : "it, stopped", (int)cfg->pid,
		 st->pause_ns / 1e6);
	keep(&l, text);
	if (!st->copied) {
		snprintf(text, sizeof(text), "  no copy: %s", st->how);
		keep(&l, text);
	}
	if (!bs->fast_known)
		keep(&l, "  glibc's fast bins could not be read: their free chunks count as in use");
	keep(&l, "kept alive only by (retained: what freeing the root alone would free):");
	print_top(&own, names, cfg->top, keep, &l);
	keep(&l, "kept alive by a thread, by the frame holding it:");
	print_top(&fr, names, cfg->top, keep, &l);
	keep(&l, "shared, by the root that reached them first (no root alone keeps them):");
	print_top(&sh, names, cfg->top, keep, &l);
	keep(&l, "leaked, by type:");
	print_top(&lk, names, cfg->top, keep, &l);
	if (st->sampled) {
		char per[32] = "";

		if (as->period)
			mib(per, sizeof(per), as->period);
		snprintf(text, sizeof(text), "allocated at, the %llu blocks %s sampled itself%s%s%s "
			 "(their stacks are in the profile, under their type):",
			 (unsigned long long)st->sampled, as->by ? as->by : "the allocator",
			 per[0] ? " (about one allocation in every " : "", per,
			 per[0] ? " allocated)" : "");
		keep(&l, text);
		print_top(&at, names, cfg->top, keep, &l);
	}
	keep(&l, "in use, by size class:");
	print_classes(cls, cfg->top, keep, &l);
	if (cfg->keep) {	/* the profile, names and lines go to the attach's dumps */
		keep_for_attach(cfg->keep, p, names, &l);
		p = NULL;
		memset(&l, 0, sizeof(l));
		rc = 0;
		goto out;
	}
	snprintf(defout, sizeof(defout), "heapattach.%d.snapshot.heap", (int)cfg->pid);
	path = (char *)(cfg->output ? cfg->output : defout);
	if (sym)
		symbolizer_set_namer(sym, snapnames_namer, names);
	{
		struct dump_info d = { .pid = cfg->pid, .maps = t ? target_maps(t) : NULL, .sym = sym,
				       .comments = (const char **)l.v, .ncomments = l.n,
				       .time_nanos = clock_ns(CLOCK_REALTIME) };

		rc = dump_write_file(path, DUMP_PPROF, p, &d);
	}
	if (!rc)
		fprintf(stderr, "heapattach: wrote %s\n", path);
out:
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	tally_free(&own);
	tally_free(&lk);
	tally_free(&fr);
	tally_free(&sh);
	tally_free(&at);
	free(site_id);
	free(cls);
	if (sym)
		symbolizer_free(sym);
	profile_free(p);
	return rc;
}

int snapshot_keep_namer(const void *names, uint64_t addr, struct sym_info *out)
{
	return snapnames_namer(names, addr, out);
}

void snapshot_keep_free(struct snapshot_keep *k)
{
	if (!k)
		return;
	profile_free(k->p);
	if (k->names)
		snapnames_free(k->names);
	free(k->names);
	for (size_t i = 0; i < k->nlines; i++)
		free(k->lines[i]);
	free(k->lines);
	memset(k, 0, sizeof(*k));
}
