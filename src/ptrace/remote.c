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
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sys_compat.h"
#include "model/tmem.h"
#include "ptrace/gadgets.h"
#include "ptrace/remote.h"
#include "remote_arch.h"
#include "sigframe.h"

#define MAX_HELD_SIGS 8

/* ---- thread state ---- */

static int get_regs(pid_t tid, remote_regs_t *r)
{
	struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	return 0;
}

static int set_regs(pid_t tid, const remote_regs_t *r)
{
	struct iovec iov = { .iov_base = (void *)r, .iov_len = sizeof(*r) };

	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	return 0;
}

static int get_sigmask(pid_t tid, uint64_t *mask)
{
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*mask), mask) < 0)
		return -errno;
	return 0;
}

static int set_sigmask(pid_t tid, uint64_t mask)
{
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) < 0)
		return -errno;
	return 0;
}

/* The critical section an rseq_cs word points to (linux/rseq.h struct rseq_cs). */
struct rseq_cs_desc {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
};

/*
 * Address of the thread's rseq_cs word, or 0 when rseq is not registered
 * or the kernel cannot tell us. Returning to user space at the borrowed
 * syscall makes the kernel clear rseq_cs (it is outside any critical
 * section), so we save and restore it: a thread stopped inside a critical
 * section must still abort it when it resumes.
 */
static uint64_t rseq_cs_addr(pid_t tid)
{
	struct compat_rseq_config conf;

	memset(&conf, 0, sizeof(conf));
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *)sizeof(conf),
		   &conf) < 0)
		return 0;
	if (!conf.rseq_abi_pointer)
		return 0;
	return conf.rseq_abi_pointer + COMPAT_RSEQ_CS_OFF;
}

/*
 * For the frame: a thread stopped inside the critical section rseq_cs
 * points to resumes at its abort handler, as the kernel would send it
 * there (it was preempted by the stop); r's ip is moved accordingly.
 */
static void rseq_abort_ip(pid_t tid, uint64_t rseq_cs, remote_regs_t *r)
{
	struct rseq_cs_desc cs;

	if (!rseq_cs || tmem_read(tid, rseq_cs, &cs, sizeof(cs)))
		return;
	if (remote_arch_ip(r) - cs.start_ip < cs.post_commit_offset)
		remote_arch_set_ip(r, cs.abort_ip);
}

/* Classification of the stop a thread is in when remote_syscall starts. */
enum entry_stop {
	ENTRY_EVENT,		/* PTRACE_EVENT_STOP: interrupt or group-stop */
	ENTRY_SIGNAL,		/* signal-delivery-stop */
};

/* Which stop tid is in, from its siginfo; -EINVAL for unusable stops. */
static int classify_stop(pid_t tid, siginfo_t *si, enum entry_stop *kind)
{
	int event;

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, si) < 0)
		return -errno;
	event = si->si_code > 0 ? si->si_code >> 8 : 0;
	if (si->si_signo != SIGTRAP && event != PTRACE_EVENT_STOP) {
		*kind = ENTRY_SIGNAL;
		return 0;
	}
	if (event == PTRACE_EVENT_STOP) {
		*kind = ENTRY_EVENT;
		return 0;
	}
	if (event == PTRACE_EVENT_EXIT)
		return -ESRCH;	/* exiting: nothing can run any more */
	if (event || si->si_code == (SIGTRAP | 0x80) || si->si_code == SIGTRAP)
		return -EINVAL;	/* ptrace event or syscall-stop */
	*kind = ENTRY_SIGNAL;
	return 0;
}

/* Signals that arrived while the syscall ran, to be re-sent afterwards. */
struct held_sigs {
	int sig[MAX_HELD_SIGS];
	int n;
};

/* Remember sig once (a standard signal pending twice is pending once). */
static void hold_sig(struct held_sigs *h, int sig)
{
	for (int i = 0; i < h->n; i++)
		if (h->sig[i] == sig && sig < SIGRTMIN)
			return;	/* standard signals do not queue twice */
	if (h->n < MAX_HELD_SIGS)
		h->sig[h->n++] = sig;
	else
		pr_warn("remote: too many signals during a syscall, dropped %d",
			sig);
}

