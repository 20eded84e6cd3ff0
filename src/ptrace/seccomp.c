/* A seccomp filter evaluator: what a thread's classic BPF filters do to one system call. */
/* SPDX-License-Identifier: MIT */
/*
 * A classic BPF interpreter restricted to what the kernel accepts in a
 * seccomp filter (seccomp_check_filter): 32-bit loads of struct
 * seccomp_data, immediates, scratch memory, ALU, forward jumps, returns.
 * Jumps only go forward, so every path ends. Values that come from an
 * unknown input word are tracked as unknown; a jump that depends on one
 * follows both ways (depth first, at most MAX_PATHS paths), so the set of
 * returns is every return some input could reach.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>

#include "base/xmalloc.h"
#include "ptrace/seccomp.h"

#define MAX_PATHS 1024
#define DATA_LEN (SECCOMP_NWORDS * 4)   /* sizeof(struct seccomp_data) */

void seccomp_input_init(struct seccomp_input *in, uint32_t arch, uint32_t nr)
{
	memset(in, 0, sizeof(*in));
	in->w[SECCOMP_W_NR] = nr;
	in->w[SECCOMP_W_ARCH] = arch;
	in->known = 1u << SECCOMP_W_NR | 1u << SECCOMP_W_ARCH;
}

void seccomp_input_arg(struct seccomp_input *in, unsigned i, uint64_t v)
{
	unsigned w = SECCOMP_W_ARG(i);

	if (i > 5)
		return;
	in->w[w] = (uint32_t)v;
	in->w[w + 1] = (uint32_t)(v >> 32);
	in->known |= 3u << w;
}

/* Registers of one path: A, X and the scratch words, each known or not. */
struct path {
	uint32_t pc, a, x, mem[BPF_MEMWORDS];
	uint32_t mem_known;
	uint8_t a_known, x_known;
};

/* Add v to the set out[0..*n); -E2BIG when full. */
static int add_ret(uint32_t v, uint32_t *out, size_t max, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		if (out[i] == v)
			return 0;
	if (*n == max)
		return -E2BIG;
	out[(*n)++] = v;
	return 0;
}

/* A op v for the ALU ops but DIV by 0 (the caller's); *ok = 0 if undefined. */
static uint32_t alu(uint16_t op, uint32_t a, uint32_t v, int *ok)
{
	*ok = 1;
	switch (op) {
	case BPF_ADD: return a + v;
	case BPF_SUB: return a - v;
	case BPF_MUL: return a * v;
	case BPF_DIV: return a / v;
	case BPF_AND: return a & v;
	case BPF_OR:  return a | v;
	case BPF_XOR: return a ^ v;
	case BPF_LSH: *ok = v < 32; return v < 32 ? a << v : 0;
	case BPF_RSH: *ok = v < 32; return v < 32 ? a >> v : 0;
	case BPF_NEG: return -a;
	}
	*ok = 0;
	return 0;
}

/* Whether the jump op taken on a and v. */
static int jump_taken(uint16_t op, uint32_t a, uint32_t v)
{
	switch (op) {
	case BPF_JEQ: return a == v;
	case BPF_JGT: return a > v;
	case BPF_JGE: return a >= v;
	default:      return (a & v) != 0;	/* BPF_JSET */
	}
}

