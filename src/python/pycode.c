/* Python code objects read from the target, and the pseudo-PCs that name their frames (pyframes). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/idmap.h"
#include "base/xmalloc.h"
#include "model/target.h"
#include "python/pyfind.h"
#include "python/pyframes.h"
#include "shm.h"
#include "stacks/symbolize.h"

/*
 * Everything here comes from the target's memory and is adversary input
 * (docs/threat-model.md): a code object's address is one the agent copied
 * from a frame, every pointer in it is only ever passed to target_read
 * (which fails on unmapped memory), every length is bounded (names
 * PYFRAMES_NAME_MAX bytes of UTF-8, line tables PYFRAMES_TABLE_MAX
 * bytes), the layout's offsets too (3.13+ takes them from the target's
 * _Py_DebugOffsets), and the line tables are walked by pylines.c, which
 * takes any bytes. What is kept is bounded: CODE_MAX cached code objects
 * holding at most CODE_BYTES_MAX bytes of tables (past either, the cache
 * starts again), PYFRAMES_MAX_PCS places, PLACE_CACHE_MAX (code, index)
 * pairs remembered.
 */

#define CODE_MAX	(1u << 16)
#define CODE_BYTES_MAX	(64u << 20)
#define PLACE_CACHE_MAX	(1u << 20)
#define HEAD_MAX	4096	/* the layout's code object fields lie below this */
#define PYTHON_UNKNOWN	"[python]"

/* What a code object is checked against when its address comes again. */
struct fingerprint {
	uint64_t type, name, qualname, filename, linetable;
	int32_t firstlineno;
};

/* One code object as read: names interned, its line table copied. */
struct pycode {
	uint64_t addr;
	uint64_t serial;		/* unique per decode: keys pf->at */
	uint64_t checked_ns;		/* when the fingerprint was last read */
	struct fingerprint fp;
	int ok;				/* 0: undecodable, named "[python]" */
	const char *function, *file;	/* interned */
	int firstlineno;
	uint8_t *table;
	size_t ntable;
};

/* One pseudo-PC's names: pseudo-PC PYFRAMES_PC_BASE + index + 1. */
struct place {
	const char *function, *file;	/* interned; file may be NULL */
	const char *system;		/* "python:" function, interned */
	int line;
};

struct pyframes {
	struct target *t;
	struct py_layout lay;
	uint64_t code_type;
	struct pycode *codes;		/* cache; ncodes used */
	size_t ncodes, capcodes;
	size_t code_bytes;		/* table bytes held by codes */
	struct idmap by_addr;		/* (address) -> codes index + 1 */
	uint64_t serial;
	char **strs;			/* interned strings */
	size_t nstrs, capstrs;
	struct idmap by_str;		/* (hash, length) -> strs index + 1 */
	struct place *places;		/* places[0] is "[python]" */
	size_t nplaces, capplaces;
	struct idmap by_place;		/* (function, file, line) -> places index + 1 */
	struct idmap at;		/* (serial, instruction index) -> places index + 1 */
	uint64_t now_ns;
};

/* ---- interning ---- */

/* Array v of *cap elements of size bytes with room for element n. */
static void *grow(void *v, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 256;
	return xrealloc(v, *cap * size);
}

/* FNV-1a of s[0..n), mixed. */
static uint64_t str_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	return mix64(h);
}

/* The interned copy of s (NULL for NULL), one per distinct string. */
static const char *intern(struct pyframes *pf, const char *s)
{
	size_t n;
	uint64_t k[3], id;

	if (!s)
		return NULL;
	n = strlen(s);
	k[0] = str_hash(s, n);
	k[1] = n;
	k[2] = 0;
	id = idmap_get(&pf->by_str, k);
	if (id && !strcmp(pf->strs[id - 1], s))
		return pf->strs[id - 1];
	pf->strs = grow(pf->strs, pf->nstrs, &pf->capstrs, sizeof(*pf->strs));
	pf->strs[pf->nstrs++] = xstrdup(s);
	if (!id)	/* a colliding string is kept, not indexed */
		idmap_put(&pf->by_str, k, pf->nstrs);
	return pf->strs[pf->nstrs - 1];
}

/* The index of place (function, file, line) (interned strings), made if new;
 * 0 ("[python]") once PYFRAMES_MAX_PCS are made. */
