/* A CPython target's module globals as named roots ("__main__.cache"), so that what one global alone keeps alive is owned by it. */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "snapshot/pyroots.h"
#include "snapshot/pytypes.h"

#define GC_HEAD 16                      /* sizeof(PyGC_Head), 3.8 on */
#define MOD_DICT 16                     /* PyModuleObject.md_dict */
#define MOD_NAME 48                     /* PyModuleObject.md_name */
#define MOD_READ 56
#define DICT_KEYS 32                    /* PyDictObject.ma_keys */
#define DICT_VALUES 40                  /* PyDictObject.ma_values */
#define DICT_READ 48
#define KEYS_READ 48                    /* a keys table's header, either layout */
#define STR_LEN 16                      /* PyASCIIObject.length */
#define STR_STATE 32                    /* PyASCIIObject.state */
#define STR_READ 176                    /* bytes of a str read: its header, 128 characters */
#define NAME_MAX_LEN 120                /* characters of a key or a module's name */
#define LOG2_MAX 30                     /* a module dict of 2^30 slots at most */
#define ENTRIES_MAX (1u << 24)          /* entries of one module dict */
#define ROOTS_MAX (1u << 24)            /* named roots in all */

/* Where a keys table's entries are and what each holds. */
struct table {
	uint64_t entries;               /* the first entry's address */
	uint64_t n;                     /* entries used (dk_nentries) */
	uint32_t esz, koff, voff;       /* an entry's size, its key's and value's offsets */
};

/* A module dict's entry with a value: its key, value and where the value's word is. */
struct ent {
	uint64_t key, value, at;
};

/* A module: its dict and its name (a str). */
struct mod {
	uint64_t dict, name;
};

static uint64_t word(const uint8_t *p, size_t off)
{
	uint64_t w;

	memcpy(&w, p + off, 8);
	return w;
}

/* Read [a, a + len) of the target through g: 0 or -errno. */
static int rd(const struct heapgraph *g, uint64_t a, size_t len, void *buf)
{
	struct hg_span s = { a, len };

	return g->read(g->read_arg, &s, 1, buf);
}

/* log2 of the bytes of one index of a table of 2^l slots (1, 2, 4 or 8 bytes). */
static unsigned index_log2(unsigned l)
{
	return l <= 7 ? 0 : l <= 15 ? 1 : l <= 31 ? 2 : 3;
}

/*
 * The entries of the keys table at keys (its header h, its block of bsize
 * bytes) of a 3.minor, into *t: 0, or -1 when the header does not hold
 * together (a size not a power of two, more entries than a table of that
 * size has, entries past the block, a split table).
 */
static int parse_keys(int minor, const uint8_t *h, uint64_t keys, uint64_t bsize, struct table *t)
{
	uint64_t size, off;
	unsigned l;

	if (minor <= 10) {	/* dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices */
		size = word(h, 8);
		if (size < 8 || size & (size - 1) || size > 1ULL << LOG2_MAX)
			return -1;
		l = (unsigned)__builtin_ctzll(size);
		off = 40 + (size << index_log2(l));
		*t = (struct table){ keys + off, word(h, 32), 24, 8, 16 };
	} else {	/* dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_version, ... */
		l = h[8];
		if (l < 3 || l > LOG2_MAX || h[9] != l + index_log2(l) || h[10] > 1)
			return -1;	/* h[10], dk_kind: 0 general, 1 unicode, 2 split */
		size = 1ULL << l;
		off = 32 + (1ULL << h[9]);
		*t = h[10] ? (struct table){ keys + off, word(h, 24), 16, 0, 8 } :
			     (struct table){ keys + off, word(h, 24), 24, 8, 16 };
	}
	if (t->n > size * 2 / 3 || t->n > ENTRIES_MAX || off + t->n * t->esz > bsize)
		return -1;
	return 0;
}

/*
 * The str at a (read: the len bytes of raw) as a C string into out: 0, or
 * -1 when it is no compact ASCII str of 1 to NAME_MAX_LEN printable
 * characters followed by its NUL. Its characters start at 48 up to 3.11
 * (after wstr), at 40 from 3.12.
 */
static int str_of(int minor, const uint8_t *raw, size_t len, char *out)
{
	size_t data = minor <= 11 ? 48 : 40, n;
	uint32_t state;

	if (len < data + 2)
		return -1;
	memcpy(&state, raw + STR_STATE, 4);
	n = (size_t)word(raw, STR_LEN);	/* kind (bits 2-4) 1 byte, compact, ascii */
	if (((state >> 2) & 7) != 1 || !(state & 1u << 5) || !(state & 1u << 6) || !n ||
	    n > NAME_MAX_LEN || data + n + 1 > len || raw[data + n])
		return -1;
	for (size_t i = 0; i < n; i++)
		if (raw[data + i] < 0x20 || raw[data + i] > 0x7e)
			return -1;
	memcpy(out, raw + data, n);
	out[n] = 0;
	return 0;
}

/* The str at a as a C string (out: NAME_MAX_LEN + 1 bytes): 0 or -1. A
 * read that fails is tried again up to its page's end. */
static int read_str(int minor, const struct heapgraph *g, uint64_t a, char *out)
{
	uint8_t raw[STR_READ];
	size_t len = STR_READ;

	if (!a || a & 7)
		return -1;
	if (rd(g, a, len, raw)) {
		len = 4096 - (a & 4095);
		if (len >= STR_READ || rd(g, a, len, raw))
			return -1;
	}
	return str_of(minor, raw, len, out);
}

