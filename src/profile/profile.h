/* Heap profile model: stack table, (stack, size) buckets, live pointer table. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PROFILE_H
#define HEAPATTACH_PROFILE_H

#include <stddef.h>
#include <stdint.h>

/* The frames of a stack: the deepest walk (--max-depth 1024) and its mark. */
#define PROFILE_MAX_FRAMES 1025
/*
 * The mark a stack cut short ends with (at its root): the walk stopped at
 * the depth, or the stack copy it walked ended first. No return address
 * can be this (it is not canonical); the writers show it as the frame
 * "[truncated]".
 */
#define PROFILE_PC_TRUNCATED 0x7ffffffffffff001ULL
#define PROFILE_TRUNCATED_NAME "[truncated]"
/*
 * The mark a stack ends with (at its root) where its last frame has
 * neither unwind info nor a frame chain that leads on (code without CFI
 * that misuses rbp): shown as the frame "[unwalkable]".
 */
#define PROFILE_PC_UNWALKABLE 0x7ffffffffffff011ULL
#define PROFILE_UNWALKABLE_NAME "[unwalkable]"

/* The frame name of a mark (PROFILE_PC_*), or NULL for a return address. */
static inline const char *profile_mark_name(uint64_t pc)
{
	return pc == PROFILE_PC_TRUNCATED ? PROFILE_TRUNCATED_NAME :
	       pc == PROFILE_PC_UNWALKABLE ? PROFILE_UNWALKABLE_NAME : NULL;
}

struct profile;

/* One bucket as the writers see it. pcs are raw return addresses, leaf first
 * (pcs[0] is where the allocator returns to in its caller). Counts are as
 * sampled, not yet scaled: scale them by `rate`, the interval they were
 * sampled at (profile_rate, or a multiple of it for the samples taken
 * while heapattach had raised its interval: profile_set_shift). */
struct profile_bucket {
	const uint64_t *pcs;
	size_t npcs;
	uint64_t size;          /* requested size of each allocation in the bucket */
	uint64_t rate;          /* the sampling interval of its samples */
	uint64_t alloc_count, alloc_bytes;
	uint64_t inuse_count, inuse_bytes;
};

/*
 * What a profile may hold, whatever the events say (they come from the
 * target, which can make up as many as it likes): distinct stacks, their
 * frames in all, (stack, size) buckets, live pointers. A new stack beyond
 * the first two caps becomes the empty stack (no frames); a new bucket
 * beyond its cap goes to the empty stack's bucket of its size rounded down
 * to a power of two (at most 65 more); an allocation that would take the
 * live table beyond its cap counts in its bucket's alloc figures only (its
 * free will not be recognized). Together about 100 MiB at most. Exact mode
 * (every block of the heap is live there) sets its own live cap, from the
 * memory heapattach has (membudget_live_cap): a live pointer takes 16 to
 * 32 bytes.
 */
#define PROFILE_MAX_STACKS  (1u << 17)
#define PROFILE_MAX_PCS     (1u << 20)
#define PROFILE_MAX_BUCKETS (1u << 18)
#define PROFILE_MAX_LIVE    (1u << 20)

/* profile_caps_hit() bits: the caps reached so far */
#define PROFILE_CAP_STACKS  1	/* stacks or their frames */
#define PROFILE_CAP_BUCKETS 2
#define PROFILE_CAP_LIVE    4

/* rate: mean bytes between samples (1 = every allocation recorded). */
struct profile *profile_new(uint64_t rate);
/* Other caps than the PROFILE_MAX_* ones (tests); 0 keeps a cap as it is. */
void profile_set_caps(struct profile *p, size_t stacks, size_t pcs, size_t buckets, size_t live);
/* The live table is halved (once under a quarter full) only keep_ns after
 * it last doubled: 5 s unless set (0: at once). */
void profile_set_live_keep(struct profile *p, uint64_t keep_ns);
/* The live table's cap. */
size_t profile_live_cap(const struct profile *p);
/* PROFILE_CAP_* bits of the caps reached so far. */
unsigned profile_caps_hit(const struct profile *p);
void profile_free(struct profile *p);
uint64_t profile_rate(const struct profile *p);

