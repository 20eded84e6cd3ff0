/* JIT code names from the target's perf map (/tmp/perf-PID.map), read as it grows. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/xmalloc.h"
#include "model/perfmap.h"
#include "model/proc.h"
#include "model/tfile.h"

/*
 * A perf map is a text file a JIT appends "START SIZE name" lines to (hex
 * START and SIZE): node --perf-basic-prof, Java agents, LuaJIT, .NET with
 * DOTNET_PerfMapEnabled. It is the target's file, so it is input from an
 * adversary: looked up with tfile_open in the target's root and with its
 * access (a FIFO or device is never opened, a file the target may not
 * read is not read) each time it is read while the target lives,
 * the file last opened read on once it is gone; read from where the last
 * read stopped (the start of a line not yet complete) up to
 * PERFMAP_MAX_BYTES from its start, one line at most PERFMAP_MAX_LINE
 * bytes, at most PERFMAP_MAX_ENTRIES entries; malformed lines are counted
 * and skipped.
 *
 * A map is rewritten in place, too: `jcmd PID Compiler.perfmap` opens it
 * with "w" (the same inode, truncated) and writes the whole code cache
 * again, and between two reads the file can be back at a larger size than
 * the offset reached, with other bytes before it. So the last PM_MARK bytes
 * taken are kept and read again before reading on: when they differ (or the
 * file is shorter) the map was rewritten and is read again from its start.
 * A rewrite that leaves those bytes where they were differs from an append
 * only before them: perfmap_rewind is for a caller that knows.
 *
 * JIT code is freed and its range reused: a later entry wins over an earlier
 * one wherever they overlap (perf does the same). What is kept is the
 * result: disjoint segments sorted by address, each naming the entry that
 * owns it (its name and real start, for the offset). The lines of one read
 * are painted over the segments in one sweep: every segment and new entry
 * sorted by start, and at each point the live one taken last (a max-heap on
 * the line number) owns the range up to the next start or its own end.
 * Names live in one arena; an overridden name stays there (the bytes cap
 * bounds it).
 */

#define PERFMAP_BUF	(64u << 10)	/* read size; more than a line */
#define PM_MARK		256u		/* last bytes taken, checked again */

/* Why a map was not read (each said once). */
#define PM_REFUSED_TYPE		1u	/* not a regular file */
#define PM_REFUSED_ACCESS	2u	/* not for the target to read */

/* A range and the entry that owns it (seq: its line number among entries). */
struct pm_seg {
	uint64_t start, end, fstart;
	uint32_t name, seq;
};

struct perfmap {
	pid_t tid;                      /* path is in this thread's root; 0: not any more */
	int root;                       /* or in this directory (perfmap_new), or -EBADF */
	pid_t as;                       /* and opened with this thread's access */
	char *path;

	int fd;                         /* the file last read, kept open, or -1 */
	dev_t dev;                      /* and its identity */
	ino_t ino;
	uint64_t off;                   /* first byte not taken yet */
	int skipping;                   /* inside an overlong line */
	int full;                       /* PERFMAP_MAX_ENTRIES taken */
	int rewind;                     /* read again from the start (perfmap_rewind) */
	unsigned char mark[PM_MARK];    /* the bytes just before off */
	size_t nmark;

	struct pm_seg *segs;            /* disjoint, sorted by start */
	size_t nsegs;
	struct pm_seg *batch;           /* entries of this read, in file order */
	size_t nbatch, capbatch;
	char *names;
	size_t lnames, capnames;
	uint32_t seq;                   /* entries taken */
	size_t garbage;

	unsigned caps, noted;           /* PERFMAP_CAP_* hit, said */
	unsigned refused, refused_noted;        /* PM_REFUSED_* */
	int access_err;                 /* the errno of the last PM_REFUSED_ACCESS */
};

/* ---- where ---- */

int perfmap_path_of(pid_t tid, char *path, size_t len)
{
	pid_t n;
	int rc = proc_ns_tgid(tid, &n);

	if (rc)
		return rc;
	if ((size_t)snprintf(path, len, "/tmp/perf-%d.map", (int)n) >= len)
		return -ENAMETOOLONG;
	return 0;
}

struct perfmap *perfmap_new(int root, const char *path, pid_t as)
{
	struct perfmap *pm = xcalloc(1, sizeof(*pm));