/* Whether the thread group leader pid has exited (zombie or gone). */
static int leader_dead(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/*
 * waitpid(ctx->tid, __WALL) that cannot hang on a dying leader: once the
 * leader has exited, its status is held back until every other thread is
 * reaped, and those threads (traced by us) wait for our caller's waitpid.
 * So the leader is polled, and -1/ESRCH returned once it is a zombie.
 */
static pid_t wait_tid(struct remote_ctx *ctx, int *status)
{
	if (ctx->tid != ctx->pid)
		return waitpid(ctx->tid, status, __WALL);
	for (unsigned i = 0;; i++) {
		pid_t r = waitpid(ctx->tid, status, __WALL | WNOHANG);

		if (r)
			return r;
		if (i % 64 == 63 && leader_dead(ctx->pid)) {
			errno = ESRCH;
			return -1;
		}
		if (i < 2000) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
		}
	}
}

int remote_die_at;

/* Test seam: the tool dies (SIGKILL) at step n of remote_syscall. */
static void die_at(int n)
{
	if (remote_die_at == n)
		kill(getpid(), SIGKILL);
}

/* What wait_for() waits for. */
enum want_stop {
	WANT_SYSEXIT,	/* the exit stop of our syscall (resume with PTRACE_SYSCALL) */
	WANT_EVENT,	/* a PTRACE_EVENT_STOP (resume with PTRACE_CONT) */
	WANT_SIGSYS,	/* the signal-delivery-stop of a seccomp SIGSYS (PTRACE_CONT) */
};

/* Whether si is the SIGSYS a seccomp filter's RET_TRAP (or kill) raised. */
static int seccomp_sigsys(const siginfo_t *si)
{
	return si->si_signo == SIGSYS && si->si_code == SYS_SECCOMP;
}

/* Whether a seccomp SIGSYS is queued for the stopped thread tid (its own
 * queue: the kernel forces it on the thread that made the call). */
static int seccomp_sigsys_pending(pid_t tid)
{
	struct __ptrace_peeksiginfo_args a = { .off = 0, .flags = 0, .nr = 8 };
	siginfo_t si[8];
	long n;

	for (;;) {
		n = ptrace(PTRACE_PEEKSIGINFO, tid, &a, si);
		if (n <= 0)
			return 0;
		for (long i = 0; i < n; i++)
			if (seccomp_sigsys(&si[i]))
				return 1;
		a.off += (uint64_t)n;
	}
}

/* The process or thread the stopped tid's fork/vfork/clone event made. */
static void note_child(struct remote_ctx *ctx, pid_t tid, int event)
{
	unsigned long msg = 0;

	if ((event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
	     event == PTRACE_EVENT_CLONE) && !ctx->child &&
	    ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0)
		ctx->child = (pid_t)msg;
}

/* On a waitpid interrupted by a signal: past ctx's deadline, interrupt a
 * thread still inside our syscall, once. */
static void check_deadline(struct remote_ctx *ctx, enum want_stop want, int entered)
{
	if (!ctx->deadline_ns || ctx->timed_out || want != WANT_SYSEXIT || !entered ||
	    clock_ns(CLOCK_MONOTONIC) < ctx->deadline_ns)
		return;
	ctx->timed_out = 1;
	pr_debug("remote: thread %d still in its syscall at the deadline: interrupted",
		 (int)ctx->tid);
	ptrace(PTRACE_INTERRUPT, ctx->tid, NULL, NULL);
}

/*
 * Wait until tid reaches the stop in want; for WANT_SYSEXIT also with
 * rip == ip (any rip if ip is 0). Unrelated stops are resumed with signal
 * 0 and their signals held in h (with REMOTE_F_SECCOMP_TRAP a seccomp
 * SIGSYS is dropped instead). 0, -ESRCH if the thread exits, -EFAULT on a
 * fault at the borrowed code, or -errno.
 */
static int wait_for(struct remote_ctx *ctx, enum want_stop want, uint64_t ip,
		    struct held_sigs *h)
{
	int req = want == WANT_SYSEXIT ? PTRACE_SYSCALL : PTRACE_CONT;
	int entered = 0;
	pid_t tid = ctx->tid;

