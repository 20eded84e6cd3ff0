/* A snapshot's thread stacks by frame: each block a thread's stack reaches directly, credited to the function whose frame holds the pointer. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "base/xmalloc.h"
#include "model/target.h"
#include "prologue.h"
#include "snapshot/frames.h"
#include "stacks/symbolize.h"
#include "stacks/unwind.h"

#define FRAMES_MAX 256                  /* frames of a stack looked at */
#define STACK_READ_MAX (8u << 20)       /* bytes of a stack read, from its pointer up */

/* The root range of the thread whose root is name id, or NULL. */
static const struct snaproot *thread_range(const struct snaproots *roots, uint32_t id)
{
	for (size_t i = 0; i < roots->n; i++)
		if (roots->v[i].name == id)
			return &roots->v[i];
	return NULL;
}

/*
 * The words of the frame of pc (exact: the thread's own ip, else a return
 * address) that its function pushed on entry: its caller's registers.
 */
static unsigned saved_words(struct target *t, struct symbolizer *sym, uint64_t pc, int exact)
{
	uint64_t at = exact ? pc : pc - 1;
	struct sym_info si;
	uint8_t code[32];

	if (!sym || symbolizer_lookup(sym, at, &si) || !si.function || si.offset > at ||
	    target_read(t, at - si.offset, code, sizeof(code)))
		return 0;
	return prologue_pushes(code, sizeof(code));
}

/* "FUNCTION (FILE:LINE)" of the frame of pc (exact: the thread's own ip,
 * else a return address), as a name id; the thread's root when unnamed. */
static uint32_t frame_name(struct symbolizer *sym, uint64_t pc, int exact,
			   struct snapnames *names, uint32_t root)
{
	struct sym_info si;
	const char *base;

	if (!sym || symbolizer_lookup(sym, exact ? pc : pc - 1, &si) || !si.function)
		return root;
	if (!si.file || !si.line)
		return snapnames_id(names, si.function);
	base = strrchr(si.file, '/');
	return snapnames_idf(names, "%s (%s:%d)", si.function, base ? base + 1 : si.file,
			     si.line);
}

/*
 * The frames of stack[0..len) (the bytes at sp): bound[j] is where frame
 * j's memory starts (bound[0] = sp), frame j ending where frame j + 1
 * starts; a frame starts just above the slot of the return address into
 * its function (pcs[j], matched in order going up). How many frames.
 */
static size_t cut_frames(const uint64_t *stack, size_t words, uint64_t sp, const uint64_t *pcs,
			 size_t npcs, uint64_t *bound)
{
	size_t k = 1;

	bound[0] = sp;
	for (size_t i = 0; i < words && k < npcs; i++)
		if (stack[i] == pcs[k])
			bound[k++] = sp + 8 * (i + 1);
	bound[k] = sp + 8 * words;
	return k;
}

/* Credit the blocks reached from words [lo, hi) of the stack at sp whose
 * parent is root to frame j (named lazily into *name). How many. */
static size_t credit_words(struct heapgraph *g, const uint64_t *stack, uint64_t sp, uint64_t lo,
			   uint64_t hi, uint32_t root, struct symbolizer *sym, const uint64_t *pcs,
			   size_t j, struct snapnames *names, uint32_t *name)
{
	size_t credited = 0;

	for (uint64_t a = lo; a < hi; a += 8) {
		long b = heapgraph_find(g, stack[(a - sp) / 8]);
		size_t pb;
		uint32_t r;

		if (b < 0 || heapgraph_parent(g, (size_t)b, &pb, &r) != 0 || r != root)
			continue;
		if (*name == HG_NONE)
			*name = frame_name(sym, pcs[j], j == 0, names, root);
		if (*name == root || *name + g->n >= HG_MAX)
			break;
		g->parent[b] = (uint32_t)g->n + *name;
		credited++;
	}
	return credited;
}

/*
 * Credit the blocks thread th's root reaches directly to its frames,
 * outermost first: frame j's own words, and the registers its callee
 * j - 1 pushed on entry (they are j's values).
 */
static size_t credit_thread(struct target *t, struct unwinder *u, struct symbolizer *sym,
			    struct heapgraph *g, const struct snapthread *th,
			    const struct snaproot *r, struct snapnames *names)
{
	uint64_t pcs[FRAMES_MAX], bound[FRAMES_MAX + 1], saved[FRAMES_MAX];
	struct user_regs_struct ur;
	struct unwind_regs start;
	size_t len, words, nf, credited = 0;
	uint64_t *stack;
	int n;

	if (r->hi <= th->sp)
		return 0;
	len = r->hi - th->sp > STACK_READ_MAX ? STACK_READ_MAX : r->hi - th->sp;
	words = len / 8;
	stack = xmalloc(words * 8 + 8);
	if (!words || target_read(t, th->sp, stack, words * 8))
		goto out;
	memset(&ur, 0, sizeof(ur));
	memcpy(&ur, th->regs, sizeof(th->regs) < sizeof(ur) ? sizeof(th->regs) : sizeof(ur));
	ur.rsp = th->sp;
	unwind_regs_from_live(&ur, &start);
	n = unwind_stack_copy(u, &start, stack, words * 8, pcs, FRAMES_MAX);
	if (n < 1)
		goto out;
	nf = cut_frames(stack, words, th->sp, pcs, (size_t)n, bound);
	/* frame j's pushed registers: [saved[j], bound[j + 1] - 8), under the
	 * return address into its caller (the outermost's caller is unknown) */
	for (size_t j = 0; j < nf; j++) {
		uint64_t top = bound[j + 1] - 8;

		saved[j] = j + 1 < nf ? top - 8 * saved_words(t, sym, pcs[j], j == 0) : top + 8;
		if (saved[j] < bound[j] || saved[j] > top)
			saved[j] = top + 8;
	}
	for (size_t j = nf; j-- > 0;) {
		uint32_t name = HG_NONE;

		credited += credit_words(g, stack, th->sp, bound[j], saved[j] < bound[j + 1] ?
					 saved[j] : bound[j + 1], r->name, sym, pcs, j, names, &name);
		if (j && saved[j - 1] <= bound[j] - 8)
			credited += credit_words(g, stack, th->sp, saved[j - 1], bound[j] - 8,
						 r->name, sym, pcs, j, names, &name);
	}
out:
	free(stack);
	return credited;
}

size_t snapframes_credit(struct target *t, struct heapgraph *g, const struct snapthread *th,
			 size_t nth, const struct snaproots *roots, struct snapnames *names)
{
	struct unwinder *u = unwinder_new_target(t);
	struct symbolizer *sym = symbolizer_new(t);
	size_t credited = 0;

	for (size_t i = 0; u && i < nth; i++) {
		uint32_t id = snapnames_idf(names, SNAP_THREAD_ROOT, (int)th[i].tid);
		const struct snaproot *r = thread_range(roots, id);

		if (r)
			credited += credit_thread(t, u, sym, g, &th[i], r, names);
	}
	if (sym)
		symbolizer_free(sym);
	if (u)
		unwinder_free(u);
	return credited;
}
