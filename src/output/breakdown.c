/* Heap vs RSS: a table that adds up to the process's resident memory, from smaps, the allocator and the profile. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "output/breakdown.h"
#include "profile/profile.h"

/*
 * Two kinds of bytes, never added together. The top lines are resident
 * bytes and partition the RSS that smaps reports: every resident byte is
 * in exactly one kind of mapping (rss.c). The allocator's memory is its
 * arenas (glibc: [heap] and the 64 MiB-aligned arenas) plus the resident
 * pages of the blocks it mmapped for themselves (mmchunks.c), or, for
 * allocators that map anonymous memory of no recognizable shape
 * (jemalloc, tcmalloc), the resident bytes they report; what other
 * anonymous memory remains is not the heap's. Then the heap as the
 * allocator counts it, in allocated bytes whether resident or not (a
 * block of 4 MiB with one page touched counts 4 MiB there): in use, free,
 * metadata, and of the in-use bytes those of the blocks the profile saw
 * allocated since attach, each rounded to the size the allocator counts
 * for it (the profile keeps the requested sizes).
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
		b->v[b->n++] = (struct breakdown_line){ .key = key, .label = label,
							.depth = depth, .bytes = bytes,
							.how = how };
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

/* A line of resident bytes (part of the RSS, or at depth 1 of the heap). */
static void add_res(struct breakdown *b, const char *key, const char *label, int depth,
		    uint64_t bytes, const char *how)
{
	add(b, key, label, depth, clamp64(bytes), how);
	b->v[b->n - 1].unit = BREAKDOWN_RESIDENT;
}

