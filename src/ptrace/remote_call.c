/* remote_call: a function of the target called in a ptrace-stopped thread, kill-safe as remote_syscall. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "model/tmem.h"
#include "ptrace/gadgets.h"
#include "ptrace/remote.h"
#include "ptrace/remote_int.h"

/*
 * Whether every page of [lo, hi) is readable to process_vm_readv (a guard
 * page is not; /proc/PID/mem would read it): one call, a byte a page.
 */
static int stack_room(pid_t pid, uint64_t lo, uint64_t hi)
{
	struct iovec remote[64], local;
	uint8_t sink[64];
	size_t n = 0;

	for (uint64_t a = lo & ~4095ULL; a < hi && n < 64; a += 4096, n++)
		remote[n] = (struct iovec){ (void *)(a < lo ? lo : a), 1 };
	if (n == 64)
		return 0;
	local = (struct iovec){ sink, n };
	return process_vm_readv(pid, &local, 1, remote, n, 0) == (ssize_t)n;
}

/* What wait_call saw. */
enum call_end {
	CALL_RETURNED,          /* at the exit of the rt_sigreturn it returned into */
	CALL_TIMEOUT,
};

/*
 * Run the call (resumed with PTRACE_SYSCALL) until the function has
 * returned through the frame: the entry of rt_sigreturn with the stack
 * pointer past both return addresses (the one at at_ret into the `ret`,
 * and the frame's into the rt_sigreturn), where c->data is
 * read back from data_at, then that syscall's exit, where the thread holds
 * the frame's state again. The function's own syscalls pass (their entry
 * and exit stops alternate); other stops are resumed and their signals
 * held. 0 (*end says how it ended), -ESRCH, -EFAULT on a fault, -errno.
 */
static int wait_call(struct remote_ctx *ctx, struct remote_call *c, uint64_t at_ret,
		     uint64_t data_at, struct held_sigs *h, enum call_end *end)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + c->timeout_ns;
	int in_syscall = 0, returned = 0;
	pid_t tid = ctx->tid;

	for (;;) {
		int status, sig, event;
		remote_regs_t r;
		siginfo_t si;
		pid_t w = remote_wait_stop(ctx, &status, deadline);

		if (w == 0) {
			*end = CALL_TIMEOUT;
			return 0;
		}
		if (w < 0) {
			if (errno == ESRCH || errno == ECHILD)
				ctx->gone = 1;
			return errno == ECHILD ? -ESRCH : -errno;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			ctx->gone = 1;
			return -ESRCH;
		}
		if (!WIFSTOPPED(status))
			continue;
		sig = WSTOPSIG(status);
		event = status >> 16;
		if (event == PTRACE_EVENT_EXIT) {
			ctx->gone = 1;
			return -ESRCH;
		}
		if (event)
			goto resume;	/* group-stop, seccomp or another ptrace event */
		if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0)
			return -errno;
		if ((sig & ~0x80) == SIGTRAP &&
		    (si.si_code == SIGTRAP || si.si_code == (SIGTRAP | 0x80))) {
			in_syscall = !in_syscall;
			if (returned && !in_syscall) {
				remote_die_step(6);
				*end = CALL_RETURNED;
				return 0;
			}
			if (in_syscall && !returned) {
				int err = remote_get_regs(tid, &r);

				if (err)
					return err;
				if (remote_arch_syscall_nr(&r) == SYS_rt_sigreturn &&
				    remote_arch_sp(&r) == at_ret + 16) {
					returned = 1;
					if (c->data_len &&
					    tmem_read(tid, data_at, c->data, c->data_len))
						return -EFAULT;
					remote_die_step(5);
				}
			}
			goto resume;
		}
		if (si.si_code > 0 && si.si_code != SI_KERNEL &&
		    (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)) {
			pr_err("remote: thread %d faulted (signal %d) in the function called at %#llx",
			       (int)tid, sig, (unsigned long long)c->fn);
			return -EFAULT;
		}
		remote_hold_sig(h, sig);
resume:
		if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0)
			return -errno;
	}
}

/*
 * A call that did not return in time: stop the thread where it is and let
 * it run on by itself (PTRACE_CONT), so that whatever it waits for can
 * come; it returns through the frame, which puts it back. 0 or -errno.
 */
