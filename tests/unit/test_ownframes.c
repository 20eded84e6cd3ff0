/* Unit tests for ownframes.c: the fast trampolines' frame maps against their decoded code, the agent's rules, the lookups. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <capstone/capstone.h>

#include "harness.h"
#include "agent.h"
#include "agent_cfi.h"
#include "model/hooks.h"
#include "stacks/ownframes.h"
#include "reloc.h"
#include "shm.h"
#include "tramp.h"
#include "tramp_fast.h"

#define FROM	0x7f0000400000ull
#define AT	(FROM + 0x100000)

/* glibc 2.36's malloc: push %r12; push %rbp; push %rbx; mov %rdi,%rbx; ... */
static const uint8_t body[] = { 0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb, 0x48, 0x83, 0xec, 0x10,
				0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };

static const struct tramp_fast_env env = {
	.data = AT + 0x10000, .agent_alloc = AT - 0x1000, .agent_free = AT - 0x800,
};

/* Emit h's trampoline of whichever class fits its kind at AT into buf:
 * its class, or -1 (r: its relocated prologue, lay: its layout). */
static int emit(const struct hook *h, uint8_t *buf, struct reloc_result *r,
		struct tramp_layout *lay)
{
	static const enum tramp_class cls[] = { TRAMP_ALLOC, TRAMP_REALLOC, TRAMP_FREE };

	for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
		int off = tramp_fast_reloc_offset(cls[i], h, &env);

		if (off < 0)
			continue;
		if (reloc_prologue(body, sizeof(body), FROM, AT + (uint64_t)off, r) ||
		    tramp_fast_emit(cls[i], h, AT, r, &env, buf, TRAMP_FAST_MAX_SIZE, lay))
			return -1;
		return (int)cls[i];
	}
	return -1;
}

/* Words an instruction pushes (negative: pops), or 0. */
static int pushes(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	switch (in->id) {
	case X86_INS_PUSH:
		return 1;
	case X86_INS_POP:
		return -1;
	case X86_INS_ADD:
	case X86_INS_SUB:
		if (x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == X86_REG_RSP && x->operands[1].type == X86_OP_IMM)
			return (int)(x->operands[1].imm / 8) * (in->id == X86_INS_ADD ? -1 : 1);
		return 0;
	default:
		return 0;
	}
}

/*
 * The frame map of every kind's trampoline (up to 3 arguments and more,
 * nesting or not) against a linear decode of its code: at each
 * instruction outside RELOC, the CFA the map gives is rsp + 8 * (1 + the
 * words pushed since the segment's entry: the trampoline's start, or after
 * a jmp or ret, where SLOW and CALLTHRU begin); every byte of RELOC is
 * TRAMP_FR_RELOC; no offset at or past the end has a rule.
 */
static void test_maps_decoded(void)
{
	uint8_t buf[TRAMP_FAST_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;
	struct shm_frame rule;
	cs_insn *in;
	csh cs;
	int checked = 0;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		expect_true(0);
		return;
	}
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(cs);
	for (int kind = 0; kind < HOOK_NKINDS; kind++) {
		int emitted = 0;

		for (int v = 0; v < 4; v++) {
			struct hook h = { .kind = (enum hook_kind)kind, .nargs = v & 1 ? 5 : 3,
					  .calls = v & 2 ? 1u << HOOK_ALLOC : 0 };
			const uint8_t *p = buf;
			uint64_t addr = AT;
			size_t left, reloc_end;
			int words = 0;

			if (emit(&h, buf, &r, &lay) < 0)
				continue;
			emitted++;
			expect_true(lay.nframes > 1);
			reloc_end = lay.reloc_off + r.code_len;
			left = lay.size;
			while (left) {
				size_t off = (size_t)(addr - AT);

				if (off >= lay.reloc_off && off < reloc_end) {
					expect_int_eq(tramp_frame_rule(&lay, off, &rule), TRAMP_FR_RELOC);
					p++, addr++, left--;
					words = 0;
					continue;
				}
				if (!cs_disasm_iter(cs, &p, &left, &addr, in)) {
					expect_true(0);
					break;
				}
				expect_int_eq(tramp_frame_rule(&lay, off, &rule), TRAMP_FR_STACK);
				expect_int_eq(rule.base, SHM_BASE_RSP);
				expect_int_eq(rule.rbp_saved, 0);
				if (rule.cfa_off != 8 * (words + 1)) {
					fprintf(stderr, "kind %d v %d +%zu %s: cfa rsp+%d, decoded %d words\n",
						kind, v, off, in->mnemonic, rule.cfa_off, words);
					expect_true(0);
				}
				words += pushes(in);
				if (in->id == X86_INS_RET || in->id == X86_INS_JMP)
					words = 0;
				checked++;
			}
			expect_int_eq(tramp_frame_rule(&lay, lay.size, &rule), -ENOENT);
		}
		if (!emitted)
			fprintf(stderr, "kind %d: no trampoline\n", kind);
		expect_true(emitted > 0);
	}
	expect_true(checked > 500);
	cs_free(in, 1);
	cs_close(&cs);
}