/* Record a sampled allocation of size bytes at ptr with the given stack.
 * If ptr is already live (a free we missed), the old record is freed first.
 * ptr 0 (a failed allocation) is ignored. Stacks deeper than
 * PROFILE_MAX_FRAMES keep their PROFILE_MAX_FRAMES - 1 innermost frames
 * and end in PROFILE_PC_TRUNCATED. */
void profile_record_alloc(struct profile *p, const uint64_t *pcs, size_t npcs,
			  uint64_t size, uint64_t ptr);
/* Record a free. Returns 1 if ptr was live (and is now freed), 0 if unknown. */
int profile_record_free(struct profile *p, uint64_t ptr);

/* The id of a stack (added if new, cut as profile_record_alloc cuts it),
 * for profile_record_batch. */
uint32_t profile_stack_id(struct profile *p, const uint64_t *pcs, size_t npcs);
/*
 * Replace each frame pc of every stack by fn(arg, pc) (the target's code
 * changed: frames of code that is gone get stand-ins, symbolizer_retire).
 * Stack ids stay; fn must map distinct pcs to distinct values. Returns
 * the number of stacks changed.
 */
size_t profile_map_pcs(struct profile *p, uint64_t (*fn)(void *arg, uint64_t pc), void *arg);

/* One event of a batch: an allocation from stack id `stack`, or a free.
 * PROFILE_OP_ALLOC_KEPT: an allocation profile_sweep_live never frees (its
 * free will come as an op of its own). PROFILE_OP_ALLOC_GONE: one known
 * to be freed already (counted as allocated, never live). */
#define PROFILE_OP_ALLOC 1
#define PROFILE_OP_FREE  2
#define PROFILE_OP_ALLOC_KEPT 3
#define PROFILE_OP_ALLOC_GONE 4
struct profile_op {
	uint32_t kind;          /* PROFILE_OP_* */
	uint32_t stack;         /* ALLOC: from profile_stack_id() */
	uint64_t size;          /* ALLOC */
	uint64_t ptr;           /* 0: ignored */
	uint32_t shift;         /* ALLOC: sampled at the interval profile_rate << shift */
};

/* Record ops[0..n) in order, as profile_record_alloc/free would, but
 * cheaper per event: their table lookups are brought in ahead. */
void profile_record_batch(struct profile *p, const struct profile_op *ops, size_t n);

/* Free every live pointer (but those of PROFILE_OP_ALLOC_KEPT) for which
 * gone(ptr, arg) is non-zero (it must not record into p). Returns how many
 * were freed. */
size_t profile_sweep_live(struct profile *p, int (*gone)(uint64_t ptr, void *arg), void *arg);

/* Drop counters (events the tool could not record), reported in dumps. */
void profile_add_drops(struct profile *p, uint64_t n);
uint64_t profile_drops(const struct profile *p);
/* Allocations recorded at an address already live: frees missed (in
 * exact mode, where every free is an event, there should be none). */
uint64_t profile_live_again(const struct profile *p);
/*
 * Figures accounted in the target (exact mode's in-target accounting,
 * fast/xacct.c), by (stack id, size), shift 0: read anew each time, so
 * reset, then added. They count in profile_foreach's buckets and in the
 * totals below (profile_total_*, profile_nlive) but not in the live table.
 * A stack id the profile does not hold is ignored; the buckets are
 * interned as recorded ones are (the caps apply); sums saturate.
 */
void profile_xacct_reset(struct profile *p);
/* count allocations of size bytes from stack, since the attach. */
void profile_xacct_alloc(struct profile *p, uint32_t stack, uint64_t size, uint64_t count);
/* One block of size bytes from stack, in use now. */
void profile_xacct_inuse(struct profile *p, uint32_t stack, uint64_t size);
/* The accounted allocations added since the last reset. */
uint64_t profile_xacct_allocs(const struct profile *p);
/* Total bytes and allocations recorded since creation (unscaled), with
 * the accounted ones. */
uint64_t profile_total_alloc_bytes(const struct profile *p);
uint64_t profile_total_alloc_count(const struct profile *p);
/* cb(ptr, size, arg) for each block of the live table of at least
 * min_size bytes (requested), in no order. */
