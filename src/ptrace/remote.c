/* Tracee memory access, and system calls and function calls run inside a ptrace-stopped thread. */
/* SPDX-License-Identifier: MIT */
/*
 * How remote_syscall() works, and why a tool SIGKILLed at any instant
 * leaves the thread as it was.
 *
 * Nothing is written into the target's code and no int3 is ever run (an
 * int3 with no tracer left, or the SIGTRAP stop of one when the tracer
 * dies, kills the process). A seized thread that we stopped sits in
 * get_signal(), in a PTRACE_EVENT_STOP. It borrows two pieces of the
 * target's own code (gadgets.h): a "syscall; ret" and an rt_sigreturn.
 * Below its stack's red zone (and a scratch area for the wrappers' data)
 * we write a signal frame (sigframe.h) whose return address is the
 * rt_sigreturn and which holds the state the thread resumes with if it is
 * let go now: its registers, signal mask and FPU state. Then, in this
 * order, we point rip at the syscall and rsp at the frame (orig_rax = -1:
 * no restart fixup), block every signal, and run it with PTRACE_SYSCALL to
 * the exit stop of the syscall, where rax holds the result. There we
 * PTRACE_INTERRUPT it, put back the signal mask, the rseq_cs word and the
 * registers (in this order), and PTRACE_CONT it into a fresh
 * PTRACE_EVENT_STOP, before it runs any user code. It never executes the
 * `ret` while we live.
 *
 * If the tool dies, the kernel detaches the thread (waking it with
 * TIF_SIGPENDING set) and it runs on from the state it is in:
 *   - registers not yet pointed at the syscall, or already put back: it
 *     resumes as if never stopped, the kernel restarting an interrupted
 *     syscall from the saved rax/orig_rax (the exit stop of our syscall
 *     passes through get_signal() on its way out, like any stop);
 *   - pointed at it (in the entry stop, the exit stop or in between, mask
 *     blocked or not): the syscall completes, `ret` pops the rt_sigreturn,
 *     and rt_sigreturn loads the frame: registers, eflags, mask and FPU
 *     state as before, orig_rax = -1.
 * A syscall-stop left behind by a dying tracer sends the thread its stop
 * code as a signal, SIGTRAP|0x80 with PTRACE_O_TRACESYSGOOD, which is no
 * signal at all; without that option it would be a SIGTRAP.
 *
 * The frame's state is the one the kernel would resume the thread with
 * (remote_arch_resume_regs): a syscall interrupted with -ERESTART* is
 * re-issued (rip back on the syscall instruction, rax = orig_rax). rt_sigreturn
 * points the restart block at do_no_restart_syscall, so for
 * -ERESTART_RESTARTBLOCK the first syscall is issued again from the start
 * (nanosleep sleeps its whole time again; futex and poll timeouts start
 * over) instead of going through restart_syscall; a thread already in
 * restart_syscall would get -EINTR from it, which is why picky callers skip
 * such a thread. A thread stopped inside an rseq critical section resumes
 * at its abort handler, as the kernel would have sent it there.
 *
 * While we live, an interrupted syscall restarts exactly: the registers
 * put back keep rax = -ERESTART* and orig_rax, and whenever the thread
 * leaves get_signal() without a handler to run, the kernel's own
 * arch_do_signal_or_restart() rewinds rip and restarts that syscall, with
 * the untouched restart block for -ERESTART_RESTARTBLOCK (our syscalls do
 * not use it). Rewriting the restart by hand (as compel does) would have to
 * turn -ERESTART_RESTARTBLOCK into -EINTR.
 *
 * A thread in a signal-delivery-stop cannot be used as it is: running our
 * syscall means resuming it with the signal dropped, and a dead tool could
 * not give it back. So the signal is delivered first (PTRACE_INTERRUPT,
 * PTRACE_CONT with it) and the thread stops again in a PTRACE_EVENT_STOP.
 *
 * Signals are all blocked while our syscall runs, so they stay queued with
 * their siginfo. SIGSTOP cannot be blocked: it is held and re-sent with
 * tgkill() at the end; a tool that dies meanwhile loses it.
 *
 * A call whose seccomp verdict is unknown (REMOTE_F_SECCOMP_TRAP) runs
 * with SIGSYS unblocked: a RET_TRAP then queues a SIGSYS without touching
 * the handler. At the exit stop such a SIGSYS is seen pending (it is
 * synchronous, so get_signal() takes it first): the thread is let on, still
 * on our registers and mask, to its signal-delivery-stop, where the
 * registers are put back and the signal is dropped by resuming with none.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include "base/log.h"
#include "model/tmem.h"
#include "ptrace/gadgets.h"
#include "ptrace/remote.h"
#include "ptrace/remote_int.h"

/* ---- remote_syscall ---- */

