/* Where a snapshot's conservative scan starts: threads' registers and stacks, TLS, each object's data by symbol, other anonymous memory. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SNAPROOTS_H
#define HEAPATTACH_SNAPROOTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/proc.h"
#include "snapshot/heapgraph.h"
#include "snapshot/names.h"

struct target;

/* A thread as it was stopped. */
struct snapthread {
	pid_t tid;
	uint64_t sp, fs_base;
#define SNAP_REGS 17
	uint64_t regs[SNAP_REGS];       /* its general registers: roots too */
};

/* The root name of a thread's stack and registers, one owner: "thread TID". */
#define SNAP_THREAD_ROOT "stack of thread %d"

/* A root: memory [lo, hi) of the target, named. */
struct snaproot {
	uint64_t lo, hi;
	uint32_t name;                  /* in the snapshot's names */
};

struct snaproots {
	struct snaproot *v;
	size_t n, cap;
};

/*
 * The roots of the target whose maps are maps (t for its objects'
 * symbols; may be NULL: data named by object only): each thread's stack
 * from 128 bytes below its stack pointer (the red zone) to its mapping's
 * end, the memory around its TLS pointer when outside its stack, every
 * object's writable data (its rw mappings, and the anonymous one right
 * after, .bss) split by its data symbols, and every other private
 * writable anonymous mapping that holds no block of g (memory the
 * program or another allocator mapped). Shared mappings and mappings
 * with blocks (the heaps) are no roots.
 */
void snaproots_build(struct target *t, const struct proc_maps *maps, const struct heapgraph *g,
		     const struct snapthread *th, size_t nth, struct snapnames *names,
		     struct snaproots *out);
void snaproots_free(struct snaproots *r);
/* Cut the spans cut[0..n) (ascending by address; overlapping ones too) out
 * of every root of r, each root's pieces keeping its name: memory an
 * allocator owns between its blocks is no root. */
void snaproots_cut(struct snaproots *r, const struct hg_span *cut, size_t n);

#endif
