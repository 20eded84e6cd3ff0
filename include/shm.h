/* Layout of the memory shared by the tool and the in-target agent (trap-free mode). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SHM_H
#define HEAPATTACH_SHM_H

/*
 * One memfd holds everything. The target maps it twice: the CODE view is
 * r-x (trampolines and the agent blob), the DATA view is rw- (this layout);
 * the tool maps it rw once. Offsets below are from the start of the DATA
 * view. All fields are naturally aligned; x86-64 TSO is assumed (a store is
 * seen after the stores before it), so publication needs only compiler
 * barriers on the writer's side.
 *
 *   struct shm_hdr          two pages: identity, settings, patch records
 *   counters[SHM_NCOUNTERS] one cache line each: bytes until the next sample
 *   heads[SHM_NRINGS]       one cache line each: a ring's head (u64), cmpxchg
 *   tails[SHM_NRINGS]       each ring's tail (u64), written by the tool
 *   live[SHM_BLOOM_SIZE][SHM_LIVE_WAYS]  live sampled pointers by slot
 *                           (u64, 0 = empty; bit 0 of the last: overflowed)
 *   bits[SHM_BLOOM_SIZE/8]  bit s set iff bucket s is not empty: what the
 *                           FREE trampolines test (8 KiB)
 *   frames[SHM_NFRAMES]     frame rules by return address (struct shm_frame)
 *   stacks[SHM_NSTACKS]     stacks the tool has numbered (struct shm_stack)
 *   memo[SHM_NCOUNTERS][SHM_MEMO_WAYS]  exact mode: recent walks by counter
 *                           slot (struct shm_memo, 272 KiB)
 *   scratch[SHM_NCOUNTERS]  the agent's working memory by counter slot:
 *                           frames, Python words, the walk log (agent.c;
 *                           SHM_SCRATCH_SIZE each, 768 KiB), so that a walk
 *                           takes no room on the target's stack
 *   rings[SHM_NRINGS][ring_size]  variable-size event records
 *
 * Sampling: a trampoline subtracts each requested size from the counter
 * its rsp selects; when it drops to <= 0 the call is sampled and the agent
 * sets it to a fresh exponential draw (shm_exp_gap) and enters the
 * pointer in its live bucket before committing the event. Frees: the
 * trampoline tests the pointer's bit; on a hit the agent looks the
 * pointer up in its bucket and removes it. The tool learns of such frees
 * by reading the table (fast/xacct.c: every pointer it holds live, entered, and
 * no longer finds in its bucket was freed), so they cost no event. A
 * pointer that found its bucket full is not entered (SHM_EVF_UNTABLED in
 * its event) and marks the bucket overflowed for good; from then on every
 * free in that slot not found in the bucket is reported as an event, and
 * the tool ignores pointers it does not know.
 *
 * Exact mode (SHM_F_EXACT): the tool sets every counter to 0 (each call is
 * sampled, the agent does not re-arm), and fills bits with 0xff (each free is
 * reported); the agent then neither re-arms nor touches live. When the
 * tool switches modes it must zero live first. A writer that finds its
 * ring full spins briefly, then sleeps on the futex wake_seq (counted in
 * waiters), at most 10 ms at a time and only while the heartbeat is fresh
 * (a thread of the tool's refreshes it, so a long step of the tool's keeps it
 * fresh), and not for ever on a ring that stands still while the tool
 * drains (drained); the tool wakes the sleepers whenever it stores a
 * tail. In sampled mode, a writer whose ring is past SHM_DOORBELL_FILL
 * while the tool naps wakes it
 * (doorbell, once per nap), so that a burst (the first events after attach carry
 * stack copies) does not fill a ring during a nap.
 *
 * Rings: a writer uses ring (sp >> SHM_RING_SHIFT) & (SHM_NRINGS - 1);
 * thread stacks are 8 MiB apart, so up to 16 threads get one each and do
 * not fight over one head or share the lines of their records. Heads and tails count bytes and never
 * wrap. A writer reads the time stamp (rdtscp), then reserves len bytes
 * (a multiple of 8) with cmpxchg on its ring's head when
 * head + len - tail <= ring_size; a record that would straddle the end
 * is preceded by a SHM_EV_PAD record filling the end. It stores the tsc
 * in the record at once (before the pad's), writes the body and stores
 * `len` last. So a ring's records are in tsc
 * order, an allocation's tsc is later than the allocator's return, and a
 * free's is earlier than the real free. The consumer merges the rings by
 * tsc (ring.c), reading each at its tail once its len is non-zero, zeroes
 * the record and only then advances that ring's tail (writers rely on
 * reserved space reading as 0 until they commit).
 *
 * Before writing any jump the tool fills the header (magic ... rate,
 * ring_size the bytes of each ring, a power of two >= 4 KiB, code_remote/code_size: calls whose
 * return address lies there are nested and only counted; target_pid: the
 * agent reads its own stack through process_vm_readv on it; max_depth:
 * the frames a walk takes, bounded by the agent, see shm_depth), the
 * counters and the heartbeat. A header left zero is safe but slow: every
 * call is sampled and dropped.
 *
 * The agent never traps and never blocks, except in exact mode while the
 * heartbeat is fresh (and at most a second once its ring stood still
 * through a drain); it never calls into the target's code (the stats_*
 * fields below are reserved, unused): with the tool gone (even SIGKILLed)
 * the trampolines keep working, the ring fills and events are counted as
 * drops.
 */

#include <stddef.h>
#include <stdint.h>

#include "frame_regs.h"

#define SHM_MAGIC       0x3174746170616568ULL	/* "heapatt1" little-endian */
#define SHM_VERSION     7

#define SHM_NCOUNTERS   64
#define SHM_NRINGS      16                      /* event rings: one per thread, mostly */
#define SHM_RING_SHIFT  23                      /* ring of a stack: (sp >> 23) & 15 */
#define SHM_COUNTER_STRIDE 64                   /* bytes: one cache line each */
#define SHM_BLOOM_BITS  16
#define SHM_BLOOM_SIZE  (1u << SHM_BLOOM_BITS)  /* bytes */
#define SHM_LIVE_WAYS   4                       /* live pointers per slot */
#define SHM_LIVE_OVERFLOW 1                     /* bit 0 of the last word: the bucket overflowed */
#define SHM_NFRAMES     65536                   /* power of two */
#define SHM_FRAME_PROBES 16
#define SHM_MAX_PATCHES 192                     /* jumps a region records (CPython 3.13
						 * with its mimalloc: 80) */
