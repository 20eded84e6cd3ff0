/* Heap vs RSS: a table that adds up to the process's resident memory, from smaps, the allocator and the profile. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "breakdown.h"
#include "profile.h"

/*
 * The top lines partition the RSS that smaps reports: every resident byte
 * is in exactly one kind of mapping (rss.c). The allocator's memory is
 * its arenas (glibc: [heap] and the 64 MiB-aligned arenas, plus the
 * blocks it mmapped for themselves, hblkhd) or, for allocators that map
 * anonymous memory of no recognizable shape (jemalloc, tcmalloc), the
 * resident bytes they report; what other anonymous memory remains is not
 * the heap's. Inside the heap, the allocator's own figures say what is in
 * use and what is free, the profile what of the in-use part was allocated
 * since attach; the rest is derived, and said to be.
 */

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int known(uint64_t v)
{
	return v != UINT64_MAX;
}

static void add(struct breakdown *b, const char *key, const char *label, int depth,
		int64_t bytes, const char *how)
{
	if (b->n < BREAKDOWN_MAX_LINES)
		b->v[b->n++] = (struct breakdown_line){ key, label, depth, bytes, how };
}

static int sum_live(const struct profile_bucket *bk, void *arg)
{
	uint64_t *sum = arg;
	int64_t count, bytes;

	if (!bk->inuse_count)
		return 0;
	profile_scale(bk->inuse_count, bk->inuse_bytes, bk->rate, &count, &bytes);
	*sum += bytes > 0 ? (uint64_t)bytes : 0;
	return 0;
}

uint64_t breakdown_profile_live(const struct profile *p)
{
	uint64_t sum = 0;

	profile_foreach(p, sum_live, &sum);
	return sum;
}

/* The heap's resident bytes, and how they were found. */
static uint64_t heap_rss(const struct rss_smaps *sm, const struct allocstats *as,
			 const char **how)
{
	uint64_t arenas = sm->kind[RSS_BRK].rss + sm->kind[RSS_ARENA].rss;
	uint64_t anon = sm->kind[RSS_ANON].rss;

	if (as && known(as->mmapped)) {
		*how = "measured: smaps ([heap] and arenas) + allocator's mmapped blocks";
		return arenas + (as->mmapped < anon ? as->mmapped : anon);
	}
	if (as && known(as->resident)) {
		*how = "measured: the allocator's resident bytes";
		return as->resident < arenas + anon ? as->resident : arenas + anon;
	}
	*how = "measured: smaps ([heap] and arenas); no allocator figures";
	return arenas;
}

/* The lines inside the heap: in use (seen since attach, and before), free,
 * metadata, and the rest. */
static void heap_detail(struct breakdown *b, const struct breakdown_in *in, uint64_t heap)
{
	const struct allocstats *as = in->as;
	uint64_t live = in->prof ? breakdown_profile_live(in->prof) : 0;
	int exact = in->prof && profile_rate(in->prof) <= 1;
	int64_t rest = clamp64(heap);

	add(b, "live_seen", "in use, allocated since attach", 1, clamp64(live),
	    exact ? "measured: every allocation since attach (profile)" :
		    "estimated: sampled allocations since attach (profile)");
	if (!as)
		return;
	if (known(as->in_use)) {
		uint64_t before = as->in_use > live ? as->in_use - live : 0;

		add(b, "live_before", "in use, allocated before attach", 1, clamp64(before),
		    "derived: the allocator's in-use bytes minus the profile's");
		rest -= clamp64(as->in_use);
		if (known(as->mmapped))
			add(b, "mmapped", "of all in use, mmapped blocks", 2, clamp64(as->mmapped),
			    "allocator: large blocks, each its own mapping");
	}
	if (known(as->metadata) && as->metadata) {
		add(b, "metadata", "allocator metadata", 1, clamp64(as->metadata),
		    "allocator: its own bookkeeping");
		rest -= clamp64(as->metadata);
	}
	if (known(as->free)) {
		/* what it counts free may be partly untouched or given back
		 * (the top of an arena): only the resident part is RSS */
		int64_t res = clamp64(as->free) < rest ? clamp64(as->free) : rest > 0 ? rest : 0;

		add(b, "free", "free inside the allocator", 1, res,
		    "allocator: free chunks, caches and pages it keeps (resident part)");
		if (clamp64(as->free) > res)
			add(b, "free_nonresident", "and free but not resident", 2,
			    clamp64(as->free) - res, "allocator: counted free, no RSS");
		rest -= res;
	}
	add(b, "heap_other", "heap not accounted for", 1, rest,
	    "derived: the heap's resident bytes minus the lines above");
}

