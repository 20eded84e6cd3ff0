/* Installing and removing hooks: trampolines in injected regions, jumps over prologues. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "frametab.h"
#include "inject.h"
#include "log.h"
#include "mapguard.h"
#include "remote.h"
#include "session.h"
#include "unwind.h"
#include "xmalloc.h"

#define REGION_DATA_TRAP 4096
#define REACH ((int64_t)INJECT_REACH - REGION_CODE - REGION_DATA_TRAP)
#define MAX_BODY 8192
#define MAX_BODY_CHECK (1u << 20)	/* bytes of a body searched for branches into its start */
#define INFLIGHT_WAIT_MS 3000
#define UNMAP_ROUNDS 8		/* tries to find a thread that can unmap the regions */
/* Each trampoline starts a cache line: its fast path (the check and the
 * jump back) then sits in one or two lines whatever came before it. */
#define TRAMP_ALIGN 64
#define WAIT_DRAIN_MAX 65536	/* records drained per round of patch_wait_quiet: room
				 * for writers waiting, not the whole backlog */

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

/*
 * Run op in the first stopped thread that can do remote syscalls (one in
 * an exit or clone event stop answers -EINVAL, an exiting one -ESRCH: try
 * the next). First pass: threads that hold no signal and whose interrupted
 * syscall a dead tool's frame would restart exactly (remote.h, picky);
 * then any. The thread's bookkeeping follows what remote_syscall did to it.
 * Returns op's result, or -ESRCH if no thread could.
 */
