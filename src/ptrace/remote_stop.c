/* Waiting for the stops of a thread that runs a remote call, and the signals that come meanwhile. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sys_compat.h"
#include "ptrace/remote.h"
#include "ptrace/remote_int.h"

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

/* Remember sig once (a standard signal pending twice is pending once). */
void remote_hold_sig(struct held_sigs *h, int sig)
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
 * waitpid(ctx->tid, __WALL) until deadline (CLOCK_MONOTONIC ns; 0: none)
 * that cannot hang on a dying leader: once the leader has exited, its
 * status is held back until every other thread is reaped, and those
 * threads (traced by us) wait for our caller's waitpid. So the leader is
 * polled, and -1/ESRCH returned once it is a zombie; with a deadline every
 * thread is polled. Its pid, 0 at the deadline, or -1 with errno.
 */
pid_t remote_wait_stop(struct remote_ctx *ctx, int *status, uint64_t deadline)
{
	if (!deadline && ctx->tid != ctx->pid)
		return waitpid(ctx->tid, status, __WALL);
	for (unsigned i = 0;; i++) {
		pid_t r = waitpid(ctx->tid, status, __WALL | WNOHANG);

		if (r)
			return r;
		if (ctx->tid == ctx->pid && i % 64 == 63 && leader_dead(ctx->pid)) {
			errno = ESRCH;
			return -1;
		}
		if (deadline && clock_ns(CLOCK_MONOTONIC) >= deadline)
			return 0;
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
void remote_die_step(int n)
{
	if (remote_die_at == n)
		kill(getpid(), SIGKILL);
}

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
int remote_wait_for(struct remote_ctx *ctx, enum want_stop want, uint64_t ip,
		    struct held_sigs *h)
{
	int req = want == WANT_SYSEXIT ? PTRACE_SYSCALL : PTRACE_CONT;
	int entered = 0;
	pid_t tid = ctx->tid;

	for (;;) {
		int status, sig, event;
		remote_regs_t r;
		siginfo_t si;

		if (remote_wait_stop(ctx, &status, 0) < 0) {
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
				remote_die_step(5);
				goto resume;
			}
			err = remote_get_regs(tid, &r);
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
		remote_hold_sig(h, sig);
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
int remote_usable_stop(struct remote_ctx *ctx, struct held_sigs *h)
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
	return remote_wait_for(ctx, WANT_EVENT, 0, h);
}

/*
 * At the exit stop of a call made with REMOTE_F_SECCOMP_TRAP: if the
 * filter trapped it, let the thread on to the SIGSYS's signal-delivery-
 * stop (see the top of this file), where the restore goes on and resuming
 * with no signal drops it. 0 (trapped set if it did), or -errno.
 */
int remote_take_trap(struct remote_ctx *ctx, struct held_sigs *h)
{
	if (!seccomp_sigsys_pending(ctx->tid))
		return 0;
	if (ptrace(PTRACE_CONT, ctx->tid, NULL, NULL) < 0)
		return -errno;
	return remote_wait_for(ctx, WANT_SIGSYS, 0, h);
}
