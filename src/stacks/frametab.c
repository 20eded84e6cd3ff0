/* Frame-rule table: compiles DWARF CFI (libdw) into the shared frames[] the agent walks with. */
/* SPDX-License-Identifier: MIT */
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/frametab.h"
#include "stacks/gocgo.h"

/*
 * The table is an open-addressing hash keyed by return address: the rule for
 * ip lives in one of the SHM_FRAME_PROBES slots from shm_frame_slot(ip) on,
 * at or before the first empty slot. Entries are never removed one by one,
 * only all together by frametab_reset(). The tool is the only writer; the
 * agent reads concurrently. A slot is published by storing its rule (one
 * 8-byte store: cfa_off, base, rbp_saved, rbp_off) and then, after a compiler
 * barrier, its ip; x86-64 keeps stores in order, so a reader that sees the ip
 * sees the rule. A reader that also re-reads ip after the rule never mixes a
 * rule with another slot occupant's ip.
 *
 * Rules come from the CFI row of the call instruction (ip - 1): the CFA must
 * be rsp + K or rbp + K, the return address must be saved at CFA - 8, and the
 * caller's rbp must be unchanged or saved at CFA + off. Anything else (CFA
 * expressions as in signal trampolines and PLT stubs, CFA from another
 * register as in stack-realigning functions) is left out: the agent falls
 * back to a stack copy for that frame.
 *
 * The maps and objects are the target's (target.h): per mapping we keep
 * the CFI of the object it maps and its load bias; the maps are re-read
 * when an ip falls outside all known mappings, and a change of the code
 * mappings resets the whole table (target_on_change). Ips that got -ENOENT are remembered in a
 * small direct-mapped cache until frametab_reset(), so a frame the agent
 * keeps missing on costs a hash probe, not a CFI search or a maps read.
 *
 * The ips come from the target, which can send as many made-up ones as it
 * likes: at most FT_RULES_PER_SEC CFI searches a second (a token bucket)
 * and a maps read at most every TARGET_MAPS_GAP_NS; beyond that learning
 * answers -EAGAIN (not remembered: the frame is learnt when it comes
 * again) and counts it (frametab_stats.throttled).
 */

#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

#define FT_NEG_SIZE 4096	/* direct-mapped cache of ips without a rule */
#define FT_UNWALK_SIZE 1024	/* ips made ends for want of a way on (power of two) */
#define FT_UNWALK_PROBES 16
#define FT_JUNK_GAP_NS 1000000ULL	/* maps read for a return address at most this often */
#define FT_RULES_PER_SEC 20000	/* CFI searches a second, and the most at once */

/* ---- objects and mappings ---- */

/* The CFI of one object of the target (the ELF is the target's). */
struct ft_obj {
	struct elfobj *elf;	/* owned by the target */
	Dwarf_CFI *eh;		/* .eh_frame, or NULL */
	Dwarf *dw;		/* for .debug_frame, opened on first need */
	Dwarf_CFI *dbg;		/* .debug_frame, or NULL */
	int dbg_tried;
	int go;			/* 1: a Go object with cgo (go_cgo), -1: not, 0: not yet known */
	int go_primed;		/* its hop rules are in the table (frametab_prime_go) */
	struct gocgo go_cgo;
};

struct ft_bind {
	struct ft_obj *obj;	/* NULL until resolved */
	uint64_t bias;
	int err;		/* nonzero: the mapping has no usable object */
};

struct frametab {
	struct target *t;
	struct shm_frame *table;
	struct ft_bind *binds;	/* parallel to the target's maps of version binds_ver */
	size_t nbinds;
	uint64_t binds_ver;
	struct ft_obj **objs;
	size_t nobjs, cap;
	uint64_t neg[FT_NEG_SIZE];	/* key: ip * 2 + exact; 0 = empty */
	uint64_t unwalk[FT_UNWALK_SIZE];	/* frametab_set_unwalkable's ips; 0 = empty */
	size_t nunwalk;
	uint64_t junk_ns;	/* when frametab_code_prefix last read the maps */
	uint64_t tokens, tokens_ns;	/* CFI searches left, and when counted */
	volatile uint32_t *gen;	/* bumped after every change of the table, or NULL */
	int prime;		/* frametab_prime_go was called: again after a reset */
	struct frametab_stats st;
};