void breakdown_compute(const struct breakdown_in *in, struct breakdown *b)
{
	const struct rss_smaps *sm = in->sm;
	static const struct rss_smaps none;
	const char *how;
	uint64_t heap, anon_all;
	int64_t sum = 0;

	memset(b, 0, sizeof(*b));
	if (!sm)
		sm = &none;
	b->measured = in->sm != NULL;
	b->rss = sm->total.rss;
	b->vsize = sm->total.size;
	b->swap = sm->total.swap;
	b->arenas = sm->arenas;
	b->allocator = in->as ? in->as->allocator : NULL;
	b->source = in->as ? in->as->how : in->as_why;
	anon_all = sm->kind[RSS_BRK].rss + sm->kind[RSS_ARENA].rss + sm->kind[RSS_ANON].rss;
	heap = heap_rss(sm, in->as, &how);
	if (heap > anon_all)
		heap = anon_all;
	add(b, "heap", "heap (the allocator's memory)", 0, clamp64(heap), how);
	heap_detail(b, in, heap);
	add(b, "anon_other", "anonymous memory outside the heap", 0, clamp64(anon_all - heap),
	    "derived: anonymous private mappings minus the heap (the program's own mmaps, "
	    "other allocators)");
	add(b, "stacks", "thread stacks", 0, clamp64(sm->kind[RSS_STACK].rss), "measured: smaps");
	add(b, "code", "code (executables, libraries)", 0, clamp64(sm->kind[RSS_CODE].rss),
	    "measured: smaps");
	add(b, "file_data", "data of executables and libraries", 0,
	    clamp64(sm->kind[RSS_FILE_DATA].rss), "measured: smaps");
	add(b, "files", "other mapped files", 0, clamp64(sm->kind[RSS_FILE].rss), "measured: smaps");
	add(b, "shmem", "shared memory", 0, clamp64(sm->kind[RSS_SHMEM].rss), "measured: smaps");
	add(b, "heapattach", "heapattach's shared area", 0, clamp64(sm->kind[RSS_OURS].rss),
	    "measured: smaps");
	for (size_t i = 0; i < b->n; i++)
		if (!b->v[i].depth)
			sum += b->v[i].bytes;
	add(b, "unexplained", "unexplained", 0, clamp64(b->rss) - sum,
	    "derived: RSS minus the lines above");
}

static void fmt_size(char *buf, size_t len, int64_t v)
{
	double a = v < 0 ? -(double)v : (double)v;
	const char *sign = v < 0 ? "-" : "";

	if (a >= 1024.0 * 1024 * 1024)
		snprintf(buf, len, "%s%.2f GiB", sign, a / (1024.0 * 1024 * 1024));
	else if (a >= 1024.0 * 1024)
		snprintf(buf, len, "%s%.1f MiB", sign, a / (1024.0 * 1024));
	else
		snprintf(buf, len, "%s%.0f KiB", sign, a / 1024.0);
}

void breakdown_print(const struct breakdown *b, void (*line)(void *arg, const char *text),
		     void *arg)
{
	char rec[1024], text[512], sz[32];
	size_t off;

	if (!b->measured) {
		line(arg, "heapattach-rss: not measured (the target was gone, or its smaps "
			  "could not be read)");
		return;
	}

	off = (size_t)snprintf(rec, sizeof(rec),
			       "heapattach-rss: rss=%llu vsize=%llu swap=%llu arenas=%u allocator=%s",
			       (unsigned long long)b->rss, (unsigned long long)b->vsize,
			       (unsigned long long)b->swap, b->arenas,
			       b->allocator ? b->allocator : "none");
	for (size_t i = 0; i < b->n && off < sizeof(rec); i++)
		off += (size_t)snprintf(rec + off, sizeof(rec) - off, " %s=%lld", b->v[i].key,
					(long long)b->v[i].bytes);
	line(arg, rec);
	fmt_size(sz, sizeof(sz), clamp64(b->rss));
	snprintf(text, sizeof(text), "RSS %s (virtual %.1f MiB, swap %.1f MiB): where it goes",
		 sz, (double)b->vsize / (1024.0 * 1024), (double)b->swap / (1024.0 * 1024));
	line(arg, text);
	for (size_t i = 0; i < b->n; i++) {
		fmt_size(sz, sizeof(sz), b->v[i].bytes);
		snprintf(text, sizeof(text), "%*s%-*s %11s  %s", 2 + 2 * b->v[i].depth, "",
			 36 - 2 * b->v[i].depth, b->v[i].label, sz, b->v[i].how);
		line(arg, text);
	}
	if (b->source && b->source[0]) {
		snprintf(text, sizeof(text), "  %s: %s", b->allocator ? "allocator figures" :
			 "no allocator figures", b->source);
		line(arg, text);
	}
}