static int run_remote(struct session *s, int (*op)(struct remote_ctx *ctx, void *arg), void *arg)
{
	int rc = -ESRCH;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < s->tr.n; i++) {
			struct thread *th = &s->tr.t[i];
			struct remote_ctx ctx;

			if (th->state != TS_STOPPED || th->vfork_child ||
			    (s->sc.remote_listed && !th->remote_ok) ||
			    (!pass && th->pending_sig > 0))
				continue;	/* seccomp may kill on them; pass 0: no signal held */
			remote_ctx_init(&ctx, s->pid, th->tid);
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

static int op_region_remove(struct remote_ctx *ctx, void *arg)
{
	return inject_region_remove(ctx, arg);
}

/*
 * Bytes of each of the SHM_NRINGS rings (in practice one per thread; only
 * the pages a ring uses are ever touched). At 256 KiB and more per sample
 * even 20 GB/s of allocation sends ~8 MB/s: 2 MiB holds a quarter of a
 * second. Higher rates send up to hundreds of MB/s per thread, and until
 * the frame table is learnt each event carries an 8 KiB stack copy: they
 * need room for the tool's first, slow moments.
 */
uint64_t patch_ring_size(const struct session *s)
{
	if (s->ring_size)
		return s->ring_size;	/* sized to the target's memory cgroup (membudget.c) */
	return s->opt->sample_rate >= 256 * 1024 ? 2u << 20 : 8u << 20;
}

uint64_t patch_region_size(const struct session *s)
{
	return REGION_CODE + (s->fast ? SHM_OFF_RING + SHM_NRINGS * patch_ring_size(s) :
			      REGION_DATA_TRAP);
}

/* Identity and settings a successor needs to undo us (see recover.c). */
static void fill_header(struct session *s, struct shm_hdr *h, uint64_t code_remote,
			uint64_t total)
{
	h->version = SHM_VERSION;
	h->total_size = total;
	h->code_remote = code_remote;
	h->code_size = REGION_CODE;
	h->tool_pid = getpid();
	h->target_pid = s->pid;
	h->nest_lo = s->nest_lo;
	h->nest_hi = s->nest_hi;
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

/* Map the next region (code view; in fast mode also the data view) near r->near. */
static int op_region_map(struct remote_ctx *ctx, void *arg)
{
	struct session *s = arg;
	struct region *r = &s->regions[s->nregions];
	int rc;

	/* the flags avoid what the target's seccomp filter may kill on */
	rc = inject_region_near_prefill(ctx, r->near, patch_region_size(s), s->sc.inject_flags,
					prefill_header, s, r->inj);
	if (rc || !s->fast)
		return rc;
	rc = inject_region_alias(ctx, r->inj, r->near, PROT_READ | PROT_WRITE, r->alias);
	if (rc)
		inject_region_remove(ctx, r->inj);
	return rc;
}

/* Unmap one region, running munmap in the first stopped thread that can. */
static int region_unmap(struct session *s, struct inject_region *inj)
{
	return run_remote(s, op_region_remove, inj);
}

static int64_t dist(uint64_t a, uint64_t b)
{
	return a > b ? (int64_t)(a - b) : (int64_t)(b - a);
}

/* A region within jump reach of addr with room for one more trampoline,
 * injecting a new one if needed. Index, or -errno. */
/* The header in our view of the region (prefill_header wrote the same); in
 * fast mode also kept as s->shm_want, what the header must go on saying. */
static void region_header(struct session *s, struct region *r)
{
	r->hdr = (struct shm_hdr *)(r->local + REGION_CODE);
	fill_header(s, r->hdr, r->remote, r->inj->size);
	if (s->fast && !s->nregions) {
		memset(&s->shm_want, 0, sizeof(s->shm_want));
		fill_header(s, &s->shm_want, r->remote, r->inj->size);
	}
}

/* Fast mode: shared data, the agent blob, and where trampolines find them. */
static int region_fast_setup(struct session *s, struct region *r)
{
	size_t at = (r->used + 63) & ~(size_t)63;
	int rc;

	fast_init_data(s, r->alias->remote + REGION_CODE, patch_ring_size(s));
	s->fenv.data = r->alias->remote + REGION_CODE;
	/* A locked sub measured ~3% slower with two busy threads; a rare lost
	 * update between two threads sharing a counter only shifts a sample. */
	s->fenv.plain_sub = 1;
	rc = tramp_fast_agent_install(r->local + at, r->size - at, r->remote + at, &s->fenv);
	if (rc)
		return rc;
	r->used = (at + tramp_fast_agent_size() + TRAMP_ALIGN - 1) & ~(size_t)(TRAMP_ALIGN - 1);
	pr_debug("agent at +%#zx, trampolines below", at);
	return 0;
}

static int region_for(struct session *s, uint64_t addr)
{
	struct region *r;
	int rc;

	for (size_t i = 0; i < s->nregions; i++) {
		r = &s->regions[i];
		if (dist(r->remote, addr) < REACH && r->used + TRAMP_FAST_MAX_SIZE + 16 <= r->size)
			return (int)i;
	}
	if (s->nregions == SESSION_MAX_REGIONS)
		return -ENOSPC;
	if (s->fast && s->nregions)
		return -ERANGE;	/* one shared data area: everything must reach it */
	r = &s->regions[s->nregions];
	memset(r, 0, sizeof(*r));
	r->inj = xcalloc(1, sizeof(*r->inj));
	if (s->fast)
		r->alias = xcalloc(1, sizeof(*r->alias));
	r->near = addr;
	rc = run_remote(s, op_region_map, s);
	if (rc) {
		free(r->alias);
		r->alias = NULL;
		pr_err("cannot map trampolines into %d near %#lx: %s", s->pid,
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
	region_header(s, r);
	s->nregions++;
	if (s->fast) {
		rc = region_fast_setup(s, r);
		if (rc)
			return rc;	/* the region stays listed: patch_remove unmaps it */
	}
	pr_debug("region %#lx (+%zu) near %#lx", (unsigned long)r->remote, r->size,
		 (unsigned long)addr);
	return (int)(s->nregions - 1);
}

/*
 * Whether a direct branch in h's body (st_size bytes, at most
 * MAX_BODY_CHECK) leads into the bytes p overwrites: 1 (*where: the
 * branch), 0, or -errno (-EINVAL: undecodable bytes at *where). A body cut
 * at MAX_BODY_CHECK may end in half an instruction: that is not an error.
 */
static int body_branch_into(struct session *s, const struct hook *h, const struct patch *p,
			    uint64_t *where)
{
	size_t len = h->size < MAX_BODY_CHECK ? h->size : MAX_BODY_CHECK;
	uint8_t *body = xmalloc(len);
	int rc;

	*where = h->addr;
	rc = remote_mem_read(s->proc_tid, h->addr, body, len);
	if (!rc)
		rc = reloc_branch_into(body, len, h->addr, p->reloc.patch_addr,
				       p->reloc.patch_addr + p->reloc.covered, where);
	if (rc == -EINVAL && len < h->size && *where + 15 > h->addr + len)
		rc = 0;
	free(body);
	return rc;
}

/* Build the trampoline of one hook (not yet reachable: no jmp written). */
static int prepare(struct session *s, const struct hook *h, struct patch *p)
{
	uint8_t body[MAX_BODY];
	size_t avail = h->size ? h->size : 64;
	struct region *r;
	uint64_t at, where;
	int ri, rc, off;

	if (avail > MAX_BODY)
		avail = MAX_BODY;
	rc = remote_mem_read(s->proc_tid, h->addr, body, avail);
	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	p->hook = h;
	p->cls = class_of(h->kind);
	ri = region_for(s, h->addr);
	if (ri < 0)
		return ri;
	r = &s->regions[ri];
	at = r->remote + r->used;
	off = s->fast ? tramp_fast_reloc_offset(p->cls, h, &s->fenv) :
			tramp_reloc_offset(p->cls);
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
	if (h->size && (rc = body_branch_into(s, h, p, &where)) != 0) {
		if (rc == 1)
			pr_warn("not hooking %s: a branch at %#lx leads into its first %zu bytes",
				h->names[0], (unsigned long)where, p->reloc.covered);
		else
			pr_warn("not hooking %s: its code cannot be checked at %#lx",
				h->names[0], (unsigned long)where);
		return -EINVAL;
	}
	if (s->fast)
		rc = tramp_fast_emit(p->cls, h, at, &p->reloc, &s->fenv, r->local + r->used,
				     r->size - r->used, &p->lay);
	else
		rc = tramp_emit(p->cls, at, &p->reloc, r->local + r->used, r->size - r->used,
				&p->lay);
	if (rc)
		return rc;
	p->tramp = at;
	p->tramp_local = r->local + r->used;
	p->region = ri;
	r->used = (r->used + p->lay.size + TRAMP_ALIGN - 1) & ~(size_t)(TRAMP_ALIGN - 1);
	memcpy(p->orig, body + (p->reloc.patch_addr - h->addr), RELOC_JMP_LEN);
	return 0;
}

/* Move threads whose rip lies inside bytes we just overwrote. */
static void move_threads(struct session *s, const struct patch *p)
{
	for (size_t i = 0; i < s->tr.n; i++) {
		struct user_regs_struct regs;
		uint64_t nip;

		if (s->tr.t[i].state != TS_STOPPED ||
		    ptrace(PTRACE_GETREGS, s->tr.t[i].tid, 0, &regs) < 0)
			continue;
		if (reloc_map_ip(&p->reloc, regs.rip, &nip) == 0) {
			regs.rip = nip;
			ptrace(PTRACE_SETREGS, s->tr.t[i].tid, 0, &regs);
			pr_debug("moved thread %d into the relocated %s", s->tr.t[i].tid,
				 p->hook->names[0]);
		}
	}
}

static int write_jump(struct session *s, struct patch *p)
{
	uint8_t jmp[RELOC_JMP_LEN];
	int rc;

	rc = reloc_encode_jmp(jmp, p->reloc.patch_addr, p->tramp);
	if (rc)
		return rc;
	/* Threads inside the bytes go to the relocated copy first: if we die
	 * before the jump is written, they run on there just as well. */
	move_threads(s, p);
	rc = remote_mem_write(s->proc_tid, p->reloc.patch_addr, jmp, RELOC_JMP_LEN);
	if (rc)
		return rc;
	p->installed = 1;
	return 0;
}

/* Keep the original bytes in the region's header, for a successor (and
 * in s->shm_want): before the jump, so that a jump is never there without
 * its record. The count is ours: the earlier patches of its region. 0, or
 * -ENOSPC when the header is full. */
static int record_patch(struct session *s, const struct patch *p)
{
	struct shm_hdr *h = s->regions[p->region].hdr;
	struct shm_patch rec = { .addr = p->reloc.patch_addr, .len = RELOC_JMP_LEN };
	uint32_t k = 0;

	for (const struct patch *q = s->patches; q < p; q++)
		k += q->region == p->region;
	if (k >= SHM_MAX_PATCHES)
		return -ENOSPC;
	memcpy(rec.orig, p->orig, RELOC_JMP_LEN);
	h->patches[k] = rec;
	__atomic_store_n(&h->npatches, k + 1, __ATOMIC_RELEASE);
	if (s->fast && p->region == 0) {
		s->shm_want.patches[k] = rec;
		s->shm_want.npatches = k + 1;
	}
	return 0;
}

/* The span of the allocator's own hooked functions (in malloc's object):
 * an allocation whose caller is in there was made by another hooked call. */
static void nest_range(struct session *s)
{
	const char *obj = NULL;

	s->nest_lo = s->nest_hi = 0;
	for (size_t i = 0; i < s->hooks.n && !obj; i++)
		if (s->hooks.v[i].kind == HOOK_ALLOC && !s->hooks.v[i].forwards)
			obj = s->hooks.v[i].path;
	for (size_t i = 0; i < s->hooks.n && obj; i++) {
		const struct hook *h = &s->hooks.v[i];

		if (h->forwards || h->unsupported || !h->size || !h->path || strcmp(h->path, obj))
			continue;
		if (!s->nest_lo || h->addr < s->nest_lo)
			s->nest_lo = h->addr;
		if (h->addr + h->size > s->nest_hi)
			s->nest_hi = h->addr + h->size;
	}
	if (s->nest_hi - s->nest_lo > (64u << 20))
		s->nest_lo = s->nest_hi = 0;	/* implausible: check our code only */
}

int patch_install(struct session *s)
{
	size_t n = 0;
	int rc;

	nest_range(s);

	s->patches = xcalloc(s->hooks.n ? s->hooks.n : 1, sizeof(*s->patches));
	for (size_t i = 0; i < s->hooks.n; i++) {
		const struct hook *h = &s->hooks.v[i];

		if (h->forwards)
			continue;	/* a tail-jump into another hook: counted there */
		if (h->unsupported) {
			pr_warn("not hooking %s: it is an IFUNC", h->names[0]);
			continue;
		}
		rc = prepare(s, h, &s->patches[n]);
		if (rc == 0)
			n++;
		else if (rc != -EINVAL && rc != -ERANGE)
			goto err;
	}
	s->npatches = n;
	if (!n) {
		pr_err("no allocator entry point of %d could be hooked", s->pid);
		rc = -ENOENT;
		goto err;
	}
	for (size_t i = 0; i < n; i++) {
		if (record_patch(s, &s->patches[i])) {
			pr_warn("not hooking %s: no room left to record it", s->patches[i].hook->names[0]);
			continue;
		}
		rc = write_jump(s, &s->patches[i]);
		if (rc) {
			pr_err("cannot patch %s: %s", s->patches[i].hook->names[0], strerror(-rc));
			goto err;
		}
	}
	return 0;
err:
	patch_remove(s);
	return rc;
}

struct patch *patch_by_tramp_ip(struct session *s, uint64_t ip)
{
	for (size_t i = 0; i < s->npatches; i++) {
		struct patch *p = &s->patches[i];

		if (ip >= p->tramp && ip <= p->tramp + p->lay.size)
			return p;
	}
	return NULL;
}

int patch_in_region(const struct session *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nregions; i++)
		if (addr >= s->regions[i].remote && addr < s->regions[i].remote + s->regions[i].size)
			return 1;
	for (size_t i = 0; i < s->nleftovers; i++)
		if (addr >= s->leftover_lo[i] && addr < s->leftover_hi[i])
			return 1;
	return 0;
}

int patch_in_flight(struct session *s, pid_t tid)
{
	struct user_regs_struct r;
	struct unwind_regs ur;
	uint64_t pcs[PROFILE_MAX_FRAMES];
	int n;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return 0;
	if (patch_in_region(s, r.rip))
		return 1;
	unwind_regs_from_live(&r, &ur);
	n = unwind_stack(s->unw, tid, &ur, pcs, PROFILE_MAX_FRAMES, 0, 0);
	for (int i = 0; i < n; i++)
		if (patch_in_region(s, pcs[i]))
			return 1;
	return 0;
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

/*
 * Once the original bytes are back no thread can enter a trampoline again,
 * so only the threads still inside one need to run: resume just those for
 * a moment, re-stop them, look again. Every eighth round everyone runs, in
 * case a thread inside waits for a lock that a stopped one holds.
 */
int patch_wait_quiet(struct session *s, int *busy)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	for (int round = 1;; round++) {
		*busy = 0;
		for (size_t i = 0; i < s->tr.n; i++) {
			struct thread *th = &s->tr.t[i];

			th->mark = !th->vfork_child && th->state == TS_STOPPED &&
				   patch_in_flight(s, th->tid);
			*busy += th->mark;
		}
		if (!*busy || s->target_gone)
			return 0;
		if (clock_ns(CLOCK_MONOTONIC) - t0 >= INFLIGHT_WAIT_MS * 1000000ULL)
			return -EBUSY;
		if (round % 8 == 0) {
			tracee_resume_all(&s->tr);
			sleep_us(1000);
		} else {
			for (size_t i = 0; i < s->tr.n; i++)
				if (s->tr.t[i].mark)
					tracee_resume(&s->tr, &s->tr.t[i]);
			sleep_us(round < 4 ? 50 : 300);
		}
		tracee_stop_all(&s->tr, events_dispatch, s);
		/* exact mode: a thread inside may be waiting for ring room */
		if (s->fast)
			fast_drain_max(s, WAIT_DRAIN_MAX);
	}
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

int patch_unmap_remote(struct session *s, uint64_t addr, size_t len)
{
	struct unmap_args a = { addr, len };

	return run_remote(s, op_munmap, &a);
}

/* A view of a region that is still mapped in the target. */
static int view_mapped(const struct inject_region *v)
{
	return v && v->size;
}

/*
 * Unmap every region's views, each in the first stopped thread that can
 * run a syscall. Under heavy thread churn every stopped thread may sit in
 * a clone or exit stop, where none can: then let the threads run for a
 * moment (the original bytes are back and no thread is inside a region,
 * so none can enter one) and try again, UNMAP_ROUNDS times. Returns how
 * many views stay mapped, with the last error in *err.
 */
static size_t unmap_regions(struct session *s, int *err)
{
	size_t left = 0;

	for (int round = 1;; round++) {
		left = 0;
		for (size_t i = 0; i < s->nregions && !s->target_gone; i++) {
			struct inject_region *v[2] = { s->regions[i].alias, s->regions[i].inj };

			for (int k = 0; k < 2; k++) {
				int rc = 0;

				if (view_mapped(v[k])) {
					if (!v[k]->alias && v[k]->local)
						mapguard_remove(v[k]->local);	/* unmapped now */
					rc = region_unmap(s, v[k]);
				}

				if (rc) {
					*err = rc;
					left++;
				}
			}
		}
		if (!left || s->target_gone)
			return 0;
		if (round == UNMAP_ROUNDS)
			return left;
		pr_debug("%zu view(s) not unmapped (%s): round %d", left, strerror(-*err), round);
		tracee_resume_all(&s->tr);
		sleep_us(round < 4 ? 200 : 2000);
		tracee_stop_all(&s->tr, events_dispatch, s);
	}
}

static int op_close(struct remote_ctx *ctx, void *arg)
{
	return remote_close(ctx, *(int *)arg);
}

int patch_close_remote(struct session *s, int fd)
{
	return run_remote(s, op_close, &fd);
}

/* Threads that tracee_stop_all could not stop (tracee.h): they run no
 * user code before they stop, but may be inside a trampoline. */
static int unstopped(const struct session *s)
{
	int n = 0;

	for (size_t i = 0; i < s->tr.n; i++)
		n += s->tr.t[i].state != TS_STOPPED;
	return n;
}

void patch_remove(struct session *s)
{
	int busy = 0, unrestored = 0, err = 0, stuck;

	/* 1. The original bytes back (trampolines have no trap that could
	 * hurt without us: nothing to disarm first). */
	for (size_t i = 0; i < s->npatches; i++) {
		struct patch *p = &s->patches[i];

		if (!p->installed)
			continue;
		if (remote_mem_write(s->proc_tid, p->reloc.patch_addr, p->orig, RELOC_JMP_LEN)) {
			pr_err("cannot restore %s at %#lx in %d", p->hook->names[0],
			       (unsigned long)p->reloc.patch_addr, s->pid);
			unrestored++;
		} else {
			p->installed = 0;
		}
	}
	/* 2. Let threads still inside a trampoline (or a call made through one)
	 * leave it before the regions go. */
	if (s->nregions && !s->target_gone)
		patch_wait_quiet(s, &busy);
	if (s->fast) {
		/* What the rings still hold is read once the target runs
		 * again (session.c): our view of the data outlives the regions. */
		ring_reader_final(&s->rings);	/* no writer comes back */
		if (s->nregions && s->regions[0].inj && s->shm && !s->shm_map) {
			s->shm_map = s->regions[0].inj->local;
			s->shm_map_size = s->regions[0].inj->size;
			s->regions[0].inj->local = NULL;
		}
	}
	if (s->target_gone)
		goto out;
	stuck = unstopped(s);
	if (unrestored || busy || stuck) {
		/* A jump or a thread still leads there: unmapping would crash it. */
		for (size_t i = 0; i < s->nregions; i++)
			s->regions_left += view_mapped(s->regions[i].inj) +
					   view_mapped(s->regions[i].alias);
		if (busy)
			pr_err("%d thread(s) of %d still inside a hooked call after %d ms: "
			       "leaving %zu heapattach mapping(s) in it (they work without "
			       "heapattach)", busy, s->pid, INFLIGHT_WAIT_MS, s->regions_left);
		else if (stuck)
			pr_err("%d thread(s) of %d did not stop (%d: a vfork parent waiting for its "
			       "child, or an uninterruptible sleep): leaving %zu heapattach "
			       "mapping(s) in it (they work without heapattach)", stuck, s->pid,
			       s->tr.unstopped, s->regions_left);
		else
			pr_err("leaving %zu heapattach mapping(s) in %d: %d entry point(s) still "
			       "jump there", s->regions_left, s->pid, unrestored);
		goto out;
	}
	s->regions_left = unmap_regions(s, &err);
	if (s->regions_left)
		pr_err("cannot unmap %zu heapattach mapping(s) from %d (%s, in every thread, "
		       "%d tries): they stay, unused (no jump leads there any more)",
		       s->regions_left, s->pid, strerror(-err), UNMAP_ROUNDS);
out:
	for (size_t i = 0; i < s->nregions; i++) {
		free(s->regions[i].inj);
		free(s->regions[i].alias);
	}
	s->nregions = 0;
	s->npatches = 0;
}
