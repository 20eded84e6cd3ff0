/* The implant: regions injected near hooked objects, trampolines in them, jumps over prologues. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "implant/implant.h"
#include "implant/implant_int.h"
#include "model/mapguard.h"
#include "model/target.h"
#include "profile/profile.h"
#include "stacks/unwind.h"
#include "regs.h"

#define REACH ((int64_t)INJECT_REACH - REGION_CODE - 4096)
#define MAX_BODY 8192
#define MAX_BODY_CHECK (1u << 20)	/* bytes of a body searched for branches into its start */
/* Each trampoline starts a cache line: its fast path (the check and the
 * jump back) then sits in one or two lines whatever came before it. */
#define TRAMP_ALIGN 64

static enum tramp_class class_of(enum hook_kind k)
{
	switch (k) {
	case HOOK_FREE:
		return TRAMP_FREE;
	case HOOK_REALLOC:
	case HOOK_REALLOCARRAY:
	case HOOK_HEAP_REALLOC:
	case HOOK_HEAP_REALLOCN:
	case HOOK_REALLOCARR:
		return TRAMP_REALLOC;
	default:
		return TRAMP_ALLOC;
	}
}

/* ---- the handle ---- */

struct implant *implant_new(const struct implant_params *p)
{
	struct implant *im = xcalloc(1, sizeof(*im));

	im->p = *p;
	if (!im->p.sys)
		im->p.sys = &implant_sys_remote;
	return im;
}

void implant_free(struct implant *im)
{
	if (!im)
		return;
	for (size_t i = 0; i < IMPLANT_MAX_REGIONS; i++)
		free(im->regions[i].want);
	free(im->patches);
	free(im);
}

uint64_t implant_region_size(const struct implant *im)
{
	return REGION_CODE + im->p.ops->data_size(im->p.ops_arg);
}

size_t implant_left(const struct implant *im)
{
	return im->left;
}

/* ---- regions ---- */

/* Identity and settings a successor needs to undo us (see recover.c). */
static void fill_header(const struct implant *im, struct shm_hdr *h, uint64_t code_remote,
			uint64_t total)
{
	h->version = SHM_VERSION;
	h->total_size = total;
	h->code_remote = code_remote;
	h->code_size = REGION_CODE;
	h->tool_pid = getpid();
	h->target_pid = im->p.pid;
	h->nest_n = im->nest_n;
	memcpy(h->nest, im->nest, sizeof(h->nest));
	__atomic_store_n(&h->magic, SHM_MAGIC, __ATOMIC_RELEASE);
}

/* The header, in the memfd before the target maps it at addr: a tool killed
 * right after that leaves a leftover the next one can prove ours. */
static int prefill_header(void *arg, int fd, uint64_t addr, size_t size)
{
	static struct shm_hdr h;

	memset(&h, 0, sizeof(h));
	fill_header(arg, &h, addr, size);
	if (pwrite(fd, &h, sizeof(h), REGION_CODE) != (ssize_t)sizeof(h))
		return errno ? -errno : -EIO;
	return 0;
}

static int64_t dist(uint64_t a, uint64_t b)
{
	return a > b ? (int64_t)(a - b) : (int64_t)(b - a);
}

/* The header in our view of the region (prefill_header wrote the same),
 * and our own copy of it, what the header must go on saying. */
static void region_header(struct implant *im, struct region *r)
{
	r->hdr = (struct shm_hdr *)(r->local + REGION_CODE);
	fill_header(im, r->hdr, r->remote, r->inj->size);
	if (!r->want)
		r->want = xcalloc(1, sizeof(*r->want));
	memset(r->want, 0, sizeof(*r->want));
	fill_header(im, r->want, r->remote, r->inj->size);
}

/* The backend lays out the first region (agent: shared data and blob). */
static int region_setup(struct implant *im, struct region *r)
{
	struct implant_area a = {
		.code = r->local,
		.code_remote = r->remote,
		.code_size = r->size,
		.used = r->used,
		.hdr = r->hdr,
		.want = r->want,
		.data_remote = r->alias ? r->alias->remote + REGION_CODE : 0,
		.data_size = r->inj->size - REGION_CODE,
	};
	int rc;

	if (!im->p.ops->setup)
		return 0;
	rc = im->p.ops->setup(im->p.ops_arg, &a);
	if (rc)
		return rc;
	r->used = (a.used + TRAMP_ALIGN - 1) & ~(size_t)(TRAMP_ALIGN - 1);
	return 0;
}

/* A region within jump reach of addr with room for one more trampoline,
 * injecting a new one if needed. Index, or -errno. */
