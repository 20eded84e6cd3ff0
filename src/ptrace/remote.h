/* System calls and function calls run inside a ptrace-stopped thread. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REMOTE_H
#define HEAPATTACH_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * One thread that runs system calls for us. Fill it with remote_ctx_init();
 * set picky before a call if other threads could serve instead.
 */
struct remote_ctx {
	pid_t pid;		/* thread group id */
	pid_t tid;		/* the stopped thread that executes the syscalls */
	int picky;		/* refuse (-EAGAIN) a thread whose interrupted syscall
				 * could not be restarted exactly if we died (below) */
	int gone;		/* set once the thread has exited or is exiting */
	int resumed;		/* set once the thread ran: an earlier PTRACE_INTERRUPT
				 * of the caller's is used up */
	int delivered;		/* set when the signal of the entry stop was delivered */
	int stop_sig;		/* WSTOPSIG of the event stop it was left in, once resumed */
	unsigned requeued;	/* signals that arrived during calls, re-sent */
	unsigned flags;		/* REMOTE_F_*, set by the caller */
	pid_t child;		/* a process or thread a call created (its fork, vfork or
				 * clone event): its id in our PID namespace; 0 if none */
	int exit_status;	/* once gone: the wait status it ended with, if seen, else -1 */
	int trapped;		/* REMOTE_F_SECCOMP_TRAP: the last call raised a seccomp
				 * SIGSYS, which was dropped */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC; 0: none (see REMOTE_F_SECCOMP_TRAP) */
	int timed_out;		/* the last call was still in its syscall at the deadline */
	int running;		/* remote_call gave up waiting: the thread runs on by
				 * itself (PTRACE_CONT), in no stop of ours */
};

/*
 * For a call whose seccomp verdict is not known (seccomp_probe.c): SIGSYS
 * stays unblocked while it runs, so that a filter's RET_TRAP on it leaves
 * the thread's SIGSYS disposition alone (a forced signal that is blocked
 * resets the handler to the default, for good); that SIGSYS is taken at
 * its signal-delivery-stop and dropped before any user code runs, trapped
 * is set and the call's result is -ENOSYS. Any other SIGSYS is held and
 * re-sent as other signals are. A tool that dies between the trap and the
 * drop leaves the SIGSYS to the thread (its handler, or its death).
 *
 * With a deadline_ns, a call still inside its syscall after it (a
 * RET_USER_NOTIF whose supervisor does not answer) is interrupted once
 * with PTRACE_INTERRUPT and timed_out is set; the deadline is only looked
 * at when waitpid is interrupted by a signal, as session.c's tick does.
 */
#define REMOTE_F_SECCOMP_TRAP 1

void remote_ctx_init(struct remote_ctx *ctx, pid_t pid, pid_t tid);

/*
 * Run syscall nr(a1..a6) in ctx->tid and store its raw return value (a
 * negative errno on failure) in *ret. Returns 0 if the syscall ran, else
 * -errno for a ptrace failure; -ESRCH means the thread is not in a ptrace
 * stop of ours, or sits in PTRACE_EVENT_EXIT, or exited or began exiting
 * during the call (then ctx->gone is set; zombie threads are not reaped,
 * that is left to the caller's wait loop).
 *
 * Kill-safe: if the tool dies at any instant of the call, the thread runs
 * on as if it had never been stopped (registers, signal mask, FPU state,
 * rseq; see remote.c for how and for the two exceptions: a SIGSTOP that
 * arrived during the call, and the restart of an interrupted syscall).
 * Nothing is written into the target's code and no int3 is executed: the
 * thread borrows a "syscall; ret" and an rt_sigreturn of the target's own
 * code (gadgets.h; -ENOENT without them, -EOPNOTSUPP with a shadow stack)
 * and a signal frame below its stack's red zone. The caller must have
 * seized the thread with PTRACE_O_TRACESYSGOOD: without it the kernel
 * turns a syscall-stop that a dying tracer leaves into a SIGTRAP.
 *
 * System calls the target may run for this: the one asked for, and
 * rt_sigreturn if the tool dies during it (a seccomp filter must allow it;
 * every program that handles signals needs it anyway).
 *
 * Entry: ctx->tid is PTRACE_SEIZEd by us and in one of
 *   - a PTRACE_EVENT_STOP: the stop after PTRACE_INTERRUPT, or a group-stop;
 *   - a signal-delivery-stop (signal X): X is delivered first, as resuming
 *     with PTRACE_CONT X would (a handler's frame is set up, a stop signal
 *     group-stops, a fatal one kills), and the thread is stopped again
 *     with PTRACE_INTERRUPT before it runs any user code; ctx->delivered
 *     is set: the caller must not deliver X again. Holding X back while
 *     the thread runs our syscall would lose it if the tool died then.
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
 * Exit (on success and on every error but -ESRCH): registers, signal mask
 * and rseq critical-section pointer are as on entry (after the delivery of
 * X, if any), and the thread is in a fresh PTRACE_EVENT_STOP whose
 * WSTOPSIG is in ctx->stop_sig: SIGTRAP, or the stop signal if the process
 * is group-stopped. Resume it as you would have: PTRACE_CONT/PTRACE_DETACH
 * with signal 0, or PTRACE_LISTEN. No waitpid() status is left for the
 * caller to collect. On -EINVAL, -EAGAIN and errors before the thread ran
 * (ctx->resumed 0) the thread is in the stop it was in. -EAGAIN: this
 * thread cannot serve, another may (picky refusal, or no room for the
 * frame below its stack pointer).
 *
 * A thread stopped inside an interrupted syscall (-ERESTARTSYS etc.) keeps
 * its saved rax/orig_rax, so the kernel restarts that syscall (including
 * restart_syscall for -ERESTART_RESTARTBLOCK) when the thread is resumed.
 * Do not run syscalls that replace the thread's restart block (nanosleep,
 * futex wait, poll) this way. If the tool dies, the frame restarts it
 * instead: -ERESTART_RESTARTBLOCK by issuing the first syscall again (a
 * relative timeout starts over) or, when the thread is already in
 * restart_syscall and that first syscall is unknown, with -EINTR; picky
 * callers are refused such a thread (-EAGAIN).
 *
 * Signals are blocked while the syscall runs; SIGSTOP, which cannot be, is
 * held back and re-sent with tgkill() before returning, so it is pending
 * when the thread resumes. A fault at the borrowed code gives -EFAULT.
 */
