/* The target's resource limits and what it uses of them: RLIMIT_AS, _STACK, _MEMLOCK, its mappings and vm.max_map_count, from /proc. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PROC_LIMITS_H
#define HEAPATTACH_PROC_LIMITS_H

#include <stdint.h>
#include <sys/types.h>

#include "model/proc.h"

#define PROC_LIMIT_NONE UINT64_MAX      /* unlimited, or not known */

struct proc_limits {
	uint64_t as, stack, memlock;    /* soft limits in bytes (/proc/PID/limits) */
	uint64_t vm_size, vm_locked;    /* VmSize, VmLck in bytes (/proc/PID/status) */
	int ipc_lock;                   /* CAP_IPC_LOCK in its effective set: locks without limit */
	uint64_t maps;                  /* its mappings as the kernel counts them (no [vsyscall]) */
	uint64_t stack_size;            /* its main thread's [stack] mapping; 0: none found */
	uint64_t max_map_count;         /* vm.max_map_count */
};

/* Every field PROC_LIMIT_NONE (and ipc_lock 0): nothing known, no limit. */
void proc_limits_init(struct proc_limits *out);
/* From /proc/PID/limits text: as, stack, memlock. 0, or -EINVAL when one
 * of the three lines is missing or malformed (that one stays NONE). */
int proc_limits_parse(const char *text, struct proc_limits *out);
/* From /proc/PID/status text: vm_size, vm_locked, ipc_lock. 0 or -EINVAL. */
int proc_limits_parse_status(const char *text, struct proc_limits *out);
/* From parsed maps: maps and stack_size. */
void proc_limits_count_maps(const struct proc_maps *m, struct proc_limits *out);
/* All of the above for pid, and vm.max_map_count. 0, or the first -errno
 * (what could be read is filled in, the rest stays NONE). */
int proc_limits_read(pid_t pid, struct proc_limits *out);

#endif