_Static_assert(sizeof(struct shm_frame) == 16, "shm_frame layout");
_Static_assert(offsetof(struct shm_frame, cfa_off) == 8, "shm_frame rule word");

typedef uint64_t __attribute__((may_alias)) ft_u64_alias;

static void obj_free(struct ft_obj *o)
{
	if (o->dw)
		dwarf_end(o->dw);
	if (o->eh)
		dwarf_cfi_end(o->eh);
	free(o);
}

/* The CFI record for object e, made on first use. */
static struct ft_obj *get_obj(struct frametab *ft, struct elfobj *e)
{
	struct ft_obj *o;

	for (size_t i = 0; i < ft->nobjs; i++)
		if (ft->objs[i]->elf == e)
			return ft->objs[i];
	o = xcalloc(1, sizeof(*o));
	o->elf = e;
	o->eh = dwarf_getcfi_elf(elfobj_elf(e));
	ft->st.objects++;
	if (ft->nobjs == ft->cap) {
		ft->cap = ft->cap ? ft->cap * 2 : 16;
		ft->objs = xrealloc(ft->objs, ft->cap * sizeof(*ft->objs));
	}
	ft->objs[ft->nobjs++] = o;
	return o;
}

static void drop_binds(struct frametab *ft)
{
	free(ft->binds);
	ft->binds = NULL;
	ft->nbinds = 0;
	ft->binds_ver = 0;	/* versions start at 1 */
}

/* Whether o, the object of mapping m, is Go's with cgo calls (o->go,
 * o->go_cgo): its symbols are read only if it is Go's. */
static void find_go(struct frametab *ft, const struct proc_map *m, struct ft_obj *o)
{
	struct elfobj *e;

	o->go = -1;
	if (!gocgo_is_go(o->elf))
		return;
	e = target_object(ft->t, m, TARGET_OBJ_SYMS, NULL);
	if (e && !gocgo_find(e, &o->go_cgo))
		o->go = 1;
	else
		ft->st.go_nosyms++;
}

/*
 * The object holding code address pc and its load bias: 0, -ENOENT when pc
 * is in no executable file mapping (or the vDSO), -EAGAIN when pc is in no
 * known mapping and the maps were read a moment ago (target_find), or
 * another -errno.
 */
static int resolve(struct frametab *ft, uint64_t pc, struct ft_obj **obj, uint64_t *bias)
{
	const struct proc_map *m;
	struct target_stats ts;
	struct ft_bind *b;
	int ret;

	ret = target_find(ft->t, pc, &m);
	target_get_stats(ft->t, &ts);
	ft->st.maps_reads = ts.maps_reads;
	if (ret == -EAGAIN)
		ft->st.throttled++;
	if (ret)
		return ret;
	if (!(m->prot & PROC_MAP_X) || !m->path ||
	    (m->path[0] != '/' && strcmp(m->path, "[vdso]")))
		return -ENOENT;
	if (ft->binds_ver != target_maps_version(ft->t)) {
		drop_binds(ft);
		ft->nbinds = target_maps(ft->t)->n;
		ft->binds = xcalloc(ft->nbinds ? ft->nbinds : 1, sizeof(*ft->binds));
		ft->binds_ver = target_maps_version(ft->t);
	}
	b = &ft->binds[m - target_maps(ft->t)->v];
	if (!b->obj && !b->err) {
		struct elfobj *e = target_object(ft->t, m, 0, &b->err);

		if (!b->err && target_map_bias(ft->t, m, e, &b->bias))
			b->err = -ENOENT;
		if (!b->err)
			b->obj = get_obj(ft, e);
		if (!b->err && !b->obj->go)
			find_go(ft, m, b->obj);
	}
	if (b->err)
		return b->err;
	*obj = b->obj;
	*bias = b->bias;
	return 0;
}

/* ---- CFI to rule ---- */

/* The CFI row for link-time address addr: .eh_frame first, then .debug_frame.
 * 0 with *frame to free(), or -ENOENT. */
static int find_frame(struct ft_obj *o, uint64_t addr, Dwarf_Frame **frame)
{
	if (o->eh && dwarf_cfi_addrframe(o->eh, addr, frame) == 0)
		return 0;
	if (!o->dbg_tried) {
		o->dbg_tried = 1;
		o->dw = elfobj_dwarf_begin(o->elf);
		if (o->dw)
			o->dbg = dwarf_getcfi(o->dw);
	}
	if (o->dbg && dwarf_cfi_addrframe(o->dbg, addr, frame) == 0)
		return 0;
	return -ENOENT;
}