int remote_syscall(struct remote_ctx *ctx, long nr, long a1, long a2, long a3,
		   long a4, long a5, long a6, long *ret);
/*
 * Test seam: n > 0 makes remote_syscall SIGKILL this process at its step
 * n: 1 frame written, 2 registers pointed at the syscall, 3 signals
 * blocked, 4 resumed, 5 in the syscall's entry stop, 6 in its exit stop,
 * 7 interrupted, 8 mask back, 9 registers back, 10 resumed into the final
 * stop. remote_call: the same, but 2 pointed at the function, 5 in the
 * entry stop of the rt_sigreturn it returned into, 6 in its exit stop.
 */
extern int remote_die_at;

/*
 * Run the target's own rt_sigreturn (the gadget remote_syscall's frames
 * return through when the tool dies) in ctx->tid, on a frame that gives
 * the thread the state it is stopped in: whether a seccomp filter lets it
 * run (a throwaway child's, seccomp_probe.c). 0 if it ran (the thread is
 * put back as remote_syscall leaves it), the error it returned if it did
 * not, or -errno as remote_syscall.
 */
int remote_sigreturn(struct remote_ctx *ctx);

/* The stack pointer of the stopped thread tid, into *sp. 0 or -errno. */
int remote_get_sp(pid_t tid, uint64_t *sp);

/*
 * Write into the memory of the stopped thread ctx->tid, ending at or below
 * top (below its stack pointer), a frame on which a `ret` makes a process
 * exit without running any of its code: the rt_sigreturn gadget loads
 * every signal blocked and the registers of exit_group(0) at the syscall
 * gadget, whose own `ret` (should a filter refuse exit_group) pops the
 * zero word written at top: a fault with SIGSEGV blocked, which kills.
 * Its address in *at: the stack a clone's child is given
 * (seccomp_probe.c), whose registers at birth are at the syscall gadget's
 * `ret`, so that a child a dying tool left running ends at once.
 * 0 or -errno.
 */
int remote_exit_frame(struct remote_ctx *ctx, uint64_t top, uint64_t *at);
/* A function call for remote_call. */
#define REMOTE_CALL_DATA 256
struct remote_call {
	uint64_t fn;                    /* the function, in the target */
	long args[6];                   /* its integer arguments */
	unsigned data_args;             /* bit i: args[i] is an offset into data, passed as
					 * the address the data has in the target */
	uint8_t data[REMOTE_CALL_DATA]; /* copied into the target before the call, read
					 * back after it (what the function wrote there) */
	size_t data_len;
	uint64_t stack_need;            /* bytes of stack the function may use */
	uint64_t timeout_ns;            /* how long it may take */
};

/*
 * Call c->fn in ctx->tid and read c->data back, kill-safe as remote_syscall
 * is: the thread borrows the same frame below its red zone (c->data goes
 * in the scratch area above it, at most REMOTE_CALL_DATA bytes), the
 * function is entered with a return address below the frame that points
 * at the `ret` of the borrowed "syscall; ret", which returns into the
 * frame's rt_sigreturn: a tool that dies at any instant leaves a thread
 * that finishes the call and resumes as it was. Signals are blocked
 * during the call; the function's result register is not kept (rt_sigreturn
 * overwrites it): results come back through c->data. Nothing checks what
 * the function does: the caller makes sure the call is safe (safecall.h).
 *
 * Entry and exit as for remote_syscall. -EAGAIN: this thread cannot serve
 * (picky refusal, no room for the frame, or fewer than c->stack_need
 * readable bytes below it). -EFAULT: the function faulted (the thread is
 * put back as it was, the call abandoned). -ETIMEDOUT: it did not return
 * in c->timeout_ns; the thread was let go with PTRACE_CONT to finish the
 * call by itself (ctx->running is set: it is in no stop of ours and
 * resumes its own code through the frame when the function returns).
 */
int remote_call(struct remote_ctx *ctx, struct remote_call *c);

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
 * memfd_create(name, flags) in the target; the new fd in *fd. name (at most
 * REMOTE_ARCH_SCRATCH bytes with its NUL) is copied below the thread's stack
 * red zone for the call.
 */
int remote_memfd_create(struct remote_ctx *ctx, const char *name,
			unsigned flags, int *fd);

#endif