/* Whether insn is one seccomp accepts, with its operands in range. */
static int insn_valid(const struct sock_filter *f, size_t pc, size_t len)
{
	uint16_t c = f->code;

	switch (BPF_CLASS(c)) {
	case BPF_LD:
	case BPF_LDX:
		if (c == (BPF_LD | BPF_W | BPF_ABS) || c == (BPF_LDX | BPF_W | BPF_ABS))
			return f->k < DATA_LEN && !(f->k & 3);
		if (c == (BPF_LD | BPF_W | BPF_LEN) || c == (BPF_LDX | BPF_W | BPF_LEN) ||
		    c == (BPF_LD | BPF_IMM) || c == (BPF_LDX | BPF_IMM))
			return 1;
		if (c == (BPF_LD | BPF_MEM) || c == (BPF_LDX | BPF_MEM))
			return f->k < BPF_MEMWORDS;
		return 0;
	case BPF_ST:
	case BPF_STX:
		return c == BPF_CLASS(c) && f->k < BPF_MEMWORDS;
	case BPF_ALU:
		switch (BPF_OP(c)) {
		case BPF_NEG:
			return c == (BPF_ALU | BPF_NEG);
		case BPF_DIV:
			return BPF_SRC(c) == BPF_X || f->k;
		case BPF_LSH:
		case BPF_RSH:
			return BPF_SRC(c) == BPF_X || f->k < 32;
		case BPF_ADD: case BPF_SUB: case BPF_MUL:
		case BPF_AND: case BPF_OR: case BPF_XOR:
			return 1;
		}
		return 0;
	case BPF_JMP:
		if (c == (BPF_JMP | BPF_JA))
			return f->k < len - pc - 1;
		switch (BPF_OP(c)) {
		case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET:
			return f->jt < len - pc - 1 && f->jf < len - pc - 1;
		}
		return 0;
	case BPF_RET:
		return c == (BPF_RET | BPF_K) || c == (BPF_RET | BPF_A);
	case BPF_MISC:
		return c == (BPF_MISC | BPF_TAX) || c == (BPF_MISC | BPF_TXA);
	}
	return 0;
}

/*
 * Run one path from p->pc until it returns; a branch on an unknown value
 * pushes the untaken side onto stack (*sp entries). 0 with the return
 * value in *ret, -ENODATA if it returns an unknown value, -EINVAL.
 */
static int run_path(const struct seccomp_prog *prog, const struct seccomp_input *in,
		    struct path *p, struct path *stack, size_t *sp, uint32_t *ret)
{
	while (p->pc < prog->len) {
		const struct sock_filter *f = &prog->insns[p->pc];
		uint16_t c = f->code;
		uint32_t v = f->k, res;
		int v_known = 1, ok;

		if (!insn_valid(f, p->pc, prog->len))
			return -EINVAL;
		p->pc++;
		switch (BPF_CLASS(c)) {
		case BPF_LD:
		case BPF_LDX:
			if (BPF_MODE(c) == BPF_ABS) {
				v = in->w[f->k / 4];
				v_known = !!(in->known & (1u << (f->k / 4)));
			} else if (BPF_MODE(c) == BPF_LEN) {
				v = DATA_LEN;
			} else if (BPF_MODE(c) == BPF_MEM) {
				v = p->mem[f->k];
				v_known = !!(p->mem_known & (1u << f->k));
			}
			/* the kernel's own rewrite of LD|ABS is LDX|ABS into A */
			if (BPF_CLASS(c) == BPF_LD || BPF_MODE(c) == BPF_ABS) {
				p->a = v;
				p->a_known = (uint8_t)v_known;
			} else {
				p->x = v;
				p->x_known = (uint8_t)v_known;
			}
			break;
		case BPF_ST:
		case BPF_STX:
			p->mem[f->k] = BPF_CLASS(c) == BPF_ST ? p->a : p->x;
			if (BPF_CLASS(c) == BPF_ST ? p->a_known : p->x_known)
				p->mem_known |= 1u << f->k;
			else
				p->mem_known &= ~(1u << f->k);
			break;
		case BPF_ALU:
			if (BPF_OP(c) != BPF_NEG && BPF_SRC(c) == BPF_X) {
				v = p->x;
				v_known = p->x_known;
			}
			if (BPF_OP(c) == BPF_DIV && BPF_SRC(c) == BPF_X && (!v_known || !v)) {
				/* division by zero ends the program with 0 */
				if (v_known)
					return *ret = 0, 0;
				if (*sp >= prog->len)
					return -EINVAL;
				stack[*sp] = *p;
				stack[*sp].pc = (uint32_t)prog->len;	/* marks "returns 0" */
				(*sp)++;
			}
			res = alu(BPF_OP(c), p->a, BPF_OP(c) == BPF_DIV && !v ? 1 : v, &ok);
			p->a = res;
			p->a_known = (uint8_t)(p->a_known && v_known && ok);
			break;
		case BPF_JMP:
			if (BPF_OP(c) == BPF_JA) {
				p->pc += f->k;
				break;
			}
			if (BPF_SRC(c) == BPF_X) {
				v = p->x;
				v_known = p->x_known;
			}
			if (f->jt == f->jf) {
				p->pc += f->jt;
			} else if (p->a_known && v_known) {
				p->pc += jump_taken(BPF_OP(c), p->a, v) ? f->jt : f->jf;
			} else {
				if (*sp >= prog->len)
					return -EINVAL;
				stack[*sp] = *p;
				stack[*sp].pc += f->jf;
				(*sp)++;
				p->pc += f->jt;
			}
			break;
		case BPF_RET:
			if (BPF_RVAL(c) == BPF_K)
				return *ret = f->k, 0;
			return p->a_known ? (*ret = p->a, 0) : -ENODATA;
		case BPF_MISC:
			if (BPF_MISCOP(c) == BPF_TAX) {
				p->x = p->a;
				p->x_known = p->a_known;
			} else {
				p->a = p->x;
				p->a_known = p->x_known;
			}
			break;
		}
	}
	return -EINVAL;	/* ran off the end: the kernel needs a final return */
}