#define SHM_MAX_DEPTH   1024                    /* the most frames a walk takes (--max-depth) */
#define SHM_DEFAULT_DEPTH 128                   /* frames a walk takes by default */
#define SHM_STACK_COPY  8192                    /* bytes copied on a frame-table miss */
#define SHM_NSTACKS     16384                   /* power of two */
#define SHM_STACK_PROBES 8
#define SHM_STATS_MAX   16                      /* reserved: the size of stats_val */
#define SHM_STATS_NAME  40                      /* reserved: the size of stats_names */
#define SHM_FP_RANGES   32                      /* frame-pointer code ranges (JIT) */
#define SHM_MEMO_WAYS   4                       /* walk memo entries per counter slot */
#define SHM_MEMO_FRAMES 32                      /* the most frames an entry holds */
#define SHM_MEMO_READS  64                      /* the most stack words it holds */
#define SHM_MEMO_SIZE   1088                    /* bytes of struct shm_memo */
#define SHM_SCRATCH_SIZE 12288                  /* bytes of the agent's scratch per slot */
#define SHM_BAD_PAGES   16                      /* pages a guarded read faulted on, kept */
#define SHM_NEST_RANGES 8                       /* ranges of the allocator's own code */
/*
 * A ring's first pass: each page the agent writes for the first time would
 * be a page fault in the writing thread (about 11 us on a virtual machine
 * with shadow page tables; 512 of them for a 2 MiB ring). The writer that
 * enters a chunk of this many bytes populates the next one with one
 * madvise(MADV_POPULATE_WRITE) instead.
 */
#define SHM_RING_CHUNK  (64u << 10)

/* The ring offset of the chunk to map in once a writer (or the tool's
 * reader) has moved from byte pos of a ring to pos + len: the next chunk
 * if it entered one or pos is 0 (the first record, which maps chunk 0
 * too); 0 if none. At or past the ring's size: the first pass is over. */
static inline uint64_t shm_ring_chunk_ahead(uint64_t pos, uint64_t len)
{
	if (pos && pos / SHM_RING_CHUNK == (pos + len) / SHM_RING_CHUNK)
		return 0;
	return ((pos + len) / SHM_RING_CHUNK + 1) * SHM_RING_CHUNK;
}

#define SHM_OFF_COUNTERS 8192                   /* the header: two pages */
#define SHM_OFF_HEADS   (SHM_OFF_COUNTERS + SHM_NCOUNTERS * SHM_COUNTER_STRIDE)
#define SHM_OFF_TAILS   (SHM_OFF_HEADS + SHM_NRINGS * 64)
#define SHM_OFF_LIVE    (SHM_OFF_TAILS + SHM_NRINGS * 8)
#define SHM_OFF_BITS    (SHM_OFF_LIVE + SHM_BLOOM_SIZE * SHM_LIVE_WAYS * 8)
#define SHM_OFF_FRAMES  (SHM_OFF_BITS + SHM_BLOOM_SIZE / 8)
#define SHM_OFF_STACKS  (SHM_OFF_FRAMES + SHM_NFRAMES * 16)
#define SHM_OFF_MEMO    (SHM_OFF_STACKS + SHM_NSTACKS * 16)
#define SHM_OFF_SCRATCH (SHM_OFF_MEMO + SHM_NCOUNTERS * SHM_MEMO_WAYS * SHM_MEMO_SIZE)
#define SHM_OFF_RING    (SHM_OFF_SCRATCH + SHM_NCOUNTERS * SHM_SCRATCH_SIZE)

/*
 * One counter's cache line. The trampoline touches only `left`; the agent
 * keeps its per-stack state here too, so two threads never write the same
 * line on a sample (a shared index or statistics word would bounce between
 * their cores on every sampled call).
 */
struct shm_counter {
	int64_t left;           /* bytes until the next sample */
	uint64_t rng;           /* xorshift64 state of its gap draws, seeded non-zero */
	uint64_t walks;         /* sampled calls walked from this counter */
	uint64_t walk_misses;   /* of which missed the frame table */
	uint64_t nested;        /* slow-path calls made from inside a hooked call */
	uint64_t py_none_self;  /* the last thread (pthread_self) found with no Python state */
	uint64_t py_none_left;  /* its samples left before the agent looks again */
	uint64_t memo_hits;     /* exact mode: walks served by the walk memo */
};

/* shm_hdr.flags */
#define SHM_F_EXACT     1   /* record every call; writers wait for room while the tool lives */
#define SHM_F_NO_FUTEX  2   /* the target's seccomp filter may kill futex: no doorbell, and
			     * writers waiting for room yield (or spin) instead of sleeping */
#define SHM_F_NO_YIELD  4   /* the same for sched_yield: writers waiting for room spin */
#define SHM_F_XACCT     8   /* with SHM_F_EXACT: the agent accounts allocations of known
			     * stacks itself (in-target accounting, below) */
#define SHM_F_XTP       16  /* with SHM_F_XACCT: a thread's id is the word at %fs:0 (the TLS
			     * ABI's self-pointer), the kernel not allowing rdfsbase */
#define SHM_F_NO_POPULATE 32 /* the target's seccomp filter may kill madvise: the agent
			     * leaves a ring's first pass to page faults (SHM_RING_CHUNK) */
#define SHM_F_XSHARED   64  /* with SHM_F_XACCT: threads were seen sharing a thread id (fs
			     * base; a clone without CLONE_SETTLS): no lane is claimed or
			     * counted in from then on (below) */

/* shm_hdr.tool_alive: the futex word's owner-died bit and its id bits (futex(2)). */
#define SHM_TOOL_DIED   0x40000000u
#define SHM_TOOL_TID    0x3fffffffu

/* Whether the tool that takes the agent's faults is there (tool_alive). */
static inline int shm_tool_here(uint32_t tool_alive)
{
	return (tool_alive & SHM_TOOL_TID) && !(tool_alive & SHM_TOOL_DIED);
}

/* Keeps the compiler from reordering the stores that publish a shared
 * table entry (x86-64 keeps stores in order by itself). */
static inline void shm_barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* Hash of a return address into the frame table. */
#define SHM_HASH_MUL    0x9E3779B97F4A7C15ULL
static inline uint32_t shm_frame_slot(uint64_t ip)
{
	return (uint32_t)((ip * SHM_HASH_MUL) >> 48) & (SHM_NFRAMES - 1);
}