/*
 * Match a location "CFA + off" as libdw spells the offset(N) rule:
 * [DW_OP_call_frame_cfa] or [DW_OP_call_frame_cfa, DW_OP_plus_uconst N]
 * (N two's complement for negative offsets); also accepts
 * [DW_OP_call_frame_cfa, DW_OP_consts N, DW_OP_plus]. 1 on a match.
 */
static int cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return 0;
	if (nops == 1) {
		*off = 0;
		return 1;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) &&
	    ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return 0;
}

/* CFA = register + off with register rsp or rbp: 0, or -ENOENT. */
static int cfa_rule(Dwarf_Frame *fr, uint8_t *base, int64_t *off)
{
	Dwarf_Op *ops;
	size_t nops;
	unsigned reg;

	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1)
		return -ENOENT;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		*off = (int64_t)ops[0].number;
	} else if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		*off = (int64_t)ops[0].number2;
	} else {
		return -ENOENT;
	}
	if (reg == DWARF_REG_RSP)
		*base = SHM_BASE_RSP;
	else if (reg == DWARF_REG_RBP)
		*base = SHM_BASE_RBP;
	else
		return -ENOENT;
	return 0;
}

/* Translate one CFI row into *out (ip untouched): 0, or -ENOENT. */
static int compile_rule(Dwarf_Frame *fr, struct shm_frame *out)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t cfa_off, ra_off, rbp_off;
	uint8_t base;
	bool signal = false;

	memset((char *)out + offsetof(struct shm_frame, cfa_off), 0,
	       sizeof(*out) - offsetof(struct shm_frame, cfa_off));
	/* The caller of a signal frame is interrupted code: its pc is exact,
	 * which the agent cannot tell from a return address. */
	if (dwarf_frame_info(fr, NULL, NULL, &signal) < 0 || signal)
		return -ENOENT;
	if (dwarf_frame_register(fr, DWARF_REG_RA, mem, &ops, &nops))
		return -ENOENT;
	if (nops == 0 && ops == mem) {
		/* return address undefined: outermost frame */
		out->base = SHM_BASE_END;
		return 0;
	}
	if (!cfa_plus(ops, nops, &ra_off) || ra_off != -8)
		return -ENOENT;
	if (cfa_rule(fr, &base, &cfa_off) || cfa_off < INT32_MIN || cfa_off > INT32_MAX)
		return -ENOENT;
	out->base = base;
	out->cfa_off = (int32_t)cfa_off;
	if (dwarf_frame_register(fr, DWARF_REG_RBP, mem, &ops, &nops))
		return -ENOENT;
	/* "same value" (ops NULL) or "undefined" (ops == mem): rbp is left as is */
	if (nops == 0)
		return 0;
	if (!cfa_plus(ops, nops, &rbp_off) || rbp_off < INT16_MIN || rbp_off > INT16_MAX)
		return -ENOENT;
	out->rbp_saved = 1;
	out->rbp_off = (int16_t)rbp_off;
	return 0;
}

/* The hop rule (gocgo_rule) for return address ip: 0 with *out, or
 * -ENOENT (not a return address in a Go object's asmcgocall), or
 * resolve's error. */
static int go_hop(struct frametab *ft, uint64_t ip, struct shm_frame *out)
{
	struct ft_obj *o;
	uint64_t bias;
	int ret = resolve(ft, ip - 1, &o, &bias);

	if (ret)
		return ret;
	return o->go > 0 ? gocgo_rule(&o->go_cgo, ip, bias, out) : -ENOENT;
}

