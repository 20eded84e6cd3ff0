/* Unit tests for prologue_pushes (arch prologue.c): the callee-saved registers a function's first bytes push. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "harness.h"
#include "prologue.h"

static void test_gcc_prologue(void)
{
	/* endbr64; push r15; push r14; push r13; push r12; push rbp; push rbx; sub rsp,0x18 */
	static const uint8_t c[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56, 0x41, 0x55,
				     0x41, 0x54, 0x55, 0x53, 0x48, 0x83, 0xec, 0x18 };

	expect_int_eq(prologue_pushes(c, sizeof(c)), 6);
}

static void test_frame_pointer(void)
{
	/* push rbp; mov rbp,rsp; push rbx; sub rsp,8 */
	static const uint8_t c[] = { 0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x08 };

	expect_int_eq(prologue_pushes(c, sizeof(c)), 2);
}

static void test_none_and_cut(void)
{
	/* sub rsp,0x28 first: nothing pushed; push r12 cut after its prefix */
	static const uint8_t sub[] = { 0x48, 0x83, 0xec, 0x28, 0x53 };
	static const uint8_t cut[] = { 0x53, 0x41 };

	expect_int_eq(prologue_pushes(sub, sizeof(sub)), 0);
	expect_int_eq(prologue_pushes(cut, sizeof(cut)), 1);
	expect_int_eq(prologue_pushes(cut, 0), 0);
}

HARNESS_MAIN("prologue", T(test_gcc_prologue), T(test_frame_pointer), T(test_none_and_cut))
