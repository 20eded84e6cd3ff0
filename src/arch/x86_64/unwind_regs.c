/* x86-64: build the unwinder's start state from a stopped thread's user registers. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include <sys/user.h>

#include "model/tmem.h"
#include "stacks/unwind.h"

/* Read the 8-byte word at addr of thread tid (tmem_read: the one reader
 * of target memory by thread). 0 or -errno. */
static int read_word(pid_t tid, uint64_t addr, uint64_t *val)
{
	return tmem_read(tid, addr, val, sizeof(*val));
}

static void copy_callee_saved(const struct user_regs_struct *r, struct unwind_regs *out)
{
	out->bp = r->rbp;
	out->bx = r->rbx;
	out->r12 = r->r12;
	out->r13 = r->r13;
	out->r14 = r->r14;
	out->r15 = r->r15;
}

int unwind_regs_from_user(pid_t tid, const struct user_regs_struct *r,
			  struct unwind_regs *out)
{
	uint64_t ra;
	int ret;

	ret = read_word(tid, r->rsp, &ra);
	if (ret < 0)
		return ret;
	memset(out, 0, sizeof(*out));
	out->ip = ra;
	out->sp = r->rsp + 8;
	copy_callee_saved(r, out);
	return 0;
}

void unwind_regs_from_live(const struct user_regs_struct *r, struct unwind_regs *out)
{
	memset(out, 0, sizeof(*out));
	out->ip = r->rip;
	out->sp = r->rsp;
	out->flags = UNWIND_IP_EXACT;
	copy_callee_saved(r, out);
}