static void add_root(struct pyroots *r, uint64_t value, uint32_t name, uint64_t at)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n++] = (struct pyroot){ value, name };
	if (r->nhidden == r->hcap) {
		r->hcap = r->hcap ? 2 * r->hcap : 1024;
		r->hidden = xrealloc(r->hidden, r->hcap * sizeof(*r->hidden));
	}
	r->hidden[r->nhidden++] = at;
}

/* Entries e[0..n) of module mod's dict: each with a str key a root
 * "MOD.KEY", its value's word hidden. */
static void name_entries(int minor, const struct heapgraph *g, struct snapnames *names,
			 const char *mod, const struct ent *e, size_t n, struct pyroots *r)
{
	char key[NAME_MAX_LEN + 1];

	for (size_t i = 0; i < n && r->n < ROOTS_MAX; i++)
		if (!read_str(minor, g, e[i].key, key))
			add_root(r, e[i].value, snapnames_idf(names, "%s.%s", mod, key), e[i].at);
}

/* The module dict at dict (checked: a block named "dict", its keys table
 * a block of its own) named mod: its entries' roots into r. */
static void read_module(int minor, const struct heapgraph *g, struct snapnames *names,
			uint64_t dict, const char *mod, struct pyroots *r)
{
	uint8_t h[KEYS_READ];
	struct table t;
	struct ent *e = NULL;
	uint8_t *buf = NULL;
	uint64_t keys;
	long kb;
	size_t per, ne = 0;

	if (rd(g, dict, DICT_READ, h) || word(h, DICT_VALUES))
		return;	/* unreadable, or a split table: no module's */
	keys = word(h, DICT_KEYS);
	kb = heapgraph_find(g, keys);
	if (kb < 0 || g->addr[kb] != keys || heapgraph_size(g, (size_t)kb) < KEYS_READ ||
	    rd(g, keys, KEYS_READ, h) ||
	    parse_keys(minor, h, keys, heapgraph_size(g, (size_t)kb), &t))
		return;
	r->modules++;
	per = HG_BATCH_BYTES / t.esz;
	if (per > t.n)	/* a module's dict is mostly small */
		per = t.n ? (size_t)t.n : 1;
	buf = xmalloc(per * t.esz);
	e = xmalloc(per * sizeof(*e));
	for (uint64_t at = 0; at < t.n; at += per) {	/* in pieces of a batch's bytes */
		size_t k = t.n - at < per ? (size_t)(t.n - at) : per;
		uint64_t base = t.entries + at * t.esz;

		if (rd(g, base, k * t.esz, buf))
			continue;
		ne = 0;
		for (size_t i = 0; i < k; i++) {
			const uint8_t *p = buf + i * t.esz;

			if (word(p, t.koff) && word(p, t.voff))
				e[ne++] = (struct ent){ word(p, t.koff), word(p, t.voff),
							base + i * t.esz + t.voff };
		}
		name_entries(minor, g, names, mod, e, ne, r);
	}
	free(e);
	free(buf);
}

static int cmp_mod(const void *a, const void *b)
{
	uint64_t x = ((const struct mod *)a)->dict, y = ((const struct mod *)b)->dict;

	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The modules of g: each block named "module" whose md_dict is a block
 * named "dict" (past its PyGC_Head), once a dict. How many, in *out (freed by the caller). */
static size_t find_modules(const struct heapgraph *g, uint32_t module, uint32_t dict,
			   struct mod **out)
{
	struct mod *m = NULL;
	size_t n = 0, cap = 0, k = 0;
	uint8_t h[MOD_READ];

	for (size_t b = 0; b < g->n; b++) {
		uint64_t d;
		long db;

		if (g->type[b] != module || heapgraph_size(g, b) < GC_HEAD + MOD_READ ||
		    rd(g, g->addr[b] + GC_HEAD, MOD_READ, h))
			continue;
		d = word(h, MOD_DICT);
		db = heapgraph_find(g, d);
		if (db < 0 || g->addr[db] + GC_HEAD != d || g->type[db] != dict)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			m = xrealloc(m, cap * sizeof(*m));
		}
		m[n++] = (struct mod){ d, word(h, MOD_NAME) };
	}
	if (n)
		qsort(m, n, sizeof(*m), cmp_mod);
	for (size_t i = 0; i < n; i++)
		if (!k || m[k - 1].dict != m[i].dict)
			m[k++] = m[i];
	*out = m;
	return k;
}

void pyroots_find(int minor, struct heapgraph *g, struct snapnames *names, struct pyroots *r)
{
	struct mod *m = NULL;
	size_t n;
	char mod[NAME_MAX_LEN + 1];

	memset(r, 0, sizeof(*r));
	n = find_modules(g, snapnames_id(names, "module"), snapnames_id(names, "dict"), &m);
	for (size_t i = 0; i < n; i++)
		if (!read_str(minor, g, m[i].name, mod))
			read_module(minor, g, names, m[i].dict, mod, r);
	if (r->nhidden)
		qsort(r->hidden, r->nhidden, sizeof(*r->hidden), cmp_u64);
	free(m);
	if (minor <= 10)
		pydead_find(g, names, &r->dead);
}

void pyroots_scan(const struct pyroots *r, struct heapgraph *g)
{
	for (size_t i = 0; i < r->n; i++)
		heapgraph_root_words(g, r->v[i].name, &r->v[i].value, 1);
}

void pyroots_hide(const struct pyroots *r, const struct hg_span *s, size_t n, uint8_t *buf)
{
	pyhide(r->hidden, NULL, r->nhidden, 8, s, n, buf);
	pyhide(r->dead.at, r->dead.len, r->dead.n, 0, s, n, buf);
}

void pyroots_free(struct pyroots *r)
{
	free(r->v);
	free(r->hidden);
	pydead_free(&r->dead);
	memset(r, 0, sizeof(*r));
}
