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

HARNESS_MAIN("disasm",
	T(test_plt_slot),
	T(test_branches))
