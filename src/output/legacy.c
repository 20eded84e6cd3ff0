/* gperftools legacy heap profile text writer (docs/profile-format.md §6). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include "base/clock.h"
#include "output/dump.h"

struct totals {
	uint64_t rate;          /* the header's interval */
	FILE *f;
	uint64_t inuse_n, inuse_b, alloc_n, alloc_b;
	int truncated;          /* a stack ends in PROFILE_PC_TRUNCATED */
	int unwalkable;         /* a stack ends in PROFILE_PC_UNWALKABLE */
};

static int add_totals(const struct profile_bucket *raw, void *arg)
{
	struct totals *t = arg;
	struct profile_bucket at = profile_bucket_at(raw, t->rate), *b = &at;

	t->inuse_n += b->inuse_count;
	t->inuse_b += b->inuse_bytes;
	t->alloc_n += b->alloc_count;
	t->alloc_b += b->alloc_bytes;
	if (b->npcs && b->pcs[b->npcs - 1] == PROFILE_PC_TRUNCATED)
		t->truncated = 1;
	if (b->npcs && b->pcs[b->npcs - 1] == PROFILE_PC_UNWALKABLE)
		t->unwalkable = 1;
	return 0;
}

/* A "# text" line; newlines inside text become spaces so the line stays one line. */
static void put_comment(FILE *f, const char *text)
{
	fputs("# ", f);
	for (; *text; text++)
		fputc(*text == '\n' || *text == '\r' ? ' ' : *text, f);
	fputc('\n', f);
}

/* One line per bucket: raw counts (those of samples taken at a raised
 * interval as if taken at the header's), raw return addresses. */
static int put_bucket(const struct profile_bucket *raw, void *arg)
{
	struct totals *t = arg;
	struct profile_bucket at = profile_bucket_at(raw, t->rate), *b = &at;
	FILE *f = t->f;

	fprintf(f, "%6" PRIu64 ": %8" PRIu64 " [%6" PRIu64 ": %8" PRIu64 "] @",
		b->inuse_count, b->inuse_bytes, b->alloc_count, b->alloc_bytes);
	for (size_t i = 0; i < b->npcs; i++)
		fprintf(f, " 0x%016" PRIx64, b->pcs[i]);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

/* A /proc/PID/maps line rebuilt from m, path column at 73 as the kernel pads it. */
static void put_map(FILE *f, const struct proc_map *m)
{
	int n;

	n = fprintf(f, "%08" PRIx64 "-%08" PRIx64 " %c%c%c%c %08" PRIx64 " %02x:%02x %" PRIu64,
		    m->start, m->end,
		    m->prot & PROC_MAP_R ? 'r' : '-', m->prot & PROC_MAP_W ? 'w' : '-',
		    m->prot & PROC_MAP_X ? 'x' : '-', m->prot & PROC_MAP_SHARED ? 's' : 'p',
		    m->offset, m->dev_major, m->dev_minor, m->inode);
	if (m->path && m->path[0])
		fprintf(f, "%*s%s", n < 73 ? 73 - n : 1, "", m->path);
	fputc('\n', f);
}

/* The MAPPED_LIBRARIES line that names the mark pc (pprof looks up pc - 1). */
static void put_mark_map(FILE *f, uint64_t pc)
{
	struct proc_map m = {
		.start = pc & ~0xfULL,
		.end = pc + 1,
		.prot = PROC_MAP_R | PROC_MAP_X,
		.path = (char *)profile_mark_name(pc),
	};

	if (pc == PROFILE_PC_TRUNCATED)
		m.start = pc & ~0xfffULL;	/* as it always was */
	put_map(f, &m);
}

/*
 * Header "heap profile: IN: IB [AN: AB] @ heap_v2/RATE" ("heapprofile" when
 * every allocation was recorded). pprof reports alloc values only when the
 * header's alloc figures differ from the in-use ones, so, as Go does, AB gets
 * 1 added when they would be equal. Comment lines ("# ...") follow the header.
 */
int legacy_write(FILE *f, const struct profile *p, const struct dump_info *d)
{
	uint64_t rate = profile_rate(p);
	struct totals t = { .rate = rate, .f = f };
	char line[320];
	int ret;

	profile_foreach(p, add_totals, &t);
	if (!((t.alloc_n != t.inuse_n && t.alloc_n) || (t.alloc_b != t.inuse_b && t.alloc_b)))
		t.alloc_b++;
	fprintf(f, "heap profile: %6" PRIu64 ": %8" PRIu64 " [%6" PRIu64 ": %8" PRIu64 "] @ ",
		t.inuse_n, t.inuse_b, t.alloc_n, t.alloc_b);
	if (rate <= 1)
		fprintf(f, "heapprofile\n");
	else
		fprintf(f, "heap_v2/%" PRIu64 "\n", rate);
	fprintf(f, "# heapattach pid=%d\n# rate=%" PRIu64 "\n", (int)d->pid, rate);
	if (profile_drops(p))
		fprintf(f, "# dropped events: %" PRIu64 "\n", profile_drops(p));
	for (size_t i = 0; profile_raise_comment(p, i, clock_ns(CLOCK_MONOTONIC), line,
						     sizeof(line)); i++)
		put_comment(f, line);
	for (size_t i = 0; d->comments && i < d->ncomments; i++)
		put_comment(f, d->comments[i]);
	if (t.truncated)
		fprintf(f, "# stacks cut short end in 0x%016" PRIx64 ", the mapping %s\n",
			(uint64_t)PROFILE_PC_TRUNCATED, PROFILE_TRUNCATED_NAME);
	if (t.unwalkable)
		fprintf(f, "# stacks that no unwinder could follow on end in 0x%016" PRIx64
			", the mapping %s\n", (uint64_t)PROFILE_PC_UNWALKABLE,
			PROFILE_UNWALKABLE_NAME);
	ret = profile_foreach(p, put_bucket, &t);
	if (ret)
		return ret;
	if (d->maps || t.truncated || t.unwalkable)
		fprintf(f, "\nMAPPED_LIBRARIES:\n");
	for (size_t i = 0; d->maps && i < d->maps->n; i++)
		put_map(f, &d->maps->v[i]);
	/* readers name the marks' frames after these mappings */
	if (t.truncated)
		put_mark_map(f, PROFILE_PC_TRUNCATED);
	if (t.unwalkable)
		put_mark_map(f, PROFILE_PC_UNWALKABLE);
	errno = 0;
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}
