/* The code at each allocator entry point: wrappers that only call another entry, and the allocator's own code around it. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/hooks.h"
#include "model/hooks_int.h"
#include "disasm.h"

/* ---- wrappers that only tail-call another entry point ---- */

#define WRAPPER_MAX_SIZE 64         /* C entry points: tail-jump wrappers only */
#define CXX_WRAPPER_MAX_SIZE 512    /* C++ operators: any call into the C entries */
#define SCAN_MAX_SIZE 4096          /* bytes of a body searched for calls into entries */

/*
 * The PLT slots found in shared objects (elfobj_shared), by object and
 * address, as branch_memo below: a hash of PLT_MEMO_SLOTS entries, the
 * ones past it not kept. Never freed.
 */
#define PLT_MEMO_SLOTS 4096
static struct plt_memo {
	const struct elfobj *e;
	uint64_t vaddr, slot;
} plt_memo[PLT_MEMO_SLOTS];

/* The GOT slot (link-time address) that the PLT stub at vaddr of e jumps
 * through; 0 if the code there is not a stub. */
static uint64_t plt_slot(const struct elfobj *e, uint64_t vaddr)
{
	int shared = elfobj_shared(e);
	size_t h = (size_t)((vaddr * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)e) >> 52);
	struct plt_memo *m = NULL;
	uint8_t code[16];
	uint64_t slot;

	for (size_t k = 0; shared && k < 8; k++) {
		m = &plt_memo[(h + k) % PLT_MEMO_SLOTS];
		if (m->e == e && m->vaddr == vaddr)
			return m->slot;
		if (!m->e)
			break;
		m = NULL;
	}
	slot = elfobj_read(e, vaddr, code, sizeof(code)) ? 0 :
		disasm_plt_slot(code, sizeof(code), vaddr);
	if (m)
		*m = (struct plt_memo){ e, vaddr, slot };
	return slot;
}

/* The entry of set other than h that is bound to name, or NULL. */
static const struct hook *entry_named(const struct hook_set *set, const struct hook *h,
				      const char *name)
{
	for (size_t k = 0; k < set->n; k++) {
		const struct hook *o = &set->v[k];

		if (o == h || o->unsupported)
			continue;
		for (size_t j = 0; j < o->nnames; j++)
			if (!strcmp(o->names[j], name))
				return o;
	}
	return NULL;
}

/* The entry of set other than h that the branch to link-time address target
 * of e reaches: directly (static executables) or through a PLT slot bound
 * to its name. NULL if none. */
static const struct hook *branch_entry(const struct elfobj *e, uint64_t bias,
				       const struct hook *h, const struct hook_set *set,
				       uint64_t target)
{
	uint64_t slot;
	const char *name;

	for (size_t k = 0; k < set->n; k++)
		if (&set->v[k] != h && !set->v[k].unsupported && set->v[k].addr == target + bias)
			return &set->v[k];
	slot = plt_slot(e, target);
	name = slot ? elfobj_got_symbol(e, slot) : NULL;
	return name ? entry_named(set, h, name) : NULL;
}

/*
 * The branches found in code of shared objects (elfobj_shared), by
 * object and address: a run over several processes disassembles each
 * entry point once, before it forks their sessions. Never freed.
 */
#define BRANCH_MEMO_MAX 128
static struct branch_memo {
	const struct elfobj *e;
	uint64_t value, len;
	struct disasm_branch *br;
	size_t n;
} branch_memo[BRANCH_MEMO_MAX];
static size_t nbranch_memo;

/* The direct branches in len bytes of e's code at link-time address
 * value, into br (room for len / 2). Returns how many. */
static size_t branches_of(const struct elfobj *e, uint64_t value, uint64_t len,
			  struct disasm_branch *br)
{
	int shared = elfobj_shared(e);
	uint8_t *code;
	size_t n;

	for (size_t i = 0; shared && i < nbranch_memo; i++) {
		const struct branch_memo *b = &branch_memo[i];

		if (b->e == e && b->value == value && b->len == len) {
			memcpy(br, b->br, b->n * sizeof(*br));
			return b->n;
		}
	}
	code = xmalloc(len);
	n = elfobj_read(e, value, code, len) ? 0 : disasm_branches(code, len, value, br, len / 2);
	free(code);
	if (shared && nbranch_memo < BRANCH_MEMO_MAX) {
		struct branch_memo *b = &branch_memo[nbranch_memo++];

		*b = (struct branch_memo){ e, value, len, xmalloc((n ? n : 1) * sizeof(*br)), n };
		memcpy(b->br, br, n * sizeof(*br));
	}
	return n;
}