static int region_for(struct implant *im, uint64_t addr)
{
	const struct implant_ops *ops = im->p.ops;
	struct region *r;
	int rc;

	for (size_t i = 0; i < im->nregions; i++) {
		r = &im->regions[i];
		if (dist(r->remote, addr) < REACH && r->used + ops->tramp_max + 16 <= r->size)
			return (int)i;
	}
	if (im->nregions == IMPLANT_MAX_REGIONS)
		return -ENOSPC;
	if (ops->agent && im->nregions)
		return -ERANGE;	/* one shared data area: everything must reach it */
	r = &im->regions[im->nregions];
	r->inj = xcalloc(1, sizeof(*r->inj));
	r->alias = ops->agent ? xcalloc(1, sizeof(*r->alias)) : NULL;
	r->near = addr;
	rc = im->p.sys->map(im, addr, implant_region_size(im), prefill_header, im, r->inj,
			    r->alias);
	if (rc) {
		free(r->alias);
		r->alias = NULL;
		pr_err("cannot map trampolines into %d near %#lx: %s", im->p.pid,
		       (unsigned long)addr, strerror(-rc));
		free(r->inj);
		r->inj = NULL;
		return rc;
	}
	r->remote = r->inj->remote;
	r->local = r->inj->local;
	mapguard_add_rw(r->local, r->inj->size);	/* a target that shrinks it cannot kill us */
	r->size = REGION_CODE;
	r->used = INJECT_STUB_SIZE;
	region_header(im, r);
	im->nregions++;
	if (im->nregions == 1) {
		rc = region_setup(im, r);
		if (rc)
			return rc;	/* the region stays listed: implant_remove unmaps it */
	}
	pr_debug("region %#lx (+%zu) near %#lx", (unsigned long)r->remote, r->size,
		 (unsigned long)addr);
	return (int)(im->nregions - 1);
}

/* ---- patches ---- */

/*
 * Whether a direct branch in h's body (st_size bytes, at most
 * MAX_BODY_CHECK) leads into the bytes p overwrites: 1 (*where: the
 * branch), 0, or -errno (-EINVAL: undecodable bytes at *where). A body cut
 * at MAX_BODY_CHECK may end in half an instruction: that is not an error.
 */
static int body_branch_into(struct implant *im, const struct hook *h, const struct patch *p,
			    uint64_t *where)
{
	size_t len = h->size < MAX_BODY_CHECK ? h->size : MAX_BODY_CHECK;
	uint8_t *body = xmalloc(len);
	int rc;

	*where = h->addr;
	rc = target_read(im->p.target, h->addr, body, len);
	if (!rc)
		rc = reloc_branch_into(body, len, h->addr, p->reloc.patch_addr,
				       p->reloc.patch_addr + p->reloc.covered, where);
	if (rc == -EINVAL && len < h->size && *where + 15 > h->addr + len)
		rc = 0;
	free(body);
	return rc;
}

/* Build the trampoline of one hook (not yet reachable: no jmp written). */
static int prepare(struct implant *im, const struct hook *h, struct patch *p)
{
	const struct implant_ops *ops = im->p.ops;
	uint8_t body[MAX_BODY];
	size_t avail = h->size ? h->size : 64;
	struct region *r;
	uint64_t at, where;
	int ri, rc, off;

	if (avail > MAX_BODY)
		avail = MAX_BODY;
	rc = target_read(im->p.target, h->addr, body, avail);
	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	p->hook = h;
	p->cls = class_of(h->kind);
	ri = region_for(im, h->addr);
	if (ri < 0)
		return ri;
	r = &im->regions[ri];
	at = r->remote + r->used;
	off = ops->reloc_offset(im->p.ops_arg, h, p->cls);
	if (off < 0)
		return off;
	/* a call among the first bytes (mi_reallocarray's "push; call") runs
	 * from the copy: what it allocates is nested in this hook, and a
	 * thread inside it at detach is waited for like one inside the hook */
	rc = reloc_prologue_flags(body, avail, h->addr, at + (uint64_t)off, RELOC_ALLOW_CALL,
				  &p->reloc);
	if (rc) {
		pr_warn("not hooking %s at %#lx: %s", h->names[0], (unsigned long)h->addr,
			p->reloc.why);
		return rc;
	}
	if ((p->reloc.patch_addr & 4095) > 4096 - RELOC_JMP_LEN) {
		/* A write across two pages can be cut in half by our death. */
		pr_warn("not hooking %s: its first bytes cross a page", h->names[0]);
		return -EINVAL;
	}
	if (h->size && (rc = body_branch_into(im, h, p, &where)) != 0) {
		if (rc == 1)
			pr_warn("not hooking %s: a branch at %#lx leads into its first %zu bytes",
				h->names[0], (unsigned long)where, p->reloc.covered);
		else
			pr_warn("not hooking %s: its code cannot be checked at %#lx",
				h->names[0], (unsigned long)where);
		return -EINVAL;
	}
	rc = ops->emit(im->p.ops_arg, h, p->cls, at, &p->reloc, r->local + r->used,
		       r->size - r->used, &p->lay);
	if (rc)
		return rc;
	p->tramp = at;
	p->region = ri;
	r->used = (r->used + p->lay.size + TRAMP_ALIGN - 1) & ~(size_t)(TRAMP_ALIGN - 1);
	memcpy(p->orig, body + (p->reloc.patch_addr - h->addr), RELOC_JMP_LEN);
	return 0;
}

