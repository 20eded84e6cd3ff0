/* The seccomp view of the target's system calls on x86-64: the audit arch its syscall instruction reports. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SECCOMP_ARCH_H
#define HEAPATTACH_SECCOMP_ARCH_H

#include <linux/audit.h>

/* seccomp_data.arch of a 64-bit "syscall" (numbers as in <sys/syscall.h>,
 * without the x32 bit): the remote stub's and the agent's alike. */
#define SECCOMP_ARCH_SELF AUDIT_ARCH_X86_64

#endif
