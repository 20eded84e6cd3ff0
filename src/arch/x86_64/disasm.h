/* What generic code asks of machine code (x86-64): PLT stubs, direct branches, data references, whether a call's result is returned. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_DISASM_H
#define HEAPATTACH_ARCH_DISASM_H

#include <stddef.h>
#include <stdint.h>

/*
 * The GOT slot (link-time address) that the PLT stub at vaddr jumps
 * through, from its first len bytes at code: "[endbr64;] [bnd] jmp
 * *disp(%rip)". 0 if the code there is not such a stub.
 */
uint64_t disasm_plt_slot(const uint8_t *code, size_t len, uint64_t vaddr);

/* A direct (immediate) branch found by disasm_branches. */
struct disasm_branch {
	uint64_t at;            /* the branch instruction */
	uint64_t to;            /* where it goes */
	int call;               /* a call, not a jump */
};

/*
 * The unconditional direct jumps and calls of code[0..len), decoded from
 * vaddr until the first undecodable byte, in order: at most max into out.
 * Returns how many.
 */
size_t disasm_branches(const uint8_t *code, size_t len, uint64_t vaddr,
		       struct disasm_branch *out, size_t max);

/*
 * The return addresses of the calls of code[0..len), direct or not,
 * decoded from vaddr until the first undecodable byte, in order: at most
 * max into out. Returns how many.
 */
size_t disasm_call_returns(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *out,
			   size_t max);

/* A reference to data at a fixed distance from the code (x86-64: rip-relative). */
struct disasm_ref {
	uint64_t at;            /* the instruction */
	uint64_t to;            /* the address it refers to */
	unsigned size;          /* bytes it loads or stores there; 0: only its address
				 * is taken (lea) */
};

/*
 * The data references of code[0..len), decoded from vaddr until the first
 * undecodable byte, in order: at most max into out. Returns how many.
 */
size_t disasm_data_refs(const uint8_t *code, size_t len, uint64_t vaddr,
			struct disasm_ref *out, size_t max);

/*
 * 1 if the code from vaddr, the return address of a call, returns that
 * call's result unchanged on every path on which it is not NULL (then the
 * function is a pure wrapper of what it called there), from its first len
 * bytes at code; 0 if some path changes, drops or stores it before
 * returning, or cannot be followed within code (an indirect jump, a loop
 * past the budget). Register copies are followed, memory is not; a call
 * keeps only the callee-saved registers.
 */
int disasm_returns_result(const uint8_t *code, size_t len, uint64_t vaddr);

#endif