void remote_ctx_init(struct remote_ctx *ctx, pid_t pid, pid_t tid)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->pid = pid;
	ctx->tid = tid;
	ctx->exit_status = -1;
}

/*
 * remote_syscall's body; with sigreturn, nr and args are not used: the
 * thread runs the rt_sigreturn gadget on its own frame (remote_sigreturn)
 * and *ret is 0 if that put it back in the state the frame holds.
 */
static int run_call(struct remote_ctx *ctx, long nr, const long args[6], int sigreturn,
		    long *ret)
{
	static struct saved_state st;	/* 16 KiB of FPU image: not on the stack */
	struct held_sigs held = { .n = 0 };
	struct gadgets g;
	remote_regs_t regs, resume;
	uint64_t frame, mask = ~0ULL, exit_ip;
	int err, regs_dirty = 0, mask_dirty = 0, ran = 0;
	pid_t tid = ctx->tid;

	if (ctx->gone)
		return -ESRCH;
	ctx->trapped = ctx->timed_out = 0;
	if (ctx->flags & REMOTE_F_SECCOMP_TRAP)
		mask &= ~(1ULL << (SIGSYS - 1));
	err = remote_usable_stop(ctx, &held);
	if (err)
		goto out;
	err = gadgets_get(ctx->pid, tid, &g);
	if (!err)
		err = remote_save_state(tid, &st);
	if (err)
		goto out;
	if (ctx->picky && remote_arch_restart_unknown(&st.regs)) {
		err = -EAGAIN;
		goto out;
	}
	err = remote_write_frame(tid, &st, g.sigreturn, &frame, &resume);
	if (err) {
		pr_debug("remote: no room for a frame on the stack of %d: %s", (int)tid,
			 strerror(-err));
		err = -EAGAIN;	/* another thread may have it */
		goto out;
	}
	remote_die_step(1);

	/* Registers first: from here on a dead tool leaves the frame in charge. */
	regs = st.regs;
	if (sigreturn) {
		/* as the `ret` of the syscall gadget leaves it: pretcode popped */
		remote_arch_setup_syscall(&regs, g.sigreturn, frame + sizeof(uint64_t), 0, args);
		exit_ip = 0;	/* the frame's, or after the gadget's syscall if refused */
	} else {
		remote_arch_setup_syscall(&regs, g.syscall_ret, frame, nr, args);
		exit_ip = g.syscall_ret + REMOTE_ARCH_SYSCALL_LEN;
	}
	regs_dirty = 1;
	err = remote_set_regs(tid, &regs);
	if (err)
		goto restore;
	remote_die_step(2);
	mask_dirty = 1;
	err = remote_set_sigmask(tid, mask);
	if (err)
		goto restore;
	remote_die_step(3);
	if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0) {
		err = -errno;
		goto restore;
	}
	ran = ctx->resumed = 1;
	remote_die_step(4);
	err = remote_wait_for(ctx, WANT_SYSEXIT, exit_ip, &held);
	if (err)
		goto restore;
	err = remote_get_regs(tid, &regs);
	if (!err)
		*ret = remote_arch_ret(&regs);
	if (!err && sigreturn)
		*ret = remote_arch_ip(&regs) == remote_arch_ip(&resume) &&
		       remote_arch_sp(&regs) == remote_arch_sp(&resume) ? 0 :
		       *ret < 0 ? *ret : -EPROTO;
	remote_die_step(6);
	if (!err && (ctx->flags & REMOTE_F_SECCOMP_TRAP))
		err = remote_take_trap(ctx, &held);
	if (!err && ctx->trapped)
		*ret = -ENOSYS;

restore:
	err = remote_put_back(ctx, &st, &held, ran, mask_dirty, regs_dirty, err);
out:
	remote_resend_held(ctx, &held);
	return ctx->gone ? -ESRCH : err;
}

int remote_syscall(struct remote_ctx *ctx, long nr, long a1, long a2, long a3,
		   long a4, long a5, long a6, long *ret)
{
	const long args[6] = { a1, a2, a3, a4, a5, a6 };

	return run_call(ctx, nr, args, 0, ret);
}

int remote_sigreturn(struct remote_ctx *ctx)
{
	const long none[6] = { 0 };
	long ret = 0;
	int err = run_call(ctx, SYS_rt_sigreturn, none, 1, &ret);

	return err ? err : (int)ret;
}

