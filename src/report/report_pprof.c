/* pprof profile.proto reader: zlib inflate and a small protobuf decoder, every length and index checked. */
/* SPDX-License-Identifier: MIT */

/*
 * The fields read are those of google/pprof proto/profile.proto that a heap
 * report needs (docs/profile-format.md §1): sample_type, sample (location
 * ids and values), location (id, address, lines), function (id, name),
 * string_table, time_nanos, duration_nanos, period, comment. Repeated
 * integers are accepted packed or not, unknown fields are skipped. After
 * decoding, each sample's location ids become frame names: one per Line
 * (inlined callees first, as the format orders them), the function's name,
 * else its system name, else the address in hex.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "base/xmalloc.h"
#include "report/report_pprof.h"

/* ---- growable vectors ---- */

struct vec {
	void *v;
	size_t n, cap, elt;
};

static void *vec_push(struct vec *x)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 16;
		x->v = xrealloc(x->v, x->cap * x->elt);
	}
	return (char *)x->v + x->n++ * x->elt;
}

/* The vector's array, allocated if still empty (so that base + 0 is defined). */
static void *vec_base(struct vec *x)
{
	if (!x->v) {
		x->cap = 16;
		x->v = xmalloc(x->cap * x->elt);
	}
	return x->v;
}

/* ---- protobuf wire format ---- */

struct pbr {
	const uint8_t *p, *end;
};

static int pbr_varint(struct pbr *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end)
			return -EBADMSG;
		uint8_t b = *r->p++;

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;	/* more than 10 bytes */
}

/* One field: its number and wire type; a varint or fixed value in *v, a
 * length-delimited one in *sub. 0 or -EBADMSG (groups are refused). */
static int pbr_field(struct pbr *r, unsigned *field, unsigned *wt, uint64_t *v, struct pbr *sub)
{
	uint64_t key, len;

	if (pbr_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
		return -EBADMSG;
	*field = (unsigned)(key >> 3);
	*wt = key & 7;
	switch (*wt) {
	case 0:
		return pbr_varint(r, v);
	case 1:
	case 5:
		len = *wt == 1 ? 8 : 4;
		if ((size_t)(r->end - r->p) < len)
			return -EBADMSG;
		*v = 0;
		for (unsigned i = 0; i < len; i++)
			*v |= (uint64_t)r->p[i] << (8 * i);
		r->p += len;
		return 0;
	case 2:
		if (pbr_varint(r, &len) || len > (uint64_t)(r->end - r->p))
			return -EBADMSG;
		sub->p = r->p;
		sub->end = r->p + len;
		r->p += len;
		return 0;
	default:
		return -EBADMSG;
	}
}

/* Append the integers of a repeated field (packed in sub, or one in v) to x (uint64_t). */
static int pbr_repeated(unsigned wt, uint64_t v, struct pbr *sub, struct vec *x)
{
	if (wt == 0) {
		*(uint64_t *)vec_push(x) = v;
		return 0;
	}
	if (wt != 2)
		return -EBADMSG;
	while (sub->p < sub->end) {
		if (pbr_varint(sub, &v))
			return -EBADMSG;
		*(uint64_t *)vec_push(x) = v;
	}
	return 0;
}

/* ---- the decoded profile ---- */

struct rloc {
	uint64_t id, address;
	size_t line0, nlines;   /* function ids in store.line_fn */
};

struct rfunc {
	uint64_t id, name, system_name;
};

struct rsample {
	size_t loc0, nlocs, val0, nvals;
};

struct store {
	uint8_t *raw;           /* the inflated protobuf; strings point into it */
	struct vec strs;        /* char * (NUL-terminated copies) */
	struct vec types, units;        /* uint64_t string indices */
	struct vec locs, funcs, samples;
	struct vec line_fn;     /* uint64_t function id per Line */
	struct vec loc_ids;     /* uint64_t per sample location */
	struct vec vals;        /* uint64_t (int64 bits) per sample value */
	struct vec comments;    /* uint64_t string indices */
	struct vec frames;      /* const char * */
	struct vec hexnames;    /* char * made for unnamed frames */
	const char **type_s, **unit_s, **comment_s;
	struct rprof_sample *out;
};

static void store_free(struct store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->strs.n; i++)
		free(((char **)s->strs.v)[i]);
	for (size_t i = 0; i < s->hexnames.n; i++)
		free(((char **)s->hexnames.v)[i]);
	free(s->strs.v);
	free(s->hexnames.v);
	free(s->types.v);
	free(s->units.v);
	free(s->locs.v);
	free(s->funcs.v);
	free(s->samples.v);
	free(s->line_fn.v);
	free(s->loc_ids.v);
	free(s->vals.v);
	free(s->comments.v);
	free(s->frames.v);
	free(s->type_s);
	free(s->unit_s);
	free(s->comment_s);
	free(s->out);
	free(s->raw);
	free(s);
}