static size_t place_of(struct pyframes *pf, const char *function, const char *file, int line)
{
	uint64_t k[3] = { (uint64_t)(uintptr_t)function, (uint64_t)(uintptr_t)file,
			  (uint64_t)(uint32_t)line };
	uint64_t id = idmap_get(&pf->by_place, k);
	char sys[PYFRAMES_NAME_MAX + 8];

	if (id)
		return id - 1;
	if (pf->nplaces >= PYFRAMES_MAX_PCS)
		return 0;
	/* go tool pprof keeps a Function's name as written only when its
	 * system name differs; else it takes <...> in it (<module>, <lambda>)
	 * for C++ template arguments and strips them */
	snprintf(sys, sizeof(sys), "python:%s", function);
	pf->places = grow(pf->places, pf->nplaces, &pf->capplaces, sizeof(*pf->places));
	pf->places[pf->nplaces] = (struct place){ function, file, intern(pf, sys), line };
	idmap_put(&pf->by_place, k, ++pf->nplaces);
	return pf->nplaces - 1;
}

/* ---- reading objects ---- */

static uint64_t get_u64(const uint8_t *p, uint32_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static int32_t get_i32(const uint8_t *p, uint32_t off)
{
	int32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* Append code point c to out (UTF-8, at most PYFRAMES_NAME_MAX bytes with
 * the NUL); control characters, surrogates and non-characters become '?'.
 * 0, or -ENOSPC when c does not fit (out stays a whole string). */
static int put_utf8(char *out, size_t *len, uint32_t c)
{
	uint8_t b[4];
	size_t n;

	if (c < 0x20 || c == 0x7f || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = '?';
	if (c < 0x80) {
		b[0] = (uint8_t)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = 0xc0 | (c >> 6);
		b[1] = 0x80 | (c & 0x3f);
		n = 2;
	} else if (c < 0x10000) {
		b[0] = 0xe0 | (c >> 12);
		b[1] = 0x80 | ((c >> 6) & 0x3f);
		b[2] = 0x80 | (c & 0x3f);
		n = 3;
	} else {
		b[0] = 0xf0 | (c >> 18);
		b[1] = 0x80 | ((c >> 12) & 0x3f);
		b[2] = 0x80 | ((c >> 6) & 0x3f);
		b[3] = 0x80 | (c & 0x3f);
		n = 4;
	}
	if (*len + n >= PYFRAMES_NAME_MAX)
		return -ENOSPC;
	memcpy(out + *len, b, n);
	*len += n;
	out[*len] = 0;
	return 0;
}

/* PyASCIIObject.state: kind (1, 2, 4 bytes a character), compact, ascii;
 * the same bits in 3.8-3.13. */
#define UNI_KIND(s)	(((s) >> 2) & 7)
#define UNI_COMPACT(s)	(((s) >> 5) & 1)
#define UNI_ASCII(s)	(((s) >> 6) & 1)

/*
 * The str object at addr as UTF-8 in out[PYFRAMES_NAME_MAX] (cut at a
 * whole character). Compact strings only (what the compiler makes for code
 * objects' names); 0 or -errno.
 */
static int read_str(struct pyframes *pf, uint64_t addr, char *out)
{
	const struct py_layout *l = &pf->lay;
	uint8_t head[HEAD_MAX / 16], raw[PYFRAMES_NAME_MAX * 4];
	uint32_t hn = l->uni_compact_size, state, kind;
	uint64_t len, data;
	size_t n = 0;
	int64_t slen;
	int ret;

	out[0] = 0;
	if (hn > sizeof(head) || l->uni_length + 8 > hn || l->uni_state + 4 > hn ||
	    l->uni_ascii_size > hn)
		return -EINVAL;
	ret = target_read(pf->t, addr, head, hn);
	if (ret)
		return ret;
	slen = (int64_t)get_u64(head, l->uni_length);
	memcpy(&state, head + l->uni_state, sizeof(state));
	kind = UNI_KIND(state);
	if (slen < 0 || !UNI_COMPACT(state) || (kind != 1 && kind != 2 && kind != 4) ||
	    (UNI_ASCII(state) && kind != 1))
		return -EINVAL;
	data = addr + (UNI_ASCII(state) ? l->uni_ascii_size : l->uni_compact_size);
	len = (uint64_t)slen < PYFRAMES_NAME_MAX ? (uint64_t)slen : PYFRAMES_NAME_MAX;
	ret = target_read(pf->t, data, raw, len * kind);
	if (ret)
		return ret;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | raw[2 * i + 1] << 8 :
			     (uint32_t)raw[4 * i] | raw[4 * i + 1] << 8 | raw[4 * i + 2] << 16 |
			     (uint32_t)raw[4 * i + 3] << 24;

		if (UNI_ASCII(state) && c >= 0x80)
			c = '?';
		if (put_utf8(out, &n, c))
			break;
	}
	return 0;
}

/* The bytes object at addr, copied (at most PYFRAMES_TABLE_MAX bytes, else
 * -E2BIG) into a new *buf of *n bytes. 0 or -errno. */
static int read_bytes(struct pyframes *pf, uint64_t addr, uint8_t **buf, size_t *n)
{
	const struct py_layout *l = &pf->lay;
	uint8_t head[HEAD_MAX / 16];
	uint32_t hn = l->bytes_sval;
	int64_t len;
	int ret;

	*buf = NULL;
	*n = 0;
	if (hn > sizeof(head) || l->ob_size + 8 > hn)
		return -EINVAL;
	ret = target_read(pf->t, addr, head, hn);
	if (ret)
		return ret;
	len = (int64_t)get_u64(head, l->ob_size);
	if (len < 0 || len > PYFRAMES_TABLE_MAX)
		return len < 0 ? -EINVAL : -E2BIG;
	*buf = xmalloc(len ? (size_t)len : 1);
	ret = target_read(pf->t, addr + hn, *buf, (size_t)len);
	if (ret) {
		free(*buf);
		*buf = NULL;
		return ret;
	}
	*n = (size_t)len;
	return 0;
}

/* The fingerprint of the code object at addr (one read). 0 or -errno. */
static int read_fingerprint(struct pyframes *pf, uint64_t addr, struct fingerprint *fp)
{
	const struct py_layout *l = &pf->lay;
	uint8_t head[HEAD_MAX];
	uint32_t end = 0;
	const uint32_t ptrs[] = { l->ob_type, l->co_name, l->co_qualname, l->co_filename,
				  l->co_linetable, l->co_firstlineno };
	int ret;

	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		if (ptrs[i] + 8 > end)
			end = ptrs[i] + 8;
	if (end > HEAD_MAX)
		return -EINVAL;
	ret = target_read(pf->t, addr, head, end);
	if (ret)
		return ret;
	*fp = (struct fingerprint){
		.type = get_u64(head, l->ob_type),
		.name = get_u64(head, l->co_name),
		.qualname = l->minor >= 11 && l->co_qualname ? get_u64(head, l->co_qualname) : 0,
		.filename = get_u64(head, l->co_filename),
		.linetable = get_u64(head, l->co_linetable),
		.firstlineno = get_i32(head, l->co_firstlineno),
	};
	return 0;
}

static int same_fingerprint(const struct fingerprint *a, const struct fingerprint *b)
{
	return a->type == b->type && a->name == b->name && a->qualname == b->qualname &&
	       a->filename == b->filename && a->linetable == b->linetable &&
	       a->firstlineno == b->firstlineno;
}

/* Fill c (addr, fp set) from the target: names, first line, line table. */
static void decode(struct pyframes *pf, struct pycode *c)
{
	char name[PYFRAMES_NAME_MAX], file[PYFRAMES_NAME_MAX];
	const struct fingerprint *fp = &c->fp;

	c->ok = 0;
	c->function = c->file = NULL;
	c->table = NULL;
	c->ntable = 0;
	c->serial = ++pf->serial;
	if (fp->type != pf->code_type)
		return;
	if ((!fp->qualname || read_str(pf, fp->qualname, name)) && read_str(pf, fp->name, name))
		return;
	c->ok = 1;
	c->function = intern(pf, name[0] ? name : PYTHON_UNKNOWN);
	c->file = read_str(pf, fp->filename, file) ? NULL : intern(pf, file);
	c->firstlineno = fp->firstlineno > 0 ? fp->firstlineno : 0;
	if (!read_bytes(pf, fp->linetable, &c->table, &c->ntable))
		pf->code_bytes += c->ntable;
}

/* Drop every cached code object (what they named stays). */
static void codes_clear(struct pyframes *pf)
{
	for (size_t i = 0; i < pf->ncodes; i++)
		free(pf->codes[i].table);
	pf->ncodes = 0;
	pf->code_bytes = 0;
	idmap_clear(&pf->by_addr);
	idmap_clear(&pf->at);
}

/*
 * The code object at addr, read when new, and read again when its
 * fingerprint, checked once it is PYFRAMES_RECHECK_NS old, changed (its
 * address was freed and reused). NULL when it cannot be read at all.
 */
static struct pycode *code_at(struct pyframes *pf, uint64_t addr)
{
	uint64_t k[3] = { addr, 0, 0 }, id = idmap_get(&pf->by_addr, k);
	struct fingerprint fp;
	struct pycode *c;

	if (id) {
		c = &pf->codes[id - 1];
		if (pf->now_ns - c->checked_ns < PYFRAMES_RECHECK_NS)
			return c;
		c->checked_ns = pf->now_ns;
		if (read_fingerprint(pf, addr, &fp)) {
			c->ok = 0;	/* gone: "[python]" until readable */
			c->serial = ++pf->serial;
			return c;
		}
		if (same_fingerprint(&fp, &c->fp) && c->ok)
			return c;
		pf->code_bytes -= c->ntable;
		free(c->table);
		c->fp = fp;
		decode(pf, c);
		return c;
	}
	if (read_fingerprint(pf, addr, &fp))
		return NULL;
	if (pf->ncodes >= CODE_MAX || pf->code_bytes >= CODE_BYTES_MAX)
		codes_clear(pf);
	pf->codes = grow(pf->codes, pf->ncodes, &pf->capcodes, sizeof(*pf->codes));
	c = &pf->codes[pf->ncodes++];
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->fp = fp;
	c->checked_ns = pf->now_ns;
	decode(pf, c);
	idmap_put(&pf->by_addr, k, pf->ncodes);
	return c;
}

/* The line of instruction idx of c (co_firstlineno when unknown or none). */
static int line_of(const struct pyframes *pf, const struct pycode *c, uint32_t idx)
{
	int line = -1;

	if (idx == SHM_PY_INSTR_UNKNOWN || !c->table)
		return c->firstlineno;
	if (pf->lay.minor <= 9)
		line = pylines_lnotab(c->table, c->ntable, c->firstlineno, idx);
	else if (pf->lay.minor == 10)
		line = pylines_310(c->table, c->ntable, c->firstlineno, idx);
	else
		line = pylines_311(c->table, c->ntable, c->firstlineno, idx);
	return line >= 0 ? line : c->firstlineno;
}

/* The place index of one packed word. */
static size_t place_of_word(struct pyframes *pf, uint64_t w)
{
	uint32_t idx = SHM_PY_WORD_INSTR(w);
	struct pycode *c = code_at(pf, SHM_PY_WORD_CODE(w));
	uint64_t k[3], id;
	size_t p;

	if (!c || !c->ok)
		return 0;
	k[0] = c->serial;
	k[1] = idx;
	k[2] = 0;
	id = idmap_get(&pf->at, k);
	if (id)
		return id - 1;
	p = place_of(pf, c->function, c->file, line_of(pf, c, idx));
	if (pf->at.n >= PLACE_CACHE_MAX)
		idmap_clear(&pf->at);
	idmap_put(&pf->at, k, p + 1);
	return p;
}

/* ---- the interface ---- */

struct pyframes *pyframes_new(struct target *t, const struct py_target *pt)
{
	struct pyframes *pf = xcalloc(1, sizeof(*pf));

	pf->t = t;
	pf->lay = pt->lay;
	pf->code_type = pt->code_type;
	place_of(pf, intern(pf, PYTHON_UNKNOWN), NULL, 0);
	return pf;
}

void pyframes_free(struct pyframes *pf)
{
	if (!pf)
		return;
	codes_clear(pf);
	free(pf->codes);
	for (size_t i = 0; i < pf->nstrs; i++)
		free(pf->strs[i]);
	free(pf->strs);
	free(pf->places);
	idmap_clear(&pf->by_str);
	idmap_clear(&pf->by_place);
	free(pf);
}

size_t pyframes_decode(struct pyframes *pf, const uint64_t *words, size_t n,
		       uint64_t *pcs, uint8_t *ends)
{
	pf->now_ns = clock_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < n; i++) {
		pcs[i] = PYFRAMES_PC_BASE + place_of_word(pf, words[i]) + 1;
		ends[i] = !!(words[i] & SHM_PY_WORD_END);
	}
	return n;
}

int pyframes_namer(const void *pf, uint64_t addr, struct sym_info *out)
{
	return pyframes_lookup(pf, addr, out);
}

int pyframes_lookup(const struct pyframes *pf, uint64_t addr, struct sym_info *out)
{
	const struct place *p;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	if (addr < PYFRAMES_PC_BASE || addr - PYFRAMES_PC_BASE >= pf->nplaces)
		return -ENOENT;
	p = &pf->places[addr - PYFRAMES_PC_BASE];
	out->function = p->function;
	out->system_name = p->system;
	out->file = p->file;
	out->line = p->line;
	return 0;
}