/* The agent's rules: at both entry points the CFA is rsp + 8 and rbp
 * kept; wherever there is one, a CFA above the frame and rbp saved in it
 * (or below it, in the red zone, after the epilogue's pop: the CFI says
 * so until the function returns). */
static void test_agent_rules(void)
{
	struct tramp_fast_env e = { 0 };
	size_t size = tramp_fast_agent_size();
	uint8_t *blob = malloc(size);
	struct shm_frame rule;
	uint64_t off_alloc, off_free;
	size_t covered = 0;

	expect_int_eq(tramp_fast_agent_install(blob, size, 0x10000, &e), 0);
	off_alloc = e.agent_alloc - 0x10000;
	off_free = e.agent_free - 0x10000;
	free(blob);
	expect_int_eq(agent_cfi_rule(off_alloc, &rule), 0);
	expect_int_eq(rule.base, SHM_BASE_RSP);
	expect_int_eq(rule.cfa_off, 8);
	expect_int_eq(rule.rbp_saved, 0);
	expect_int_eq(agent_cfi_rule(off_free, &rule), 0);
	expect_int_eq(rule.cfa_off, 8);
	for (uint64_t off = 0; off < size; off++) {
		if (agent_cfi_rule(off, &rule))
			continue;
		covered++;
		expect_true(rule.base == SHM_BASE_RSP || rule.base == SHM_BASE_RBP);
		expect_true(rule.cfa_off >= 8 && !(rule.cfa_off & 7));
		/* saved in the frame, or (its epilogue popped it) in the red zone */
		if (rule.rbp_saved)
			expect_true(rule.rbp_off < 0 && -rule.rbp_off <= rule.cfa_off + 128);
	}
	/* the code up to agent_free, but for the padding between functions */
	expect_true(covered > off_free * 9 / 10);
	expect_int_eq(agent_cfi_rule(size + 64, &rule), -ENOENT);
}

/* Lookups: a trampoline's stack rule and its hooked function, RELOC
 * moved into that function, the agent's rows (a return address takes its
 * call's), and nothing outside. */
static void test_lookups(void)
{
	const uint64_t agent = AT - 0x10000;
	uint8_t buf[TRAMP_FAST_MAX_SIZE];
	struct hook h = { .kind = HOOK_ALLOC, .nargs = 1 };
	struct reloc_result r;
	struct tramp_layout lay;
	struct shm_frame rule;
	uint64_t moved = 0, entry = 1, slow;
	struct ownframes *o = ownframes_new();
	struct tramp_fast_env e = { 0 };
	size_t size = tramp_fast_agent_size();
	uint8_t *blob = malloc(size);

	expect_int_eq(tramp_fast_agent_install(blob, size, agent, &e), 0);
	free(blob);
	expect_int_eq(emit(&h, buf, &r, &lay), TRAMP_ALLOC);
	ownframes_set_agent(o, agent, agent + size);
	ownframes_add_tramp(o, AT, &lay, &r);
	expect_true(ownframes_has(o, AT));
	expect_true(ownframes_has(o, AT + lay.size - 1));
	expect_true(!ownframes_has(o, AT + lay.size));
	expect_true(ownframes_has(o, e.agent_alloc));
	expect_true(!ownframes_has(o, agent + size));
	expect_true(!ownframes_has(NULL, AT));

	/* the ALLOC check: nothing pushed */
	expect_int_eq(ownframes_rule(o, AT, 1, &rule, &moved, &entry), OWNFRAMES_RULE);
	expect_u64_eq(entry, FROM);
	expect_int_eq(rule.cfa_off, 8);
	/* RELOC's third instruction (push %rbx) was malloc's at +3 */
	expect_int_eq(ownframes_rule(o, AT + lay.reloc_off + 3, 1, &rule, &moved, &entry),
		      OWNFRAMES_MOVED);
	expect_u64_eq(moved, FROM + 3);
	expect_int_eq(ownframes_rule(o, AT + lay.reloc_off + 1, 1, &rule, &moved, &entry), -ENOENT);
	/* SLOW's return from RELOC (three words), and from agent_alloc (eleven) */
	slow = AT + lay.reloc_off + r.code_len;
	expect_int_eq(ownframes_rule(o, slow + 8, 0, &rule, &moved, &entry), OWNFRAMES_RULE);
	expect_int_eq(rule.cfa_off, 32);
	expect_int_eq(ownframes_rule(o, slow + 39, 0, &rule, &moved, &entry), OWNFRAMES_RULE);
	expect_int_eq(rule.cfa_off, (int)sizeof(struct agent_frame));
	/* the agent: its entry, exact; a return address there has no call */
	expect_int_eq(ownframes_rule(o, e.agent_alloc, 1, &rule, &moved, &entry), OWNFRAMES_RULE);
	expect_u64_eq(entry, 0);
	expect_int_eq(rule.cfa_off, 8);
	expect_int_eq(ownframes_rule(o, agent, 0, &rule, &moved, &entry), -ENOENT);
	expect_int_eq(ownframes_rule(o, AT + lay.size, 1, &rule, &moved, &entry), -ENOENT);
	ownframes_free(o);
}

HARNESS_MAIN("ownframes",
	T(test_maps_decoded), T(test_agent_rules), T(test_lookups))