int seccomp_prog_returns(const struct seccomp_prog *prog, const struct seccomp_input *in,
			 uint32_t *out, size_t max, size_t *n)
{
	struct path *stack, cur;
	size_t sp = 0, paths = 0;
	uint32_t ret;
	int err = 0;

	*n = 0;
	if (!prog->len || prog->len > BPF_MAXINSNS)
		return -EINVAL;
	stack = xcalloc(prog->len + 1, sizeof(*stack));
	memset(&cur, 0, sizeof(cur));
	for (;;) {
		if (++paths > MAX_PATHS) {
			err = -E2BIG;
			break;
		}
		if (cur.pc == prog->len)	/* a division by an unknown zero */
			ret = 0;
		else if ((err = run_path(prog, in, &cur, stack, &sp, &ret)))
			break;
		err = add_ret(ret, out, max, n);
		if (err || !sp)
			break;
		cur = stack[--sp];
	}
	free(stack);
	return err;
}

unsigned seccomp_action_class(uint32_t ret)
{
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
	case SECCOMP_RET_LOG:
		return SECCOMP_O_ALLOW;
	case SECCOMP_RET_ERRNO:
	case SECCOMP_RET_TRACE:	/* no PTRACE_O_TRACESECCOMP tracer: ENOSYS */
		return SECCOMP_O_ERRNO;
	case SECCOMP_RET_TRAP:
		return SECCOMP_O_TRAP;
	case SECCOMP_RET_USER_NOTIF:
		return SECCOMP_O_NOTIF;
	default:			/* KILL_PROCESS, KILL_THREAD, unknown */
		return SECCOMP_O_KILL;
	}
}

/* The kernel's order of precedence: lower is more restrictive. */
static int32_t action_rank(uint32_t ret)
{
	return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

#define MAX_RETS 64

unsigned seccomp_outcomes(const struct seccomp_prog *progs, size_t n,
			  const struct seccomp_input *in)
{
	uint32_t (*rets)[MAX_RETS];
	size_t *nrets;
	int32_t bound = INT32_MAX;
	unsigned out = 0;

	if (!n)
		return SECCOMP_O_ALLOW;
	rets = xcalloc(n, sizeof(*rets));
	nrets = xcalloc(n, sizeof(*nrets));
	/* A value v of filter i is final for some input only if every filter
	 * can return something at least as permissive: rank(v) <= the least
	 * of the filters' most permissive ranks. */
	for (size_t i = 0; i < n; i++) {
		int32_t most = INT32_MIN;

		if (seccomp_prog_returns(&progs[i], in, rets[i], MAX_RETS, &nrets[i])) {
			out |= SECCOMP_O_BAD;
			nrets[i] = 0;
			continue;
		}
		for (size_t k = 0; k < nrets[i]; k++)
			if (action_rank(rets[i][k]) > most)
				most = action_rank(rets[i][k]);
		if (most < bound)
			bound = most;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < nrets[i]; k++)
			if (action_rank(rets[i][k]) <= bound)
				out |= seccomp_action_class(rets[i][k]);
	free(nrets);
	free(rets);
	return out;
}

const char *seccomp_outcome_names(unsigned o, char *buf, size_t len)
{
	static const char *const names[] = { "allow", "errno", "kill", "trap", "user-notif",
					     "unreadable filter" };
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(o & (1u << i)) || at >= len)
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "|" : "", names[i]);
	}
	return buf;
}
