/* Remote unwinder: libunwind's remote API over a bulk copy of the stopped thread's stack. */
/* SPDX-License-Identifier: MIT */

/*
 * Design. One struct unwinder per target process holds a libunwind address
 * space with our own accessors:
 *  - access_reg is served from the caller's struct unwind_regs (no
 *    PTRACE_GETREGS per register, as _UPT_access_reg would do);
 *  - access_mem is served from a window of the stack read in one
 *    process_vm_readv per unwind (from sp up to UNWIND_STACK_WINDOW bytes,
 *    bounded by the end of the stack mapping), then from a small
 *    direct-mapped page cache. Pages of file-backed, non-writable mappings
 *    (.eh_frame_hdr, .eh_frame, code) stay cached across unwinds; other pages
 *    live for one unwind only;
 *  - find_proc_info searches the object's .eh_frame_hdr table with
 *    libunwind's own search (dwarf_search_unwind_table, as
 *    libunwind-ptrace's _UPT_find_proc_info does), over a table entry we
 *    build once per executable mapping: the ELF is opened only by
 *    proc_open_mapped (the mapped file itself, never a path resolved on the
 *    host, never a FIFO or device) and the header checked here. The table
 *    and the FDEs are then read from the target's memory through
 *    access_mem. libunwind-ptrace itself is not used: it opens
 *    /proc/PID/root + path with a plain open() (a FIFO blocks it, an
 *    absolute symlink resolves on the host, and without /proc/PID/root it
 *    opens the bare path on the host), follows .gnu_debuglink by path, and
 *    abort()s on an .eh_frame_hdr table encoding it does not expect;
 *  - libunwind's own register-state cache (keyed by ip) is on, so a known ip
 *    costs no unwind-info lookup at all.
 * The accessors find the unwinder through a thread-local pointer that is set
 * for the duration of unwind_stack().
 *
 * Cost (tests/tools/unwtest bench, 13 frames over exe/libgcc_s/libc): ~10 us
 * per warm unwind, one process_vm_readv; most of the rest is the
 * rt_sigprocmask pair libunwind 1.6.2 issues around its cache lock on every
 * step. Stock _UPT_accessors: ~3 ms. Memory: 1 MiB page cache + 32 KiB
 * stack window per unwinder, plus libunwind's cache.
 */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>
#include <libunwind.h>

#include "base/xmalloc.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/unwind.h"
#include "stacks/unwind_priv.h"

__thread struct unwinder *unwind_cur;

/* ---- public API ---- */

/* target_on_change listener: forget the tables, pages and states of the
 * old maps (libunwind's cache only between walks). */
static void on_maps_change(void *arg, const struct proc_maps *old)
{
	struct unwinder *u = arg;

	(void)old;
	unwind_objs_drop(u);
	unwind_pcache_clear(u);
	if (unwind_cur == u)
		u->stale = 1;
	else
		unw_flush_cache(u->as, 0, 0);
}

struct unwinder *unwinder_new_target(struct target *t)
{
	struct unwinder *u;