int remote_get_sp(pid_t tid, uint64_t *sp)
{
	remote_regs_t r;
	int err = remote_get_regs(tid, &r);

	if (!err)
		*sp = remote_arch_sp(&r);
	return err;
}

int remote_exit_frame(struct remote_ctx *ctx, uint64_t top, uint64_t *at)
{
	static const long status[6] = { 0 };
	uint8_t frame[SIGFRAME_MAX], fpu[SIGFRAME_FXSAVE_SIZE];
	const uint64_t zero = 0;
	struct gadgets g;
	remote_regs_t r;
	size_t len;
	int err;

	err = gadgets_get(ctx->pid, ctx->tid, &g);
	if (!err)
		err = remote_get_regs(ctx->tid, &r);
	if (err)
		return err;
	top &= ~(uint64_t)15;
	remote_arch_setup_syscall(&r, g.syscall_ret, top, SYS_exit_group, status);
	sigframe_fpu_init(fpu);
	err = sigframe_build(frame, sizeof(frame), top, &r, ~0ULL, fpu, sizeof(fpu), 0,
			     g.sigreturn, at, &len);
	if (!err)
		err = tmem_write(ctx->tid, *at, frame, len);
	if (!err)
		err = tmem_write(ctx->tid, top, &zero, sizeof(zero));
	return err;
}

/* ---- wrappers ---- */

/* Fold a ptrace error and a raw syscall return into 0 or -errno. */
static int sys_result(int err, long ret)
{
	if (err)
		return err;
	if (ret < 0 && ret > -4096)
		return (int)ret;
	return 0;
}

int remote_mmap(struct remote_ctx *ctx, uint64_t addr, size_t len, int prot,
		int flags, int fd, off_t off, uint64_t *out)
{
	long ret = 0;
	int err;

	err = remote_syscall(ctx, SYS_mmap, (long)addr, (long)len, prot, flags,
			     fd, (long)off, &ret);
	err = sys_result(err, ret);
	if (!err)
		*out = (uint64_t)ret;
	return err;
}

int remote_munmap(struct remote_ctx *ctx, uint64_t addr, size_t len)
{
	long ret = 0;
	int err;

	err = remote_syscall(ctx, SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0,
			     &ret);
	return sys_result(err, ret);
}

int remote_mprotect(struct remote_ctx *ctx, uint64_t addr, size_t len, int prot)
{
	long ret = 0;
	int err;

	err = remote_syscall(ctx, SYS_mprotect, (long)addr, (long)len, prot, 0,
			     0, 0, &ret);
	return sys_result(err, ret);
}

int remote_mremap(struct remote_ctx *ctx, uint64_t old, size_t old_len,
		  size_t new_len, int flags, uint64_t new_addr, uint64_t *out)
{
	long ret = 0;
	int err;

	err = remote_syscall(ctx, SYS_mremap, (long)old, (long)old_len,
			     (long)new_len, flags, (long)new_addr, 0, &ret);
	err = sys_result(err, ret);
	if (!err)
		*out = (uint64_t)ret;
	return err;
}

int remote_close(struct remote_ctx *ctx, int fd)
{
	long ret = 0;
	int err;

	err = remote_syscall(ctx, SYS_close, fd, 0, 0, 0, 0, 0, &ret);
	return sys_result(err, ret);
}

int remote_memfd_create(struct remote_ctx *ctx, const char *name,
			unsigned flags, int *fd)
{
	size_t len = strlen(name) + 1;
	remote_regs_t r;
	uint64_t at;
	struct held_sigs held = { .n = 0 };
	long ret = 0;
	int err;

	if (len > REMOTE_ARCH_SCRATCH)
		return -ENAMETOOLONG;
	/* A signal delivered on the way would push its frame over the name. */
	err = remote_usable_stop(ctx, &held);
	remote_resend_held(ctx, &held);
	if (!err)
		err = remote_get_regs(ctx->tid, &r);
	if (err)
		return err;
	/* The scratch area below the red zone, above remote_syscall's frame. */
	at = remote_arch_sp(&r) - REMOTE_ARCH_RED_ZONE - len;
	err = tmem_write(ctx->tid, at, name, len);
	if (err)
		return err;
	err = remote_syscall(ctx, SYS_memfd_create, (long)at, (long)flags, 0, 0,
			     0, 0, &ret);
	err = sys_result(err, ret);
	if (!err)
		*fd = (int)ret;
	return err;
}
