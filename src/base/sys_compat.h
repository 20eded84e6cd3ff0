/* Kernel constants that older libc or kernel headers may lack. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SYS_COMPAT_H
#define HEAPATTACH_SYS_COMPAT_H

#include <stdint.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif
#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#ifndef PTRACE_PEEKSIGINFO
#define PTRACE_PEEKSIGINFO 0x4209
#endif
/* si_code of the SIGSYS a seccomp filter raises (asm-generic/siginfo.h). */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif
#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif

/* Layout of PTRACE_GET_RSEQ_CONFIGURATION's answer (linux/ptrace.h). */
struct compat_rseq_config {
	uint64_t rseq_abi_pointer;
	uint32_t rseq_abi_size;
	uint32_t signature;
	uint32_t flags;
	uint32_t pad;
};
/* Offset of the rseq_cs pointer in struct rseq (linux/rseq.h). */
#define COMPAT_RSEQ_CS_OFF 8

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif

#endif
