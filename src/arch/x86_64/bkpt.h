/* x86-64 trap of the trap-mode trampolines: a getpid syscall, seen as a syscall-stop. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_BKPT_H
#define HEAPATTACH_ARCH_BKPT_H

#include <stdint.h>

/*
 * --mode trap stops every hooked call in heapattach. An int3 would, but a
 * process whose tracer died dies of SIGTRAP at its next int3, and so does a
 * thread stopped at one when the tracer dies. So the trap is a system call
 * that is harmless without a tracer, getpid (which every seccomp policy
 * allows), and heapattach resumes the threads with PTRACE_SYSCALL: the
 * trap is the syscall-enter-stop of that getpid. It saves what the syscall
 * clobbers (rax, the call's result at an exit trap; rcx, r11):
 *
 *	50		push %rax
 *	51		push %rcx
 *	41 53		push %r11
 *	b8 27 00 00 00	mov $39, %eax		(SYS_getpid)
 *	0f 05		syscall			<- the stop: rip = its address + 2
 *	41 5b		pop %r11
 *	59		pop %rcx
 *	58		pop %rax
 *
 * At the stop, rsp is 24 below its value before the sequence, and the three
 * words from rsp up hold r11, rcx and rax as they were.
 */
#define BKPT_SEQ_BYTES	{ 0x50, 0x51, 0x41, 0x53, 0xb8, 0x27, 0x00, 0x00, 0x00, \
			  0x0f, 0x05, 0x41, 0x5b, 0x59, 0x58 }
#define BKPT_SEQ_LEN	15
#define BKPT_SYSCALL_OFF 9	/* the syscall instruction within the sequence */
#define BKPT_SYSCALL_LEN 2
#define BKPT_SYSCALL_NR	39	/* getpid */
#define BKPT_SAVED	3	/* words pushed: r11, rcx, rax from rsp up */

/* The syscall-stop of the trap whose syscall instruction is at addr reports this rip. */
static inline uint64_t bkpt_ip_after(uint64_t addr)
{
	return addr + BKPT_SYSCALL_LEN;
}

/* Address of the syscall instruction of the trap that stopped at rip ip. */
static inline uint64_t bkpt_addr_from_ip(uint64_t ip)
{
	return ip - BKPT_SYSCALL_LEN;
}

#endif
