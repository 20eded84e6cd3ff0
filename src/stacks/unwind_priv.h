/* Remote unwinder: the state its files share (unwind.c, unwind_objs.c, unwind_pcache.c, unwind_acc.c). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_UNWIND_PRIV_H
#define HEAPATTACH_UNWIND_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <libunwind.h>

#include "model/proc.h"
#include "model/target.h"
#include "stacks/unwind.h"

#define UNWIND_STACK_WINDOW	(32 * 1024)
#define UNWIND_PAST_COPY	(1024 * 1024)	/* a failed read this far past the
						 * copy: the stack went on there */
#define PAGE_SZ			4096UL
#define PCACHE_SLOTS		256	/* power of two; 1 MiB */
#define UNWIND_RS_CACHE_SIZE	2048	/* libunwind register states (ips) */

/* How long a cached page stays valid (pslot.persistent) */
#define PAGE_KEEP_UNWIND	0	/* for one unwind */
#define PAGE_KEEP_FLUSH		1	/* until a flush: a read-only file page */
#define PAGE_KEEP_MAPS		2	/* until the maps are read again: code of
					 * no file (a JIT's), which changes without
					 * a change of code mappings, but which
					 * libunwind reads only to match PLT stubs
					 * and signal trampolines */

struct uobj {
	uint64_t start, end;		/* the executable mapping */
	int have_table;			/* di is valid */
	uint64_t delta;			/* the mapping's bias minus the table's */
	unw_dyn_info_t di;		/* its .eh_frame_hdr table, in target memory */
};

struct pslot {
	uint64_t page;			/* page address; 0 if empty (page 0 is never read) */
	uint64_t gen;			/* unwind generation that read it */
	uint64_t ver;			/* target_maps_version when it was read */
	int persistent;			/* PAGE_KEEP_* */
	uint8_t data[PAGE_SZ];
};

struct unwinder {
	struct target *t;
	unw_addr_space_t as;
	uint64_t maps_gen;		/* unwind generation of the last maps read */
	uint64_t reload_ns;		/* when we last read them for a missing address */
	int reload_vain;		/* and found nothing there */
	struct uobj *objs;
	size_t nobjs, cap_objs;
	struct pslot *pcache;
	int pcache_filled;		/* a slot filled since the last clear */
	uint64_t gen;
	int stale;			/* the maps changed during a walk */

	/* state of the unwind in progress */
	pid_t tid;
	struct unwind_regs regs;
	uint8_t *stk;			/* our copy of a live stack */
	const uint8_t *win;		/* [stk_lo, stk_hi): stk, or the caller's copy */
	uint64_t stk_lo, stk_hi;
	int truncated;			/* the last walk stopped with frames left */
	unsigned walk_flags;		/* the last walk's UNWIND_WALK_* */
	int want_signal;		/* look for signal frames (unwind_stack_judged) */
	int past_copy;			/* it failed to read the stack past the copy */
	struct unwind_stats st;
};

/* The unwinder of the walk in progress on this thread, for the accessors
 * (set by unwind.c's walks; see the top of unwind.c). */
extern __thread struct unwinder *unwind_cur;

/* ---- target memory ---- */

/* Copy len bytes at addr of the target into buf (target_read_some). */
static inline ssize_t mem_read(struct unwinder *u, uint64_t addr, void *buf, size_t len)
{
	u->st.mem_reads++;
	return target_read_some(u->t, addr, buf, len);
}

/* Word by word: process_vm_readv is refused, a page costs 512 calls. */
static inline int use_peek(const struct unwinder *u)
{
	return target_reads_slow(u->t);
}

/* Shared between the files; each is described where it is defined. */

/* unwind_objs.c */
int unwind_stable_file(const struct proc_map *m);
const struct proc_map *unwind_maps_lookup(struct unwinder *u, uint64_t addr);
struct uobj *unwind_obj_for_ip(struct unwinder *u, uint64_t ip);
void unwind_objs_drop(struct unwinder *u);

/* unwind_pcache.c */
int unwind_pcache_read_word(struct unwinder *u, uint64_t addr, uint64_t *val);
void unwind_pcache_clear(struct unwinder *u);

/* unwind_acc.c */
extern unw_accessors_t unwind_accessors;

#endif