static void store_init(struct store *s)
{
	memset(s, 0, sizeof(*s));
	s->strs.elt = sizeof(char *);
	s->hexnames.elt = sizeof(char *);
	s->types.elt = s->units.elt = s->line_fn.elt = s->loc_ids.elt = s->vals.elt =
		s->comments.elt = sizeof(uint64_t);
	s->locs.elt = sizeof(struct rloc);
	s->funcs.elt = sizeof(struct rfunc);
	s->samples.elt = sizeof(struct rsample);
	s->frames.elt = sizeof(const char *);
}

/* The varint fields numbered below n of message m into v[field] (zeros
 * first); other fields are skipped. 0 or -EBADMSG. */
static int pbr_scalars(struct pbr *m, uint64_t *v, unsigned n)
{
	uint64_t x = 0;
	unsigned f, wt;
	struct pbr sub;

	memset(v, 0, n * sizeof(*v));
	while (m->p < m->end) {
		if (pbr_field(m, &f, &wt, &x, &sub))
			return -EBADMSG;
		if (wt == 0 && f < n)
			v[f] = x;
	}
	return 0;
}

/* ValueType: type = 1, unit = 2 (string indices). */
static int parse_value_type(struct pbr *m, struct store *s)
{
	uint64_t v[3];

	if (pbr_scalars(m, v, 3))
		return -EBADMSG;
	if (s->types.n >= RPROF_MAX_TYPES)
		return -E2BIG;
	*(uint64_t *)vec_push(&s->types) = v[1];
	*(uint64_t *)vec_push(&s->units) = v[2];
	return 0;
}

static int parse_sample(struct pbr *m, struct store *s)
{
	struct rsample *sm;
	size_t loc0 = s->loc_ids.n, val0 = s->vals.n;
	uint64_t v = 0;
	unsigned f, wt;
	struct pbr sub;

	while (m->p < m->end) {
		if (pbr_field(m, &f, &wt, &v, &sub))
			return -EBADMSG;
		if (f == 1 && pbr_repeated(wt, v, &sub, &s->loc_ids))
			return -EBADMSG;
		if (f == 2 && pbr_repeated(wt, v, &sub, &s->vals))
			return -EBADMSG;
		if (s->loc_ids.n > RPROF_MAX_FRAMES)
			return -E2BIG;
	}
	sm = vec_push(&s->samples);
	sm->loc0 = loc0;
	sm->nlocs = s->loc_ids.n - loc0;
	sm->val0 = val0;
	sm->nvals = s->vals.n - val0;
	return 0;
}

/* Line: function_id = 1 (line = 2 is not used). */
static int parse_line(struct pbr *m, struct store *s)
{
	uint64_t v[2];

	if (pbr_scalars(m, v, 2))
		return -EBADMSG;
	*(uint64_t *)vec_push(&s->line_fn) = v[1];
	return 0;
}

static int parse_location(struct pbr *m, struct store *s)
{
	struct rloc l = { .line0 = s->line_fn.n };
	uint64_t v = 0;
	unsigned f, wt;
	struct pbr sub;

	while (m->p < m->end) {
		if (pbr_field(m, &f, &wt, &v, &sub))
			return -EBADMSG;
		if (f == 1 && wt == 0)
			l.id = v;
		else if (f == 3 && wt == 0)
			l.address = v;
		else if (f == 4 && wt == 2 && parse_line(&sub, s))
			return -EBADMSG;
	}
	l.nlines = s->line_fn.n - l.line0;
	*(struct rloc *)vec_push(&s->locs) = l;
	return 0;
}

/* Function: id = 1, name = 2, system_name = 3. */
static int parse_function(struct pbr *m, struct store *s)
{
	uint64_t v[4];

	if (pbr_scalars(m, v, 4))
		return -EBADMSG;
	*(struct rfunc *)vec_push(&s->funcs) = (struct rfunc){ .id = v[1], .name = v[2],
								.system_name = v[3] };
	return 0;
}

/* A string of the table: a NUL-terminated copy (the wire has no NUL). */
static void add_string(struct store *s, const struct pbr *sub)
{
	size_t n = (size_t)(sub->end - sub->p);
	char *c = xmalloc(n + 1);

	memcpy(c, sub->p, n);
	c[n] = 0;
	*(char **)vec_push(&s->strs) = c;
}