/* A line of allocated bytes (the allocator's count, resident or not). */
static void add_alloc(struct breakdown *b, const char *key, const char *label, int depth,
		      uint64_t bytes, const char *how)
{
	add(b, key, label, depth, clamp64(bytes), how);
	b->v[b->n - 1].unit = BREAKDOWN_ALLOCATED;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

uint64_t breakdown_usable(const char *allocator, uint64_t size)
{
	if (allocator && !strcmp(allocator, "glibc")) {
		/* a chunk: the request and an 8-byte header, 16-aligned, at
		 * least 32; from the mmap threshold (128 KiB unless raised) a
		 * mapping of whole pages */
		uint64_t chunk = round_up(size + 8, 16);

		chunk = chunk < 32 ? 32 : chunk;
		return size >= (128u << 10) ? round_up(chunk + 8, 4096) : chunk;
	}
	if (allocator && !strcmp(allocator, "jemalloc")) {
		/* size classes: 8, then 16 apart to 128, then four per doubling */
		int k;

		if (size <= 8)
			return 8;
		if (size <= 128)
			return round_up(size, 16);
		k = 63 - __builtin_clzll(size - 1);
		return round_up(size, 1ULL << (k - 2));
	}
	if (allocator && !strcmp(allocator, "tcmalloc"))
		return round_up(size, size <= 1024 ? 16 : size <= 8192 ? 128 : 8192);
	return round_up(size ? size : 1, 16);
}

struct usable_sum {
	const char *allocator;
	uint64_t sum;
};

static int sum_usable(const struct profile_bucket *bk, void *arg)
{
	struct usable_sum *u = arg;
	int64_t count, bytes;

	if (!bk->inuse_count)
		return 0;
	profile_scale(bk->inuse_count, bk->inuse_bytes, bk->rate, &count, &bytes);
	if (count > 0)
		u->sum += (uint64_t)count * breakdown_usable(u->allocator, bk->size);
	return 0;
}

uint64_t breakdown_profile_live_usable(const struct profile *p, const char *allocator)
{
	struct usable_sum u = { allocator, 0 };

	profile_foreach(p, sum_usable, &u);
	return u.sum;
}

/*
 * The heap's resident bytes, and how they were found. glibc: its arenas
 * (smaps) and the resident part of its mmapped blocks (pagemap, when
 * measured; else their whole size, an estimate that counts pages never
 * touched). Others: what the allocator reports resident.
 */
static uint64_t heap_rss(const struct breakdown_in *in, const struct rss_smaps *sm,
			 const char **how, uint64_t *mm_res)
{
	const struct allocstats *as = in->as;
	uint64_t arenas = sm->kind[RSS_BRK].rss + sm->kind[RSS_ARENA].rss;
	uint64_t anon = sm->kind[RSS_ANON].rss;

	*mm_res = UINT64_MAX;
	if (in->mmc) {
		*mm_res = in->mmc->resident < anon ? in->mmc->resident : anon;
		*how = "measured: smaps ([heap] and arenas) + pagemap (mmapped blocks)";
		return arenas + *mm_res;
	}
	if (as && known(as->mmapped)) {
		*mm_res = as->mmapped < anon ? as->mmapped : anon;
		*how = "estimated: smaps ([heap] and arenas) + mmapped blocks counted whole";
		return arenas + *mm_res;
	}
	if (as && known(as->resident)) {
		uint64_t res = as->resident, none = 0;

		if (in->big) {
			none = in->big->mapped - in->big->resident - in->big->swapped;
			res = res > none ? res - none : 0;
		}
		*how = in->big && none ?
		       "estimated: the allocator's resident bytes minus the pages never touched "
		       "of the large blocks seen since attach (pagemap)" :
		       "allocator: its resident bytes (an upper bound: pages never touched of "
		       "large blocks may count)";
		return res < arenas + anon ? res : arenas + anon;
	}
	*how = "measured: smaps ([heap] and arenas); no allocator figures";
	return arenas;
}

/* The heap's resident parts (glibc): arenas and mmapped blocks. */
static void heap_parts(struct breakdown *b, const struct breakdown_in *in,
		       const struct rss_smaps *sm, uint64_t mm_res)
{
	static char how[160];

	if (mm_res == UINT64_MAX)
		return;
	add_res(b, "heap_arenas", "arenas ([heap] and the others)", 1,
		sm->kind[RSS_BRK].rss + sm->kind[RSS_ARENA].rss, "measured: smaps");
	if (!in->mmc) {
		add_res(b, "heap_mmapped", "mmapped blocks", 1, mm_res,
			"estimated: their whole size (not measured: pages never touched count)");
		return;
	}
	if (in->as && known(in->as->mmapped) && in->as->mmapped == in->mmc->mapped &&
	    !in->mmc->cut)
		snprintf(how, sizeof(how), "measured: pagemap, %llu blocks, %.1f MiB mapped",
			 (unsigned long long)in->mmc->count, in->mmc->mapped / 1048576.0);
	else
		snprintf(how, sizeof(how), "estimated: pagemap, %llu blocks found, %.1f MiB of "
			 "%.1f MiB mapped%s", (unsigned long long)in->mmc->count,
			 in->mmc->mapped / 1048576.0,
			 in->as && known(in->as->mmapped) ? in->as->mmapped / 1048576.0 : 0.0,
			 in->mmc->cut ? ", search cut short" : "");
	add_res(b, "heap_mmapped", "mmapped blocks, resident part", 1, mm_res, how);
}

/* The heap by the allocator's count (allocated bytes): in use (seen since
 * attach, and before), metadata, free. */
static void heap_detail(struct breakdown *b, const struct breakdown_in *in)
{
	const struct allocstats *as = in->as;
	int exact = in->prof && profile_rate(in->prof) <= 1;
	const char *alloc = as ? as->allocator : NULL;
	uint64_t req = in->prof ? breakdown_profile_live(in->prof) : 0;
	uint64_t live = in->prof ? breakdown_profile_live_usable(in->prof, alloc) : 0;

	add_alloc(b, "live_seen", "in use, allocated since attach", 1, live,
		  exact ? "estimated: every live block since attach (profile), each "
			  "rounded to the allocator's size" :
			  "estimated: sampled live blocks since attach (profile), each "
			  "rounded to the allocator's size");
	add_alloc(b, "live_seen_requested", "of which requested", 2, req,
		  exact ? "measured: the sizes asked for (profile)" :
			  "estimated: the sizes asked for (sampled profile)");
	if (!as)
		return;
	if (known(as->in_use)) {
		add_alloc(b, "live_before", "in use, allocated before attach", 1,
			  as->in_use > live ? as->in_use - live : 0,
			  "estimated: the allocator's in-use bytes minus the line above");
		if (known(as->mmapped))
			add_alloc(b, "mmapped", "of all in use, mmapped blocks", 2, as->mmapped,
				  "allocator: large blocks, each its own mapping, resident or not");
	}
	if (known(as->metadata) && as->metadata)
		add_alloc(b, "metadata", "allocator metadata", 1, as->metadata,
			  "allocator: its own bookkeeping");
	if (known(as->free))
		add_alloc(b, "free", "free inside the allocator", 1, as->free,
			  "allocator: free chunks, caches and pages it keeps (resident or not)");
}

void breakdown_compute(const struct breakdown_in *in, struct breakdown *b)
{
	const struct rss_smaps *sm = in->sm;
	static const struct rss_smaps none;
	const char *how;
	uint64_t heap, anon_all, mm_res, sum = 0;

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
	heap = heap_rss(in, sm, &how, &mm_res);
	if (heap > anon_all)
		heap = anon_all;
	add_res(b, "heap", "heap (the allocator's memory)", 0, heap, how);
	heap_parts(b, in, sm, mm_res);
	add_res(b, "anon_other", "anonymous memory outside the heap", 0, anon_all - heap,
		"derived: anonymous private mappings minus the heap (the program's own mmaps, "
		"other allocators)");
	add_res(b, "stacks", "thread stacks", 0, sm->kind[RSS_STACK].rss, "measured: smaps");
	add_res(b, "code", "code (executables, libraries)", 0, sm->kind[RSS_CODE].rss,
		"measured: smaps");
	add_res(b, "file_data", "data of executables and libraries", 0,
		sm->kind[RSS_FILE_DATA].rss, "measured: smaps");
	add_res(b, "files", "other mapped files", 0, sm->kind[RSS_FILE].rss, "measured: smaps");
	add_res(b, "shmem", "shared memory", 0, sm->kind[RSS_SHMEM].rss, "measured: smaps");
	add_res(b, "heapattach", "heapattach's shared area", 0, sm->kind[RSS_OURS].rss,
		"measured: smaps");
	for (size_t i = 0; i < b->n; i++)
		if (!b->v[i].depth)
			sum += (uint64_t)b->v[i].bytes;
	add_res(b, "unexplained", "unexplained", 0, b->rss > sum ? b->rss - sum : 0,
		"derived: RSS minus the lines above");
	heap_detail(b, in);
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
	snprintf(text, sizeof(text), "RSS %s (virtual %.1f MiB, swap %.1f MiB): where it goes "
		 "(resident bytes)",
		 sz, (double)b->vsize / (1024.0 * 1024), (double)b->swap / (1024.0 * 1024));
	line(arg, text);
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i].unit == BREAKDOWN_ALLOCATED &&
		    (!i || b->v[i - 1].unit != BREAKDOWN_ALLOCATED))
			line(arg, "The heap as the allocator counts it (allocated bytes, resident or "
				  "not; no part of the RSS above):");
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
