/* Remote stack unwinder: return addresses of a ptrace-stopped thread of the target. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_UNWIND_H
#define HEAPATTACH_UNWIND_H

/*
 * Note: included as "stacks/unwind.h", never as "unwind.h" (that names gcc's
 * and libunwind's <unwind.h>); include libunwind through <libunwind.h> only.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct user_regs_struct;

/*
 * unwind_stack() returns -UNWIND_ENESTED when a frame's ip lies in the stop
 * range (the injected trampoline page): the allocator was called from inside
 * another hooked call, and the caller drops the event.
 */
#define UNWIND_ENESTED EDEADLK

/* unwind_regs.flags */
#define UNWIND_IP_EXACT 1	/* ip is where the thread is, not a return address */

/*
 * Register state the unwind starts from. Two uses:
 *  - after return (flags 0, the default): the state right after a function
 *    (the allocator) has returned to its caller. ip is the return address into
 *    the caller, sp the caller's rsp, callee-saved registers as they are. The
 *    unwind info is looked up at ip - 1, so a call that ends its function
 *    (noreturn callee) is still attributed to the right caller.
 *    unwind_regs_from_user() builds this from a thread stopped at an int3 with
 *    rsp pointing at the return address.
 *  - exact (UNWIND_IP_EXACT): ip is the thread's current rip (a live, stopped
 *    thread, or a function entry with rsp at entry); the unwind info is looked
 *    up at ip itself. unwind_regs_from_live() builds this.
 * Other registers (rax, rcx, ...) are unknown to the unwinder; unwind info
 * never needs them to find the caller on x86-64.
 */
struct unwind_regs {
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
	uint32_t flags;		/* UNWIND_IP_* */
};

/* Counters for tuning and benchmarks. */
struct unwind_stats {
	uint64_t unwinds;	/* walks started (an unwind_copy_steps() call is one) */
	uint64_t frames;	/* frames returned in total */
	uint64_t nested;	/* walks that hit the stop range */
	uint64_t find_proc_info;/* unwind-info lookups (misses of libunwind's cache) */
	uint64_t objects;	/* per-object unwind tables found */
	uint64_t mem_reads;	/* process_vm_readv/PTRACE_PEEKDATA calls */
	uint64_t maps_reads;	/* /proc/PID/maps parses */
};

struct unwinder;
struct target;

/*
 * An unwinder for target t (which must outlive it): it reads the maps,
 * the memory and the objects through t and keeps the unwind table of each
 * executable mapping and a cache of read-only pages between unwinds, all
 * dropped when t's code mappings change (target_on_change). Not
 * thread-safe: use one per tracer thread. NULL on failure (errno set).
 */
struct unwinder *unwinder_new_target(struct target *t);
void unwinder_free(struct unwinder *u);
/*
 * Drop everything cached about the target's mappings: maps, per-object
 * unwind tables, read-only pages and libunwind's per-ip cache. New mappings
 * (dlopen) are found without it, since an address outside the cached maps
 * re-reads them (once per unwind); it is required when code is unmapped or
 * replaced (dlclose, munmap, exec), before the next unwind.
 */
void unwinder_flush(struct unwinder *u);
void unwinder_get_stats(const struct unwinder *u, struct unwind_stats *st);

/*
 * Walk the stack of thread tid (in a ptrace stop, or otherwise not running)
 * from *start. pcs[0] = start->ip; each further entry is the next frame's
 * return address (raw, not minus one). At most max entries are written.
 * If any frame's ip (pcs[0] included) lies in [stop_lo, stop_hi), returns
 * -UNWIND_ENESTED (pass stop_lo == stop_hi to disable the check).
 * The walk ends at ip 0, at the end of the unwind info chain, or when a step
 * fails; the frames found so far are then returned.
 * Returns the number of frames (>= 1), -UNWIND_ENESTED, -EINVAL for bad
 * arguments, or, when nothing at start->sp can be read, -ESRCH (process gone)
 * or -EFAULT (sp not in readable memory).
 */
int unwind_stack(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
		 uint64_t *pcs, size_t max, uint64_t stop_lo, uint64_t stop_hi);