static int parse_profile(struct pbr *m, struct store *s, struct rprof *out)
{
	uint64_t v = 0;
	unsigned f, wt;
	struct pbr sub;
	int rc;

	while (m->p < m->end) {
		if (pbr_field(m, &f, &wt, &v, &sub))
			return -EBADMSG;
		rc = 0;
		switch (f) {
		case 1: if (wt == 2) rc = parse_value_type(&sub, s); break;
		case 2: if (wt == 2) rc = parse_sample(&sub, s); break;
		case 4: if (wt == 2) rc = parse_location(&sub, s); break;
		case 5: if (wt == 2) rc = parse_function(&sub, s); break;
		case 6: if (wt == 2) add_string(s, &sub); break;
		case 9: if (wt == 0) out->time_nanos = v; break;
		case 10: if (wt == 0) out->duration_nanos = v; break;
		case 12: if (wt == 0) out->period = (int64_t)v; break;
		case 13: rc = pbr_repeated(wt, v, &sub, &s->comments); break;
		default: break;
		}
		if (rc)
			return rc;
		if (s->loc_ids.n > RPROF_MAX_FRAMES || s->line_fn.n > RPROF_MAX_FRAMES)
			return -E2BIG;
	}
	return 0;
}

/* ---- resolving ids ---- */

