/* The implant: regions injected near hooked objects, trampolines in them, jumps over prologues. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "implant/implant.h"
#include "model/mapguard.h"
#include "model/target.h"
#include "profile/profile.h"
#include "ptrace/remote.h"
#include "ptrace/seccomp_plan.h"
#include "regs.h"
#include "stacks/unwind.h"

#define REACH ((int64_t)INJECT_REACH - REGION_CODE - 4096)
#define MAX_BODY 8192
#define MAX_BODY_CHECK (1u << 20)	/* bytes of a body searched for branches into its start */
#define INFLIGHT_WAIT_MS 3000
#define UNMAP_ROUNDS 8		/* tries to find a thread that can unmap the regions */
/* Each trampoline starts a cache line: its fast path (the check and the
 * jump back) then sits in one or two lines whatever came before it. */
#define TRAMP_ALIGN 64

/* One region: a memfd mapped near the object it serves. */
struct region {
	struct inject_region *inj;      /* the r-x view */
	struct inject_region *alias;    /* agent backend: the rw- view, or NULL */
	uint64_t remote;                /* address in the target */
	uint8_t *local;                 /* our RW view */
	size_t size, used;              /* of the code part; used: bytes of code */
	uint64_t near;                  /* the object it serves */
	struct shm_hdr *hdr;            /* local + REGION_CODE: the target may write it */
	struct shm_hdr *want;           /* the header as we wrote it (kept until implant_free) */
};

struct implant {
	struct implant_params p;
	const struct hook_set *hooks;
	struct patch *patches;
	size_t npatches;
	struct region regions[IMPLANT_MAX_REGIONS];
	size_t nregions;
	struct shm_range nest[SHM_NEST_RANGES]; /* the allocator's own code: calls from */
	uint32_t nest_n;                        /* there are nested (nest_ranges) */
	uint64_t leftover_lo[IMPLANT_MAX_REGIONS], leftover_hi[IMPLANT_MAX_REGIONS];
	size_t nleftovers;
	size_t left;                    /* views implant_remove had to leave mapped */
	int handed_over;                /* the first region's local view is the backend's */
};

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

static int target_gone(const struct implant *im)
{
	return im->p.gone && *im->p.gone;
}

static void stop_all(struct implant *im)
{
	tracee_stop_all(im->p.tr, im->p.on_event, im->p.event_arg);
}

/* ---- remote syscalls: how regions get in and out ---- */

/*
 * Run op in the first stopped thread that can do remote syscalls (one in
 * an exit or clone event stop answers -EINVAL, an exiting one -ESRCH: try
 * the next). First pass: threads that hold no signal and whose interrupted
 * syscall a dead tool's frame would restart exactly (remote.h, picky);
 * then any. The thread's bookkeeping follows what remote_syscall did to it.
 * Returns op's result, or -ESRCH if no thread could.
 */
static int run_remote(struct implant *im, int (*op)(struct remote_ctx *ctx, void *arg), void *arg)
{
	struct tracee *tr = im->p.tr;
	int rc = -ESRCH;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < tr->n; i++) {
			struct thread *th = &tr->t[i];
			struct remote_ctx ctx;

			if (th->state != TS_STOPPED || th->vfork_child ||
			    (im->p.sc->remote_listed && !th->remote_ok) ||
			    (!pass && th->pending_sig > 0))
				continue;	/* seccomp may kill on them; pass 0: no signal held */
			remote_ctx_init(&ctx, im->p.pid, th->tid);
			ctx.picky = !pass;
			rc = op(&ctx, arg);
			if (ctx.resumed)
				th->interrupted = 0;	/* it stopped in a fresh event stop */
			if (ctx.delivered)
				th->pending_sig = ctx.stop_sig == SIGTRAP ? 0 : -1;
			if (rc != -EINVAL && rc != -ESRCH && rc != -EAGAIN)
				return rc;
		}
	}
	return rc;
}

struct map_args {
	struct implant *im;
	uint64_t near;
	size_t size;
	inject_prefill_fn prefill;
	void *prefill_arg;
	struct inject_region *code, *alias;
};

/* Map a region's code view near a->near, and the data view when asked. */
static int op_region_map(struct remote_ctx *ctx, void *arg)
{
	struct map_args *a = arg;
	int rc;

	/* the flags avoid what the target's seccomp filter may kill on */
	rc = inject_region_near_prefill(ctx, a->near, a->size, a->im->p.sc->inject_flags,
					a->prefill, a->prefill_arg, a->code);
	if (rc || !a->alias)
		return rc;
	rc = inject_region_alias(ctx, a->code, a->near, PROT_READ | PROT_WRITE, a->alias);
	if (rc)
		inject_region_remove(ctx, a->code);
	return rc;
}

