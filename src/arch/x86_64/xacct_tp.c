/* Whether a stopped thread's thread pointer holds itself (%fs:0), the agent's thread id without rdfsbase (x86-64). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <sys/uio.h>

#include "regs.h"
#include "xacct_arch.h"

/*
 * The x86-64 TLS ABI (variant II) puts at the thread pointer a word that
 * holds the thread pointer itself (glibc's tcbhead_t.tcb, musl's
 * pthread.self), so `mov %fs:0` reads the fs base without FSGSBASE. The
 * word is read with process_vm_readv, which fails where the thread itself
 * could not read it (unmapped, PROT_NONE).
 */
int arch_xacct_tp_check(pid_t pid, pid_t tid, uint64_t *tp)
{
	arch_regs_t r;
	uint64_t word = 0;
	struct iovec local = { .iov_base = &word, .iov_len = sizeof(word) };
	struct iovec remote;
	int rc = arch_regs_get(tid, &r);

	if (rc)
		return rc;
	*tp = r.fs_base;
	if (!r.fs_base || (r.fs_base & 7))
		return 0;
	remote = (struct iovec){ .iov_base = (void *)(uintptr_t)r.fs_base, .iov_len = sizeof(word) };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(word))
		return 0;
	return word == r.fs_base;
}