/*
 * The bloom slot of a pointer: its 4 KiB page (ptr >> 12), modulo 2^16
 * (the bitmap repeats every 256 MiB; glibc's per-thread arenas, 64 MiB
 * apart, get lines of their own). One 64-byte line of the bitmap covers
 * 2 MiB of heap, so a program's frees test a few lines that stay in L1;
 * with finer slots (256 bytes) they tested 16 times as many and missed
 * L1 often enough to cost more than the rest of the FREE check. A free in
 * the page of a live sampled block takes the slow path for nothing
 * (about page size / rate of the frees: 0.8% at 512K, each a short call
 * into a bucket that those frees keep hot). Matches the FREE check.
 */
#define SHM_BLOOM_SHIFT 12
static inline uint32_t shm_bloom_slot(uint64_t ptr)
{
	return (uint32_t)(ptr >> SHM_BLOOM_SHIFT) & (SHM_BLOOM_SIZE - 1);
}

/*
 * The agent's sampling gap: floor(-ln(U) * rate) + 1 (the rule of
 * sampler.h) from the 64 random bits x, with gap_mul = rate * ln 2 * 2^16.
 * No table (a random line of one was a cache miss per sample) and no libm:
 * with U = u / 2^53 (u odd, 53 bits) and u = m * 2^e, m in [1, 2),
 * -ln U = ln 2 * (53 - e - log2 m); the 16 bits of log2 m come from
 * squaring m (each square >= 2 is one bit), so a gap is within about
 * 2^-16 * rate bytes of the exact draw.
 */
static inline uint64_t shm_exp_gap(uint64_t x, uint64_t gap_mul)
{
	uint64_t u = (x >> 11) | 1, y, frac = 0, minus_log2;
	int e = 63 - __builtin_clzll(u);

	y = (u << (63 - e)) >> 32;		/* m in 1.31 fixed point */
	for (int i = 0; i < 16; i++) {	/* no branch: half of them mispredicted */
		uint64_t bit;

		y = (y * y) >> 31;
		bit = y >> 32;
		y >>= bit;
		frac = frac << 1 | bit;
	}
	minus_log2 = ((uint64_t)(53 - e) << 16) - frac;	/* -log2 U, 16.16 */
	return (uint64_t)(((unsigned __int128)gap_mul * minus_log2) >> 32) + 1;
}

/* [lo, hi) of the target's addresses. */
struct shm_range {
	uint64_t lo, hi;
};

/* Original bytes of one patched entry point, so that any later heapattach
 * (this one killed) can restore the target. */
struct shm_patch {
	uint64_t addr;          /* where the jmp was written */
	uint8_t orig[8];        /* the bytes it replaced (len of them) */
	uint32_t len;
	uint32_t pad;
};

/*
 * The CPython interpreter of the target (issue 15), written by the tool
 * (pyfind.c) before kind: on each sampled call the agent finds its own
 * thread state and walks its own Python frames (agent_py.h), appending
 * one packed word per frame (SHM_PY_WORD_*) after the native frames.
 * The thread state holding the GIL is named by the word at holder
 * (read directly: it lies in the interpreter's static data); a thread
 * state is taken for ours only once its thread_id, read with
 * process_vm_readv, is our pthread_self; failing that the agent walks
 * the main interpreter's list from threads_head, also with
 * process_vm_readv, at most SHM_PY_MAX_STATES states. Its own frames it
 * reads directly: only its own thread changes them. Offsets are bytes
 * into the structures of that version (pylayout.c), each below
 * SHM_PY_MAX_OFF.
 */
#define SHM_PY_NONE     0
#define SHM_PY_38       1   /* 3.8, 3.9: PyFrameObject chain, f_lasti in bytes */
#define SHM_PY_310      2   /* 3.10: PyFrameObject chain, f_lasti in code units */
#define SHM_PY_311      3   /* tstate->cframe->current_frame, is_entry, prev_instr */
#define SHM_PY_312      4   /* 3.11's with shim frames (owner FRAME_OWNED_BY_CSTACK) */
#define SHM_PY_313      5   /* tstate->current_frame, instr_ptr, shim frames */
#define SHM_PY_MAX_FRAMES 255   /* words per event (8 bits of its flags) */
#define SHM_PY_MAX_STATES 64    /* thread states looked at for our own */
#define SHM_PY_MAX_OFF  4096
#define SHM_PY_OWNED_BY_GENERATOR 1
#define SHM_PY_OWNED_BY_CSTACK 3

/* The packed word of one Python frame, leaf first. */
#define SHM_PY_CODE_MASK     0xffffffffffffULL   /* bits 0-47 */
#define SHM_PY_INSTR_SHIFT   48                  /* bits 48-62 */
#define SHM_PY_INSTR_UNKNOWN 0x7fff              /* also the field's mask */
#define SHM_PY_WORD_CODE(w)  ((w) & SHM_PY_CODE_MASK)   /* PyCodeObject * */
#define SHM_PY_WORD_INSTR(w) ((uint32_t)((w) >> SHM_PY_INSTR_SHIFT) & SHM_PY_INSTR_UNKNOWN)
#define SHM_PY_WORD_END      (1ULL << 63)  /* the rootmost frame of its eval-loop call */

struct shm_py {
	volatile uint32_t kind;         /* SHM_PY_*; 0: none */
	uint32_t max_frames;            /* words per event, at most SHM_PY_MAX_FRAMES */
	uint64_t holder;                /* address of the PyThreadState * holding the GIL */
	uint64_t threads_head;          /* address of the main interpreter's first state */
	uint32_t ts_next, ts_thread_id; /* PyThreadState fields */
	uint32_t ts_frame;              /* frame (3.8-3.10), cframe (3.11, 3.12), current_frame */
	uint32_t cf_current_frame;      /* _PyCFrame.current_frame (3.11, 3.12) */
	uint32_t fr_back, fr_code, fr_lasti; /* f_back/previous, f_code/f_executable,
					 * f_lasti/prev_instr/instr_ptr */
	uint32_t fr_owner, fr_is_entry; /* 3.11+; is_entry 3.11 only */
	uint32_t co_code_adaptive, co_firsttraceable; /* 3.11+ */
	volatile uint64_t found;        /* samples that found their thread state */
	volatile uint64_t not_found;    /* samples that did not */
};