	pm->root = root >= 0 ? fcntl(root, F_DUPFD_CLOEXEC, 0) : -EBADF;
	if (pm->root < 0)
		pm->root = -EBADF;	/* tfile_open refuses it: never the host */
	pm->path = xstrdup(path);
	pm->as = as;
	pm->fd = -1;
	return pm;
}

struct perfmap *perfmap_open_target(pid_t tid)
{
	struct perfmap *pm;
	char path[64];

	if (perfmap_path_of(tid, path, sizeof(path)))
		return NULL;
	pm = perfmap_new(-1, path, tid);
	pm->tid = tid;
	return pm;
}

void perfmap_set_tid(struct perfmap *pm, pid_t tid)
{
	if (pm)
		pm->tid = tid > 0 ? tid : 0;
}

/*
 * Open (open_it) or stat path in the root of thread tid as it is now,
 * with tfile_open's rules and tid's access. The root is /proc/TID/root opened afresh, and
 * the thread must still have one after the lookup: an exiting process
 * drops its root (exit_fs) before its mount namespace is torn down, and a
 * root kept from before then leads to the mounts underneath, such as the
 * host's /tmp. The fd (open_it) or 0, or -errno (-ESRCH: no root now).
 */
static int in_target(pid_t tid, const char *path, struct stat *st, int open_it)
{
	int root = tfile_root(tid), ret, again;

	if (root < 0)
		return -ESRCH;
	ret = open_it ? tfile_open(root, path, st, tid) : tfile_stat(root, path, st, tid);
	close(root);
	again = tfile_root(tid);
	if (again < 0) {
		if (open_it && ret >= 0)
			close(ret);
		return -ESRCH;
	}
	close(again);
	return ret;
}

int perfmap_describe(FILE *f, pid_t tid)
{
	struct stat st;
	char path[64];
	int rc;

	rc = perfmap_path_of(tid, path, sizeof(path));
	if (!rc)
		rc = in_target(tid, path, &st, 1);
	if (rc >= 0) {
		close(rc);
		fprintf(f, "# perf map %s (%lld bytes): JIT frames are named from it\n", path,
			(long long)st.st_size);
	} else if (rc == -EINVAL) {
		fprintf(f, "# perf map %s is not a regular file: not read\n", path);
	} else if (rc == -EACCES || rc == -EPERM) {
		fprintf(f, "# perf map %s cannot be opened with the target's access (%s): not read\n",
			path, strerror(-rc));
	} else {
		return rc;
	}
	return 0;
}

/* Forget every entry (the file was replaced or truncated). */
static void reset(struct perfmap *pm)
{
	free(pm->segs);
	pm->segs = NULL;
	pm->nsegs = 0;
	pm->nbatch = 0;
	pm->lnames = 0;
	pm->seq = 0;
	pm->off = 0;
	pm->skipping = 0;
	pm->full = 0;
	pm->nmark = 0;
}

void perfmap_rewind(struct perfmap *pm)
{
	if (pm)
		pm->rewind = 1;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	if (pm->root >= 0)
		close(pm->root);
	if (pm->fd >= 0)
		close(pm->fd);
	free(pm->segs);
	free(pm->batch);
	free(pm->names);
	free(pm->path);
	free(pm);
}

/* ---- parsing ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Parse up to 16 hex digits (an optional 0x before them) at p; the end of
 * the number, or NULL. */
static const char *parse_hex(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	int nd = 0, d;

	if (end - p > 2 && p[0] == '0' && (p[1] | 0x20) == 'x')
		p += 2;
	for (; p < end && (d = hexval(*p)) >= 0; p++) {
		if (++nd > 16)
			return NULL;
		x = x << 4 | (uint64_t)d;
	}
	if (!nd)
		return NULL;
	*v = x;
	return p;
}

/* p past blanks; NULL if there were none or nothing follows. */
static const char *blanks(const char *p, const char *end)
{
	const char *q = p;

	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	return q == p || q == end ? NULL : q;
}