int frametab_rule(struct frametab *ft, uint64_t ip, unsigned flags, struct shm_frame *out)
{
	uint64_t pc = (flags & FRAMETAB_IP_EXACT) ? ip : ip - 1;
	Dwarf_Frame *fr = NULL;
	struct ft_obj *o;
	uint64_t bias;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!ip)
		return -ENOENT;
	ret = resolve(ft, pc, &o, &bias);
	if (ret)
		return ret;
	/* Go's asmcgocall: its CFI does not see it switch stacks */
	if (o->go > 0 && !(flags & FRAMETAB_IP_EXACT) && !gocgo_rule(&o->go_cgo, ip, bias, out))
		return 0;
	ret = find_frame(o, pc - bias, &fr);
	if (ret) {
		/* code of an object whose CFI does not cover it (node's
		 * builtins): a frame-pointer frame, as libunwind would take it
		 * (CFA = rbp + 16, the caller's rbp at CFA - 16) */
		*out = (struct shm_frame){ .base = SHM_BASE_RBP, .cfa_off = 16, .rbp_saved = 1,
					   .rbp_off = -16 };
		ft->st.fp_frames++;
		return 0;
	}
	ret = compile_rule(fr, out);
	free(fr);
	return ret;
}

/* ---- the shared table ---- */

const struct shm_frame *frametab_lookup(const struct shm_frame *table, uint64_t ip)
{
	uint32_t h = shm_frame_slot(ip);

	for (unsigned i = 0; i < SHM_FRAME_PROBES; i++) {
		const struct shm_frame *s = &table[(h + i) & (SHM_NFRAMES - 1)];
		uint64_t v = *(const volatile uint64_t *)&s->ip;

		if (v == ip)
			return s;
		if (v == 0)
			return NULL;
	}
	return NULL;
}

/* The table changed: a walk the agent kept may no longer be the walk (shm.h). */
static void bump_gen(struct frametab *ft)
{
	if (!ft->gen)
		return;
	shm_barrier();
	*ft->gen = *ft->gen + 1;
}

/* Publish rule r for ip in slot s: the rule word, a barrier, then ip
 * (then the generation). */
static void publish(struct frametab *ft, struct shm_frame *s, uint64_t ip,
		    const struct shm_frame *r)
{
	uint64_t word;

	memcpy(&word, &r->cfa_off, sizeof(word));
	*(volatile ft_u64_alias *)&s->cfa_off = word;
	shm_barrier();
	*(volatile uint64_t *)&s->ip = ip;
	bump_gen(ft);
}

/* The negative-cache entry for key (ip * 2 + exact). */
static uint64_t *neg_slot(struct frametab *ft, uint64_t key)
{
	return &ft->neg[(uint32_t)((key * SHM_HASH_MUL) >> 52) & (FT_NEG_SIZE - 1)];
}

/*
 * The slot of ip within its probe window: *slot is ip's own slot (returns
 * 1) or the first free one (returns 0); -ENOSPC when the window is full.
 */
static int probe(struct frametab *ft, uint64_t ip, struct shm_frame **slot)
{
	uint32_t h = shm_frame_slot(ip);

	for (unsigned i = 0; i < SHM_FRAME_PROBES; i++) {
		struct shm_frame *s = &ft->table[(h + i) & (SHM_NFRAMES - 1)];
		uint64_t v = *(volatile uint64_t *)&s->ip;

		if (v == ip || v == 0) {
			*slot = s;
			return v == ip;
		}
	}
	ft->st.full++;
	return -ENOSPC;
}

/* One CFI search from the budget of FT_RULES_PER_SEC a second: 1 if
 * granted, 0 (counted as throttled) if spent. */
static int take_token(struct frametab *ft)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), add;

	add = (now - ft->tokens_ns) / (1000000000ULL / FT_RULES_PER_SEC);
	if (add) {
		ft->tokens = ft->tokens + add > FT_RULES_PER_SEC ? FT_RULES_PER_SEC :
			     ft->tokens + add;
		ft->tokens_ns = now;
	}
	if (!ft->tokens) {
		ft->st.throttled++;
		return 0;
	}
	ft->tokens--;
	return 1;
}

int frametab_learn_flags(struct frametab *ft, uint64_t ip, unsigned flags)
{
	uint64_t key = ip * 2 + !!(flags & FRAMETAB_IP_EXACT);
	struct shm_frame *slot, rule;
	int ret;

	if (!ip)
		return -ENOENT;
	if (ft->prime < 0)
		frametab_prime_go(ft);	/* the code changed since */
	ret = probe(ft, ip, &slot);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		ft->st.present++;
		return 0;
	}
	if (*neg_slot(ft, key) == key) {
		ft->st.unrepresentable++;
		return -ENOENT;
	}
	if (!take_token(ft))
		return -EAGAIN;
	ret = frametab_rule(ft, ip, flags, &rule);
	if (ret == -ENOENT) {
		/* no rule, or no code there even in freshly read maps: until a reset */
		*neg_slot(ft, key) = key;
		ft->st.unrepresentable++;
	}
	if (ret)
		return ret;
	publish(ft, slot, ip, &rule);
	ft->st.learned++;
	return 1;
}

