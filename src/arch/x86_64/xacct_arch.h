/* What in-target accounting needs of the target's kernel (x86-64). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ARCH_XACCT_H
#define HEAPATTACH_ARCH_XACCT_H

#include <elf.h>
#include <stdint.h>
#include <sys/types.h>
#include <asm/hwcap2.h>

/*
 * The agent tells the threads that own accounting lanes apart by their
 * fs base, read with rdfsbase, which the kernel allows user space only
 * where it says so in AT_HWCAP2 (FSGSBASE, Linux 5.9 and later): the auxv
 * entry to read and whether its value allows it.
 */
#define ARCH_XACCT_AUXV AT_HWCAP2
static inline int arch_xacct_allowed(uint64_t auxv_value)
{
	return !!(auxv_value & HWCAP2_FSGSBASE);
}

/*
 * Elsewhere (a CPU or hypervisor that hides FSGSBASE) the agent reads the
 * word at %fs:0, which the TLS ABI makes the thread pointer itself
 * (SHM_F_XTP): whether the stopped thread tid of pid follows it. 1 yes,
 * 0 no (no fs base, or its first word is not itself), -errno if its
 * registers cannot be read; *tp is its fs base when they could.
 */
int arch_xacct_tp_check(pid_t pid, pid_t tid, uint64_t *tp);

#endif