struct shm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t flags;         /* SHM_F_* */
	uint64_t total_size;    /* bytes of the memfd */
	uint64_t data_remote;   /* DATA view address in the target */
	uint64_t code_remote;   /* CODE view address in the target */
	uint64_t code_size;
	int32_t tool_pid;
	int32_t target_pid;
	uint64_t ring_size;     /* bytes of each ring, a power of two */
	uint64_t rate;          /* --sample-rate */
	uint32_t npatches;
	uint32_t max_depth;     /* frames the agent walks (--max-depth); the agent
				 * bounds it itself (shm_depth). Here, in a line
				 * nothing writes once the agent runs: every sampled
				 * call reads it */
	struct shm_patch patches[SHM_MAX_PATCHES];

	/* Written by the tool. */
	volatile uint64_t heartbeat;    /* CLOCK_MONOTONIC ns, refreshed while it lives */
	/*
	 * The id of the tool's tracer thread while it can take the agent's
	 * faults (SHM_TOOL_*): a robust futex word of that thread, so the
	 * kernel sets SHM_TOOL_DIED and clears the id when it dies, however
	 * it dies, before its tracees are let go. 0: no tool (yet). The
	 * agent reads memory it did not make only while this holds an id.
	 */
	volatile uint32_t tool_alive;
	uint8_t pad1[52];
	volatile uint64_t drops;        /* events lost: ring full (lock inc) */
	volatile uint64_t no_stack_copy; /* set by the agent once process_vm_readv
					 * is refused (seccomp): later misses send no copy */
	volatile uint64_t wait_max_ns;  /* the longest an exact-mode writer waited for room
					 * (ns, to its last look at the clock: a sleep short) */
	uint64_t reserved;              /* free (was one span of nested calls: nest[]) */
	volatile uint64_t wait_giveup;  /* CLOCK_MONOTONIC ns when an exact-mode writer
					 * last gave up waiting for room (1 s cap) */
	uint64_t gap_mul;       /* rate * ln 2 in 48.16 fixed point (shm_exp_gap);
				 * last, so that the patch records stay where an
				 * older heapattach left them (recover.c) */
	volatile uint32_t waiters;      /* exact-mode writers asleep for room (lock inc/dec) */
	volatile uint32_t wake_seq;     /* their futex word: the tool bumps it and wakes
					 * them after it moved a tail while waiters != 0 */
	volatile uint32_t tool_asleep;  /* the tool naps on doorbell (futex) */
	volatile uint32_t doorbell;     /* its futex word: the first writer whose ring
					 * is past SHM_DOORBELL_FILL while tool_asleep
					 * clears tool_asleep, bumps it and wakes the tool */

	/*
	 * Reserved, unused: where the agent once answered the tool's requests
	 * for the allocator's statistics by calling the allocator from inside
	 * a sampled call (a lock the target could hold, a function the target
	 * could define). The agent no longer reads them and the tool writes
	 * zeros (and checks they stay so); the figures are the tool's own
	 * business now (memreport.c). Kept in place so that the fields after
	 * them do not move.
	 */
	volatile uint32_t stats_req;
	volatile uint32_t stats_done;
	volatile uint32_t stats_busy;
	uint32_t stats_kind;            /* reserved: 0 */
	uint64_t stats_fn;              /* reserved: 0 */
	uint32_t stats_n;               /* reserved: 0 */
	volatile uint32_t drop_why;     /* SHM_DROP_*: why writers dropped events (lock or,
					 * once per reason); the tool only reports it */
	volatile uint64_t stats_val[SHM_STATS_MAX];	/* reserved, unused */
	char stats_names[SHM_STATS_MAX][SHM_STATS_NAME];	/* reserved: zeros */

	volatile uint64_t drained;      /* CLOCK_MONOTONIC ns when the tool last finished
					 * a drain: a writer whose ring stood still while
					 * it drained stops waiting (agent_ring.h, wait_room) */

	/*
	 * Code without unwind info that keeps frame pointers (a JIT's
	 * anonymous executable memory), written by the tool: a frame whose
	 * return address has no rule but lies in one of the first fp_n
	 * ranges is stepped by its frame pointer (framewalk.h). The tool
	 * writes the ranges before fp_n; a torn read only misleads a walk.
	 */
	volatile uint32_t fp_n;
	volatile uint32_t no_populate;	/* set by the agent once madvise fails for good
					 * (an old kernel, seccomp): faults from then on */
	struct shm_range fp[SHM_FP_RANGES];

	struct shm_py py;       /* Python frames (agent_py.h) */

	/* In-target accounting (SHM_F_XACCT, below). */
	uint64_t xlive_slots;           /* slots of the xlive table: a power of two,
					 * at most SHM_XLIVE_MAX; 0: no accounting */
	volatile uint64_t xforeign_count; /* frees of accounted blocks by threads that own
					   * no lane (lock add) */
	volatile uint64_t xforeign_bytes;

	/*
	 * The frame table's generation (struct shm_memo): the tool bumps it
	 * after every change of frames[] or fp. A line of its own: every
	 * exact-mode call reads it.
	 */
	volatile uint32_t walk_gen __attribute__((aligned(64)));

	/*
	 * Pages a guarded read of the agent faulted on (agent_guest.h, guest_page_ld):
	 * page number << 28 | the walk_gen it was seen in, by the page's hash.
	 * The agent alone writes them, racily: a hint that spares the next
	 * walks a fault (a ptrace stop each) until the frame table changes.
	 */
	volatile uint64_t bad_pages[SHM_BAD_PAGES] __attribute__((aligned(64)));

	/*
	 * The hooked allocator's own code, written by the tool: a call whose
	 * return address lies in one of the first nest_n ranges (realloc
	 * calling malloc, through the allocator's helpers) is nested. Only
	 * the allocator's functions and their neighbours that are no one
	 * else's (hooks.c, own_extent): an allocator linked into a program
	 * leaves the program's code out.
	 */
	uint32_t nest_n;
	uint32_t pad5;
	struct shm_range nest[SHM_NEST_RANGES];
};

_Static_assert(sizeof(struct shm_hdr) <= SHM_OFF_COUNTERS, "the header fits its pages");
/* The header's offsets, as docs/shm-abi.md section 3 gives them: a field
 * that moves must move there too (and take a new SHM_VERSION). */
