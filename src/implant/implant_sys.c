/* How the implant's regions get in and out of the target: system calls run in one of its stopped threads. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "implant/implant.h"
#include "implant/implant_int.h"
#include "ptrace/seccomp_plan.h"

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