/* Move threads whose ip lies inside bytes we just overwrote. */
static void move_threads(struct implant *im, const struct patch *p)
{
	struct tracee *tr = im->p.tr;

	for (size_t i = 0; i < tr->n; i++) {
		arch_regs_t regs;
		uint64_t nip;

		if (tr->t[i].state != TS_STOPPED || arch_regs_get(tr->t[i].tid, &regs))
			continue;
		if (reloc_map_ip(&p->reloc, REG_IP(&regs), &nip) == 0) {
			REG_IP(&regs) = nip;
			arch_regs_set(tr->t[i].tid, &regs);
			pr_debug("moved thread %d into the relocated %s", tr->t[i].tid,
				 p->hook->names[0]);
		}
	}
}

static int write_jump(struct implant *im, struct patch *p)
{
	uint8_t jmp[RELOC_JMP_LEN];
	int rc;

	rc = reloc_encode_jmp(jmp, p->reloc.patch_addr, p->tramp);
	if (rc)
		return rc;
	/* Threads inside the bytes go to the relocated copy first: if we die
	 * before the jump is written, they run on there just as well. */
	move_threads(im, p);
	rc = target_write(im->p.target, p->reloc.patch_addr, jmp, RELOC_JMP_LEN);
	if (rc)
		return rc;
	p->installed = 1;
	return 0;
}

/* Keep the original bytes in the region's header, for a successor (and in
 * our copy of it): before the jump, so that a jump is never there without
 * its record. The count is ours: the earlier patches of its region. 0, or
 * -ENOSPC when the header is full. */