	for (;;) {
		int status, sig, event;
		remote_regs_t r;
		siginfo_t si;

		if (wait_tid(ctx, &status) < 0) {
			if (errno == EINTR) {
				check_deadline(ctx, want, entered);
				continue;
			}
			if (errno == ESRCH || errno == ECHILD)
				ctx->gone = 1;
			return errno == ECHILD ? -ESRCH : -errno;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			ctx->gone = 1;
			ctx->exit_status = status;
			return -ESRCH;
		}
		if (!WIFSTOPPED(status))
			continue;
		sig = WSTOPSIG(status);
		event = status >> 16;
		if (event == PTRACE_EVENT_EXIT) {
			unsigned long msg;

			ctx->gone = 1;
			if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0)
				ctx->exit_status = (int)msg;
			return -ESRCH;
		}
		if (event == PTRACE_EVENT_STOP) {
			if (want == WANT_EVENT) {
				ctx->stop_sig = sig;
				return 0;
			}
			goto resume;	/* group-stop while the syscall ran */
		}
		if (event) {
			note_child(ctx, tid, event);
			goto resume;	/* seccomp or another ptrace event */
		}
		if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0)
			return -errno;
		if ((ctx->flags & REMOTE_F_SECCOMP_TRAP) && seccomp_sigsys(&si)) {
			ctx->trapped = 1;
			if (want == WANT_SIGSYS)
				return 0;
			pr_debug("remote: dropped a seccomp SIGSYS of thread %d", (int)tid);
			goto resume;
		}
		/*
		 * A syscall-stop has si_code SIGTRAP (| 0x80 with TRACESYSGOOD).
		 * PTRACE_GET_SYSCALL_INFO would tell entry from exit only with
		 * TRACESYSGOOD, whose setting is the caller's; so count: entry
		 * first, then exit. Every other signal is blocked meanwhile.
		 */
		if (want == WANT_SYSEXIT && (sig & ~0x80) == SIGTRAP &&
		    (si.si_code == SIGTRAP || si.si_code == (SIGTRAP | 0x80))) {
			int err;

			if (!entered) {
				entered = 1;
				if (sig == SIGTRAP)
					pr_debug("remote: %d seized without PTRACE_O_TRACESYSGOOD: "
						 "not kill-safe", (int)tid);
				die_at(5);
				goto resume;
			}
			err = get_regs(tid, &r);
			if (err)
				return err;
			if (!ip || remote_arch_ip(&r) == ip)
				return 0;
			pr_err("remote: thread %d: syscall exit at 0x%llx, not at the gadget",
			       (int)tid, (unsigned long long)remote_arch_ip(&r));
			return -EFAULT;
		}
		if (want != WANT_EVENT && si.si_code > 0 && si.si_code != SI_KERNEL &&
		    (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
		     sig == SIGFPE)) {
			pr_err("remote: thread %d faulted (signal %d) at the syscall gadget",
			       (int)tid, sig);
			return -EFAULT;
		}
		hold_sig(h, sig);
		pr_debug("remote: held signal %d of thread %d", sig, (int)tid);
resume:
		if (ptrace(req, tid, NULL, NULL) < 0)
			return -errno;
	}
}

/*
 * Bring tid into a PTRACE_EVENT_STOP: as it is, or for a signal-delivery
 * stop by delivering the signal first (see remote.h). 0 or -errno.
 */
static int usable_stop(struct remote_ctx *ctx, struct held_sigs *h)
{
	enum entry_stop kind;
	siginfo_t si;
	int err;

	err = classify_stop(ctx->tid, &si, &kind);
	if (err || kind == ENTRY_EVENT)
		return err;
	if (ptrace(PTRACE_INTERRUPT, ctx->tid, NULL, NULL) < 0 ||
	    ptrace(PTRACE_CONT, ctx->tid, NULL, (void *)(long)si.si_signo) < 0)
		return -errno;
	ctx->resumed = 1;
	ctx->delivered = 1;
	return wait_for(ctx, WANT_EVENT, 0, h);
}

/* A thread's state as saved on entry: what the frame and the end restore. */
struct saved_state {
	remote_regs_t regs;
	uint64_t mask;
	uint64_t rseq_at, rseq_cs;	/* rseq_cs word's address (0: none) and value */
	uint8_t fpu[SIGFRAME_FPU_MAX];
	size_t fpu_len;
	int xsave;
};

static int save_state(pid_t tid, struct saved_state *st)
{
	int err;

	err = get_regs(tid, &st->regs);
	if (!err)
		err = get_sigmask(tid, &st->mask);
	if (!err)
		err = sigframe_read_fpu(tid, st->fpu, sizeof(st->fpu), &st->fpu_len, &st->xsave);
	if (err)
		return err;
	st->rseq_cs = 0;
	st->rseq_at = rseq_cs_addr(tid);
	if (st->rseq_at && tmem_read(tid, st->rseq_at, &st->rseq_cs, sizeof(st->rseq_cs)))
		st->rseq_at = 0;
	return 0;
}

/*
 * Write below the red zone of st's stack the frame that rt_sigreturn turns
 * back into the state st would resume with (that state in *resume); its
 * address in *at.
 */
