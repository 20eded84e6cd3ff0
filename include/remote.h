/* Tracee memory access and system calls run inside a ptrace-stopped thread. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REMOTE_H
#define HEAPATTACH_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Memory. pid may be any thread id of the target. The PTRACE_PEEK/POKEDATA
 * fallbacks work only if pid is a thread we trace that is in a ptrace stop.
 * Both return 0 once all len bytes are transferred, else -errno.
 *
 * remote_mem_write goes through /proc/PID/mem (FOLL_FORCE), so it can write
 * read-only text the way a debugger does; process_vm_writev cannot.
 */
int remote_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int remote_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);
/* Test seam: nonzero makes both use only PTRACE_PEEKDATA/POKEDATA. */
extern int remote_mem_ptrace_only;

/*
 * One thread that runs system calls for us. Fill it with remote_ctx_init().
 *
 * stub: address of a permanent "syscall; int3" in the target (e.g. in the
 * injected page, see inject.h), or 0. With 0, each call swaps 8 bytes at the
 * start of the first executable file mapping for the stub and puts them back
 * afterwards, so every other thread of the process must be stopped too.
 */
struct remote_ctx {
	pid_t pid;		/* thread group id */
	pid_t tid;		/* the stopped thread that executes the syscalls */
	uint64_t stub;		/* permanent stub, or 0 */
	uint64_t swap_addr;	/* cached swap location, 0 until first needed */
	int gone;		/* set once the thread has exited or is exiting */
	unsigned requeued;	/* signals that arrived during calls, re-sent */
};

void remote_ctx_init(struct remote_ctx *ctx, pid_t pid, pid_t tid);

/*
 * Run syscall nr(a1..a6) in ctx->tid and store its raw return value (a
 * negative errno on failure) in *ret. Returns 0 if the syscall ran, else
 * -errno for a ptrace failure; -ESRCH means the thread is not in a ptrace
 * stop of ours, or sits in PTRACE_EVENT_EXIT, or exited or began exiting
 * during the call (then ctx->gone is set; zombie threads are not reaped,
 * that is left to the caller's wait loop).
 *
 * Entry: ctx->tid is PTRACE_SEIZEd by us and in one of
 *   - a PTRACE_EVENT_STOP: the stop after PTRACE_INTERRUPT, or a group-stop;
 *   - a signal-delivery-stop (signal X).
 * Refused with -EINVAL: other PTRACE_EVENT_* stops (clone, fork, exec...)
 * and syscall-stops, because there the kernel is still inside a syscall and
 * would overwrite rax when the thread runs on. Turn such a stop into a
 * usable one first: PTRACE_INTERRUPT, then PTRACE_CONT; the thread stops in
 * a PTRACE_EVENT_STOP once the syscall has returned, before user code runs.
 *
 * It waits only for ctx->tid (waitpid(tid, __WALL)); for the thread group
 * leader it polls with WNOHANG, because a dying leader's status is held back
 * until all other threads are reaped, which could otherwise deadlock.
 *
 * Exit (on success and on every error but -ESRCH): registers, signal mask,
 * rseq critical-section pointer and any swapped code bytes are as on entry,
 * and the thread is in the same kind of stop as on entry:
 *   - entered in a PTRACE_EVENT_STOP: it is in a fresh PTRACE_EVENT_STOP
 *     (WSTOPSIG SIGTRAP, or the stop signal if the process is group-stopped).
 *     Resume it as you would have: PTRACE_CONT/PTRACE_DETACH with signal 0,
 *     or PTRACE_LISTEN.
 *   - entered in a signal-delivery-stop of X: it is in a signal-delivery-stop
 *     whose siginfo is X's again. Resume with PTRACE_CONT/DETACH passing X
 *     (or 0 to drop it), exactly as before. PTRACE_LISTEN is not valid.
 * No waitpid() status is left for the caller to collect.
 *
 * A thread stopped inside an interrupted syscall (-ERESTARTSYS etc.) keeps
 * its saved rax/orig_rax, so the kernel restarts that syscall (including
 * restart_syscall for -ERESTART_RESTARTBLOCK) when the thread is resumed.
 * Do not run syscalls that replace the thread's restart block (nanosleep,
 * futex wait, poll) this way.
 *
 * How the call ends: normally the int3 after the syscall traps (SIGTRAP,
 * SI_KERNEL). If the process ignores SIGTRAP, an int3 would reset it to
 * SIG_DFL for good, so the thread is run with PTRACE_SYSCALL to its
 * syscall-exit-stop instead (one more stop); that mode does not support
 * entry in a signal-delivery-stop (-EOPNOTSUPP).
 *
 * Signals other than SIGTRAP are blocked while the stub runs; one that
 * still arrives (SIGSTOP, or a SIGTRAP someone sent) is held back and re-sent
 * with tgkill() before returning, so it is pending when the thread resumes.
 * A fault at the stub itself gives -EFAULT.
 */
int remote_syscall(struct remote_ctx *ctx, long nr, long a1, long a2, long a3,
		   long a4, long a5, long a6, long *ret);

/* Wrappers: 0 or -errno, where -errno is the syscall's own error if it ran. */
int remote_mmap(struct remote_ctx *ctx, uint64_t addr, size_t len, int prot,
		int flags, int fd, off_t off, uint64_t *out);
int remote_munmap(struct remote_ctx *ctx, uint64_t addr, size_t len);
int remote_mprotect(struct remote_ctx *ctx, uint64_t addr, size_t len, int prot);
/* mremap(old, old_len, new_len, flags, new_addr); the new address in *out. */
int remote_mremap(struct remote_ctx *ctx, uint64_t old, size_t old_len,
		  size_t new_len, int flags, uint64_t new_addr, uint64_t *out);
int remote_close(struct remote_ctx *ctx, int fd);
/*
 * memfd_create(name, flags) in the target; the new fd in *fd. name is copied
 * below the thread's stack red zone for the call and those bytes restored.
 */
int remote_memfd_create(struct remote_ctx *ctx, const char *name,
			unsigned flags, int *fd);

#endif
