/* Unit tests for the frame-rule walk (framewalk.h) that the agent and the tool share. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "framewalk.h"
#include "shm.h"

static struct shm_frame table[SHM_NFRAMES];

/* A fake stack: the target's addresses [STACK_LO, STACK_LO + sizeof(stack)). */
#define STACK_LO 0x7ffd00000000ull
static uint64_t stack[64];

static void put_word(uint64_t addr, uint64_t v)
{
	stack[(addr - STACK_LO) / 8] = v;
}

/* Enter a rule as frametab.c does (ip last). */
static void rule(uint64_t ip, uint8_t base, int32_t cfa_off, int rbp_saved, int16_t rbp_off)
{
	uint32_t slot = shm_frame_slot(ip);

	while (table[slot].ip)
		slot = (slot + 1) & (SHM_NFRAMES - 1);
	table[slot] = (struct shm_frame){ 0, cfa_off, base, (uint8_t)rbp_saved, rbp_off };
	table[slot].ip = ip;
}

static struct walk_window window(void)
{
	return (struct walk_window){ (const uint8_t *)stack, STACK_LO, STACK_LO + sizeof(stack), NULL, NULL, 0 };
}

/* Three frames: A (rsp + 16), B (rbp + 16, rbp saved at CFA - 16), C (end). */
static void build(struct frame_regs *r)
{
	memset(table, 0, sizeof(table));
	memset(stack, 0, sizeof(stack));
	rule(0x401000, SHM_BASE_RSP, 16, 0, 0);
	rule(0x402000, SHM_BASE_RBP, 16, 1, -16);
	rule(0x403000, SHM_BASE_END, 0, 0, 0);
	memset(r, 0, sizeof(*r));
	r->ip = 0x401000;
	r->sp = STACK_LO + 0x40;
	r->bp = STACK_LO + 0x100;	/* A keeps B's rbp */
	/* A: CFA = sp + 16 = LO + 0x50; return address at LO + 0x48 */
	put_word(STACK_LO + 0x48, 0x402000);
	/* B: CFA = rbp + 16 = LO + 0x110; ra at LO + 0x108; rbp at LO + 0x100 */
	put_word(STACK_LO + 0x108, 0x403000);
	put_word(STACK_LO + 0x100, STACK_LO + 0x180);
}

static void test_complete(void)
{
	struct walk_window w = window();
	struct frame_regs r;
	uint64_t out[8], hash, h = 0;
	uint32_t flags = 0;
	unsigned n;

	build(&r);
	n = walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash);
	expect_int_eq(n, 3);
	expect_int_eq(flags, 0);
	expect_u64_eq(out[0], 0x401000);
	expect_u64_eq(out[1], 0x402000);
	expect_u64_eq(out[2], 0x403000);
	for (unsigned i = 0; i < n; i++)
		h = shm_stack_hash_step(h, out[i]);
	expect_u64_eq(hash, shm_stack_hash_end(h, 3));
}

static void test_trunc(void)
{
	struct walk_window w = window();
	struct frame_regs r;
	uint64_t out[8], hash;
	uint32_t flags = 0;

	build(&r);
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 2, &flags, &hash), 2);
	expect_int_eq(flags, SHM_EVF_TRUNC);
	/* the hash of a cut walk is not that of the same frames ending there */
	expect_u64_eq(hash, shm_stack_hash_end(shm_stack_hash_step(shm_stack_hash_step(0, out[0]),
									out[1]),
					       2 | SHM_STACK_TRUNC));
}

static void test_misses(void)
{
	struct walk_window w = window();
	struct frame_regs r;
	uint64_t out[8], hash;
	uint32_t flags;

	/* no rule for the second frame */
	build(&r);
	put_word(STACK_LO + 0x48, 0x409000);
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, SHM_EVF_MISS);

	/* a CFA out of the window */
	build(&r);
	r.bp = STACK_LO + 0x1000;
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, SHM_EVF_MISS);

	/* a CFA that is not 8-aligned */
	build(&r);
	r.bp = STACK_LO + 0x101;
	flags = 0;
	walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash);
	expect_int_eq(flags, SHM_EVF_MISS);

	/* a CFA that does not move up the stack */
	build(&r);
	r.bp = STACK_LO + 0x20;
	flags = 0;
	walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash);
	expect_int_eq(flags, SHM_EVF_MISS);

	/* a saved rbp out of the window */
	build(&r);
	memset(table, 0, sizeof(table));
	rule(0x401000, SHM_BASE_RSP, 16, 1, -0x100);
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 1);
	expect_int_eq(flags, SHM_EVF_MISS);

	/* a rule whose base no agent knows */
	build(&r);
	memset(table, 0, sizeof(table));
	rule(0x401000, 7, 16, 0, 0);
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 1);
	expect_int_eq(flags, SHM_EVF_MISS);
}

