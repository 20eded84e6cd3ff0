/* Walks of the stack copies the agent sends: the frame table where it has rules, libunwind for the rest. */
/* SPDX-License-Identifier: MIT */
#include "copywalk.h"
#include "frametab.h"
#include "unwind.h"

unsigned copywalk_table(const struct copywalk *cw, const struct frame_regs *start,
			const uint8_t *copy, uint32_t len, uint64_t copy_sp, uint64_t *pcs,
			unsigned max, uint32_t *flags, struct frame_regs *end)
{
	struct walk_window w = { copy, copy_sp, copy_sp + len, NULL, NULL };
	uint64_t hash;

	*flags = 0;
	return walk_frames_to(cw->table, &cw->fp, start, &w, pcs, max, flags, &hash, end);
}

/* unwind_copy_steps' resume: the frame table walks on from a return
 * address it has a rule for, or in code it walks by frame pointer. */
static int table_walks(void *arg, uint64_t ip)
{
	const struct copywalk *cw = arg;

	return frametab_lookup(cw->table, ip) || walk_fp_has(&cw->fp, ip);
}

int copywalk_mixed(const struct copywalk *cw, const struct frame_regs *at, const uint8_t *copy,
		   uint32_t len, uint64_t copy_sp, uint64_t *pcs, size_t n, int *trunc)
{
	struct frame_regs fr = *at;
	struct unwind_regs ur;
	uint32_t flags;
	int k, more;

	for (;;) {
		ur = (struct unwind_regs){
			.ip = fr.ip, .sp = fr.sp, .bp = fr.bp, .bx = fr.bx,
			.r12 = fr.r12, .r13 = fr.r13, .r14 = fr.r14, .r15 = fr.r15,
		};
		k = unwind_copy_steps(cw->unw, &ur, copy, len, copy_sp, pcs + n, cw->depth - n,
				      table_walks, (void *)cw, &more);
		if (k < 0)
			return k;
		n += (size_t)k;
		if (!more) {
			*trunc = unwind_truncated(cw->unw);
			return (int)n;
		}
		fr = (struct frame_regs){ ur.ip, ur.sp, ur.bp, ur.bx, ur.r12, ur.r13, ur.r14, ur.r15 };
		n += copywalk_table(cw, &fr, copy, len, copy_sp, pcs + n, cw->depth - (unsigned)n,
				    &flags, &fr);
		if (!(flags & SHM_EVF_MISS)) {
			*trunc = !!(flags & SHM_EVF_TRUNC);
			return (int)n;
		}
	}
}