_Static_assert(offsetof(struct shm_hdr, magic) == 0, "shm-abi.md: magic");
_Static_assert(offsetof(struct shm_hdr, version) == 8, "shm-abi.md: version");
_Static_assert(offsetof(struct shm_hdr, flags) == 12, "shm-abi.md: flags");
_Static_assert(offsetof(struct shm_hdr, total_size) == 16, "shm-abi.md: total_size");
_Static_assert(offsetof(struct shm_hdr, data_remote) == 24, "shm-abi.md: data_remote");
_Static_assert(offsetof(struct shm_hdr, code_remote) == 32, "shm-abi.md: code_remote");
_Static_assert(offsetof(struct shm_hdr, code_size) == 40, "shm-abi.md: code_size");
_Static_assert(offsetof(struct shm_hdr, tool_pid) == 48, "shm-abi.md: tool_pid");
_Static_assert(offsetof(struct shm_hdr, target_pid) == 52, "shm-abi.md: target_pid");
_Static_assert(offsetof(struct shm_hdr, ring_size) == 56, "shm-abi.md: ring_size");
_Static_assert(offsetof(struct shm_hdr, rate) == 64, "shm-abi.md: rate");
_Static_assert(offsetof(struct shm_hdr, npatches) == 72, "shm-abi.md: npatches");
_Static_assert(offsetof(struct shm_hdr, max_depth) == 76, "shm-abi.md: max_depth");
_Static_assert(offsetof(struct shm_hdr, patches) == 80, "shm-abi.md: patches");
_Static_assert(offsetof(struct shm_hdr, heartbeat) == 4688, "shm-abi.md: heartbeat");
_Static_assert(offsetof(struct shm_hdr, tool_alive) == 4696, "shm-abi.md: tool_alive");
_Static_assert(offsetof(struct shm_hdr, drops) == 4752, "shm-abi.md: drops");
_Static_assert(offsetof(struct shm_hdr, no_stack_copy) == 4760, "shm-abi.md: no_stack_copy");
_Static_assert(offsetof(struct shm_hdr, wait_max_ns) == 4768, "shm-abi.md: wait_max_ns");
_Static_assert(offsetof(struct shm_hdr, reserved) == 4776, "shm-abi.md: reserved");
_Static_assert(offsetof(struct shm_hdr, wait_giveup) == 4784, "shm-abi.md: wait_giveup");
_Static_assert(offsetof(struct shm_hdr, gap_mul) == 4792, "shm-abi.md: gap_mul");
_Static_assert(offsetof(struct shm_hdr, waiters) == 4800, "shm-abi.md: waiters");
_Static_assert(offsetof(struct shm_hdr, wake_seq) == 4804, "shm-abi.md: wake_seq");
_Static_assert(offsetof(struct shm_hdr, tool_asleep) == 4808, "shm-abi.md: tool_asleep");
_Static_assert(offsetof(struct shm_hdr, doorbell) == 4812, "shm-abi.md: doorbell");
_Static_assert(offsetof(struct shm_hdr, stats_req) == 4816, "shm-abi.md: stats_req");
_Static_assert(offsetof(struct shm_hdr, stats_done) == 4820, "shm-abi.md: stats_done");
_Static_assert(offsetof(struct shm_hdr, stats_busy) == 4824, "shm-abi.md: stats_busy");
_Static_assert(offsetof(struct shm_hdr, stats_kind) == 4828, "shm-abi.md: stats_kind");
_Static_assert(offsetof(struct shm_hdr, stats_fn) == 4832, "shm-abi.md: stats_fn");
_Static_assert(offsetof(struct shm_hdr, stats_n) == 4840, "shm-abi.md: stats_n");
_Static_assert(offsetof(struct shm_hdr, drop_why) == 4844, "shm-abi.md: drop_why");
_Static_assert(offsetof(struct shm_hdr, stats_val) == 4848, "shm-abi.md: stats_val");
_Static_assert(offsetof(struct shm_hdr, stats_names) == 4976, "shm-abi.md: stats_names");
_Static_assert(offsetof(struct shm_hdr, drained) == 5616, "shm-abi.md: drained");
_Static_assert(offsetof(struct shm_hdr, fp_n) == 5624, "shm-abi.md: fp_n");
_Static_assert(offsetof(struct shm_hdr, no_populate) == 5628, "shm-abi.md: no_populate");
_Static_assert(offsetof(struct shm_hdr, fp) == 5632, "shm-abi.md: fp");
_Static_assert(offsetof(struct shm_hdr, py) == 6144, "shm-abi.md: py");
_Static_assert(offsetof(struct shm_hdr, xlive_slots) == 6232, "shm-abi.md: xlive_slots");
_Static_assert(offsetof(struct shm_hdr, xforeign_count) == 6240, "shm-abi.md: xforeign_count");
_Static_assert(offsetof(struct shm_hdr, walk_gen) == 6272, "shm-abi.md: walk_gen");
_Static_assert(offsetof(struct shm_hdr, bad_pages) == 6336, "shm-abi.md: bad_pages");
_Static_assert(offsetof(struct shm_hdr, nest_n) == 6464, "shm-abi.md: nest_n");
_Static_assert(offsetof(struct shm_hdr, nest) == 6472, "shm-abi.md: nest");

/*
 * The frames a walk takes, from the header's max_depth: the target can
 * write it, so the agent takes at most SHM_MAX_DEPTH (and a header left
 * zero walks SHM_DEFAULT_DEPTH). The tool never believes more than its
 * own copy (a record's frames are checked against it).
 */
static inline uint32_t shm_depth(uint32_t max_depth)
{
	if (!max_depth)
		return SHM_DEFAULT_DEPTH;
	return max_depth < SHM_MAX_DEPTH ? max_depth : SHM_MAX_DEPTH;
}

/* shm_hdr.drop_why: why a writer dropped its event (agent_ring.h, ring_reserve). */
#define SHM_DROP_FULL     1u    /* sampled mode: its ring was full */
#define SHM_DROP_HUGE     2u    /* the record is larger than a ring */
#define SHM_DROP_NO_TOOL  4u    /* exact mode: no heartbeat, or one 5 s old */
#define SHM_DROP_STALE    8u    /* exact mode: the heartbeat stayed stale past its grace */
#define SHM_DROP_STUCK    16u   /* exact mode: the tail stood still 1 s while the tool drained */
#define SHM_DROP_BUSY     32u   /* exact mode: the tail stood still 30 s */
#define SHM_DROP_LATCH    64u   /* exact mode: another writer had given up just before */
#define SHM_DROP_ALL      127u