static int cmp_loc(const void *a, const void *b)
{
	const struct rloc *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_func(const void *a, const void *b)
{
	const struct rfunc *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static const struct rloc *find_loc(const struct store *s, uint64_t id)
{
	struct rloc key = { .id = id };

	if (!s->locs.n)
		return NULL;
	return bsearch(&key, s->locs.v, s->locs.n, sizeof(key), cmp_loc);
}

static const struct rfunc *find_func(const struct store *s, uint64_t id)
{
	struct rfunc key = { .id = id };

	if (!s->funcs.n)
		return NULL;
	return bsearch(&key, s->funcs.v, s->funcs.n, sizeof(key), cmp_func);
}

/* The string at index i, or NULL when i is out of the table. */
static const char *str_at(const struct store *s, uint64_t i)
{
	return i < s->strs.n ? ((char **)s->strs.v)[i] : NULL;
}

/* Sorted ids must be unique (pprof refuses duplicates too). */
static int check_unique(const void *base, size_t n, size_t elt)
{
	for (size_t i = 1; i < n; i++)
		if (*(const uint64_t *)((const char *)base + i * elt) ==
		    *(const uint64_t *)((const char *)base + (i - 1) * elt))
			return -EBADMSG;
	return 0;
}

static const char *hex_name(struct store *s, uint64_t addr)
{
	char *c = xmalloc(24);

	snprintf(c, 24, "0x%" PRIx64, addr);
	*(char **)vec_push(&s->hexnames) = c;
	return c;
}

/* The frames of location l, appended to s->frames. */
static int push_frames(struct store *s, const struct rloc *l)
{
	size_t pushed = 0;

	for (size_t k = 0; k < l->nlines; k++) {
		const struct rfunc *fn = find_func(s, ((uint64_t *)s->line_fn.v)[l->line0 + k]);
		const char *name;

		if (!fn)
			continue;	/* a Line naming no function: no frame */
		name = str_at(s, fn->name);
		if (!name || !*name)
			name = str_at(s, fn->system_name);
		if (!name || !*name)
			continue;
		*(const char **)vec_push(&s->frames) = name;
		pushed++;
	}
	if (!pushed)
		*(const char **)vec_push(&s->frames) = hex_name(s, l->address);
	return s->frames.n > RPROF_MAX_FRAMES ? -E2BIG : 0;
}

static int resolve(struct store *s, struct rprof *out)
{
	size_t nt = s->types.n;
	size_t *first;
	int rc = 0;

	if (!s->strs.n || *str_at(s, 0))
		return -EBADMSG;	/* the table must start with "" */
	if (s->locs.n)
		qsort(s->locs.v, s->locs.n, sizeof(struct rloc), cmp_loc);
	if (s->funcs.n)
		qsort(s->funcs.v, s->funcs.n, sizeof(struct rfunc), cmp_func);
	if (check_unique(s->locs.v, s->locs.n, sizeof(struct rloc)) ||
	    check_unique(s->funcs.v, s->funcs.n, sizeof(struct rfunc)))
		return -EBADMSG;
	s->type_s = xcalloc(nt + 1, sizeof(char *));
	s->unit_s = xcalloc(nt + 1, sizeof(char *));
	for (size_t i = 0; i < nt; i++) {
		s->type_s[i] = str_at(s, ((uint64_t *)s->types.v)[i]);
		s->unit_s[i] = str_at(s, ((uint64_t *)s->units.v)[i]);
		if (!s->type_s[i] || !s->unit_s[i])
			return -EBADMSG;
	}
	s->comment_s = xcalloc(s->comments.n + 1, sizeof(char *));
	for (size_t i = 0; i < s->comments.n; i++)
		if (!(s->comment_s[i] = str_at(s, ((uint64_t *)s->comments.v)[i])))
			return -EBADMSG;
	first = xcalloc(s->samples.n + 1, sizeof(size_t));
	for (size_t i = 0; i < s->samples.n && !rc; i++) {
		const struct rsample *sm = &((struct rsample *)s->samples.v)[i];

		if (sm->nvals != nt) {
			rc = -EBADMSG;	/* pprof: "mismatch between sample types and values" */
			break;
		}
		first[i] = s->frames.n;
		for (size_t k = 0; k < sm->nlocs && !rc; k++) {
			const struct rloc *l = find_loc(s, ((uint64_t *)s->loc_ids.v)[sm->loc0 + k]);

			rc = l ? push_frames(s, l) : -EBADMSG;
		}
	}
	first[s->samples.n] = s->frames.n;
	if (!rc) {
		s->out = xcalloc(s->samples.n + 1, sizeof(*s->out));
		for (size_t i = 0; i < s->samples.n; i++) {
			const struct rsample *sm = &((struct rsample *)s->samples.v)[i];

			s->out[i].frames = (const char **)vec_base(&s->frames) + first[i];
			s->out[i].nframes = first[i + 1] - first[i];
			s->out[i].values = (const int64_t *)vec_base(&s->vals) + sm->val0;
		}
		out->ntypes = nt;
		out->type = s->type_s;
		out->unit = s->unit_s;
		out->nsamples = s->samples.n;
		out->samples = s->out;
		out->ncomments = s->comments.n;
		out->comments = s->comment_s;
	}
	free(first);
	return rc;
}

/* ---- inflate ---- */

/* Inflate a gzip or zlib stream into *raw (malloc'd). 0, -EBADMSG or -E2BIG. */
static int inflate_all(const uint8_t *buf, size_t len, uint8_t **raw, size_t *rawlen)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 4096, n = 0;
	uint8_t *out;
	int zr, rc = 0;

	if (cap > RPROF_MAX_RAW)
		cap = RPROF_MAX_RAW;
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return -ENOMEM;
	out = xmalloc(cap);
	z.next_in = (Bytef *)buf;
	for (;;) {
		uInt in = len > (1u << 30) ? 1u << 30 : (uInt)len;

		if (n == cap) {
			if (cap >= RPROF_MAX_RAW) {
				rc = -E2BIG;
				break;
			}
			cap = cap * 2 > RPROF_MAX_RAW ? RPROF_MAX_RAW : cap * 2;
			out = xrealloc(out, cap);
		}
		z.avail_in = in;
		z.next_out = out + n;
		z.avail_out = (uInt)(cap - n > (1u << 30) ? 1u << 30 : cap - n);
		zr = inflate(&z, Z_NO_FLUSH);
		n = (size_t)(z.next_out - out);
		len -= in - z.avail_in;
		if (zr == Z_STREAM_END)
			break;
		if ((zr != Z_OK && zr != Z_BUF_ERROR) || (n < cap && !len)) {
			rc = -EBADMSG;	/* corrupt, or truncated: room left and no input */
			break;
		}
	}
	inflateEnd(&z);
	if (rc) {
		free(out);
		return rc;
	}
	*raw = out;
	*rawlen = n;
	return 0;
}

int rprof_parse(const uint8_t *buf, size_t len, struct rprof *out)
{
	struct store *s = xmalloc(sizeof(*s));
	struct pbr m;
	size_t rawlen = len;
	int rc;

	memset(out, 0, sizeof(*out));
	store_init(s);
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		rc = inflate_all(buf, len, &s->raw, &rawlen);
		if (rc)
			goto err;
		m.p = s->raw;
	} else {
		m.p = buf;
	}
	m.end = m.p + rawlen;
	rc = parse_profile(&m, s, out);
	if (!rc)
		rc = resolve(s, out);
	if (rc)
		goto err;
	free(s->raw);	/* strings are copies */
	s->raw = NULL;
	out->priv = s;
	return 0;
err:
	store_free(s);
	memset(out, 0, sizeof(*out));
	return rc;
}

int rprof_read_file(const char *path, struct rprof *out)
{
	struct stat st;
	uint8_t *buf;
	size_t n = 0;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > RPROF_MAX_FILE) {
		close(fd);
		return -E2BIG;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	rc = rprof_parse(buf, n, out);
	free(buf);
	return rc;
}

int rprof_type_index(const struct rprof *p, const char *type)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(p->type[i], type))
			return (int)i;
	return -1;
}

void rprof_free(struct rprof *p)
{
	store_free(p->priv);
	memset(p, 0, sizeof(*p));
}