/* A window at the very top of the address space: no sum wraps. */
static void test_window_edges(void)
{
	struct walk_window w = { (const uint8_t *)stack, UINT64_MAX - 15, UINT64_MAX, NULL, NULL, 0 };
	uint64_t v;

	expect_int_eq(walk_read(&w, UINT64_MAX - 15, &v), 0);
	expect_int_eq(walk_read(&w, UINT64_MAX - 8, &v), 0);
	expect_int_eq(walk_read(&w, UINT64_MAX - 7, &v), -1);
	expect_int_eq(walk_read(&w, UINT64_MAX - 16, &v), -1);
	w.hi = w.lo + 4;
	expect_int_eq(walk_read(&w, w.lo, &v), -1);
}

/*
 * JIT code (no rules) in a frame-pointer range: A (leaf, no rule, in the
 * range, rbp at LO + 0x80) -> B (no rule, in the range, rbp at LO + 0xc0)
 * -> C (end rule). Outside the range, or with a chain that does not move
 * up, it is a miss.
 */
static void test_frame_pointer(void)
{
	struct shm_range jit[SHM_FP_RANGES] = { { 0x7f0000000000ull, 0x7f0000100000ull } };
	struct walk_fp fp = { jit, 1 };
	struct walk_window w = window();
	struct frame_regs r = { .ip = 0x7f0000000100ull, .sp = STACK_LO + 0x40,
				.bp = STACK_LO + 0x80 };
	uint64_t out[8], hash;
	uint32_t flags = 0;

	memset(table, 0, sizeof(table));
	memset(stack, 0, sizeof(stack));
	rule(0x403000, SHM_BASE_END, 0, 0, 0);
	put_word(STACK_LO + 0x88, 0x7f0000000200ull);	/* A's caller: B */
	put_word(STACK_LO + 0x80, STACK_LO + 0xc0);	/* B's rbp */
	put_word(STACK_LO + 0xc8, 0x403000);		/* B's caller: C */
	put_word(STACK_LO + 0xc0, STACK_LO + 0x140);
	expect_int_eq(walk_frames(table, &fp, &r, &w, out, 8, &flags, &hash), 3);
	expect_int_eq(flags, 0);
	expect_u64_eq(out[1], 0x7f0000000200ull);
	expect_u64_eq(out[2], 0x403000);
	/* no range: a miss at the first frame */
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 1);
	expect_int_eq(flags, SHM_EVF_MISS);
	/* a range count beyond the table is bounded; an empty range matches nothing */
	fp.n = 1000;
	flags = 0;
	expect_int_eq(walk_frames(table, &fp, &r, &w, out, 8, &flags, &hash), 3);
	/* a chain that goes down the stack (B's rbp below A's frame): a miss */
	fp.n = 1;
	put_word(STACK_LO + 0x80, STACK_LO + 0x48);
	flags = 0;
	expect_int_eq(walk_frames(table, &fp, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, SHM_EVF_MISS);
	/* rbp out of the window, or unaligned: a miss */
	r.bp = STACK_LO + sizeof(stack);
	flags = 0;
	expect_int_eq(walk_frames(table, &fp, &r, &w, out, 8, &flags, &hash), 1);
	expect_int_eq(flags, SHM_EVF_MISS);
	r.bp = STACK_LO + 0x84;
	flags = 0;
	expect_int_eq(walk_frames(table, &fp, &r, &w, out, 8, &flags, &hash), 1);
	expect_int_eq(flags, SHM_EVF_MISS);
}

/* A logged walk: every word read, in order, as offsets from lo; the
 * start rbp counted as used only while no read replaced it. */