/* shm_hdr.stats_kind's old values (reserved, unused: the agent calls nothing). */
#define SHM_STATS_MALLINFO2 1   /* glibc: struct mallinfo2 mallinfo2(void): 10 words */
#define SHM_STATS_MALLCTL   2   /* jemalloc: mallctl("epoch", ..., &1, 8) to refresh, then
				 * mallctl(name, &v, &8, NULL, 0) for each name */
#define SHM_STATS_PROPERTY  3   /* gperftools: MallocExtension_GetNumericProperty(name, &v),
				 * 1 on success, for each name */

/* The fill (a fraction of ring_size) at which a writer wakes a napping tool. */
#define SHM_DOORBELL_FILL(ring_size) ((ring_size) / 4)

/* One frame rule: how to find the caller of a frame whose return address is ip. */
#define SHM_BASE_RSP    1   /* CFA = rsp + cfa_off */
#define SHM_BASE_RBP    2   /* CFA = rbp + cfa_off */
#define SHM_BASE_END    3   /* outermost frame: the walk ends here */
/* A return address in Go's runtime.asmcgocall: the walk hops to the
 * goroutine's stack (framewalk.h, walk_hop); runtime.cgocall, where the
 * goroutine's return address must be, is [ip + cfa_off, + (uint16_t)rbp_off). */
#define SHM_BASE_CGO    4
struct shm_frame {
	uint64_t ip;            /* return address; 0 = empty slot; written last */
	int32_t cfa_off;
	uint8_t base;           /* SHM_BASE_* */
	uint8_t rbp_saved;      /* caller's rbp is at CFA + rbp_off */
	int16_t rbp_off;
};

/*
 * A stack the tool has numbered: an agent whose walk gives frames that
 * hash to `hash` (and are nframes long) sends the id instead of them
 * (SHM_EVF_STACKID). A walk cut at the depth (SHM_EVF_TRUNC) counts as
 * nframes | SHM_STACK_TRUNC, in the hash and here, so that it never takes
 * the id of a stack with the same frames that ended there. Slot: hash modulo SHM_NSTACKS, then linear probing
 * over at most SHM_STACK_PROBES slots. The tool is the only writer and
 * stores hash last; entries are never changed or removed. Two stacks with
 * the same 64-bit hash and depth would share an id: for a million stacks
 * that happens with probability about 3e-8.
 */
struct shm_stack {
	uint64_t hash;          /* shm_stack_hash; 0 = empty slot */
	uint32_t id;            /* the tool's stack id */
	uint32_t nframes;       /* | SHM_STACK_TRUNC: the walk was cut at the depth */
};
#define SHM_STACK_TRUNC 0x80000000u

/* The stack hash, one return address at a time (leaf first) from h = 0... */
static inline uint64_t shm_stack_hash_step(uint64_t h, uint64_t ip)
{
	return (h ^ ip) * 0x100000001b3ULL + (h >> 29);
}

/* ...and finished with the depth (never 0: that marks an empty slot). */
static inline uint64_t shm_stack_hash_end(uint64_t h, uint32_t nframes)
{
	h ^= nframes;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h ? h : 1;
}

/*
 * The walk memo (exact mode only): a walk of the agent's own stack that
 * did not miss, with every stack word it read, so that the next call from
 * the same place reuses its frames after rereading those words instead of
 * walking again. Entry: memo[slot_of(sp)][SHM_MEMO_WAYS]; the way is a
 * hash of the first return address (shm_memo_way). A walk is a function of
 * its start (sp, ip, and bp if the walk used it before reloading it), the
 * depth, the frame table and fp ranges (walk_gen) and the words it read:
 * if all of them are the same, so are its frames, hash and flags. The
 * stack id is not kept: the agent looks it up after a hit.
 *
 * Each entry is a seqlock: a writer (a walk that found the entry stale)
 * claims it by cmpxchg of seq from even to odd, writes it, then stores
 * seq + 2; a claim that fails is not retried (nothing is cached). A reader
 * takes seq (even), the entry, then seq again (unchanged). The target can
 * write it all: a hit rereads each word through the walk's own window, so
 * garbage can only give wrong frames, never a read the walk could not do.
 * `misses` is outside the seqlock (a hint, reset by a hit): a way holding
 * a walk is written over only at its 2nd, 4th, 8th and 16th miss in a
 * row, then every 16th, so that two stacks sharing a first return address
 * (a wrapper called from many places) keep the one that comes back, and
 * stacks that never come back cost few writes.
 */
#define SHM_MEMO_TRUNC  1   /* the walk stopped at depth with frames left */
#define SHM_MEMO_USEDBP 2   /* the walk used the start rbp before it reloaded it */
struct shm_memo {
	volatile uint32_t seq;  /* odd while written */
	uint32_t gen;           /* walk_gen, read before the walk */
	uint64_t sp;            /* frame_regs.sp at the start: entry sp + 8; 0 = empty */
	uint64_t ip;            /* the first return address */
	uint64_t bp;            /* the start rbp (compared only with SHM_MEMO_USEDBP) */
	uint64_t hash;          /* shm_stack_hash of the frames */
	uint32_t depth;         /* the depth the walk had (shm_depth) */
	uint16_t nframes;       /* 1 .. SHM_MEMO_FRAMES */
	uint8_t nread;          /* words read, in order, 0 .. SHM_MEMO_READS */
	uint8_t flags;          /* SHM_MEMO_* */
	volatile uint32_t misses;       /* misses of this way since its last hit (a hint) */
	uint32_t pad[3];                /* the words start a line */
	uint32_t off[SHM_MEMO_READS];   /* each word's address - (entry sp) */
	uint64_t val[SHM_MEMO_READS];   /* and its value */
	uint64_t frames[SHM_MEMO_FRAMES];
};
_Static_assert(sizeof(struct shm_memo) == SHM_MEMO_SIZE, "shm_memo layout");

/* The way of a walk whose first return address is ip. */
static inline unsigned shm_memo_way(uint64_t ip)
{
	return (unsigned)((ip ^ (ip >> 7)) & (SHM_MEMO_WAYS - 1));
}

/* Event records in the ring: 8-byte aligned, never straddling the end
 * (a SHM_EV_PAD fills the tail). `len` is written last: 0 = not yet committed. */
#define SHM_EV_ALLOC    1
#define SHM_EV_FREE     2
#define SHM_EV_PAD      3