static int let_run(struct remote_ctx *ctx, struct held_sigs *h)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + 1000000000ULL;
	pid_t tid = ctx->tid;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return -errno;
	for (;;) {
		int status, sig;
		pid_t w = remote_wait_stop(ctx, &status, deadline);

		if (w <= 0) {
			if (w < 0 && (errno == ESRCH || errno == ECHILD))
				ctx->gone = 1;
			return w ? -ESRCH : -ETIMEDOUT;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status) ||
		    (WIFSTOPPED(status) && status >> 16 == PTRACE_EVENT_EXIT)) {
			ctx->gone = 1;
			return -ESRCH;
		}
		if (!WIFSTOPPED(status))
			continue;
		sig = WSTOPSIG(status);
		if (status >> 16 == PTRACE_EVENT_STOP)
			break;
		/* a syscall-stop or another event on the way: no signal, and
		 * the interrupt again (a syscall-stop may have used it up); a
		 * signal: held, blocked in the thread until it returns */
		if (!(status >> 16) && (sig & ~0x80) != SIGTRAP)
			remote_hold_sig(h, sig);
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 ||
		    ptrace(PTRACE_CONT, tid, NULL, NULL) < 0)
			return -errno;
	}
	if (ptrace(PTRACE_CONT, tid, NULL, NULL) < 0)
		return -errno;
	ctx->running = 1;
	return 0;
}

int remote_call(struct remote_ctx *ctx, struct remote_call *c)
{
	static struct saved_state st;	/* 16 KiB of FPU image: not on the stack */
	struct held_sigs held = { .n = 0 };
	enum call_end end = CALL_TIMEOUT;
	long args[6];
	struct gadgets g;
	remote_regs_t regs, resume;
	uint64_t frame, data_at, at_ret, ret_gadget;
	int err, regs_dirty = 0, mask_dirty = 0, ran = 0;
	pid_t tid = ctx->tid;

	if (ctx->gone)
		return -ESRCH;
	if (c->data_len > sizeof(c->data))
		return -EINVAL;
	err = remote_usable_stop(ctx, &held);
	if (!err)
		err = gadgets_get(ctx->pid, tid, &g);
	if (!err)
		err = remote_save_state(tid, &st);
	if (err)
		goto out;
	/* picky or not: the call returns through an rt_sigreturn, which
	 * leaves no restart block for restart_syscall to go on with */
	if (remote_arch_restart_unknown(&st.regs)) {
		err = -EAGAIN;
		goto out;
	}
	/* the data in the scratch area below the red zone, the frame below
	 * it, the return address below the frame, the function's stack below */
	data_at = remote_arch_sp(&st.regs) - REMOTE_ARCH_RED_ZONE - REMOTE_ARCH_SCRATCH;
	ret_gadget = g.syscall_ret + REMOTE_ARCH_SYSCALL_LEN;	/* its `ret` */
	err = remote_write_frame(tid, &st, g.sigreturn, &frame, &resume);
	if (!err) {
		at_ret = frame - 8;
		if (!stack_room(ctx->pid, at_ret - c->stack_need, at_ret))
			err = -ENOSPC;
	}
	if (!err)
		err = tmem_write(tid, at_ret, &ret_gadget, sizeof(ret_gadget));
	if (!err && c->data_len)
		err = tmem_write(tid, data_at, c->data, c->data_len);
	if (err) {
		pr_debug("remote: no room for a call on the stack of %d: %s", (int)tid,
			 strerror(-err));
		err = -EAGAIN;	/* another thread may have it */
		goto out;
	}
	remote_die_step(1);
	for (int i = 0; i < 6; i++)
		args[i] = c->data_args & (1u << i) ? (long)(data_at + (uint64_t)c->args[i]) :
			  c->args[i];

	/* Registers first: from here on a dead tool leaves the frame in charge
	 * (the function returns through the `ret` into the rt_sigreturn). */
	regs = st.regs;
	remote_arch_setup_call(&regs, c->fn, at_ret, args);
	regs_dirty = 1;
	err = remote_set_regs(tid, &regs);
	if (err)
		goto restore;
	remote_die_step(2);
	mask_dirty = 1;
	err = remote_set_sigmask(tid, ~0ULL);
	if (err)
		goto restore;
	remote_die_step(3);
	if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0) {
		err = -errno;
		goto restore;
	}
	ran = ctx->resumed = 1;
	remote_die_step(4);
	err = wait_call(ctx, c, at_ret, data_at, &held, &end);
	if (!err && end == CALL_TIMEOUT) {
		pr_warn("remote: the function at %#llx called in thread %d did not return in "
			"%llu ms; the thread runs on and returns by itself",
			(unsigned long long)c->fn, (int)tid,
			(unsigned long long)(c->timeout_ns / 1000000));
		err = let_run(ctx, &held);
		if (!err)
			err = -ETIMEDOUT;
		goto out;
	}

restore:
	/* The function returned through an rt_sigreturn, which pointed the
	 * restart block at a stub that fails: a syscall that would go on
	 * through it is issued again from the start instead, as the frame
	 * would have it. */
	if (ran && remote_arch_restart_block(&st.regs))
		remote_arch_resume_regs(&st.regs);
	err = remote_put_back(ctx, &st, &held, ran, mask_dirty, regs_dirty, err);
out:
	remote_resend_held(ctx, &held);
	return ctx->gone ? -ESRCH : err;
}
