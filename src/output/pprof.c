/* pprof profile.proto writer: hand-encoded protobuf, gzipped with zlib. */
/* SPDX-License-Identifier: MIT */

/*
 * Field numbers and the value layout follow docs/profile-format.md §1-2: four
 * sample types (alloc_objects, alloc_space, inuse_objects, inuse_space, the
 * last one being pprof's default), period_type space/bytes, period = rate.
 *
 * Top-level fields are appended to one buffer in the order they become known:
 * each Sample is preceded by the Functions and Locations it introduces; the
 * comments, times, Mappings (whose has_functions flag is known only after
 * every Location was seen) and the string table come last. Whenever the buffer
 * holds more than FLUSH_AT bytes between two top-level fields, it is deflated
 * into the gzip stream, so memory stays bounded by the tables, not the output.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "base/clock.h"
#include "base/hash.h"
#include "base/idmap.h"
#include "base/xmalloc.h"
#include "output/dump.h"
#include "profile/peak.h"
#include "python/pyframes.h"

#define FLUSH_AT (64 * 1024)

/* Profile message field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING, PROFILE_LOCATION,
	PROFILE_FUNCTION, PROFILE_STRING_TABLE, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS, PROFILE_PERIOD_TYPE, PROFILE_PERIOD, PROFILE_COMMENT,
	PROFILE_DEFAULT_SAMPLE_TYPE,
};

/* ---- protobuf encoding ---- */

struct pb {
	uint8_t *b;
	size_t len, cap;
};

static void pb_reserve(struct pb *p, size_t n)
{
	if (p->len + n <= p->cap)
		return;
	while (p->len + n > p->cap)
		p->cap = p->cap ? p->cap * 2 : 256;
	p->b = xrealloc(p->b, p->cap);
}