static void test_log(void)
{
	struct walk_window w = window();
	struct walk_log log = { 0 };
	struct frame_regs r;
	uint64_t out[8], hash;
	uint32_t flags = 0;

	build(&r);
	w.log = &log;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 3);
	expect_int_eq(log.n, 3);
	expect_int_eq(log.off[0], 0x48);
	expect_u64_eq(log.val[0], 0x402000);
	expect_int_eq(log.off[1], 0x108);
	expect_u64_eq(log.val[1], 0x403000);
	expect_int_eq(log.off[2], 0x100);
	expect_u64_eq(log.val[2], STACK_LO + 0x180);
	expect_int_eq(log.used_bp, 1);	/* B's CFA is the start rbp + 16 */

	/* A saves rbp: B's CFA comes from the stack, not from the start */
	build(&r);
	memset(table, 0, sizeof(table));
	rule(0x401000, SHM_BASE_RSP, 16, 1, -16);
	rule(0x402000, SHM_BASE_RBP, 16, 1, -16);
	rule(0x403000, SHM_BASE_END, 0, 0, 0);
	put_word(STACK_LO + 0x40, STACK_LO + 0x100);
	r.bp = 0xdead;
	memset(&log, 0, sizeof(log));
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 3);
	expect_int_eq(flags, 0);
	expect_int_eq(log.n, 4);
	expect_int_eq(log.off[1], 0x40);
	expect_int_eq(log.used_bp, 0);
}

/* The cgo hop: a system stack, a g and a goroutine's stack in our memory. */
#define ASM_RET 0x45f484ull	/* in runtime.asmcgocall, after its call of C */
#define CALL_LO 0x404ee0ull	/* runtime.cgocall, 0x100 bytes */
#define CALL_RET 0x404f65ull
#define ROOT 0x490000ull
static uint64_t sys[32], gst[32], gobj[2];

/* A C frame (rsp + 16) under asmcgocall, its hop into the goroutine's
 * stack at gst[10], runtime.cgocall's frame (rsp + 16), then a root. */
static void build_cgo(struct frame_regs *r, struct walk_window *w)
{
	memset(table, 0, sizeof(table));
	memset(sys, 0, sizeof(sys));
	memset(gst, 0, sizeof(gst));
	rule(0x401000, SHM_BASE_RSP, 16, 0, 0);
	rule(ASM_RET, SHM_BASE_CGO, (int32_t)(CALL_LO - ASM_RET), 0, 0x100);
	rule(CALL_RET, SHM_BASE_RSP, 16, 0, 0);
	rule(ROOT, SHM_BASE_END, 0, 0, 0);
	memset(r, 0, sizeof(*r));
	r->ip = 0x401000;
	r->sp = (uint64_t)&sys[0];
	sys[1] = ASM_RET;			/* asmcgocall's SP is &sys[2] */
	sys[2 + 6] = (uint64_t)gobj;		/* g at SP + 48 */
	gobj[0] = (uint64_t)&gst[0];
	gobj[1] = (uint64_t)&gst[32];
	sys[2 + 5] = gobj[1] - (uint64_t)&gst[10];	/* the depth at SP + 40 */
	gst[10] = CALL_RET;
	gst[12] = ROOT;
	*w = (struct walk_window){ (const uint8_t *)sys, (uint64_t)sys, (uint64_t)&sys[32], NULL,
				   NULL, 1 };
}

static void test_cgo_hop(void)
{
	struct walk_log log = { 0 };
	struct walk_window w;
	struct frame_regs r;
	uint64_t out[8], hash;
	uint32_t flags = 0;

	build_cgo(&r, &w);
	w.log = &log;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 4);
	expect_int_eq(flags, SHM_EVF_HOP);
	expect_u64_eq(out[1], ASM_RET);
	expect_u64_eq(out[2], CALL_RET);
	expect_u64_eq(out[3], ROOT);
	expect_true(log.n > SHM_MEMO_READS);	/* not for the memo */

	/* a stack copy (not direct): cut at the hop */
	build_cgo(&r, &w);
	w.direct = 0;
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, SHM_EVF_TRUNC);

	/* the goroutine's return address not in runtime.cgocall: ends there */
	build_cgo(&r, &w);
	gst[10] = CALL_LO + 0x100;
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, 0);

	/* its SP below g.stack.lo: ends there */
	build_cgo(&r, &w);
	sys[2 + 5] = sizeof(gst) + 8;
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, 0);

	/* g 0: asmcgocall was on a system stack already, whose SP is at SP + 40 */
	build_cgo(&r, &w);
	sys[2 + 6] = 0;
	sys[2 + 5] = (uint64_t)&sys[20];
	sys[20] = ROOT;
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 3);
	expect_int_eq(flags, 0);
	expect_u64_eq(out[2], ROOT);

	/* ... and not one below asmcgocall's SP */
	sys[2 + 5] = (uint64_t)&sys[1];
	flags = 0;
	expect_int_eq(walk_frames(table, NULL, &r, &w, out, 8, &flags, &hash), 2);
	expect_int_eq(flags, 0);
}

HARNESS_MAIN("framewalk", T(test_frame_pointer),
	T(test_complete),
	T(test_trunc),
	T(test_misses),
	T(test_window_edges),
	T(test_log),
	T(test_cgo_hop))
