/* x86-64 function prologues: how many callee-saved registers a function pushes on entry. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PROLOGUE_H
#define HEAPATTACH_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The registers code[0..len) (a function's first bytes) pushes before
 * anything else: push rbp, rbx, r12-r15, past an endbr64 and a
 * "mov rbp, rsp" between them. Those words, right under the function's
 * return address, hold its caller's register values. 0 to 6.
 */
unsigned prologue_pushes(const uint8_t *code, size_t len);

#endif