#define SHM_EVF_STACK   1   /* a stack copy (stack_len bytes) follows the registers */
#define SHM_EVF_TRUNC   2   /* the walk stopped at the depth (shm_depth) with frames left,
			     * or there was none (nframes 0: every scratch was held) */
#define SHM_EVF_MISS    4   /* the walk missed: the last frame has no usable rule;
			     * a struct frame_regs follows the frames */
#define SHM_EVF_UNTABLED 8  /* sampled mode: not entered in the live table (its bucket
			     * overflowed), so its free will come as an event */
#define SHM_EVF_STACKID 16  /* the walk was complete and its stack is in the stack
			     * table: stack_id instead of frames (nframes 0) */
#define SHM_EVF_NOCOPY  32  /* with MISS, sampled mode: no stack copy, its ring being
			     * past SHM_COPY_FILL: the stack ends where the walk did */
#define SHM_EVF_HOP     64  /* with MISS: the walk hopped to a goroutine's stack
			     * (SHM_BASE_CGO) and missed there: the registers are
			     * the frame's it missed in, the copy from its sp, and
			     * the frames are those before it */
/* Sampled mode sends a stack copy only while its ring holds at most this
 * many bytes: past it a burst of copies (a JIT's first samples, before
 * the frame rules are learnt) would fill the ring and drop samples, which
 * biases the profile; a cut stack does not. */
#define SHM_COPY_FILL(ring_size) ((ring_size) / 2)
#define SHM_EVF_HOOK_SHIFT 16  /* bits 16-23: the hook's enum hook_kind */
#define SHM_EVF_HOOK(flags) (((flags) >> SHM_EVF_HOOK_SHIFT) & 0xff)
#define SHM_EVF_PY_SHIFT 24  /* bits 24-31: Python frame words after the native frames */
#define SHM_EVF_PY(flags) (((flags) >> SHM_EVF_PY_SHIFT) & 0xff)

/* Every record but PAD starts so: len, kind, 16 bits of the kind's own, tsc. */
struct shm_ev_free {
	uint32_t len;
	uint16_t kind;          /* SHM_EV_FREE */
	uint16_t pad;
	uint64_t tsc;
	uint64_t ptr;
};

/*
 * An allocation: the header, nframes return addresses (leaf first), and
 * only if the walk missed (SHM_EVF_MISS) the registers (struct
 * frame_regs, the state right after the allocator returned to its caller:
 * ip = the caller's return address, sp = entry rsp + 8, callee-saved as
 * they are), then stack_len bytes of stack copied from sp (SHM_EVF_STACK). A complete walk
 * needs neither, and is 40 + 8 * nframes bytes; 40 if its stack has an
 * id (SHM_EVF_STACKID).
 */
struct shm_ev_alloc {
	uint32_t len;           /* whole record */
	uint16_t kind;          /* SHM_EV_ALLOC */
	uint16_t nframes;
	uint64_t tsc;
	uint32_t flags;         /* SHM_EVF_* */
	union {
		uint32_t stack_len;     /* bytes of stack copy after the registers */
		uint32_t stack_id;      /* SHM_EVF_STACKID: the stack, by its id */
	};
	uint64_t size;          /* requested */
	uint64_t ptr;           /* result */
	uint64_t frames[];
};

/* The longest record the agent writes with a depth of `depth` frames and
 * at most npy Python words: an allocation whose walk missed at full
 * depth, with its Python frames, its registers and a whole stack copy;
 * SHM_EV_MAX_LEN at the largest depth and count. */
static inline uint32_t shm_ev_max_len(uint32_t depth, uint32_t npy)
{
	return (uint32_t)(sizeof(struct shm_ev_alloc) + (uint64_t)shm_depth(depth) * 8 +
			  (uint64_t)(npy < SHM_PY_MAX_FRAMES ? npy : SHM_PY_MAX_FRAMES) * 8 +
			  sizeof(struct frame_regs) + SHM_STACK_COPY);
}
#define SHM_EV_MAX_LEN (sizeof(struct shm_ev_alloc) + SHM_MAX_DEPTH * 8 + \
			SHM_PY_MAX_FRAMES * 8 + sizeof(struct frame_regs) + SHM_STACK_COPY)

/*
 * ---- In-target accounting (exact mode, SHM_F_XACCT) ----
 * In exact mode, an allocation whose stack the tool has numbered (a
 * stack id, no Python frames) is accounted by the agent in the shared area
 * and sends no event, nor does its free; everything else takes the rings
 * as before. No time stamp orders these: the xlive table is the state.
 * The regions follow the rings (their offsets depend on ring_size):
 *
 *   xlanes[SHM_NLANES]      one cache line each (struct shm_xlane)
 *   xcounts[SHM_NLANES][SHM_XCOUNTS]  per lane, (stack, size) -> count:
 *                           SHM_XHASHED hashed (key, count) entries, then
 *                           the lane's count pages (below)
 *   xlive[xlive_slots]      accounted blocks still live (struct shm_xlive)
 *
 * Lanes: a thread uses lane ring_of(sp) if it owns it: owner holds the fs
 * base of the thread that claimed it with cmpxchg from 0, read with
 * rdfsbase where the kernel allows it (AT_HWCAP2 bit 1), else (SHM_F_XTP)
 * as the word at %fs:0, which the x86-64 TLS ABI makes the thread pointer
 * itself; the tool sets SHM_F_XTP only if every thread it stopped at the
 * attach has that word (arch_xacct_tp_check) and no two share it, and no
 * accounting if not.
 * Only the owner writes its lane's line and counters (plain adds: a
 * signal handler nesting on the same thread interrupts only between
 * instructions). A thread with no lane of its own (its ring's lane is
 * another thread's) counts in the shared lane, SHM_XLANE_SHARED, which
 * no one owns, with locked instructions: its claims are lock cmpxchg, its
 * adds lock add. Before it, such a thread took the event path, and with
 * thousands of threads on 16 lanes nearly every allocation was an event:
 * one writer preempted between its reservation and its commit held every
 * ring's reader, the rings filled and the writers waited up to seconds
 * (issue 29, finding 8). Two threads with one fs base would both own a
 * lane and lose each other's adds: the tool checks every thread it
 * stopped at the attach, and every new one at its first stop, before it
 * runs (agent_link_xacct_thread); a new one that shares a thread's id
 * makes the tool set SHM_F_XSHARED, after which no lane is claimed or
 * counted in: allocations take the event path, frees of blocks accounted
 * before count in xforeign_*, and what the lanes hold stays as counted.
 *
 * An allocation: claim an xlive slot in its probe window (SHM_XPROBES
 * slots from shm_xlive_slot) whose ptr is 0 or 1 by cmpxchg to 2, store
 * key, then ptr; then count key in the lane's xcounts (a free way in
 * the key's window is claimed by cmpxchg from 0); if that fails the slot
 * goes back to 1 and the event path takes the allocation. The lane's
 * alloc_count/alloc_bytes grow with it.
 * Count pages: a size below SHM_XPAGE_SIZES of one of the first
 * SHM_XPAGES stacks a lane sees is counted instead in that stack's page
 * of the lane, one 8-byte count per size: at SHM_XPAGES_OFF from the
 * lane's xcounts, a directory of SHM_XPAGES words (stack id + 1, 0: free,
 * claimed by cmpxchg from 0), and page p's counts at
 * SHM_XPAGE_AT(p) from there. A program's hot stacks then keep their
 * counts in a few dense pages rather than one line per (stack, size) of a
 * hashed table (mallocbench, 3 stacks of 4081 sizes, one thread, side by
 * side in three runs: 1.60x against 1.73x, 1.62x against 1.65x, 1.48x
 * against 1.53x). A key's count is what the page and the hashed table
 * hold for it together.
 * A free: look ptr up in its window (a lookup stops at a slot whose ptr
 * is 0); found: read key, store ptr = 1 (the thread freeing a block owns
 * it: no one else writes that slot meanwhile), add to the lane's
 * free_count/free_bytes (xforeign_* with a locked add if the thread owns
 * no lane) and send nothing. Not found: the event path.
 *
 * The tool reads, at any time: each lane's totals and xcounts (a count is
 * cumulative: alloc_objects is the sum over lanes, alloc_space that times
 * the size) and the xlive table (read ptr, key, ptr again: in-use per
 * key). Everything there is the target's to write: keys and counts are
 * checked (a stack id the tool gave out, a size below SHM_ADDR_LIMIT).
 */