/*
 * Scan the code of h (defined in e, loaded at bias), at most SCAN_MAX_SIZE
 * bytes: *calls gets 1 << kind of every other entry of set it branches
 * to. If h is a wrapper of another entry, return that entry's name. A C
 * entry point is a wrapper only if it is at most WRAPPER_MAX_SIZE bytes
 * and the branch is a tail "jmp", so that a real allocator that falls back
 * to malloc on one path is never taken for a wrapper (glibc's reallocarray
 * is "jmp realloc@plt"). A C++ operator is one if it calls a C entry point
 * anywhere in its first CXX_WRAPPER_MAX_SIZE bytes: libstdc++'s operator
 * new loops around "call malloc", and a statically linked libstdc++ is not
 * called libstdc++.
 */
static const char *scan_body(const struct elfobj *e, uint64_t bias,
			     const struct hook *h, const struct hook_set *set, uint32_t *calls)
{
	uint64_t value = h->addr - bias, len = h->size;
	int cxx = hooks_name_cxx(h->names[0]);
	struct disasm_branch *br;
	const char *fwd = NULL;
	size_t n;

	*calls = 0;
	if (!len)
		return NULL;
	if (len > SCAN_MAX_SIZE)
		len = SCAN_MAX_SIZE;
	br = xmalloc(len / 2 * sizeof(*br));	/* a branch is at least 2 bytes */
	n = branches_of(e, value, len, br);
	for (size_t i = 0; i < n; i++) {
		const struct hook *o;

		if (br[i].to >= value && br[i].to < value + h->size)
			continue;
		o = branch_entry(e, bias, h, set, br[i].to);
		if (!o)
			continue;
		*calls |= 1u << o->kind;
		if (fwd)
			continue;
		if (cxx ? br[i].at - value < CXX_WRAPPER_MAX_SIZE &&
			  /* a C++ operator calling another C++ operator is not enough */
			  !(br[i].call && hooks_name_cxx(o->names[0])) :
			  !br[i].call && h->size <= WRAPPER_MAX_SIZE)
			fwd = o->names[0];
	}
	free(br);
	return fwd;
}

/* Mark the entries of set that are wrappers of other entries, and what the
 * others call. */
void hooks_mark_forwards(struct hook_set *set, const struct objlist *l)
{
	for (size_t i = 0; i < set->n; i++) {
		struct hook *h = &set->v[i];

		for (size_t k = 0; k < l->n && !h->unsupported; k++) {
			const struct obj *o = &l->v[k];

			if (o->elf && o->have_bias && !strcmp(o->map->path, h->path)) {
				h->forwards = scan_body(o->elf, o->bias, h, set, &h->calls);
				break;
			}
		}
		if (h->forwards)
			pr_debug("%s in %s forwards to %s", h->names[0], h->path, h->forwards);
		else if (h->calls)
			pr_debug("%s in %s calls entry points of kinds %#x", h->names[0], h->path,
				 h->calls);
	}
}

/* ---- the allocator's own code around each entry point ---- */

#define OWN_MAX (4u << 20)          /* the most code one extent takes */

/* A function of an object, by its start; own: the allocator's (own_extent). */
struct fn_sym {
	uint64_t value, end;
	int own;
};