static int sys_map(struct implant *im, uint64_t near, size_t size, inject_prefill_fn prefill,
		   void *prefill_arg, struct inject_region *code, struct inject_region *alias)
{
	struct map_args a = { im, near, size, prefill, prefill_arg, code, alias };

	return run_remote(im, op_region_map, &a);
}

static int op_region_remove(struct remote_ctx *ctx, void *arg)
{
	return inject_region_remove(ctx, arg);
}

static int sys_unmap(struct implant *im, struct inject_region *view)
{
	return run_remote(im, op_region_remove, view);
}

struct unmap_args {
	uint64_t addr;
	size_t len;
};

static int op_munmap(struct remote_ctx *ctx, void *arg)
{
	struct unmap_args *a = arg;

	return remote_munmap(ctx, a->addr, a->len);
}

static int sys_munmap(struct implant *im, uint64_t addr, size_t len)
{
	struct unmap_args a = { addr, len };

	return run_remote(im, op_munmap, &a);
}

static int op_close(struct remote_ctx *ctx, void *arg)
{
	return remote_close(ctx, *(int *)arg);
}

static int sys_close(struct implant *im, int fd)
{
	return run_remote(im, op_close, &fd);
}

const struct implant_sys implant_sys_remote = {
	.map = sys_map,
	.unmap = sys_unmap,
	.munmap = sys_munmap,
	.close = sys_close,
};

int implant_unmap_remote(struct implant *im, uint64_t addr, size_t len)
{
	return im->p.sys->munmap(im, addr, len);
}

