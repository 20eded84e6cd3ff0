/* Python frames in place of the eval loop's native frames of a stack. */
/* SPDX-License-Identifier: MIT */
#include "python/pymerge.h"

static int in(uint64_t pc, uint64_t lo, uint64_t hi)
{
	/* a return address: the call is the byte before */
	return pc - 1 >= lo && pc - 1 < hi;
}

/* Index of the rootmost native frame in the eval loop, or n if none. */
static size_t last_eval(const struct pymerge_code *c, const uint64_t *native, size_t n)
{
	for (size_t i = n; i-- > 0;)
		if (in(native[i], c->eval_lo, c->eval_hi))
			return i;
	return n;
}

size_t pymerge(const struct pymerge_code *c, const uint64_t *native, size_t n,
	       const uint64_t *py, const uint8_t *ends, size_t npy, uint64_t *out, size_t max)
{
	size_t o = 0, k = 0, root = last_eval(c, native, n);
	int inside = 0;         /* between the leafmost and the rootmost eval frame */

	for (size_t i = 0; i < n && o < max; i++) {
		uint64_t pc = native[i];

		if (in(pc, c->eval_lo, c->eval_hi) && k < npy) {
			if (c->keep_c)
				out[o++] = pc;
			/* its group: up to and with the frame that ends it */
			while (k < npy && o < max) {
				out[o++] = py[k];
				if (ends[k++])
					break;
			}
			inside = i < root;
			continue;
		}
		if (inside && !c->keep_c && in(pc, c->interp_lo, c->interp_hi) &&
		    !in(pc, c->eval_lo, c->eval_hi))
			continue;
		out[o++] = pc;
	}
	while (k < npy && o < max)
		out[o++] = py[k++];
	return o;
}