	if (!t) {
		errno = EINVAL;
		return NULL;
	}
	u = xcalloc(1, sizeof(*u));
	u->t = t;
	u->as = unw_create_addr_space(&unwind_accessors, 0);
	if (!u->as || target_on_change(t, TARGET_ON_UNWIND, on_maps_change, u)) {
		if (u->as)
			unw_destroy_addr_space(u->as);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * The register-state cache belongs to the address space, i.e. to this
	 * unwinder. (UNW_CACHE_PER_THREAD would share one thread-local cache
	 * between unwinders and flush it at each switch; Debian's 1.6.2 maps
	 * it to GLOBAL anyway.) Each cached step still costs a lock with a
	 * sigprocmask pair in 1.6.2 (CONFIG_BLOCK_SIGNALS).
	 */
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(u->as, UNWIND_RS_CACHE_SIZE, 0);
	/* empty as mapped: 1 MiB of pages the kernel hands over zeroed,
	 * each touched only once a page is cached there (a session of a run
	 * over 64 processes spent 7% of its CPU clearing them; calloc may
	 * take it from the heap and clear it) */
	u->pcache = xmap(PCACHE_SLOTS * sizeof(*u->pcache));
	u->stk = xmalloc(UNWIND_STACK_WINDOW);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	target_off_change(u->t, on_maps_change, u);
	unwind_objs_drop(u);
	free(u->objs);
	if (u->as)
		unw_destroy_addr_space(u->as);
	xunmap(u->pcache, PCACHE_SLOTS * sizeof(*u->pcache));
	free(u->stk);
	free(u);
}

void unwinder_flush(struct unwinder *u)
{
	unwind_objs_drop(u);
	unwind_pcache_clear(u);
	unw_flush_cache(u->as, 0, 0);
	u->maps_gen = u->gen - 1;	/* the next miss reads the maps */
}

void unwinder_get_stats(const struct unwinder *u, struct unwind_stats *st)
{
	*st = u->st;
}

/*
 * Copy the stack from sp up to the window size or the end of the stack
 * mapping. 0, or -errno if nothing at sp can be read (-ESRCH: the process is
 * gone, -EFAULT: sp is not in readable memory).
 */
static int stack_snapshot(struct unwinder *u, uint64_t sp)
{
	uint64_t end = sp + UNWIND_STACK_WINDOW;
	const struct proc_map *m;
	ssize_t n;

	if (end < sp)
		end = UINT64_MAX;
	m = unwind_maps_lookup(u, sp);
	if (m && m->end < end)
		end = m->end;
	if (use_peek(u))	/* word by word: copy only what is needed */
		end = sp + 8 < end ? sp + 8 : end;
	n = mem_read(u, sp, u->stk, end - sp);
	if (n <= 0 && end - sp > PAGE_SZ - (sp & (PAGE_SZ - 1))) {
		/* no mapping info, or a short window: try up to the page end */
		end = (sp | (PAGE_SZ - 1)) + 1;
		n = mem_read(u, sp, u->stk, end - sp);
	}
	if (n <= 0) {
		u->stk_lo = u->stk_hi = 0;
		return n < 0 ? (int)n : -EFAULT;
	}
	u->win = u->stk;
	u->stk_lo = sp;
	u->stk_hi = sp + n;
	return 0;
}

/* ip in [lo, hi); never when lo == hi. */
static int in_range(uint64_t ip, uint64_t lo, uint64_t hi)
{
	return ip >= lo && ip < hi;
}

/* Start a walk of u from *start (see walk): the registers, a flushed cache
 * if the maps changed, a new generation of pages. */
static void walk_begin(struct unwinder *u, pid_t tid, const struct unwind_regs *start)
{
	u->truncated = 0;
	u->past_copy = 0;
	u->tid = tid;
	u->regs = *start;
	if (!(start->flags & UNWIND_IP_EXACT))
		u->regs.ip--;	/* look up the call, not what follows it */
	if (u->stale) {
		u->stale = 0;
		unw_flush_cache(u->as, 0, 0);
	}
	u->gen++;
}

static int sigreturn_at(struct unwinder *u, uint64_t ip);

/* The walk behind unwind_stack and unwind_stack_copy: with copy == NULL the
 * stack is read from the live thread, else from copy[0..copy_len) taken at
 * start->sp; a frame whose return address lies beyond the copy is not
 * taken (the live stack has moved on since). u->truncated: it stopped at
 * max, or at the end of the copy, with a frame left. */
static int walk(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
		const void *copy, size_t copy_len,
		uint64_t *pcs, size_t max, uint64_t stop_lo, uint64_t stop_hi)
{
	struct unwinder *saved = unwind_cur;
	unw_word_t ip, sp, prev_ip, prev_sp;
	unw_cursor_t c;
	size_t n = 0;
	int ret;

	if (!u || !start || !pcs || !max)
		return -EINVAL;
	u->truncated = 0;
	u->walk_flags = 0;
	if (in_range(start->ip, stop_lo, stop_hi))
		return -UNWIND_ENESTED;
	pcs[n++] = start->ip;

	unwind_cur = u;
	walk_begin(u, tid, start);
	u->st.unwinds++;
	if (copy) {
		if (copy_len > UNWIND_STACK_WINDOW)
			copy_len = UNWIND_STACK_WINDOW;
		u->win = copy;	/* the caller's, for this walk */
		u->stk_lo = start->sp;
		u->stk_hi = start->sp + copy_len;
		ret = 0;
	} else {
		ret = stack_snapshot(u, start->sp);
		if (ret < 0)
			goto out;
	}
	ret = 1;
	if (unw_init_remote(&c, u->as, u) < 0)
		goto out;
	prev_ip = u->regs.ip;
	prev_sp = start->sp;
	if (u->want_signal && sigreturn_at(u, start->ip))
		u->walk_flags |= UNWIND_WALK_SIGNAL;
	for (;;) {
		int step = unw_step(&c);

		if (step <= 0) {
			if (!step)
				u->walk_flags |= UNWIND_WALK_END;
			break;
		}
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		if (u->want_signal && sigreturn_at(u, ip))
			u->walk_flags |= UNWIND_WALK_SIGNAL;
		if (in_range(ip, stop_lo, stop_hi)) {
			u->st.nested++;
			ret = -UNWIND_ENESTED;
			goto out;
		}
		if (unw_get_reg(&c, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == prev_ip && sp == prev_sp)
			break;	/* no progress: corrupt unwind info */
		if (n == max || (copy && sp > u->stk_hi)) {
			u->truncated = 1;	/* at max, or ip was read past the copy */
			break;
		}
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = sp;
	}
	if (copy && u->past_copy)
		u->truncated = 1;	/* the walk ran out of the copy */
	ret = n;
	u->st.frames += n;
out:
	unwind_cur = saved;
	return ret;
}

/* Whether the code at ip is the rt_sigreturn trampoline (x86-64: mov
 * $15,%rax; syscall): the frame it returns to is interrupted code, whose
 * ip is exact. */
static int sigreturn_at(struct unwinder *u, uint64_t ip)
{
	uint64_t w0, w1;

	return !unwind_pcache_read_word(u, ip, &w0) && !unwind_pcache_read_word(u, ip + 8, &w1) &&
	       w0 == 0x0f0000000fc0c748ULL && (w1 & 0xff) == 0x05;
}

int unwind_copy_steps(struct unwinder *u, struct unwind_regs *r, const void *stack, size_t len,
		      uint64_t stack_sp, uint64_t *pcs, size_t max,
		      int (*resume)(void *arg, uint64_t ip, int exact), void *arg, int *more)
{
	static const struct { unw_regnum_t reg; size_t off; } keep[] = {
		{ UNW_X86_64_RBP, offsetof(struct unwind_regs, bp) },
		{ UNW_X86_64_RBX, offsetof(struct unwind_regs, bx) },
		{ UNW_X86_64_R12, offsetof(struct unwind_regs, r12) },
		{ UNW_X86_64_R13, offsetof(struct unwind_regs, r13) },
		{ UNW_X86_64_R14, offsetof(struct unwind_regs, r14) },
		{ UNW_X86_64_R15, offsetof(struct unwind_regs, r15) },
	};
	struct unwinder *saved = unwind_cur;
	unw_word_t ip, sp, prev_ip, prev_sp, v;
	uint64_t cur = r ? r->ip : 0;
	unw_cursor_t c;
	size_t n = 0;

	if (!u || !r || !stack || !pcs || !more)
		return -EINVAL;
	*more = 0;
	unwind_cur = u;
	walk_begin(u, target_reader(u->t), r);
	u->st.unwinds++;
	if (len > UNWIND_STACK_WINDOW)
		len = UNWIND_STACK_WINDOW;
	u->win = stack;
	u->stk_lo = stack_sp;
	u->stk_hi = stack_sp + len;
	if (unw_init_remote(&c, u->as, u) < 0)
		goto out;
	prev_ip = u->regs.ip;
	prev_sp = r->sp;
	for (;;) {
		int sig = resume && sigreturn_at(u, cur);

		if (unw_step(&c) <= 0)
			break;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0 ||
		    unw_get_reg(&c, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == prev_ip && sp == prev_sp)
			break;	/* no progress: corrupt unwind info */
		if (sp > u->stk_hi) {
			u->truncated = 1;	/* ip was read past the copy */
			break;
		}
		if (resume && resume(arg, ip, sig)) {
			/* the caller walks on from here */
			r->ip = ip;
			r->sp = sp;
			r->flags = sig ? UNWIND_IP_EXACT : 0;
			for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
				if (unw_get_reg(&c, keep[i].reg, &v) == 0)
					memcpy((char *)r + keep[i].off, &v, sizeof(v));
			*more = 1;
			break;
		}
		if (n == max) {
			u->truncated = 1;
			break;
		}
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = sp;
		cur = ip;
	}
	if (u->past_copy && !*more)
		u->truncated = 1;	/* the walk ran out of the copy */
out:
	u->st.frames += n;
	unwind_cur = saved;
	return (int)n;
}

int unwind_truncated(const struct unwinder *u)
{
	return u && u->truncated;
}

unsigned unwind_walk_flags(const struct unwinder *u)
{
	return u ? u->walk_flags : 0;
}

int unwind_stack_judged(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
			uint64_t *pcs, size_t max, unsigned *flags)
{
	int n;

	if (!u)
		return -EINVAL;
	u->want_signal = 1;
	n = walk(u, tid, start, NULL, 0, pcs, max, 0, 0);
	u->want_signal = 0;
	*flags = u->walk_flags;
	if (u->truncated)
		*flags &= ~(unsigned)UNWIND_WALK_END;
	return n;
}

int unwind_stack(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
		 uint64_t *pcs, size_t max, uint64_t stop_lo, uint64_t stop_hi)
{
	return walk(u, tid, start, NULL, 0, pcs, max, stop_lo, stop_hi);
}

int unwind_stack_copy(struct unwinder *u, const struct unwind_regs *start,
		      const void *stack, size_t len, uint64_t *pcs, size_t max)
{
	if (!stack)
		return -EINVAL;
	return walk(u, u ? target_reader(u->t) : 0, start, stack, len, pcs, max, 0, 0);
}
