/* Trap mode: trampolines that stop in the tool (bkpt.h), and each stop turned into a profile event. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include "base/log.h"
#include "bkpt.h"
#include "hookcall.h"
#include "implant/implant.h"
#include "model/tmem.h"
#include "profile/profile.h"
#include "profile/sampler.h"
#include "regs.h"
#include "stacks/unwind.h"
#include "tramp.h"
#include "trap/collect.h"


/* Unwind from the caller of the allocator (state ur) into pcs (room for
 * max_depth frames and the truncation mark, which ends a stack cut at the
 * depth); -EDEADLK when the call was made from inside another hooked call
 * (the outer one records it). */
static int caller_stack(const struct collect_ctx *c, pid_t tid, const struct unwind_regs *ur,
			uint64_t *pcs)
{
	size_t max = c->max_depth ? c->max_depth : PROFILE_MAX_FRAMES - 1;
	int n;

	if (max > PROFILE_MAX_FRAMES - 1)
		max = PROFILE_MAX_FRAMES - 1;
	n = unwind_stack(c->unw, tid, ur, pcs, max, 0, 0);
	if (n < 0) {
		/* Keep at least the immediate caller. */
		pcs[0] = ur->ip;
		n = 1;
		c->stats->unwind_errors++;
	}
	for (int i = 1; i < n; i++)
		if (implant_in_region(c->im, pcs[i]))
			return -EDEADLK;
	if (unwind_truncated(c->unw))
		pcs[n++] = PROFILE_PC_TRUNCATED;
	return n;
}

int collect_trap(const struct collect_ctx *c, pid_t tid, int record)
{
	arch_regs_t r;
	uint64_t pcs[PROFILE_MAX_FRAMES], freed, saved[BKPT_SAVED];
	struct hook_call hc;
	struct unwind_regs ur;
	const struct patch *p;
	int kind, n, stack_ok, rc;

	rc = arch_regs_get(tid, &r);
	if (rc)
		return rc;
	/* The entry stop of the trap's getpid (its exit stop returns the pid). */
	if (REG_SC_ORIG(&r) != BKPT_SYSCALL_NR || (long)REG_SC_RET(&r) != -ENOSYS)
		return 0;
	p = implant_patch_at(c->im, REG_IP(&r));
	if (!p)
		return 0;
	kind = tramp_trap_kind(&p->lay, p->tramp, REG_IP(&r));
	if (kind < 0)
		return 0;
	if (!record)
		return 1;
	if (tmem_read(tid, REG_SP(&r), saved, sizeof(saved)))
		return -EFAULT;
	tramp_trap_regs(&r, saved);
	c->stats->events++;
	if (kind == TRAMP_TRAP_ENTRY) {
		/* free, or realloc releasing its old block before the call. */
		freed = hook_call_freed(tid, p->hook->kind, &r);
		if (freed)
			profile_record_free(c->prof, freed);
		return 1;
	}
	hook_call_made(tid, p->hook->kind, &r, &hc);
	if (!hc.ptr)
		return 1;
	stack_ok = unwind_regs_from_user(tid, &r, &ur) == 0;
	if (stack_ok && implant_nested(c->im, ur.ip)) {
		c->stats->nested++;	/* e.g. realloc(NULL, n) calling malloc */
		return 1;
	}
	if (hc.inplace)
		profile_record_free(c->prof, hc.ptr);	/* resized: its old record goes */
	c->stats->bytes += hc.size;
	if (!sampler_should_sample(c->sampler, hc.size) || !stack_ok)
		return 1;
	n = caller_stack(c, tid, &ur, pcs);
	if (n == -EDEADLK) {
		c->stats->nested++;
		return 1;
	}
	if (n < 0)
		return 1;
	profile_record_alloc(c->prof, pcs, (size_t)n, hc.size, hc.ptr);
	return 1;
}

/* ---- the trap mode's implant backend ---- */

static uint64_t ops_data_size(void *arg)
{
	(void)arg;
	return COLLECT_DATA_SIZE;
}

static int ops_reloc_offset(void *arg, const struct hook *h, enum tramp_class cls)
{
	(void)arg;
	(void)h;
	return tramp_reloc_offset(cls);
}

static int ops_emit(void *arg, const struct hook *h, enum tramp_class cls, uint64_t at,
		    const struct reloc_result *r, uint8_t *buf, size_t len,
		    struct tramp_layout *lay)
{
	(void)arg;
	(void)h;
	return tramp_emit(cls, at, r, buf, len, lay);
}

const struct implant_ops collect_implant_ops = {
	.name = "trap",
	.tramp_max = TRAMP_MAX_SIZE,
	.data_size = ops_data_size,
	.reloc_offset = ops_reloc_offset,
	.emit = ops_emit,
};