static int write_frame(pid_t tid, const struct saved_state *st, uint64_t restorer,
		       uint64_t *at, remote_regs_t *resume)
{
	uint8_t frame[SIGFRAME_MAX];
	uint64_t top = remote_arch_sp(&st->regs) - REMOTE_ARCH_RED_ZONE - REMOTE_ARCH_SCRATCH;
	size_t len;
	int err;

	*resume = st->regs;
	remote_arch_resume_regs(resume);
	rseq_abort_ip(tid, st->rseq_cs, resume);
	err = sigframe_build(frame, sizeof(frame), top, resume, st->mask, st->fpu,
			     st->fpu_len, st->xsave, restorer, at, &len);
	if (!err)
		err = tmem_write(tid, *at, frame, len);
	return err;
}

/* Re-send the signals held during the call, so they are pending again. */
static void resend_held(struct remote_ctx *ctx, const struct held_sigs *h)
{
	for (int i = 0; i < h->n && !ctx->gone; i++) {
		if (syscall(SYS_tgkill, ctx->pid, ctx->tid, h->sig[i]) < 0)
			pr_perror("remote: cannot re-send signal %d to %d",
				  h->sig[i], (int)ctx->tid);
		else
			ctx->requeued++;
	}
}

/*
 * The end of a remote syscall or call: put the thread back as st saved it
 * (ran: it was resumed; mask_dirty, regs_dirty: what was changed), then
 * into a fresh PTRACE_EVENT_STOP. Returns err, or the first error here.
 */
static int put_back(struct remote_ctx *ctx, const struct saved_state *st, struct held_sigs *held,
		    int ran, int mask_dirty, int regs_dirty, int err)
{
	pid_t tid = ctx->tid;
	int err2;

	if (ctx->gone)
		return err;
	/* First the interrupt: a dead tool's thread then still passes get_signal(). */
	if (ran && ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 && !err)
		err = -errno;
	die_at(7);
	/* Then everything the frame would restore, the registers last. */
	if (mask_dirty && (err2 = set_sigmask(tid, st->mask)) && !err)
		err = err2;
	die_at(8);
	if (ran && st->rseq_at &&
	    tmem_write(tid, st->rseq_at, &st->rseq_cs, sizeof(st->rseq_cs)))
		pr_warn("remote: cannot restore rseq_cs of thread %d", (int)tid);
	if (regs_dirty && (err2 = set_regs(tid, &st->regs)) && !err)
		err = err2;
	die_at(9);
	if (!ran)
		return err;	/* never resumed: still in its stop */
	if (ptrace(PTRACE_CONT, tid, NULL, NULL) < 0)
		return err ? err : -errno;
	die_at(10);
	err2 = wait_for(ctx, WANT_EVENT, 0, held);
	return err ? err : err2;
}

/* ---- remote_syscall ---- */

void remote_ctx_init(struct remote_ctx *ctx, pid_t pid, pid_t tid)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->pid = pid;
	ctx->tid = tid;
	ctx->exit_status = -1;
}

/*
 * At the exit stop of a call made with REMOTE_F_SECCOMP_TRAP: if the
 * filter trapped it, let the thread on to the SIGSYS's signal-delivery-
 * stop (see the top of this file), where the restore goes on and resuming
 * with no signal drops it. 0 (trapped set if it did), or -errno.
 */
static int take_trap(struct remote_ctx *ctx, struct held_sigs *h)
{
	if (!seccomp_sigsys_pending(ctx->tid))
		return 0;
	if (ptrace(PTRACE_CONT, ctx->tid, NULL, NULL) < 0)
		return -errno;
	return wait_for(ctx, WANT_SIGSYS, 0, h);
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
	err = usable_stop(ctx, &held);
	if (err)
		goto out;
	err = gadgets_get(ctx->pid, tid, &g);
	if (!err)
		err = save_state(tid, &st);
	if (err)
		goto out;
	if (ctx->picky && remote_arch_restart_unknown(&st.regs)) {
		err = -EAGAIN;
		goto out;
	}
	err = write_frame(tid, &st, g.sigreturn, &frame, &resume);
	if (err) {
		pr_debug("remote: no room for a frame on the stack of %d: %s", (int)tid,
			 strerror(-err));
		err = -EAGAIN;	/* another thread may have it */
		goto out;
	}
	die_at(1);

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
	err = set_regs(tid, &regs);
	if (err)
		goto restore;
	die_at(2);
	mask_dirty = 1;
	err = set_sigmask(tid, mask);
	if (err)
		goto restore;
	die_at(3);
	if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0) {
		err = -errno;
		goto restore;
	}
	ran = ctx->resumed = 1;
	die_at(4);
	err = wait_for(ctx, WANT_SYSEXIT, exit_ip, &held);
	if (err)
		goto restore;
	err = get_regs(tid, &regs);
	if (!err)
		*ret = remote_arch_ret(&regs);
	if (!err && sigreturn)
		*ret = remote_arch_ip(&regs) == remote_arch_ip(&resume) &&
		       remote_arch_sp(&regs) == remote_arch_sp(&resume) ? 0 :
		       *ret < 0 ? *ret : -EPROTO;
	die_at(6);
	if (!err && (ctx->flags & REMOTE_F_SECCOMP_TRAP))
		err = take_trap(ctx, &held);
	if (!err && ctx->trapped)
		*ret = -ENOSYS;