int frametab_prime_go(struct frametab *ft)
{
	const struct proc_maps *maps = target_maps(ft->t);
	uint64_t rets[GOCGO_RETURNS_MAX], *starts;
	size_t nx = 0;
	int added = 0;

	ft->prime = 1;
	if (!maps)
		return 0;
	/* the starts first: a resolve may read the maps again */
	starts = xcalloc(maps->n ? maps->n : 1, sizeof(*starts));
	for (size_t i = 0; i < maps->n; i++)
		if ((maps->v[i].prot & PROC_MAP_X) && maps->v[i].path && maps->v[i].path[0] == '/')
			starts[nx++] = maps->v[i].start;
	for (size_t i = 0; i < nx; i++) {
		struct ft_obj *o;
		uint64_t bias;
		size_t n;

		if (resolve(ft, starts[i], &o, &bias) || o->go <= 0 || o->go_primed)
			continue;
		o->go_primed = 1;
		n = gocgo_returns(o->elf, &o->go_cgo, rets, GOCGO_RETURNS_MAX);
		for (size_t k = 0; k < n; k++)
			if (frametab_learn(ft, bias + rets[k]) == 1)
				added++;
	}
	free(starts);
	return added;
}

int frametab_learn_many(struct frametab *ft, const uint64_t *pcs, size_t n)
{
	int added = 0;

	for (size_t i = 0; i < n; i++)
		if (frametab_learn(ft, pcs[i]) == 1)
			added++;
	return added;
}

/* ---- lifetime ---- */

static void drop_objects(struct frametab *ft)
{
	for (size_t i = 0; i < ft->nobjs; i++)
		obj_free(ft->objs[i]);
	free(ft->objs);
	ft->objs = NULL;
	ft->nobjs = ft->cap = 0;
}

/* Clear the table (ips first: see the top of this file) and the caches. */
static void reset(struct frametab *ft)
{
	for (size_t i = 0; i < SHM_NFRAMES; i++)
		if (ft->table[i].ip)
			*(volatile uint64_t *)&ft->table[i].ip = 0;
	shm_barrier();
	for (size_t i = 0; i < SHM_NFRAMES; i++)
		*(volatile ft_u64_alias *)&ft->table[i].cfa_off = 0;
	bump_gen(ft);
	drop_binds(ft);
	drop_objects(ft);
	memset(ft->neg, 0, sizeof(ft->neg));
	memset(ft->unwalk, 0, sizeof(ft->unwalk));
	ft->nunwalk = 0;
	if (ft->prime)
		ft->prime = -1;	/* at the next learn: the maps are new */
}

/* target_on_change listener: the code changed, no old rule may stay. */
static void on_maps_change(void *arg, const struct proc_maps *old)
{
	(void)old;
	reset(arg);
}

struct frametab *frametab_new_target(struct target *t, struct shm_frame *table)
{
	struct frametab *ft;

	if (!t || !table) {
		errno = EINVAL;
		return NULL;
	}
	ft = xcalloc(1, sizeof(*ft));
	ft->t = t;
	ft->table = table;
	ft->tokens = FT_RULES_PER_SEC;
	ft->tokens_ns = clock_ns(CLOCK_MONOTONIC);
	if (target_on_change(t, on_maps_change, ft)) {
		free(ft);
		errno = ENOSPC;
		return NULL;
	}
	return ft;
}

void frametab_reset(struct frametab *ft)
{
	reset(ft);
	target_maps_expire(ft->t);	/* the maps changed: the next miss reads them */
}

void frametab_free(struct frametab *ft)
{
	if (!ft)
		return;
	target_off_change(ft->t, on_maps_change, ft);
	drop_binds(ft);
	drop_objects(ft);
	free(ft);
}

void frametab_set_gen(struct frametab *ft, volatile uint32_t *gen)
{
	ft->gen = gen;
}