static int record_patch(struct implant *im, const struct patch *p)
{
	struct region *r = &im->regions[p->region];
	struct shm_patch rec = { .addr = p->reloc.patch_addr, .len = RELOC_JMP_LEN };
	uint32_t k = 0;

	for (const struct patch *q = im->patches; q < p; q++)
		k += q->region == p->region;
	if (k >= SHM_MAX_PATCHES)
		return -ENOSPC;
	memcpy(rec.orig, p->orig, RELOC_JMP_LEN);
	r->hdr->patches[k] = rec;
	__atomic_store_n(&r->hdr->npatches, k + 1, __ATOMIC_RELEASE);
	r->want->patches[k] = rec;
	r->want->npatches = k + 1;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct shm_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The allocator's own code (in malloc's object), where a call to an
 * entry point was made by another hooked call: each hooked function's
 * own extent (hooks.c: the function and its neighbours that are no one
 * else's), merged; past SHM_NEST_RANGES the closest ones are joined.
 */
static void nest_ranges(struct implant *im)
{
	const struct hook_set *set = im->hooks;
	struct shm_range r[64];
	const char *obj = NULL;
	size_t n = 0, k = 0;

	im->nest_n = 0;
	for (size_t i = 0; i < set->n && !obj; i++)
		if (set->v[i].kind == HOOK_ALLOC && !set->v[i].forwards)
			obj = set->v[i].path;
	for (size_t i = 0; i < set->n && obj && n < 64; i++) {
		const struct hook *h = &set->v[i];

		if (h->forwards || h->unsupported || !h->path || strcmp(h->path, obj))
			continue;
		if (h->own_hi > h->own_lo)
			r[n++] = (struct shm_range){ h->own_lo, h->own_hi };
		else if (h->size)
			r[n++] = (struct shm_range){ h->addr, h->addr + h->size };
	}
	qsort(r, n, sizeof(r[0]), cmp_range);
	for (size_t i = 0; i < n; i++) {	/* merge the overlapping */
		if (k && r[i].lo <= r[k - 1].hi) {
			if (r[i].hi > r[k - 1].hi)
				r[k - 1].hi = r[i].hi;
		} else {
			r[k++] = r[i];
		}
	}
	n = k;
	while (n > SHM_NEST_RANGES) {	/* join across the smallest gap */
		size_t best = 0;

		for (size_t i = 1; i + 1 < n; i++)
			if (r[i + 1].lo - r[i].hi < r[best + 1].lo - r[best].hi)
				best = i;
		r[best].hi = r[best + 1].hi;
		memmove(&r[best + 1], &r[best + 2], (n - best - 2) * sizeof(r[0]));
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		if (r[i].hi - r[i].lo > (64u << 20))
			continue;	/* implausible: left out */
		im->nest[im->nest_n++] = r[i];
	}
}

int implant_install(struct implant *im, const struct hook_set *set)
{
	size_t n = 0;
	int rc;

	im->hooks = set;
	nest_ranges(im);
	free(im->patches);
	im->patches = xcalloc(set->n ? set->n : 1, sizeof(*im->patches));
	for (size_t i = 0; i < set->n; i++) {
		const struct hook *h = &set->v[i];

		if (h->forwards)
			continue;	/* a tail-jump into another hook: counted there */
		if (h->unsupported) {
			pr_warn("not hooking %s: it is an IFUNC", h->names[0]);
			continue;
		}
		rc = prepare(im, h, &im->patches[n]);
		if (rc == 0)
			n++;
		else if (rc != -EINVAL && rc != -ERANGE)
			goto err;
	}
	im->npatches = n;
	if (!n) {
		pr_err("no allocator entry point of %d could be hooked", im->p.pid);
		rc = -ENOENT;
		goto err;
	}
	for (size_t i = 0; i < n; i++) {
		if (record_patch(im, &im->patches[i])) {
			pr_warn("not hooking %s: no room left to record it", im->patches[i].hook->names[0]);
			continue;
		}
		rc = write_jump(im, &im->patches[i]);
		if (rc) {
			pr_err("cannot patch %s: %s", im->patches[i].hook->names[0], strerror(-rc));
			goto err;
		}
	}
	return 0;
err:
	implant_remove(im);
	return rc;
}

const struct patch *implant_patches(const struct implant *im, size_t *n)
{
	*n = im->npatches;
	return im->patches;
}

const struct patch *implant_patch_at(const struct implant *im, uint64_t ip)
{
	for (size_t i = 0; i < im->npatches; i++) {
		const struct patch *p = &im->patches[i];

		if (ip >= p->tramp && ip <= p->tramp + p->lay.size)
			return p;
	}
	return NULL;
}

size_t implant_views(const struct implant *im, struct implant_view *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < im->nregions; i++) {
		const struct inject_region *v[2] = { im->regions[i].alias, im->regions[i].inj };

		for (int k = 0; k < 2; k++)
			if (implant_view_mapped(v[k]) && n < max)
				out[n++] = (struct implant_view){ v[k]->remote, v[k]->size };
	}
	return n;
}

int implant_in_region(const struct implant *im, uint64_t addr)
{
	for (size_t i = 0; i < im->nregions; i++)
		if (addr >= im->regions[i].remote && addr < im->regions[i].remote + im->regions[i].size)
			return 1;
	for (size_t i = 0; i < im->nleftovers; i++)
		if (addr >= im->leftover_lo[i] && addr < im->leftover_hi[i])
			return 1;
	return 0;
}

int implant_nested(const struct implant *im, uint64_t ip)
{
	if (implant_in_region(im, ip))
		return 1;
	for (uint32_t i = 0; i < im->nest_n; i++)
		if (ip >= im->nest[i].lo && ip < im->nest[i].hi)
			return 1;
	return 0;
}

int implant_in_flight(struct implant *im, pid_t tid)
{
	arch_regs_t r;
	struct unwind_regs ur;
	uint64_t pcs[PROFILE_MAX_FRAMES];
	int n;

	if (arch_regs_get(tid, &r))
		return 0;
	if (implant_in_region(im, REG_IP(&r)))
		return 1;
	unwind_regs_from_live(&r, &ur);
	n = unwind_stack(im->p.unw, tid, &ur, pcs, PROFILE_MAX_FRAMES, 0, 0);
	for (int i = 0; i < n; i++)
		if (implant_in_region(im, pcs[i]))
			return 1;
	return 0;
}

int implant_add_leftover(struct implant *im, uint64_t lo, uint64_t hi)
{
	if (im->nleftovers == IMPLANT_MAX_REGIONS)
		return -ENOSPC;
	im->leftover_lo[im->nleftovers] = lo;
	im->leftover_hi[im->nleftovers++] = hi;
	return 0;
}

void implant_clear_leftovers(struct implant *im)
{
	im->nleftovers = 0;
}