/* Copy name into the arena (control bytes made '?'); its offset. */
static uint32_t add_name(struct perfmap *pm, const char *name, size_t len)
{
	uint32_t at;

	if (pm->lnames + len + 1 > pm->capnames) {
		size_t cap = pm->capnames ? pm->capnames : 65536;

		while (cap < pm->lnames + len + 1)
			cap *= 2;
		pm->names = xrealloc(pm->names, cap);
		pm->capnames = cap;
	}
	at = (uint32_t)pm->lnames;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		pm->names[pm->lnames++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	pm->names[pm->lnames++] = '\0';
	return at;
}

/* One line (without its newline): an entry, or counted as garbage. */
static void take_line(struct perfmap *pm, const char *p, size_t len)
{
	const char *end = p + len, *q;
	uint64_t start, size;

	if (len > PERFMAP_MAX_LINE) {
		pm->caps |= PERFMAP_CAP_LINE;
		return;
	}
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	if (!(q = parse_hex(p, end, &start)) || !(q = blanks(q, end)) ||
	    !(q = parse_hex(q, end, &size)) || !(q = blanks(q, end)) ||
	    !start || !size || start + size < start) {
		if (end > p)
			pm->garbage++;
		return;
	}
	if (pm->seq >= PERFMAP_MAX_ENTRIES) {
		pm->caps |= PERFMAP_CAP_ENTRIES;
		pm->full = 1;
		return;
	}
	if (pm->nbatch == pm->capbatch) {
		pm->capbatch = pm->capbatch ? pm->capbatch * 2 : 256;
		pm->batch = xrealloc(pm->batch, pm->capbatch * sizeof(*pm->batch));
	}
	pm->batch[pm->nbatch++] = (struct pm_seg){
		.start = start, .end = start + size, .fstart = start,
		.name = add_name(pm, q, (size_t)(end - q)), .seq = pm->seq++,
	};
}

/* Take the complete lines of buf[0..have); the bytes used up (an
 * incomplete line stays, unless it is already too long: then it is
 * skipped up to its newline, in this read or a later one). */
static size_t take_lines(struct perfmap *pm, const char *buf, size_t have)
{
	const char *p = buf, *end = buf + have, *nl;

	while (!pm->full && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (pm->skipping)
			pm->skipping = 0;
		else
			take_line(pm, p, (size_t)(nl - p));
		p = nl + 1;
	}
	if (!pm->full && (pm->skipping || end - p > PERFMAP_MAX_LINE)) {
		if (!pm->skipping)
			pm->caps |= PERFMAP_CAP_LINE;
		pm->skipping = 1;
		return have;
	}
	return (size_t)(p - buf);
}

/* ---- painting a read's entries over the segments ---- */

static int cmp_start(const void *a, const void *b)
{
	const struct pm_seg *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Max-heap of indices, on seq, over the old segments then the batch. */
struct seqheap {
	const struct pm_seg *segs, *batch;
	size_t nsegs;
	uint32_t *h;
	size_t n;
};

static const struct pm_seg *item(const struct seqheap *hp, size_t idx)
{
	return idx < hp->nsegs ? &hp->segs[idx] : &hp->batch[idx - hp->nsegs];
}

static int heap_above(const struct seqheap *hp, size_t i, size_t j)
{
	return item(hp, hp->h[i])->seq > item(hp, hp->h[j])->seq;
}

static void heap_swap(struct seqheap *hp, size_t i, size_t j)
{
	uint32_t t = hp->h[i];

	hp->h[i] = hp->h[j];
	hp->h[j] = t;
}

static void heap_push(struct seqheap *hp, uint32_t idx)
{
	size_t i = hp->n++;

	hp->h[i] = idx;
	while (i && heap_above(hp, i, (i - 1) / 2)) {
		heap_swap(hp, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct seqheap *hp)
{
	size_t i = 0;

	hp->h[0] = hp->h[--hp->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < hp->n && heap_above(hp, l, m))
			m = l;
		if (r < hp->n && heap_above(hp, r, m))
			m = r;
		if (m == i)
			break;
		heap_swap(hp, i, m);
		i = m;
	}
}

/* Append [start, end) owned by o to out (merged with the last piece when
 * that is the same entry's and touches it). */
static void emit(struct pm_seg **out, size_t *n, size_t *cap, uint64_t start, uint64_t end,
		 const struct pm_seg *o)
{
	if (*n && (*out)[*n - 1].seq == o->seq && (*out)[*n - 1].end == start) {
		(*out)[*n - 1].end = end;
		return;
	}
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		*out = xrealloc(*out, *cap * sizeof(**out));
	}
	(*out)[(*n)++] = (struct pm_seg){
		.start = start, .end = end, .fstart = o->fstart, .name = o->name, .seq = o->seq,
	};
}

/* Paint the batch over the segments: the later entry owns each point.
 * Each entry adds at most two boundaries, so the result has at most
 * nsegs + 2 * nbatch pieces. */
static void paint(struct perfmap *pm)
{
	size_t n = pm->nsegs + pm->nbatch, i = 0, j = 0, nout = 0, capout = n + pm->nbatch;
	struct pm_seg *out = xmalloc(capout * sizeof(*out));
	struct seqheap hp = {
		.segs = pm->segs, .batch = pm->batch, .nsegs = pm->nsegs,
		.h = xmalloc(n * sizeof(*hp.h)),
	};
	uint64_t x = 0;
	int sorted = 1;

	for (size_t k = 1; k < pm->nbatch && sorted; k++)
		sorted = cmp_start(&pm->batch[k - 1], &pm->batch[k]) <= 0;
	if (!sorted)
		qsort(pm->batch, pm->nbatch, sizeof(*pm->batch), cmp_start);
	/* i, j: the next old segment and batch entry, taken in start order */
	while (i < pm->nsegs || j < pm->nbatch || hp.n) {
		const struct pm_seg *top;
		uint64_t next = UINT64_MAX;

		while (hp.n && item(&hp, hp.h[0])->end <= x)
			heap_pop(&hp);
		if (i < pm->nsegs && pm->segs[i].start < next)
			next = pm->segs[i].start;
		if (j < pm->nbatch && pm->batch[j].start < next)
			next = pm->batch[j].start;
		if (!hp.n) {
			if (next == UINT64_MAX)
				break;
			x = next > x ? next : x;
		}
		while (i < pm->nsegs && pm->segs[i].start <= x)
			heap_push(&hp, (uint32_t)i++);
		while (j < pm->nbatch && pm->batch[j].start <= x)
			heap_push(&hp, (uint32_t)(pm->nsegs + j++));
		top = item(&hp, hp.h[0]);
		next = top->end;
		if (i < pm->nsegs && pm->segs[i].start < next)
			next = pm->segs[i].start;
		if (j < pm->nbatch && pm->batch[j].start < next)
			next = pm->batch[j].start;
		emit(&out, &nout, &capout, x, next, top);
		x = next;
	}
	free(hp.h);
	free(pm->segs);
	pm->segs = nout ? xrealloc(out, nout * sizeof(*out)) : (free(out), NULL);
	pm->nsegs = nout;
	pm->nbatch = 0;
	if (pm->capbatch > 4096) {
		free(pm->batch);
		pm->batch = NULL;
		pm->capbatch = 0;
	}
}

/* ---- reading ---- */

/*
 * The file to read now, in *st: the one at the path in the target's root
 * while the target lives (another file there than last time starts over),
 * else the file last read (the target is gone, or removed its map). pm's
 * fd, or -errno.
 */
static int current_file(struct perfmap *pm, struct stat *st)
{
	int fd;

	if (pm->tid)
		fd = in_target(pm->tid, pm->path, st, 1);
	else if (pm->root >= 0)
		fd = tfile_open(pm->root, pm->path, st, pm->as);
	else
		fd = -ESRCH;
	if (fd == -EINVAL)
		pm->refused |= PM_REFUSED_TYPE;
	if (fd == -EACCES || fd == -EPERM) {
		pm->refused |= PM_REFUSED_ACCESS;
		pm->access_err = -fd;
	}
	if (fd >= 0 && pm->fd >= 0 && st->st_dev == pm->dev && st->st_ino == pm->ino) {
		close(fd);
	} else if (fd >= 0) {
		if (pm->fd >= 0) {
			close(pm->fd);
			reset(pm);
		}
		pm->fd = fd;
		pm->dev = st->st_dev;
		pm->ino = st->st_ino;
	} else if (pm->fd < 0 || (fd != -ESRCH && fd != -ENOENT)) {
		return fd;
	}
	return fstat(pm->fd, st) ? -errno : pm->fd;
}

/* Keep the last bytes of buf[0..n), just taken, as the mark before off. */
static void keep_mark(struct perfmap *pm, const char *buf, size_t n)
{
	if (n >= PM_MARK) {
		memcpy(pm->mark, buf + n - PM_MARK, PM_MARK);
		pm->nmark = PM_MARK;
		return;
	}
	if (pm->nmark + n > PM_MARK) {
		size_t drop = pm->nmark + n - PM_MARK;

		memmove(pm->mark, pm->mark + drop, pm->nmark - drop);
		pm->nmark -= drop;
	}
	memcpy(pm->mark + pm->nmark, buf, n);
	pm->nmark += n;
}

/* Whether the bytes before off are no longer those taken (or cannot be
 * read again): the file was rewritten in place. */
static int rewritten(const struct perfmap *pm, int fd)
{
	unsigned char now[PM_MARK];
	size_t got = 0;

	if (!pm->nmark || pm->off < pm->nmark)
		return 0;
	while (got < pm->nmark) {
		ssize_t n = pread(fd, now + got, pm->nmark - got,
				  (off_t)(pm->off - pm->nmark + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		got += (size_t)n;
	}
	return memcmp(now, pm->mark, pm->nmark) != 0;
}

int perfmap_refresh(struct perfmap *pm)
{
	uint64_t limit, pos;
	struct stat st;
	size_t have = 0;
	char *buf;
	int fd;

	fd = current_file(pm, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size < pm->off || pm->rewind || rewritten(pm, fd))
		reset(pm);	/* truncated, or rewritten in place */
	pm->rewind = 0;
	limit = (uint64_t)st.st_size;
	if (limit > PERFMAP_MAX_BYTES) {
		limit = PERFMAP_MAX_BYTES;
		pm->caps |= PERFMAP_CAP_BYTES;
	}
	if (pm->full || pm->off >= limit)
		return 0;
	buf = xmalloc(PERFMAP_BUF);
	pos = pm->off;
	while (pos + have < limit && !pm->full) {
		size_t want = PERFMAP_BUF - have, used;
		ssize_t n;

		if (want > limit - pos - have)
			want = (size_t)(limit - pos - have);
		n = pread(fd, buf + have, want, (off_t)(pos + have));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;	/* an error, or shorter than it was a moment ago */
		have += (size_t)n;
		used = take_lines(pm, buf, have);
		keep_mark(pm, buf, used);
		pos += used;
		have -= used;
		memmove(buf, buf + used, have);
	}
	free(buf);
	pm->off = pos;
	if (pm->nbatch)
		paint(pm);
	return 0;
}

/* ---- queries ---- */

const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi;

	if (!pm)
		return NULL;
	hi = pm->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= pm->segs[lo - 1].end)
		return NULL;
	if (offset)
		*offset = addr - pm->segs[lo - 1].fstart;
	return pm->names + pm->segs[lo - 1].name;
}

const char *perfmap_path(const struct perfmap *pm)
{
	return pm->path;
}

void perfmap_get_stats(const struct perfmap *pm, struct perfmap_stats *st)
{
	*st = (struct perfmap_stats){ .entries = pm->seq, .garbage = pm->garbage, .caps = pm->caps };
}

int perfmap_take_note(struct perfmap *pm, char *buf, size_t len)
{
	unsigned fresh = pm->caps & ~pm->noted;

	if (pm->refused & ~pm->refused_noted & PM_REFUSED_TYPE) {
		pm->refused_noted |= PM_REFUSED_TYPE;
		snprintf(buf, len, "perf map %s is not a regular file: not read", pm->path);
		return 1;
	}
	if (pm->refused & ~pm->refused_noted & PM_REFUSED_ACCESS) {
		pm->refused_noted |= PM_REFUSED_ACCESS;
		snprintf(buf, len, "perf map %s cannot be opened with the target's access (%s): "
			 "not read", pm->path, strerror(pm->access_err));
		return 1;
	}
	if (fresh & PERFMAP_CAP_BYTES) {
		pm->noted |= PERFMAP_CAP_BYTES;
		snprintf(buf, len, "perf map %s is larger than %u MiB: JIT names come from its "
			 "first %u MiB", pm->path, PERFMAP_MAX_BYTES >> 20, PERFMAP_MAX_BYTES >> 20);
		return 1;
	}
	if (fresh & PERFMAP_CAP_ENTRIES) {
		pm->noted |= PERFMAP_CAP_ENTRIES;
		snprintf(buf, len, "perf map %s has more than %u entries: the rest is not read",
			 pm->path, PERFMAP_MAX_ENTRIES);
		return 1;
	}
	if (fresh & PERFMAP_CAP_LINE) {
		pm->noted |= PERFMAP_CAP_LINE;
		snprintf(buf, len, "perf map %s has lines longer than %u bytes: skipped",
			 pm->path, PERFMAP_MAX_LINE);
		return 1;
	}
	return 0;
}