int implant_close_remote(struct implant *im, int fd)
{
	return im->p.sys->close(im, fd);
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

/* A view of a region that is still mapped in the target. */
static int view_mapped(const struct inject_region *v)
{
	return v && v->size;
}

size_t implant_views(const struct implant *im, struct implant_view *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < im->nregions; i++) {
		const struct inject_region *v[2] = { im->regions[i].alias, im->regions[i].inj };

		for (int k = 0; k < 2; k++)
			if (view_mapped(v[k]) && n < max)
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

/* ---- removal ---- */

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

/*
 * Once the original bytes are back no thread can enter a trampoline again,
 * so only the threads still inside one need to run: resume just those for
 * a moment, re-stop them, look again. Every eighth round everyone runs, in
 * case a thread inside waits for a lock that a stopped one holds. A
 * thread found outside stays outside: after the first round only those
 * found inside are looked at again (with thousands of threads each look,
 * a walk of the live stack, is what the target waits for).
 */
int implant_wait_quiet(struct implant *im, int *busy)
{
	struct tracee *tr = im->p.tr;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	for (int round = 1;; round++) {
		*busy = 0;
		for (size_t i = 0; i < tr->n; i++) {
			struct thread *th = &tr->t[i];

			if (round > 1 && !th->mark)
				continue;
			th->mark = !th->vfork_child && th->state == TS_STOPPED &&
				   implant_in_flight(im, th->tid);
			*busy += th->mark;
		}
		if (round == 1 || !*busy)
			pr_debug("%d thread(s) inside a hooked call after round %d, %.1f ms",
				 *busy, round, (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
		if (!*busy || target_gone(im))
			return 0;
		if (clock_ns(CLOCK_MONOTONIC) - t0 >= INFLIGHT_WAIT_MS * 1000000ULL)
			return -EBUSY;
		if (round % 8 == 0) {
			tracee_resume_all(tr);
			sleep_us(1000);
		} else {
			for (size_t i = 0; i < tr->n; i++)
				if (tr->t[i].mark)
					tracee_resume(tr, &tr->t[i]);
			sleep_us(round < 4 ? 50 : 300);
		}
		stop_all(im);
		/* exact mode: a thread inside may be waiting for ring room */
		if (im->p.ops->quiesce)
			im->p.ops->quiesce(im->p.ops_arg);
	}
}

/*
 * Unmap every region's views, each in the first stopped thread that can
 * run a syscall. Under heavy thread churn every stopped thread may sit in
 * a clone or exit stop, where none can: then let the threads run for a
 * moment (the original bytes are back and no thread is inside a region,
 * so none can enter one) and try again, UNMAP_ROUNDS times. Returns how
 * many views stay mapped, with the last error in *err.
 */
static size_t unmap_regions(struct implant *im, int *err)
{
	size_t left = 0;

	for (int round = 1;; round++) {
		left = 0;
		for (size_t i = 0; i < im->nregions && !target_gone(im); i++) {
			struct inject_region *v[2] = { im->regions[i].alias, im->regions[i].inj };

			for (int k = 0; k < 2; k++) {
				int rc = 0;

				if (view_mapped(v[k])) {
					if (!v[k]->alias && v[k]->local)
						mapguard_remove(v[k]->local);	/* unmapped now */
					rc = im->p.sys->unmap(im, v[k]);
				}

				if (rc) {
					*err = rc;
					left++;
				}
			}
		}
		if (!left || target_gone(im))
			return 0;
		if (round == UNMAP_ROUNDS)
			return left;
		pr_debug("%zu view(s) not unmapped (%s): round %d", left, strerror(-*err), round);
		tracee_resume_all(im->p.tr);
		sleep_us(round < 4 ? 200 : 2000);
		stop_all(im);
	}
}

/* The first region's local view goes to the backend, which reads what the
 * agent left once the target runs again (session.c): it outlives the regions. */
static void hand_over(struct implant *im)
{
	struct inject_region *inj = im->nregions ? im->regions[0].inj : NULL;

	if (!im->p.ops->removed || im->handed_over || !inj || !inj->local)
		return;
	im->p.ops->removed(im->p.ops_arg, inj->local, inj->size);
	inj->local = NULL;
	im->handed_over = 1;
}

/* Threads that tracee_stop_all could not stop (tracee.h): they run no
 * user code before they stop, but may be inside a trampoline. */
static int unstopped(const struct implant *im)
{
	int n = 0;

	for (size_t i = 0; i < im->p.tr->n; i++)
		n += im->p.tr->t[i].state != TS_STOPPED;
	return n;
}

void implant_remove(struct implant *im)
{
	int busy = 0, unrestored = 0, err = 0, stuck;

	/* 1. The original bytes back (trampolines have no trap that could
	 * hurt without us: nothing to disarm first). */
	for (size_t i = 0; i < im->npatches; i++) {
		struct patch *p = &im->patches[i];

		if (!p->installed)
			continue;
		if (target_write(im->p.target, p->reloc.patch_addr, p->orig, RELOC_JMP_LEN)) {
			pr_err("cannot restore %s at %#lx in %d", p->hook->names[0],
			       (unsigned long)p->reloc.patch_addr, im->p.pid);
			unrestored++;
		} else {
			p->installed = 0;
		}
	}
	/* 2. Let threads still inside a trampoline (or a call made through one)
	 * leave it before the regions go. */
	if (im->nregions && !target_gone(im))
		implant_wait_quiet(im, &busy);
	hand_over(im);
	if (target_gone(im))
		goto out;
	stuck = unstopped(im);
	if (unrestored || busy || stuck) {
		/* A jump or a thread still leads there: unmapping would crash it. */
		for (size_t i = 0; i < im->nregions; i++)
			im->left += view_mapped(im->regions[i].inj) +
				    view_mapped(im->regions[i].alias);
		if (busy)
			pr_err("%d thread(s) of %d still inside a hooked call after %d ms: "
			       "leaving %zu heapattach mapping(s) in it (they work without "
			       "heapattach)", busy, im->p.pid, INFLIGHT_WAIT_MS, im->left);
		else if (stuck)
			pr_err("%d thread(s) of %d did not stop (%d: a vfork parent waiting for its "
			       "child, or an uninterruptible sleep): leaving %zu heapattach "
			       "mapping(s) in it (they work without heapattach)", stuck, im->p.pid,
			       im->p.tr->unstopped, im->left);
		else
			pr_err("leaving %zu heapattach mapping(s) in %d: %d entry point(s) still "
			       "jump there", im->left, im->p.pid, unrestored);
		goto out;
	}
	im->left = unmap_regions(im, &err);
	if (im->left)
		pr_err("cannot unmap %zu heapattach mapping(s) from %d (%s, in every thread, "
		       "%d tries): they stay, unused (no jump leads there any more)",
		       im->left, im->p.pid, strerror(-err), UNMAP_ROUNDS);
out:
	for (size_t i = 0; i < im->nregions; i++) {
		free(im->regions[i].inj);
		free(im->regions[i].alias);
		im->regions[i].inj = im->regions[i].alias = NULL;
	}
	im->nregions = 0;
	im->npatches = 0;
}