static int cmp_fn_sym(const void *a, const void *b)
{
	const struct fn_sym *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

/* Names of allocator functions that are not entry points we hook (their
 * public API beside them, and glibc's and jemalloc's prefixed ones). */
static int allocator_name(const char *name)
{
	static const char *const prefixes[] = {
		"malloc", "mallinfo", "mallopt", "__libc_", "__malloc", "_int_", "mi_", "_mi_",
		"je_", "tc_", "tcmalloc", "MallocExtension", "sdallocx", "nallocx", "dallocx",
		"sallocx", "rallocx", "xallocx", "mallctl", "cfree",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* The function of v[0..m) (sorted) that starts at value, or NULL. */
static struct fn_sym *function_at(struct fn_sym *v, size_t m, uint64_t value)
{
	size_t lo = 0, hi = m;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].value < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m && v[lo].value == value ? &v[lo] : NULL;
}

/* e's functions by address, aliases at one address merged into one (the
 * allocator's if any of their names says so, or it is local), into *out
 * (xmalloc'd); returns how many. */
static size_t functions_by_address(const struct elfobj *e, struct fn_sym **out)
{
	size_t n, m = 0, k = 0;
	const struct elfobj_sym *syms = elfobj_syms(e, &n);
	struct fn_sym *v = xcalloc(n ? n : 1, sizeof(*v));

	for (size_t i = 0; i < n; i++) {
		const struct elfobj_sym *s = &syms[i];

		if ((s->type != STT_FUNC && s->type != STT_GNU_IFUNC) || s->shndx == SHN_UNDEF)
			continue;
		v[m].value = s->value;
		v[m].end = s->value + s->size;
		v[m].own = s->bind == STB_LOCAL || allocator_name(s->name);
		m++;
	}
	qsort(v, m, sizeof(*v), cmp_fn_sym);
	for (size_t i = 0; i < m; i++) {
		if (k && v[k - 1].value == v[i].value) {
			v[k - 1].own |= v[i].own;
			if (v[i].end > v[k - 1].end)
				v[k - 1].end = v[i].end;
		} else {
			v[k++] = v[i];
		}
	}
	*out = v;
	return k;
}

/*
 * functions_by_address of shared objects (elfobj_shared), kept by object
 * as branch_memo: a run over several processes lists and sorts each
 * object's functions once, before it forks their sessions. Never freed.
 */
#define FN_MEMO_MAX 32
static struct fn_memo {
	const struct elfobj *e;
	struct fn_sym *v;
	size_t m;
} fn_memo[FN_MEMO_MAX];
static size_t nfn_memo;

/* o's functions (functions_by_address), each one a hook of set in path
 * sits at also the allocator's, into *out (xmalloc'd); how many. */
static size_t functions_of(const struct obj *o, const struct hook_set *set, const char *path,
			   struct fn_sym **out)
{
	int shared = elfobj_shared(o->elf);
	struct fn_sym *v = NULL;
	size_t m = 0, i;

	for (i = 0; shared && i < nfn_memo && fn_memo[i].e != o->elf; i++)
		;
	if (shared && i < nfn_memo) {
		m = fn_memo[i].m;
		v = xmalloc((m ? m : 1) * sizeof(*v));
		memcpy(v, fn_memo[i].v, m * sizeof(*v));
	} else {
		m = functions_by_address(o->elf, &v);
		if (shared && nfn_memo < FN_MEMO_MAX) {
			struct fn_memo *f = &fn_memo[nfn_memo++];

			*f = (struct fn_memo){ o->elf, xmalloc((m ? m : 1) * sizeof(*v)), m };
			memcpy(f->v, v, m * sizeof(*v));
		}
	}
	for (size_t k = 0; k < set->n; k++) {
		struct fn_sym *f;

		if (set->v[k].addr >= o->bias && !strcmp(set->v[k].path, path) &&
		    (f = function_at(v, m, set->v[k].addr - o->bias)))
			f->own = 1;	/* hooked too */
	}
	*out = v;
	return m;
}

/*
 * h's extent (struct hook, own_lo/own_hi) among the m functions v of its
 * object (functions_of), loaded at bias: its function, then its
 * neighbours in address order as long as they are the allocator's: hooked
 * too, local (a static or hidden helper: the object's own) or named as an
 * allocator's function, never past another global function (the code of
 * whoever linked the allocator in with malloc and free placed apart). The
 * code between two such functions is taken with them. Nothing if h's
 * function is not among the symbols.
 */
static void own_extent(const struct fn_sym *v, size_t m, uint64_t bias, struct hook *h)
{
	uint64_t want = h->addr - bias, end;
	size_t at, lo, hi;

	for (at = 0; at < m && v[at].value != want; at++)
		;
	if (at == m)
		return;
	end = v[at].end > want + h->size ? v[at].end : want + h->size;
	for (lo = at; lo > 0 && v[lo - 1].own && end - v[lo - 1].value <= OWN_MAX; lo--)
		;
	for (hi = at; hi + 1 < m && v[hi + 1].own && v[hi + 1].end - v[lo].value <= OWN_MAX; hi++)
		if (v[hi + 1].end > end)
			end = v[hi + 1].end;
	h->own_lo = bias + v[lo].value;
	h->own_hi = bias + end;
}

/* Each hook's own extent (own_extent), in the object that defines it; each
 * object's functions listed and sorted once. */
void hooks_mark_own(struct hook_set *set, const struct objlist *l)
{
	for (size_t k = 0; k < l->n; k++) {
		const struct obj *o = &l->v[k];
		struct fn_sym *v = NULL;
		size_t m = 0;

		if (!o->elf || !o->have_bias)
			continue;
		for (size_t i = 0; i < set->n; i++) {
			struct hook *h = &set->v[i];

			if (h->own_hi || strcmp(o->map->path, h->path))
				continue;
			if (!v)
				m = functions_of(o, set, h->path, &v);
			own_extent(v, m, o->bias, h);
		}
		free(v);
	}
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].own_hi)
			pr_debug("%s in %s: the allocator's own code around it is %#" PRIx64
				 "-%#" PRIx64, set->v[i].names[0], set->v[i].path, set->v[i].own_lo,
				 set->v[i].own_hi);
}