static void pb_put(struct pb *p, const void *v, size_t n)
{
	pb_reserve(p, n);
	if (n)
		memcpy(p->b + p->len, v, n);
	p->len += n;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	pb_reserve(p, 10);
	while (v >= 0x80) {
		p->b[p->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->b[p->len++] = (uint8_t)v;
}

static void pb_key(struct pb *p, unsigned field, unsigned wiretype)
{
	pb_varint(p, (uint64_t)field << 3 | wiretype);
}

/* A varint field (uint64, or int64 as two's complement); zero is omitted. */
static void pb_u64(struct pb *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(p, field, 0);
	pb_varint(p, v);
}

/* A length-delimited field: string, bytes or an encoded message. */
static void pb_bytes(struct pb *p, unsigned field, const void *v, size_t n)
{
	pb_key(p, field, 2);
	pb_varint(p, n);
	pb_put(p, v, n);
}

/* Append sub as message field of p, then empty sub for reuse. */
static void pb_msg(struct pb *p, unsigned field, struct pb *sub)
{
	pb_bytes(p, field, sub->b, sub->len);
	sub->len = 0;
}

/* A packed repeated varint field; nothing when n is 0. */
static void pb_packed(struct pb *p, unsigned field, const uint64_t *v, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	pb_key(p, field, 2);
	pb_varint(p, len);
	for (size_t i = 0; i < n; i++)
		pb_varint(p, v[i]);
}

/* ---- writer state ---- */

/* One Mapping: an executable line of the target's maps. */
struct pmap {
	const struct proc_map *m;
	uint64_t nlocs, nsym;   /* locations in it; how many were symbolized */
};

struct writer {
	FILE *f;
	z_stream z;
	int err;                /* first error, -errno */
	struct pb out, msg, sub;
	const struct dump_info *d;
	uint64_t rate;

	char **strs;            /* string table; strs[0] = "" */
	size_t nstrs, strs_cap;
	uint32_t *str_hslot;    /* open addressing: slot -> string index + 1 */
	size_t str_hcap;

	struct idmap locs;      /* (pc, 0, 0) -> location id */
	uint64_t nlocs;
	struct idmap funcs;     /* (name, system_name, filename) -> function id */
	uint64_t nfuncs;

	struct pmap *maps;      /* sorted by start */
	size_t nmaps;
	int python;             /* a Python frame was written: the [python] mapping, nmaps + 1 */
	int snapshot;           /* a snapshot's name was: the [snapshot] mapping, nmaps + 2 */
	const char *label;      /* the samples' key=label (dump_extra), or NULL */
	uint64_t pid_str;       /* d->label_pid: the string id of the pid's decimal */

	uint64_t *ids;          /* scratch: a sample's location ids */
	size_t nbuckets;        /* buckets written so far (the peak snapshot's index) */
	size_t nseen;           /* buckets of the profile seen so far (the base's index) */
};

/* Deflate pending output. flush: Z_NO_FLUSH or Z_FINISH. Sets w->err. */
static void w_deflate(struct writer *w, int flush)
{
	uint8_t buf[16384];
	size_t n;
	int ret;

	if (w->err)
		return;
	w->z.next_in = w->out.b;
	w->z.avail_in = w->out.len;
	do {
		w->z.next_out = buf;
		w->z.avail_out = sizeof(buf);
		ret = deflate(&w->z, flush);
		if (ret == Z_STREAM_ERROR) {
			w->err = -EIO;
			return;
		}
		n = sizeof(buf) - w->z.avail_out;
		errno = 0;
		if (n && fwrite(buf, 1, n, w->f) != n) {
			w->err = errno ? -errno : -EIO;
			return;
		}
	} while (w->z.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
	w->out.len = 0;
}

/* Called after each complete top-level field. */
static void w_maybe_flush(struct writer *w)
{
	if (w->out.len >= FLUSH_AT)
		w_deflate(w, Z_NO_FLUSH);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

static void str_rehash(struct writer *w, size_t cap)
{
	uint32_t *v = xcalloc(cap, sizeof(*v));

	for (size_t i = 0; i < w->nstrs; i++) {
		size_t j = hash_str(w->strs[i]) & (cap - 1);

		while (v[j])
			j = (j + 1) & (cap - 1);
		v[j] = i + 1;
	}
	free(w->str_hslot);
	w->str_hslot = v;
	w->str_hcap = cap;
}

/* Index of s in the string table, added if new. NULL means "". */
static uint64_t str_id(struct writer *w, const char *s)
{
	size_t mask, j;

	if (!s)
		s = "";
	mask = w->str_hcap - 1;
	for (j = hash_str(s) & mask; w->str_hslot[j]; j = (j + 1) & mask)
		if (!strcmp(w->strs[w->str_hslot[j] - 1], s))
			return w->str_hslot[j] - 1;
	if (w->nstrs == w->strs_cap) {
		w->strs_cap = w->strs_cap ? w->strs_cap * 2 : 64;
		w->strs = xrealloc(w->strs, w->strs_cap * sizeof(*w->strs));
	}
	w->strs[w->nstrs] = xstrdup(s);
	w->str_hslot[j] = ++w->nstrs;
	if (w->nstrs * 2 > w->str_hcap)
		str_rehash(w, w->str_hcap * 2);
	return w->nstrs - 1;
}

static int pmap_cmp(const void *a, const void *b)
{
	const struct pmap *x = a, *y = b;

	return x->m->start < y->m->start ? -1 : x->m->start > y->m->start;
}

/*
 * One Mapping per executable, file-backed line of the target's maps (the r-x
 * segment with its true offset: docs/profile-format.md §5). Anonymous
 * executable memory gets none; its locations have mapping_id 0.
 */
static void maps_init(struct writer *w)
{
	const struct proc_maps *pm = w->d->maps;

	if (!pm)
		return;
	w->maps = xcalloc(pm->n ? pm->n : 1, sizeof(*w->maps));
	for (size_t i = 0; i < pm->n; i++) {
		const struct proc_map *m = &pm->v[i];

		if ((m->prot & PROC_MAP_X) && m->path && m->path[0])
			w->maps[w->nmaps++].m = m;
	}
	qsort(w->maps, w->nmaps, sizeof(*w->maps), pmap_cmp);
}

/* Index into w->maps of the mapping holding addr, or -1. */
static ssize_t maps_find(const struct writer *w, uint64_t addr)
{
	size_t lo = 0, hi = w->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct proc_map *m = w->maps[mid].m;

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* ---- profile messages ---- */

static void put_value_type(struct writer *w, unsigned field, const char *type,
			   const char *unit)
{
	pb_u64(&w->msg, 1, str_id(w, type));
	pb_u64(&w->msg, 2, str_id(w, unit));
	pb_msg(&w->out, field, &w->msg);
}

/* Function id for a symbolized address, emitting the Function if new. */
static uint64_t function_id(struct writer *w, const struct sym_info *si)
{
	uint64_t k[3] = {
		str_id(w, si->function),
		str_id(w, si->system_name ? si->system_name : si->function),
		str_id(w, si->file),
	};
	uint64_t id = idmap_get(&w->funcs, k);

	if (id)
		return id;
	id = ++w->nfuncs;
	idmap_put(&w->funcs, k, id);
	pb_u64(&w->msg, 1, id);
	pb_u64(&w->msg, 2, k[0]);
	pb_u64(&w->msg, 3, k[1]);
	pb_u64(&w->msg, 4, k[2]);
	pb_msg(&w->out, PROFILE_FUNCTION, &w->msg);
	return id;
}

/*
 * Location id for the frame whose return address is pc, emitting the Location
 * (address pc - 1, docs/profile-format.md §5) and its Function if new. The
 * marks a stack ends with (PROFILE_PC_TRUNCATED, PROFILE_PC_UNWALKABLE) are
 * Locations of their own, address 0 and no mapping, in the Functions
 * "[truncated]" and "[unwalkable]".
 */
static uint64_t location_id(struct writer *w, uint64_t pc)
{
	uint64_t k[3] = { pc, 0, 0 }, addr = pc - 1, where = addr, id, fid = 0;
	struct sym_info si;
	ssize_t mi = maps_find(w, addr);
	int line = 0;

	id = idmap_get(&w->locs, k);
	if (id)
		return id;
	id = ++w->nlocs;
	idmap_put(&w->locs, k, id);

	if (profile_mark_name(pc)) {
		memset(&si, 0, sizeof(si));
		si.function = profile_mark_name(pc);
		fid = function_id(w, &si);
		addr = 0;
	} else if (w->d->extra && w->d->extra->namer && addr >= SYMBOLIZE_SNAPSHOT_BASE &&
		   addr < SYMBOLIZE_RETIRED_BASE) {
		memset(&si, 0, sizeof(si));
		if (!w->d->extra->namer(w->d->extra->namer_arg, addr, &si) && si.function)
			fid = function_id(w, &si);
	} else if (w->d->sym) {
		memset(&si, 0, sizeof(si));
		if (!symbolizer_lookup(w->d->sym, addr, &si) && si.function) {
			fid = function_id(w, &si);
			line = si.line;
		}
		where = si.addr ? si.addr : addr;	/* code that is gone: its own */
	}
	if (mi >= 0) {
		w->maps[mi].nlocs++;
		if (fid)
			w->maps[mi].nsym++;
	}
	if (pc > SYMBOLIZE_SNAPSHOT_BASE && pc < SYMBOLIZE_RETIRED_BASE) {
		mi = (ssize_t)w->nmaps + 1;	/* the [snapshot] mapping */
		w->snapshot = 1;
	} else if (pc > PYFRAMES_PC_BASE && pc < SYMBOLIZE_RETIRED_BASE) {
		mi = (ssize_t)w->nmaps;		/* the [python] mapping */
		w->python = 1;
	}
	pb_u64(&w->msg, 1, id);
	pb_u64(&w->msg, 2, mi >= 0 ? (uint64_t)mi + 1 : 0);
	pb_u64(&w->msg, 3, where);
	if (fid) {
		pb_u64(&w->sub, 1, fid);
		pb_u64(&w->sub, 2, (uint64_t)(int64_t)line);
		pb_msg(&w->msg, 4, &w->sub);
	}
	pb_msg(&w->out, PROFILE_LOCATION, &w->msg);
	return id;
}

/* b's figures as pprof shows them: each at its own interval (raised while
 * heapattach could not keep up). */
static void scaled(const struct profile_bucket *b, int64_t v[4])
{
	profile_scale(b->alloc_count, b->alloc_bytes, b->rate, &v[0], &v[1]);
	profile_scale(b->inuse_count, b->inuse_bytes, b->rate, &v[2], &v[3]);
}

static int base_add(const struct profile_bucket *b, void *arg)
{
	struct pprof_base *base = arg;

	if ((base->n & (base->n - 1)) == 0 && base->n >= 64)
		base->v = xrealloc(base->v, 2 * base->n * sizeof(*base->v));
	scaled(b, base->v[base->n++]);
	return 0;
}

void pprof_base_take(const struct profile *p, struct pprof_base *b)
{
	b->n = 0;
	b->wall_ns = clock_ns(CLOCK_REALTIME);
	b->v = xmalloc(64 * sizeof(*b->v));
	profile_foreach(p, base_add, b);
}

void pprof_base_free(struct pprof_base *b)
{
	free(b->v);
	b->v = NULL;
	b->n = 0;
}

/* profile_foreach callback: one Sample per bucket. Returns w->err (0 or -errno). */
static int put_sample(const struct profile_bucket *b, void *arg)
{
	struct writer *w = arg;
	struct profile_bucket at_peak;
	uint64_t v[4];
	int64_t sv[4];

	if (w->d->peak && !w->label) {
		at_peak = peak_bucket(w->d->peak, b, w->nbuckets++);
		b = &at_peak;
	}
	scaled(b, sv);
	if (w->d->base && !w->label) {
		const struct pprof_base *base = w->d->base;
		size_t i = w->nseen++;

		for (int k = 0; i < base->n && k < 4; k++)
			sv[k] -= base->v[i][k];
		if (!sv[0] && !sv[1] && !sv[2] && !sv[3])
			return 0;	/* nothing happened there meanwhile */
	}
	for (int k = 0; k < 4; k++)
		v[k] = (uint64_t)sv[k];	/* a delta's negative ones: two's complement */

	for (size_t i = 0; i < b->npcs; i++)
		w->ids[i] = location_id(w, b->pcs[i]);

	pb_packed(&w->msg, 1, w->ids, b->npcs);
	pb_packed(&w->msg, 2, v, 4);
	/* Label bytes=<size>, as Go writes it (no unit: pprof infers it). */
	pb_u64(&w->sub, 1, str_id(w, "bytes"));
	pb_u64(&w->sub, 3, b->size);
	pb_msg(&w->msg, 3, &w->sub);
	if (w->d->extra) {
		pb_u64(&w->sub, 1, str_id(w, w->d->extra->key));
		pb_u64(&w->sub, 2, str_id(w, w->label ? w->label : w->d->extra->own));
		pb_msg(&w->msg, 3, &w->sub);
	}
	if (w->pid_str) {
		pb_u64(&w->sub, 1, str_id(w, "pid"));
		pb_u64(&w->sub, 2, w->pid_str);
		pb_msg(&w->msg, 3, &w->sub);
	}
	pb_msg(&w->out, PROFILE_SAMPLE, &w->msg);
	w_maybe_flush(w);
	return w->err;
}

static void put_comment(struct writer *w, const char *s)
{
	pb_key(&w->out, PROFILE_COMMENT, 0);
	pb_varint(&w->out, str_id(w, s));
}

static void put_mappings(struct writer *w)
{
	for (size_t i = 0; i < w->nmaps; i++) {
		struct pmap *pm = &w->maps[i];
		const char *bid = NULL;

		if (w->d->sym)
			bid = symbolizer_build_id(w->d->sym, pm->m);
		pb_u64(&w->msg, 1, i + 1);
		pb_u64(&w->msg, 2, pm->m->start);
		pb_u64(&w->msg, 3, pm->m->end);
		pb_u64(&w->msg, 4, pm->m->offset);
		pb_u64(&w->msg, 5, str_id(w, pm->m->path));
		pb_u64(&w->msg, 6, str_id(w, bid));
		/*
		 * Set when heapattach named any location of the mapping: pprof
		 * then keeps our names. Unset, go tool pprof replaces every name
		 * of the mapping by what its local tools read from files on the
		 * reader's machine (docs/profile-format.md §5).
		 */
		pb_u64(&w->msg, 7, pm->nsym > 0);
		pb_msg(&w->out, PROFILE_MAPPING, &w->msg);
		w_maybe_flush(w);
	}
	if (w->python) {
		/* Python frames' pseudo-PCs (pyframes.h): named here, files and lines too */
		pb_u64(&w->msg, 1, w->nmaps + 1);
		pb_u64(&w->msg, 2, PYFRAMES_PC_BASE);
		pb_u64(&w->msg, 3, PYFRAMES_PC_BASE + PYFRAMES_MAX_PCS + 1);
		pb_u64(&w->msg, 5, str_id(w, "[python]"));
		pb_u64(&w->msg, 7, 1);
		pb_u64(&w->msg, 8, 1);
		pb_u64(&w->msg, 9, 1);
		pb_msg(&w->out, PROFILE_MAPPING, &w->msg);
	}
	if (w->snapshot) {
		/* a snapshot's names (snapshot/names.h): roots, owners, types */
		pb_u64(&w->msg, 1, w->nmaps + 2);
		pb_u64(&w->msg, 2, SYMBOLIZE_SNAPSHOT_BASE);
		pb_u64(&w->msg, 3, SYMBOLIZE_RETIRED_BASE);
		pb_u64(&w->msg, 5, str_id(w, "[snapshot]"));
		pb_u64(&w->msg, 7, 1);
		pb_msg(&w->out, PROFILE_MAPPING, &w->msg);
	}
}

static void put_strings(struct writer *w)
{
	for (size_t i = 0; i < w->nstrs; i++) {
		pb_bytes(&w->out, PROFILE_STRING_TABLE, w->strs[i], strlen(w->strs[i]));
		w_maybe_flush(w);
	}
}

static void writer_free(struct writer *w)
{
	for (size_t i = 0; i < w->nstrs; i++)
		free(w->strs[i]);
	free(w->strs);
	free(w->str_hslot);
	free(w->locs.e);
	free(w->funcs.e);
	free(w->maps);
	free(w->ids);
	free(w->out.b);
	free(w->msg.b);
	free(w->sub.b);
}

int pprof_write(FILE *f, const struct profile *p, const struct dump_info *d)
{
	struct writer w = { .f = f, .d = d, .rate = profile_rate(p) };
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	char line[320];
	int ret;

	if (deflateInit2(&w.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	str_rehash(&w, 256);
	str_id(&w, "");         /* string_table[0] must be "" */
	maps_init(&w);
	w.ids = xmalloc(PROFILE_MAX_FRAMES * sizeof(*w.ids));
	if (d->label_pid) {
		snprintf(line, sizeof(line), "%d", (int)d->pid);
		w.pid_str = str_id(&w, line);
	}

	put_value_type(&w, PROFILE_SAMPLE_TYPE, "alloc_objects", "count");
	put_value_type(&w, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes");
	put_value_type(&w, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
	put_value_type(&w, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
	put_value_type(&w, PROFILE_PERIOD_TYPE, "space", "bytes");
	pb_u64(&w.out, PROFILE_PERIOD, w.rate);

	ret = profile_foreach(p, put_sample, &w);
	if (!ret && d->extra && d->extra->p && !d->base) {
		w.label = d->extra->value;
		ret = profile_foreach(d->extra->p, put_sample, &w);
	}
	if (ret)
		goto out;

	snprintf(line, sizeof(line), "heapattach pid=%d", (int)d->pid);
	put_comment(&w, line);
	snprintf(line, sizeof(line), "rate=%" PRIu64, w.rate);
	put_comment(&w, line);
	if (profile_drops(p)) {
		snprintf(line, sizeof(line), "dropped events: %" PRIu64, profile_drops(p));
		put_comment(&w, line);
	}
	for (size_t i = 0; profile_raise_comment(p, i, now, line, sizeof(line)); i++)
		put_comment(&w, line);
	for (size_t i = 0; d->comments && i < d->ncomments; i++)
		put_comment(&w, d->comments[i]);
	if (d->default_type)
		pb_u64(&w.out, PROFILE_DEFAULT_SAMPLE_TYPE, str_id(&w, d->default_type));
	pb_u64(&w.out, PROFILE_TIME_NANOS, d->time_nanos);
	pb_u64(&w.out, PROFILE_DURATION_NANOS, d->duration_nanos);
	put_mappings(&w);
	put_strings(&w);
	w_deflate(&w, Z_FINISH);
	errno = 0;
	if (!w.err && fflush(f))
		w.err = errno ? -errno : -EIO;
	ret = w.err;
out:
	deflateEnd(&w.z);
	writer_free(&w);
	return ret;
}