void frametab_get_stats(const struct frametab *ft, struct frametab_stats *st)
{
	*st = ft->st;
}

int frametab_set_end(struct frametab *ft, uint64_t ip)
{
	struct shm_frame end = { .base = SHM_BASE_END }, *slot, hop;
	int ret;

	if (!ip)
		return -ENOENT;
	ret = probe(ft, ip, &slot);
	if (ret < 0)
		return ret;
	if (ret == 1 && (slot->base == SHM_BASE_END || slot->base == SHM_BASE_CGO))
		return 0;	/* an end, or a hop only the agent can take */
	if (!go_hop(ft, ip, &hop)) {
		/* a copy's walk ends in asmcgocall: the agent hops there */
		if (ret == 0)
			ft->st.learned++;
		publish(ft, slot, ip, &hop);
		return 0;
	}
	if (ret == 0)
		ft->st.learned++;
	publish(ft, slot, ip, &end);	/* one 8-byte store: old or new rule, both valid */
	return 1;
}

/* The slot of ip in the unwalkable set: ip's own (returns 1), the first
 * free one (0), or -ENOSPC. */
static int unwalk_slot(const struct frametab *ft, uint64_t ip, size_t *at)
{
	uint32_t h = (uint32_t)((ip * SHM_HASH_MUL) >> 54);

	for (unsigned i = 0; i < FT_UNWALK_PROBES; i++) {
		size_t k = (h + i) & (FT_UNWALK_SIZE - 1);

		if (ft->unwalk[k] == ip || !ft->unwalk[k]) {
			*at = k;
			return ft->unwalk[k] == ip;
		}
	}
	return -ENOSPC;
}

size_t frametab_code_prefix(struct frametab *ft, const uint64_t *pcs, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		const struct proc_map *m;
		int ret = target_find(ft->t, pcs[i] - 1, &m);

		if (ret == -EAGAIN) {
			/* maps up to TARGET_MAPS_GAP_NS old: code mapped since? */
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			if (now - ft->junk_ns >= FT_JUNK_GAP_NS) {
				ft->junk_ns = now;
				target_maps_expire(ft->t);
				ret = target_find(ft->t, pcs[i] - 1, &m);
			}
		}
		if (ret || !(m->prot & PROC_MAP_X))
			return i;
	}
	return n;
}

int frametab_unwalkable(const struct frametab *ft, uint64_t ip)
{
	size_t at;

	return ft->nunwalk && ip && unwalk_slot(ft, ip, &at) == 1;
}

int frametab_set_unwalkable(struct frametab *ft, uint64_t ip)
{
	const struct shm_frame *end;
	Dwarf_Frame *fr = NULL;
	struct ft_obj *o;
	uint64_t bias;
	size_t at;
	int ret;

	if (!ip)
		return -ENOENT;
	ret = unwalk_slot(ft, ip, &at);
	if (ret)
		return ret < 0 ? ret : 1;
	end = frametab_lookup(ft->table, ip);
	if (end && (end->base == SHM_BASE_END || end->base == SHM_BASE_CGO))
		return 0;	/* an end already: a root (its CFI's, or frametab_set_end's), or a hop */
	if (!take_token(ft))
		return -EAGAIN;
	ret = resolve(ft, ip - 1, &o, &bias);
	if (ret == -EAGAIN)
		return ret;
	if (!ret && !find_frame(o, ip - 1 - bias, &fr)) {
		free(fr);
		return 0;	/* its CFI says how to go on: not ours to overrule */
	}
	ret = frametab_set_end(ft, ip);
	if (ret <= 0)
		return ret;	/* 0: a hop (Go's asmcgocall) */
	ft->unwalk[at] = ip;
	ft->nunwalk++;
	ft->st.unwalkable++;
	return 1;
}

int frametab_rule_elf(struct elfobj *e, uint64_t addr, struct shm_frame *out)
{
	struct ft_obj o = { .elf = e, .eh = dwarf_getcfi_elf(elfobj_elf(e)) };
	Dwarf_Frame *fr = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = find_frame(&o, addr, &fr);
	if (!ret) {
		ret = compile_rule(fr, out);
		free(fr);
	}
	if (o.dw)
		dwarf_end(o.dw);
	if (o.eh)
		dwarf_cfi_end(o.eh);
	return ret;
}
