/* Relocation of a function prologue overwritten by a 5-byte jump (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_RELOC_H
#define HEAPATTACH_ARCH_RELOC_H

#include <stddef.h>
#include <stdint.h>

#define RELOC_JMP_LEN	5	/* jmp rel32: e9 xx xx xx xx */
#define RELOC_SKIP_MAX	4	/* bytes kept before the patch address at most (endbr64) */
#define RELOC_MAX_INSNS	8
#define RELOC_MAX_CODE	96
#define RELOC_WHY_LEN	128

/* Flags for reloc_prologue_flags(). */
/* Relocate call rel32: the callee returns into the copy, and a thread
 * already inside it returns to the original address just after the patched
 * bytes (a call always ends them). Not a call to the next instruction. */
#define RELOC_ALLOW_CALL	0x1

/* One instruction of the overwritten region. */
struct reloc_map {
	uint8_t orig_off;	/* offset from patch_addr in the original */
	uint8_t reloc_off;	/* offset from the relocated copy's start (`to`) */
};

/*
 * Result of relocating a prologue.  The caller writes a jmp rel32 at
 * patch_addr (to the hook's trampoline), and places code[0..code_len) at
 * address `to`; that copy runs the covered instructions and ends with a
 * jmp rel32 back to patch_addr + covered.
 */
struct reloc_result {
	uint64_t from;		/* function address as given */
	uint64_t patch_addr;	/* where the 5-byte jmp goes (from, or from+4 after endbr64) */
	uint64_t to;		/* address the relocated code was encoded for */
	size_t skipped;		/* bytes kept in place before patch_addr (4 for endbr64) */
	size_t covered;		/* bytes of whole instructions overwritten, >= 5 */
	size_t code_len;	/* relocated code, jmp back included */
	size_t n_insns;		/* entries in map[] */
	struct reloc_map map[RELOC_MAX_INSNS];
	uint8_t code[RELOC_MAX_CODE];
	char why[RELOC_WHY_LEN];	/* on failure: "+0x2: reason" (offset from `from`) */
};

/*
 * Decode the instructions at `code` (the bytes found at address `from`,
 * `avail` of them readable: pass the whole function body when its size is
 * known) until at least 5 bytes from the patch address are covered, and
 * re-encode them to run at `to`, followed by a jmp back.  A leading endbr64
 * is kept in place and the patch address is from + 4.
 *
 * Returns 0, -EINVAL when the prologue cannot be relocated safely (call,
 * syscall, int*, loop*, jrcxz, xbegin, ret or jmp before 5 bytes, indirect
 * branch, undecodable bytes, branch into the middle of an instruction), or
 * -ERANGE when `to` is too far from the code or from a RIP-relative or
 * branch target (try a closer `to`).  out->why explains either failure.
 */
int reloc_prologue(const uint8_t *code, size_t avail, uint64_t from, uint64_t to,
		   struct reloc_result *out);

/* reloc_prologue() with RELOC_* flags. */
int reloc_prologue_flags(const uint8_t *code, size_t avail, uint64_t from, uint64_t to,
			 unsigned int flags, struct reloc_result *out);

/*
 * Linear sweep of a whole function body (`size` bytes at address `from`)
 * for direct branches (jmp, jcc, call, loop*, jrcxz, xbegin) whose target
 * t satisfies lo < t < hi, i.e. into the overwritten bytes but not at the
 * patch address itself.  Returns 1 and sets *where to the first such
 * branch, 0 if there is none, -EINVAL (and *where = the address) if some
 * bytes cannot be decoded.  Indirect branches cannot be checked.
 */
int reloc_branch_into(const uint8_t *code, size_t size, uint64_t from,
		      uint64_t lo, uint64_t hi, uint64_t *where);

/* Encode "jmp rel32" at address at to target into buf[5]; 0 or -ERANGE. */
int reloc_encode_jmp(uint8_t buf[RELOC_JMP_LEN], uint64_t at, uint64_t target);
/* The target of the "jmp rel32" that buf[5] holds at address at: 0, or
 * -EINVAL when buf is not one. */
int reloc_decode_jmp(const uint8_t buf[RELOC_JMP_LEN], uint64_t at, uint64_t *target);
/* Bytes kept in place before the patch address of a function whose code
 * starts with code[0..avail): 4 after an endbr64, else 0. */
size_t reloc_patch_skip(const uint8_t *code, size_t avail);

/*
 * Where a thread whose rip is `ip` must continue once the prologue is
 * patched.  Returns 0 and sets *new_ip to the relocated copy when ip lies
 * strictly inside the overwritten bytes (patch_addr < ip < patch_addr +
 * covered); -ENOENT when ip is outside them or equal to patch_addr (the
 * thread can stay: it will execute the jmp); -EINVAL if ip points into the
 * middle of an instruction.
 */
int reloc_map_ip(const struct reloc_result *r, uint64_t ip, uint64_t *new_ip);

/*
 * The other way: the instruction of the original function that the
 * relocated copy's instruction at ip (encoded for r->to) was made from,
 * its jmp back standing for the first instruction after the covered
 * bytes; a thread there is in the state it would be in at *orig. 0,
 * -ENOENT when ip is outside the copy, -EINVAL inside an instruction.
 */
int reloc_map_back(const struct reloc_result *r, uint64_t ip, uint64_t *orig);

#endif