restore:
	err = put_back(ctx, &st, &held, ran, mask_dirty, regs_dirty, err);
out:
	resend_held(ctx, &held);
	return ctx->gone ? -ESRCH : err;
}

/* ---- remote_call ---- */

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

/*
 * waitpid(ctx->tid) polled until deadline (CLOCK_MONOTONIC ns): its pid,
 * 0 at the deadline, -1 with errno (ESRCH once the leader is a zombie).
 */
static pid_t wait_until(struct remote_ctx *ctx, int *status, uint64_t deadline)
{
	for (unsigned i = 0;; i++) {
		pid_t r = waitpid(ctx->tid, status, __WALL | WNOHANG);
		struct timespec now;

		if (r)
			return r;
		if (ctx->tid == ctx->pid && i % 64 == 63 && leader_dead(ctx->pid)) {
			errno = ESRCH;
			return -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec >= deadline)
			return 0;
		if (i < 2000) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
		}
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
	uint64_t deadline = now_ns() + c->timeout_ns;
	int in_syscall = 0, returned = 0;
	pid_t tid = ctx->tid;

	for (;;) {
		int status, sig, event;
		remote_regs_t r;
		siginfo_t si;
		pid_t w = wait_until(ctx, &status, deadline);

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
				die_at(6);
				*end = CALL_RETURNED;
				return 0;
			}
			if (in_syscall && !returned) {
				int err = get_regs(tid, &r);

				if (err)
					return err;
				if (remote_arch_syscall_nr(&r) == SYS_rt_sigreturn &&
				    remote_arch_sp(&r) == at_ret + 16) {
					returned = 1;
					if (c->data_len &&
					    tmem_read(tid, data_at, c->data, c->data_len))
						return -EFAULT;
					die_at(5);
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
		hold_sig(h, sig);
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
	uint64_t deadline = now_ns() + 1000000000ULL;
	pid_t tid = ctx->tid;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return -errno;
	for (;;) {
		int status, sig;
		pid_t w = wait_until(ctx, &status, deadline);

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
			hold_sig(h, sig);
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
	err = usable_stop(ctx, &held);
	if (!err)
		err = gadgets_get(ctx->pid, tid, &g);
	if (!err)
		err = save_state(tid, &st);
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
	err = write_frame(tid, &st, g.sigreturn, &frame, &resume);
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
	die_at(1);
	for (int i = 0; i < 6; i++)
		args[i] = c->data_args & (1u << i) ? (long)(data_at + (uint64_t)c->args[i]) :
			  c->args[i];

	/* Registers first: from here on a dead tool leaves the frame in charge
	 * (the function returns through the `ret` into the rt_sigreturn). */
	regs = st.regs;
	remote_arch_setup_call(&regs, c->fn, at_ret, args);
	regs_dirty = 1;
	err = set_regs(tid, &regs);
	if (err)
		goto restore;
	die_at(2);
	mask_dirty = 1;
	err = set_sigmask(tid, ~0ULL);
	if (err)
		goto restore;
	die_at(3);
	if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0) {
		err = -errno;
		goto restore;
	}
	ran = ctx->resumed = 1;
	die_at(4);
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
	err = put_back(ctx, &st, &held, ran, mask_dirty, regs_dirty, err);
out:
	resend_held(ctx, &held);
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
	int err = get_regs(tid, &r);

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
		err = get_regs(ctx->tid, &r);
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
	err = usable_stop(ctx, &held);
	resend_held(ctx, &held);
	if (!err)
		err = get_regs(ctx->tid, &r);
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
