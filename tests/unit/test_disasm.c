/* Unit tests for the arch's reading of machine code: PLT stubs and direct branches. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "harness.h"
#include "disasm.h"

static void test_plt_slot(void)
{
	/* endbr64; bnd jmp *0x2fe2(%rip) at 0x1030: slot 0x1030 + 4 + 7 + 0x2fe2 */
	static const uint8_t stub[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xe2, 0x2f,
					0x00, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	/* jmp *0x10(%rip) at 0x2000 */
	static const uint8_t plain[] = { 0xff, 0x25, 0x10, 0x00, 0x00, 0x00 };
	/* push %rbp; mov %rsp,%rbp: not a stub */
	static const uint8_t fn[] = { 0x55, 0x48, 0x89, 0xe5, 0xc3 };
	/* jmp *%rax: indirect, but not through a slot */
	static const uint8_t reg[] = { 0xff, 0xe0 };

	expect_u64_eq(disasm_plt_slot(stub, sizeof(stub), 0x1030), 0x1030 + 11 + 0x2fe2);
	expect_u64_eq(disasm_plt_slot(plain, sizeof(plain), 0x2000), 0x2000 + 6 + 0x10);
	expect_u64_eq(disasm_plt_slot(fn, sizeof(fn), 0x3000), 0);
	expect_u64_eq(disasm_plt_slot(reg, sizeof(reg), 0x3000), 0);
}

static void test_branches(void)
{
	/* 0x400: push %rbp; call 0x500; je 0x410 (conditional: not listed);
	 * jmp 0x600 (rel32); jmp *%rax; jmp 0x40f (rel8); pop %rbp; ret */
	static const uint8_t code[] = {
		0x55,					/* 0x400 */
		0xe8, 0xfa, 0x00, 0x00, 0x00,		/* 0x401 call 0x500 */
		0x74, 0x08,				/* 0x406 je 0x410 */
		0xe9, 0xf3, 0x01, 0x00, 0x00,		/* 0x408 jmp 0x600 */
		0xff, 0xe0,				/* 0x40d jmp *%rax */
		0xeb, 0x00,				/* 0x40f jmp 0x411 */
		0x5d, 0xc3,				/* 0x411 */
	};
	struct disasm_branch b[8];
	size_t n = disasm_branches(code, sizeof(code), 0x400, b, 8);

	expect_int_eq(n, 3);
	expect_u64_eq(b[0].at, 0x401);
	expect_u64_eq(b[0].to, 0x500);
	expect_int_eq(b[0].call, 1);
	expect_u64_eq(b[1].at, 0x408);
	expect_u64_eq(b[1].to, 0x600);
	expect_int_eq(b[1].call, 0);
	expect_u64_eq(b[2].to, 0x411);
	expect_int_eq(disasm_branches(code, sizeof(code), 0x400, b, 1), 1);
}

/* Rip-relative operands: an address taken, a 4-byte and an 8-byte load
 * (glibc's mallinfo2 reading main_arena and mp_'s fields). */
static void test_data_refs(void)
{
	static const uint8_t code[] = {
		0x4c, 0x8d, 0x25, 0xa9, 0x9e, 0x13, 0x00,	/* 0x1000 lea 0x139ea9(%rip),%r12 */
		0x48, 0x8b, 0x9b, 0x70, 0x08, 0x00, 0x00,	/* 0x1007 mov 0x870(%rbx),%rbx */
		0x48, 0x63, 0x05, 0x10, 0xea, 0x13, 0x00,	/* 0x100e movslq 0x13ea10(%rip),%rax */
		0x0f, 0x16, 0x05, 0x18, 0xea, 0x13, 0x00,	/* 0x1015 movhps 0x13ea18(%rip),%xmm0 */
		0xc3,						/* 0x101c ret */
	};
	struct disasm_ref r[8];
	size_t n = disasm_data_refs(code, sizeof(code), 0x1000, r, 8);

	expect_int_eq(n, 3);
	expect_u64_eq(r[0].at, 0x1000);
	expect_u64_eq(r[0].to, 0x1007 + 0x139ea9);
	expect_int_eq(r[0].size, 0);
	expect_u64_eq(r[1].to, 0x1015 + 0x13ea10);
	expect_int_eq(r[1].size, 4);
	expect_u64_eq(r[2].to, 0x101c + 0x13ea18);
	expect_int_eq(r[2].size, 8);
	expect_int_eq(disasm_data_refs(code, sizeof(code), 0x1000, r, 2), 2);
}

/* A call's result followed to the return: through register copies and
 * other calls (callee-saved), past a NULL test's failure path; a store,
 * an overwrite, a loop or an indirect jump is no pure return. */
static void test_returns_result(void)
{
	static const uint8_t copied[] = {
		0x48, 0x89, 0xc3,		/* mov %rax,%rbx */
		0x48, 0x89, 0xc7,		/* mov %rax,%rdi */
		0xe8, 0x00, 0x00, 0x00, 0x00,	/* call (memset, say) */
		0x48, 0x89, 0xd8,		/* mov %rbx,%rax */
		0x5b, 0xc3,			/* pop %rbx; ret */
	};
	static const uint8_t null_je[] = {
		0x48, 0x85, 0xc0, 0x74, 0x01,	/* test %rax,%rax; je +1 */
		0xc3, 0x0f, 0x0b,		/* ret; ud2 */
	};
	static const uint8_t null_jne[] = {
		0x48, 0x85, 0xc0, 0x75, 0x02,	/* test %rax,%rax; jne +2 */
		0x31, 0xc0, 0xc3,		/* xor %eax,%eax; ret (NULL anyway) */
	};
	static const uint8_t stored[] = {
		0x48, 0x89, 0x43, 0x08,		/* mov %rax,8(%rbx) */
		0x48, 0x89, 0xd8, 0xc3,		/* mov %rbx,%rax; ret */
	};
	static const uint8_t zeroed[] = { 0x31, 0xc0, 0xc3 };
	static const uint8_t loop[] = { 0xeb, 0xfe };
	static const uint8_t indirect[] = { 0xff, 0xe0 };
	static const uint8_t lost[] = {
		0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3,	/* call; ret: rax is the callee's */
	};

	expect_int_eq(disasm_returns_result(copied, sizeof(copied), 0x1000), 1);
	expect_int_eq(disasm_returns_result(copied, sizeof(copied) - 1, 0x1000), 0);
	expect_int_eq(disasm_returns_result(null_je, sizeof(null_je), 0x1000), 1);
	expect_int_eq(disasm_returns_result(null_jne, sizeof(null_jne), 0x1000), 1);
	expect_int_eq(disasm_returns_result(null_jne + 3, sizeof(null_jne) - 3, 0x1003), 0);
	expect_int_eq(disasm_returns_result(stored, sizeof(stored), 0x1000), 0);
	expect_int_eq(disasm_returns_result(zeroed, sizeof(zeroed), 0x1000), 0);
	expect_int_eq(disasm_returns_result(loop, sizeof(loop), 0x1000), 0);
	expect_int_eq(disasm_returns_result(indirect, sizeof(indirect), 0x1000), 0);
	expect_int_eq(disasm_returns_result(lost, sizeof(lost), 0x1000), 0);
}

HARNESS_MAIN("disasm",
	T(test_plt_slot),
	T(test_branches),
	T(test_data_refs),
	T(test_returns_result))
