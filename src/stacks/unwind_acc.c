/* Remote unwinder: libunwind's accessors, served from the walk's registers, stack window and page cache. */
/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <libunwind.h>

#include "stacks/unwind.h"
#include "stacks/unwind_priv.h"

/* libunwind's search of a binary-search table (remote: read through the
 * accessors); exported, and called by libunwind-ptrace, but not declared in
 * libunwind's public headers. */
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
				     unw_proc_info_t *pi, int need_unwind_info, void *arg);

/*
 * ---- libunwind accessors ----
 * Called by libunwind with the address space and an argument that is either
 * our unwinder (cursor operations) or a _UPT context (from inside
 * _UPT_find_proc_info); they use unwind_cur instead. Return 0 or -UNW_E*.
 */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct unwinder *u = unwind_cur;
	struct uobj *o;
	int ret;

	(void)arg;
	u->st.find_proc_info++;
	o = unwind_obj_for_ip(u, ip);
	if (!o || !o->have_table)
		return -UNW_ENOINFO;
	/* code mapped a second time: look it up where its table describes it */
	ip -= o->delta;
	/* libunwind asserts that ip is in the table's range */
	if (ip < o->di.start_ip || ip >= o->di.end_ip)
		return -UNW_ENOINFO;
	ret = dwarf_search_unwind_table(as, ip, &o->di, pi, need_unwind_info, arg);
	if (ret >= 0) {
		/* the rows advance from start_ip: move the range back to ip */
		pi->start_ip += o->delta;
		pi->end_ip += o->delta;
	}
	return ret;
}

/*
 * Nothing to free: libunwind calls this for dynamically registered unwind
 * info only, and frees the CIE info it allocated for a table entry itself.
 */
static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

/*
 * No dynamically registered unwind info on x86-64 remote targets. (1.6.2's
 * _UPT_get_dyn_info_list_addr is a stub there that reads an uninitialized
 * count, so it is not called.)
 */
static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as;
	(void)dilap;
	(void)arg;
	return -UNW_ENOINFO;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp,
			  int write, void *arg)
{
	struct unwinder *u = unwind_cur;
	uint64_t v;

	(void)as;
	(void)arg;
	if (write)
		return -UNW_EINVAL;
	if (addr >= u->stk_lo && addr + sizeof(v) <= u->stk_hi && addr + sizeof(v) > addr) {
		memcpy(&v, u->win + (addr - u->stk_lo), sizeof(v));
	} else if (unwind_pcache_read_word(u, addr, &v) < 0) {
		if (addr >= u->stk_hi && addr - u->stk_hi < UNWIND_PAST_COPY)
			u->past_copy = 1;
		return -UNW_EINVAL;
	}
	*valp = v;
	return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp,
			  int write, void *arg)
{
	const struct unwind_regs *r = &unwind_cur->regs;

	(void)as;
	(void)arg;
	if (write)
		return -UNW_EREADONLYREG;
	switch (reg) {
	case UNW_X86_64_RIP:
		*valp = r->ip;
		break;
	case UNW_X86_64_RSP:
		*valp = r->sp;
		break;
	case UNW_X86_64_RBP:
		*valp = r->bp;
		break;
	case UNW_X86_64_RBX:
		*valp = r->bx;
		break;
	case UNW_X86_64_R12:
		*valp = r->r12;
		break;
	case UNW_X86_64_R13:
		*valp = r->r13;
		break;
	case UNW_X86_64_R14:
		*valp = r->r14;
		break;
	case UNW_X86_64_R15:
		*valp = r->r15;
		break;
	default:
		return -UNW_EBADREG;
	}
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
			    int write, void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

unw_accessors_t unwind_accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = NULL,
};
