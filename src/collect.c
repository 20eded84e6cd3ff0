/* Turning a trap (bkpt.h) in a trampoline into a profile event: arguments, result, stack. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include "bkpt.h"
#include "hookcall.h"
#include "log.h"
#include "remote.h"
#include "session.h"
#include "unwind.h"

/* Unwind from the caller of the allocator (state ur); -EDEADLK when the
 * call was made from inside another hooked call (the outer one records it). */
static int caller_stack(struct session *s, pid_t tid, const struct unwind_regs *ur,
			uint64_t *pcs, size_t max)
{
	int n;

	n = unwind_stack(s->unw, tid, ur, pcs, max, 0, 0);
	if (n < 0) {
		/* Keep at least the immediate caller. */
		pcs[0] = ur->ip;
		n = 1;
		s->unwind_errors++;
	}
	for (int i = 1; i < n; i++)
		if (patch_in_region(s, pcs[i]))
			return -EDEADLK;
	return n;
}

int collect_trap(struct session *s, pid_t tid, int record)
{
	struct user_regs_struct r;
	uint64_t pcs[PROFILE_MAX_FRAMES], freed, saved[BKPT_SAVED];
	struct hook_call c;
	struct unwind_regs ur;
	struct patch *p;
	int kind, n, stack_ok;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return -errno;
	/* The entry stop of the trap's getpid (its exit stop has rax = pid). */
	if (r.orig_rax != BKPT_SYSCALL_NR || (long)r.rax != -ENOSYS)
		return 0;
	p = patch_by_tramp_ip(s, r.rip);
	if (!p)
		return 0;
	kind = tramp_trap_kind(&p->lay, p->tramp, r.rip);
	if (kind < 0)
		return 0;
	if (!record)
		return 1;
	if (remote_mem_read(tid, r.rsp, saved, sizeof(saved)))
		return -EFAULT;
	tramp_trap_regs(&r, saved);
	s->events++;
	if (kind == TRAMP_TRAP_ENTRY) {
		/* free, or realloc releasing its old block before the call. */
		freed = hook_call_freed(tid, p->hook->kind, &r);
		if (freed)
			profile_record_free(s->prof, freed);
		return 1;
	}
	hook_call_made(tid, p->hook->kind, &r, &c);
	if (!c.ptr)
		return 1;
	stack_ok = unwind_regs_from_user(tid, &r, &ur) == 0;
	if (stack_ok &&
	    (patch_in_region(s, ur.ip) || (ur.ip >= s->nest_lo && ur.ip < s->nest_hi))) {
		s->nested++;	/* e.g. realloc(NULL, n) calling malloc */
		return 1;
	}
	if (c.inplace)
		profile_record_free(s->prof, c.ptr);	/* resized: its old record goes */
	s->bytes_since_dump += c.size;
	if (!sampler_should_sample(&s->sampler, c.size) || !stack_ok)
		return 1;
	n = caller_stack(s, tid, &ur, pcs, PROFILE_MAX_FRAMES);
	if (n == -EDEADLK) {
		s->nested++;
		return 1;
	}
	if (n < 0)
		return 1;
	profile_record_alloc(s->prof, pcs, (size_t)n, c.size, c.ptr);
	return 1;
}
