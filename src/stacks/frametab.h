/* Frame-rule table: compiles DWARF CFI into the shared frames[] the in-target agent walks with. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FRAMETAB_H
#define HEAPATTACH_FRAMETAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm.h"

/* frametab_learn_flags() flags */
#define FRAMETAB_IP_EXACT 1	/* ip is an exact pc (e.g. a live rip), not a return address */

/* Counters for tuning and benchmarks. */
struct frametab_stats {
	uint64_t learned;	/* rules inserted */
	uint64_t present;	/* learn calls that found the ip already there */
	uint64_t unrepresentable;	/* CFI the format cannot express, or no code there */
	uint64_t fp_frames;	/* code no CFI covers, in an object: frame-pointer rules */
	uint64_t full;		/* skipped: no free slot in the probe window */
	uint64_t objects;	/* ELF objects opened */
	uint64_t maps_reads;	/* /proc/PID/maps parses */
	uint64_t throttled;	/* -EAGAIN: over the budget of CFI searches or maps reads */
	uint64_t unwalkable;	/* ips made ends by frametab_set_unwalkable */
	uint64_t go_nosyms;	/* Go objects without runtime.asmcgocall's symbols: no hop */
};

struct frametab;

struct target;

/*
 * A rule compiler for target t (which must outlive it: its maps, memory
 * and objects, and a reset at every change of its code mappings) writing
 * into table, SHM_NFRAMES slots (zeroed, in shared memory: the agent reads
 * it concurrently). The tool is the only writer. Not thread-safe. NULL on
 * failure (errno set).
 */
struct frametab *frametab_new_target(struct target *t, struct shm_frame *table);
/* Bump *gen (shm_hdr.walk_gen; NULL: none) after every change of the table. */
void frametab_set_gen(struct frametab *ft, volatile uint32_t *gen);
/* Frees the compiler; the table itself is left as it is. */
void frametab_free(struct frametab *ft);
/*
 * Forget every rule and everything cached about the target's mappings (done
 * by the target at every change of its code mappings: dlopen, dlclose,
 * munmap of code, exec). Each slot's ip is cleared
 * before its rule, so a concurrent reader never sees a stale rule under a
 * live ip.
 */
void frametab_reset(struct frametab *ft);

/*
 * Compile and insert the rule for return address ip: the CFI row is looked
 * up at ip - 1 (the call instruction), or at ip itself with
 * FRAMETAB_IP_EXACT. A frame whose return address the CFI marks undefined
 * becomes SHM_BASE_END. Returns 1 inserted, 0 already present, -ENOENT no
 * CFI for ip or a rule the table cannot express (nothing is inserted),
 * -ENOSPC no free slot within SHM_FRAME_PROBES of the ip's home slot
 * (skipped), -EAGAIN over the budget of CFI searches or maps reads (the
 * ips come from the target: see frametab.c), other -errno on failure.
 */
int frametab_learn_flags(struct frametab *ft, uint64_t ip, unsigned flags);
static inline int frametab_learn(struct frametab *ft, uint64_t ip)
{
	return frametab_learn_flags(ft, ip, 0);
}
/*
 * Learn each return address of pcs[0..n) (as unwind_stack() returns them).
 * Returns the number of rules inserted (>= 0); failures for single ips are
 * not errors.
 */
int frametab_learn_many(struct frametab *ft, const uint64_t *pcs, size_t n);

/*
 * Make ip an outermost frame (SHM_BASE_END), replacing any rule it has:
 * for the last frame of a stack that the unwinder took no further (in a
 * static binary it stops at __libc_start_call_main, whose caller has no
 * usable CFI), so that the agent's walk ends where the unwinder's does
 * instead of missing every time. A return address in Go's
 * runtime.asmcgocall gets its hop rule instead (SHM_BASE_CGO: only the
 * agent can take it). 1 set, 0 already END or a hop, -ENOSPC, -ENOENT.
 */
int frametab_set_end(struct frametab *ft, uint64_t ip);
/*
 * Learn the hop rules (SHM_BASE_CGO) of every Go object with cgo calls in
 * the target's maps, at every return address of runtime.asmcgocall, so
 * that the agent's first walks through a cgo call already hop: called
 * before the hooks go in, and again by the first learn after each reset.
 * Returns the rules inserted.
 */
int frametab_prime_go(struct frametab *ft);

/*
 * Make return address ip, whose frame neither its unwind info nor a frame
 * chain leads past (the caller's unwinders all stopped there), an
 * outermost frame (SHM_BASE_END) and remember it as such until the next
 * reset (frametab_unwalkable), so that the agent's walks end there
 * instead of sending a stack copy each: only for code without CFI (an
 * object's code no FDE covers, or code of no object, a JIT's). 1 made (or
 * already), 0 the code has CFI or ip is an end already (nothing done;
 * without a CFI search then), -EAGAIN over the budget
 * of CFI searches or maps reads, -ENOSPC no room (in the table or the
 * set), -ENOENT.
 */
int frametab_set_unwalkable(struct frametab *ft, uint64_t ip);
/*
 * How many of the return addresses pcs[0..n) lie in executable memory
 * before the first that does not (pcs[0], the allocator's, is taken as
 * is): a walk that reached a frame by a frame chain that was none took
 * junk for the next return address. The maps are read again for an
 * address in none, so that code mapped a moment ago is not taken for junk:
 * at most once a millisecond (the addresses come from the target), and an
 * address in no mapping of maps read less than that ago is junk.
 */
size_t frametab_code_prefix(struct frametab *ft, const uint64_t *pcs, size_t n);
/* Whether frametab_set_unwalkable made ip an end. */
int frametab_unwalkable(const struct frametab *ft, uint64_t ip);

/*
 * Compile the rule for ip as frametab_learn_flags() would, without touching
 * the table (ip is left 0 in *out). 0, -ENOENT or -errno.
 */
int frametab_rule(struct frametab *ft, uint64_t ip, unsigned flags, struct shm_frame *out);

/*
 * The rule for link-time address addr of object e, compiled from its CFI as
 * frametab_rule() does for a mapped object (a seam for tests and fuzzing).
 * 0 or -ENOENT.
 */
struct elfobj;
int frametab_rule_elf(struct elfobj *e, uint64_t addr, struct shm_frame *out);

/* The table entry for ip, or NULL (reads the table like the agent does). */
const struct shm_frame *frametab_lookup(const struct shm_frame *table, uint64_t ip);

void frametab_get_stats(const struct frametab *ft, struct frametab_stats *st);

#endif