void profile_foreach_live(const struct profile *p, uint64_t min_size,
			  void (*cb)(uint64_t ptr, uint64_t size, void *arg), void *arg);
/* Bytes of the live table (its size follows profile_nlive, up and down). */
size_t profile_live_bytes(const struct profile *p);
/* Table sizes: live pointers (and accounted blocks in use), (stack, size)
 * buckets, distinct stacks. */
size_t profile_nlive(const struct profile *p);
size_t profile_nbuckets(const struct profile *p);
size_t profile_nstacks(const struct profile *p);
/* The frames of stack id (*n of them; NULL if there is no such stack),
 * valid until the next record into p. */
const uint64_t *profile_stack_pcs(const struct profile *p, uint32_t id, size_t *n);

/*
 * For each stack id of p, the id of the stack it is shown as (stackfill.c):
 * itself, or for a stack cut short (PROFILE_PC_TRUNCATED after at least one
 * frame), the one stack of p not cut short that begins with all of its
 * frames and has more (none, or more than one: itself). NULL when every
 * stack is shown as itself; else the caller frees it.
 */
uint32_t *profile_completions(const struct profile *p);

/* Call cb for every bucket that has had any alloc or accounted count, in
 * creation order (a bucket once visited is visited for good, so that the
 * n-th stays the n-th: its figures may be 0); stops early and returns cb's
 * value if it is non-zero, else returns 0. A bucket's frames are those of
 * the stack its stack is shown as (profile_completions), so two buckets
 * may have the same frames and size. b and b->pcs are valid only during
 * the call; cb must not record into p. */
int profile_foreach(const struct profile *p,
		    int (*cb)(const struct profile_bucket *b, void *arg), void *arg);

/*
 * A sampled run's interval can be raised while heapattach cannot keep up
 * (fast/interval.c): to the rate << shift, shift at most PROFILE_MAX_SHIFT and
 * the rate at most PROFILE_MAX_RATE. Each sample is scaled by the interval
 * in force when it was taken (its bucket's rate), so the estimates stay
 * unbiased, only coarser. The profile keeps the periods so raised
 * (PROFILE_MAX_RAISES of them one by one, then only their count) for the
 * writers' comments.
 */
#define PROFILE_MAX_SHIFT 16
#define PROFILE_MAX_RATE (1ULL << 40)
#define PROFILE_MAX_RAISES 8
struct profile_raise {
	uint64_t max_rate;      /* the highest interval of the period */
	uint64_t start_ns;      /* since the profile was made */
	uint64_t end_ns;        /* since the profile was made; 0: still raised */
};
/* An interval as said to the user: "512 KiB", or bytes when it is not a
 * whole unit. Returns buf. */
const char *profile_interval_text(uint64_t v, char *buf, size_t len);
/* The interval from now on (CLOCK_MONOTONIC now_ns) is rate << shift. */
void profile_set_shift(struct profile *p, unsigned shift, uint64_t now_ns);
/* The interval samples are taken at now: the rate, raised or not. */
uint64_t profile_interval_now(const struct profile *p);
/* How many periods the interval was raised for (each one's start is
 * counted, kept or not). */
size_t profile_nraises(const struct profile *p);
/* A comment line for the profile about the i-th period kept (i <
 * PROFILE_MAX_RAISES), or about those not kept (i == PROFILE_MAX_RAISES);
 * 0 if there is none such; the line is cut to len bytes. An open period
 * lasts until now_ns (CLOCK_MONOTONIC). */
int profile_raise_comment(const struct profile *p, size_t i, uint64_t now_ns, char *buf,
			  size_t len);

/* Unsample a (count, bytes) pair taken at rate: 1/(1-exp(-avg/rate)) scaling,
 * truncated, exactly as pprof and Go do. rate <= 1 leaves it unchanged. */
void profile_scale(uint64_t count, uint64_t bytes, uint64_t rate,
		   int64_t *out_count, int64_t *out_bytes);
/* b with its counts as they would have been sampled at `rate` (rounded):
 * what a format with one interval for all samples (legacy) writes, so
 * that scaling them at rate gives b's estimates. */
struct profile_bucket profile_bucket_at(const struct profile_bucket *b, uint64_t rate);

#endif