#define SHM_XCOUNTS     65536                   /* a lane's xcounts: 16-byte entries */
#define SHM_XHASHED     (SHM_XCOUNTS / 2)       /* of which the hashed (key, count) ones */
#define SHM_XPAGES      15                      /* stacks with a count page, per lane */
#define SHM_XPAGE_SIZES 4096                    /* sizes 0..4095 a count page counts */
#define SHM_XPAGES_OFF  (SHM_XHASHED * 16)      /* a lane's page directory, from its xcounts */
/* Page p's counts (32 KiB), in bytes from the directory. */
#define SHM_XPAGE_AT(p) (4096 + (uint64_t)(p) * SHM_XPAGE_SIZES * 8)
#define SHM_XPROBES     8
#define SHM_XLIVE_MAX   (1ULL << 24)
#define SHM_XID_MAX     ((1u << 24) - 2)        /* the largest stack id a key holds */
#define SHM_XSIZE_MAX   ((1ULL << 40) - 1)      /* the largest size a key holds */
#define SHM_NLANES      (SHM_NRINGS + 1)        /* a lane per ring, and the shared one */
#define SHM_XLANE_SHARED SHM_NRINGS             /* the lane of threads that own none */

struct shm_xlane {
	volatile uint64_t owner;        /* fs base of the owning thread; 0: free */
	volatile uint64_t alloc_count, alloc_bytes;
	volatile uint64_t free_count, free_bytes;
	uint64_t pad[3];
};

struct shm_xcount {
	volatile uint64_t key;          /* shm_xkey; 0: free */
	volatile uint64_t count;
};

struct shm_xlive {
	volatile uint64_t ptr;          /* 0: never used, 1: freed, 2: being filled */
	volatile uint64_t key;          /* shm_xkey of the block */
};

/* A (stack id, size) key: id <= SHM_XID_MAX, size <= SHM_XSIZE_MAX; never 0. */
static inline uint64_t shm_xkey(uint32_t id, uint64_t size)
{
	return size << 24 | (uint64_t)(id + 1);
}

static inline uint32_t shm_xkey_id(uint64_t key)
{
	return (uint32_t)(key & 0xffffff) - 1;
}

static inline uint64_t shm_xkey_size(uint64_t key)
{
	return key >> 24;
}

#define SHM_OFF_XLANES(ring_size)  (SHM_OFF_RING + SHM_NRINGS * (uint64_t)(ring_size))
#define SHM_OFF_XCOUNTS(ring_size) (SHM_OFF_XLANES(ring_size) + SHM_NLANES * 64)
#define SHM_OFF_XLIVE(ring_size)   (SHM_OFF_XCOUNTS(ring_size) + \
				    (uint64_t)SHM_NLANES * SHM_XCOUNTS * sizeof(struct shm_xcount))
/* Bytes of the accounting regions with xlive_slots slots (0: none). */
#define SHM_XACCT_SIZE(slots) ((slots) ? SHM_OFF_XLIVE(0) - SHM_OFF_RING + \
			       (uint64_t)(slots) * sizeof(struct shm_xlive) : 0)

/* The first slot of ptr's window in an xlive table of `slots` slots, and
 * of key's in a lane's xcounts. A block's slot follows its address (one
 * slot per 32 bytes, glibc's smallest chunk, within each 64 MiB, each
 * 64 MiB at an offset of its own, since glibc's arenas are aligned to
 * it): blocks near each other in the heap are near each other in the
 * table, whose working set then follows the heap's (a multiplicative
 * hash over 16 MiB of table made every access a cache miss: 1.70x
 * against 1.65x with 1 thread, 1.47x against 1.33x with 2, exact mode on
 * mallocbench). */
static inline uint64_t shm_xlive_slot(uint64_t ptr, uint64_t slots)
{
	return ((ptr >> 5) + ((ptr >> 26) * 0x9e3779b97f4a7c15ULL >> 40)) & (slots - 1);
}

static inline uint32_t shm_xcount_slot(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 48) & (SHM_XHASHED - 1);
}

_Static_assert(SHM_XPAGES_OFF + SHM_XPAGE_AT(SHM_XPAGES) <= SHM_XCOUNTS * 16,
	       "a lane's count pages fit its xcounts");
_Static_assert(SHM_XPAGES * 8 <= 4096, "the page directory fits its page");

/* No user address (nor size) reaches this, even with 5-level paging: an
 * allocation event beyond it was not written by the agent. */
#define SHM_ADDR_LIMIT (1ULL << 57)

#endif