/*
 * unwind_stack() over a stack copied earlier (by the in-target agent):
 * stack[0..len) holds the bytes that were at start->sp. Memory outside the
 * copy is read from the live process, but a frame whose return address
 * lies beyond the copy ends the walk (cut short: unwind_truncated()).
 * Same returns as unwind_stack().
 */
int unwind_stack_copy(struct unwinder *u, const struct unwind_regs *start,
		      const void *stack, size_t len, uint64_t *pcs, size_t max);
/*
 * Part of a walk of a stack copy (stack[0..len) holds the bytes that were
 * at stack_sp): from *r, the frame of return address r->ip (exact with
 * UNWIND_IP_EXACT), libunwind steps to the callers and appends their
 * return addresses to pcs (at most max), until the walk ends (as in
 * unwind_stack_copy; unwind_truncated() says whether it was cut short),
 * or until a caller's return address ip for which resume(arg, ip, 0) says
 * that the caller walks on: then that frame's registers are in *r (ip not
 * appended; the registers libunwind does not know stay as they were) and
 * *more is 1. The frame a signal trampoline returns to, whose ip is exact,
 * is asked for as resume(arg, ip, 1), and handed back with
 * UNWIND_IP_EXACT in r->flags. Returns the count (>= 0) or -EINVAL.
 * resume may be NULL (walk to the end).
 */
int unwind_copy_steps(struct unwinder *u, struct unwind_regs *r, const void *stack, size_t len,
		      uint64_t stack_sp, uint64_t *pcs, size_t max,
		      int (*resume)(void *arg, uint64_t ip, int exact), void *arg, int *more);
/*
 * Whether the last unwind_stack()/unwind_stack_copy() on u stopped with a
 * frame left: max frames were taken, or the stack copy ended. Its root is
 * then missing (a walk that ended at ip 0, at the end of the unwind info,
 * or on a failed step is not truncated).
 */
int unwind_truncated(const struct unwinder *u);
/*
 * How the last walk on u went, UNWIND_WALK_* bits: END, it reached the
 * outermost frame (the unwind info says there is no caller: a thread's or
 * the program's entry), not a step that failed or a limit; SIGNAL (only
 * looked for by unwind_stack_judged), a frame on the way is a signal
 * trampoline's (rt_sigreturn): the thread runs a signal handler.
 */
#define UNWIND_WALK_END    1
#define UNWIND_WALK_SIGNAL 2
unsigned unwind_walk_flags(const struct unwinder *u);
/*
 * unwind_stack() of a live thread that also looks at each frame's code for
 * a signal trampoline (a read per frame, which the walks of events skip):
 * the frames as unwind_stack returns them, and in *flags the walk's
 * UNWIND_WALK_* (END cleared when max frames were taken).
 */
int unwind_stack_judged(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
			uint64_t *pcs, size_t max, unsigned *flags);
/*
 * Check the header of an .eh_frame_hdr section (buf[0..len), the start of
 * a PT_GNU_EH_FRAME segment of seg_size bytes): version 1, fixed-size
 * encodings, a table of DW_EH_PE_datarel | DW_EH_PE_sdata4 pairs that fits
 * in the segment. 0 with *table_off (the table's offset in the section) and
 * *fde_count (its entries), or -EINVAL.
 */
int unwind_parse_eh_frame_hdr(const void *buf, size_t len, uint64_t seg_size,
			      uint64_t *table_off, uint64_t *fde_count);

/*
 * "After return" start for a thread stopped at an int3 (trap) right after the
 * allocator returned, with rsp pointing at the return address: ip = the word
 * at rsp (read from thread tid), sp = rsp + 8, callee-saved from r.
 * 0 or -errno. (src/arch/x86_64/unwind_regs.c)
 */
int unwind_regs_from_user(pid_t tid, const struct user_regs_struct *r,
			  struct unwind_regs *out);
/* "Exact" start from the live registers of a stopped thread: ip = rip. */
void unwind_regs_from_live(const struct user_regs_struct *r, struct unwind_regs *out);

#endif
