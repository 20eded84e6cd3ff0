/* x86-64 breakpoint (int3) and remote-syscall stub encodings. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_BKPT_H
#define HEAPATTACH_ARCH_BKPT_H

#include <stdint.h>

#define BKPT_INSN	0xcc	/* int3 */
#define BKPT_LEN	1

/* The SIGTRAP of an int3 at addr reports rip == addr + BKPT_LEN. */
static inline uint64_t bkpt_ip_after(uint64_t addr)
{
	return addr + BKPT_LEN;
}

/* Address of the int3 that produced a SIGTRAP stop with this rip. */
static inline uint64_t bkpt_addr_from_ip(uint64_t ip)
{
	return ip - BKPT_LEN;
}

/*
 * Remote syscall stub: "syscall; int3".  Point rip at the stub, resume, and
 * the thread stops with SIGTRAP at rip == stub + SYSCALL_STUB_LEN.
 * SYSCALL_INSN_LEN is what the restart fixup subtracts from rip.
 */
#define SYSCALL_STUB_BYTES	{ 0x0f, 0x05, 0xcc }
#define SYSCALL_STUB_LEN	3
#define SYSCALL_INSN_LEN	2

#endif
