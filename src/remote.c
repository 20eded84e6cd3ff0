/* Tracee memory access and system calls run inside a ptrace-stopped thread. */
/* SPDX-License-Identifier: MIT */
/*
 * How remote_syscall() works, and why the thread is left as it is.
 *
 * A seized thread that we stopped sits in get_signal(), either in a
 * PTRACE_EVENT_STOP (interrupt or group-stop) or in a signal-delivery-stop.
 * We save its registers and signal mask, block every signal but SIGTRAP,
 * point rip at "syscall; int3" with orig_rax = -1 (so the kernel applies no
 * syscall-restart fixup on the way out) and PTRACE_CONT it. The int3 raises
 * SIGTRAP (si_code SI_KERNEL), which stops the thread in a signal-delivery-
 * stop; rax holds the result.
 *
 * We then put back the registers exactly as saved, including rax =
 * -ERESTART* and orig_rax = the interrupted syscall's number. Whenever the
 * thread later leaves get_signal() without a handler to run, the kernel's own
 * arch_do_signal_or_restart() rewinds rip and restarts that syscall, and for
 * -ERESTART_RESTARTBLOCK it uses restart_syscall with the thread's untouched
 * restart block. Rewriting the restart by hand (as compel does) would have to
 * turn -ERESTART_RESTARTBLOCK into -EINTR; letting the kernel do it keeps
 * nanosleep, poll and futex waits exact.
 *
 * To give the caller the same kind of stop it handed us, an event stop is
 * re-created: PTRACE_INTERRUPT, then PTRACE_CONT with signal 0 drops our
 * SIGTRAP and get_signal() loops straight into do_jobctl_trap(), before it
 * dequeues anything. For a signal-delivery-stop, the saved siginfo is written
 * back into our SIGTRAP stop, so resuming with the original signal delivers
 * that signal.
 *
 * If the process ignores SIGTRAP, the int3 would make the kernel reset the
 * disposition to SIG_DFL (force_sig_info_to_task), so then every signal is
 * blocked and the thread runs under PTRACE_SYSCALL to the syscall-exit-stop
 * of our syscall. Restoring the registers there and re-interrupting works
 * the same way: PTRACE_INTERRUPT sets TIF_SIGPENDING, so the way back to
 * user space passes through get_signal() and stops before any user code.
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

#include "log.h"
#include "remote.h"
#include "remote_arch.h"
#include "sys_compat.h"

#define MAX_HELD_SIGS 8

/* ---- memory ---- */

/* pread/pwrite all of len through /proc/PID/mem. 0 or -errno. */
static int proc_mem_xfer(pid_t pid, uint64_t addr, void *buf, size_t len,
			 int write)
{
	char path[64];
	size_t done = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n;

		if (write)
			n = pwrite(fd, (char *)buf + done, len - done,
				   (off_t)(addr + done));
		else
			n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(addr + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto out;
		}
		done += (size_t)n;
	}
out:
	close(fd);
	return err;
}

/* Read with PTRACE_PEEKDATA word by word; pid must be a stopped tracee. */
static int peek_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint64_t base = addr & ~7ULL;
	size_t done = 0;

	while (done < len) {
		uint64_t skip = (addr + done) - base;
		size_t n = 8 - skip;
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKDATA, pid, (void *)base, NULL);
		if (errno)
			return -errno;
		if (n > len - done)
			n = len - done;
		memcpy((char *)buf + done, (char *)&w + skip, n);
		done += n;
		base += 8;
	}
	return 0;
}

/*
 * Write with PTRACE_POKEDATA; an unaligned head or tail word is read first
 * and merged. pid must be a stopped tracee.
 */
static int poke_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	uint64_t base = addr & ~7ULL;
	size_t done = 0;

	while (done < len) {
		uint64_t skip = (addr + done) - base;
		size_t n = 8 - skip;
		long w = 0;

		if (n > len - done)
			n = len - done;
		if (n != 8) {
			errno = 0;
			w = ptrace(PTRACE_PEEKDATA, pid, (void *)base, NULL);
			if (errno)
				return -errno;
		}
		memcpy((char *)&w + skip, (const char *)buf + done, n);
		if (ptrace(PTRACE_POKEDATA, pid, (void *)base, (void *)w) < 0)
			return -errno;
		done += n;
		base += 8;
	}
	return 0;
}

int remote_mem_ptrace_only;

int remote_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)addr, .iov_len = len };
	ssize_t n;
	int err;

	if (!len)
		return 0;
	if (remote_mem_ptrace_only)
		return peek_read(pid, addr, buf, len);
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0)
		n = 0;
	/* The rest may be unreadable to process_vm_readv only (PROT_NONE...). */
	err = proc_mem_xfer(pid, addr + n, (char *)buf + n, len - n, 0);
	if (err)
		err = peek_read(pid, addr + n, (char *)buf + n, len - n);
	return err;
}

int remote_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	int err;

	if (!len)
		return 0;
	if (remote_mem_ptrace_only)
		return poke_write(pid, addr, buf, len);
	err = proc_mem_xfer(pid, addr, (void *)buf, len, 1);
	if (err)
		err = poke_write(pid, addr, buf, len);
	return err;
}

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

/*
 * Address of the thread's rseq_cs word, or 0 when rseq is not registered
 * or the kernel cannot tell us. Returning to user space at our stub makes
 * the kernel clear rseq_cs (the stub is outside any critical section), so
 * we save and restore it: a thread stopped inside a critical section must
 * still abort it when it resumes.
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
 * Start of the first private executable file mapping of pid, skipping
 * [vdso] and friends and our own shared pages. 0 or -errno.
 * PRIVATE minimal maps scan; switch to proc_maps_read() once proc.c lands.
 */
static int find_swap_addr(pid_t pid, uint64_t *out)
{
	char path[64], line[4096], perms[8];
	unsigned long long start, end;
	int err = -ENOENT, n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		n = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &start, &end,
			   perms, &n) < 3 || !n)
			continue;
		if (perms[2] != 'x' || perms[3] != 'p' || line[n] != '/')
			continue;
		if (end - start < REMOTE_ARCH_STUB_LEN)
			continue;
		*out = start;
		err = 0;
		break;
	}
	fclose(f);
	return err;
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

/* Signals that arrived while the stub ran, to be re-sent afterwards. */
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

/* What wait_for() waits for. */
enum want_stop {
	WANT_TRAP,	/* the int3 after the stub (resume with PTRACE_CONT) */
	WANT_SYSEXIT,	/* the syscall-exit-stop (resume with PTRACE_SYSCALL) */
	WANT_EVENT,	/* a PTRACE_EVENT_STOP (resume with PTRACE_CONT) */
};

/*
 * Wait until tid reaches the stop in want; for WANT_TRAP and WANT_SYSEXIT
 * also with rip == ip. Unrelated stops are resumed with signal 0 and their
 * signals held in h. 0, -ESRCH if the thread exits, -EFAULT on a fault at
 * the stub, or -errno.
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
			if (errno == EINTR)
				continue;
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
		if (event == PTRACE_EVENT_STOP) {
			if (want == WANT_EVENT)
				return 0;
			goto resume;	/* group-stop while the stub ran */
		}
		if (event)
			goto resume;	/* seccomp or another ptrace event */
		if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0)
			return -errno;
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
				goto resume;
			}
			err = get_regs(tid, &r);
			if (err)
				return err;
			if (remote_arch_ip(&r) == ip)
				return 0;
			pr_err("remote: thread %d: syscall exit at 0x%llx, not at the stub",
			       (int)tid, (unsigned long long)remote_arch_ip(&r));
			return -EFAULT;
		}
		if (want == WANT_TRAP && sig == SIGTRAP && si.si_code == SI_KERNEL) {
			int err = get_regs(tid, &r);

			if (err)
				return err;
			if (remote_arch_ip(&r) == ip)
				return 0;
		}
		if (want != WANT_EVENT && si.si_code > 0 && si.si_code != SI_KERNEL &&
		    (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
		     sig == SIGFPE)) {
			pr_err("remote: thread %d faulted (signal %d) at the syscall stub",
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
 * Whether pid ignores SIGTRAP. An int3 would then reset SIGTRAP to SIG_DFL
 * for good (force_sig_info_to_task), so we stop at syscall exit instead.
 */
static int sigtrap_ignored(pid_t pid)
{
	char path[64], line[256];
	unsigned long long ign = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigIgn: %llx", &ign) == 1)
			break;
	fclose(f);
	return !!(ign & (1ULL << (SIGTRAP - 1)));
}

/* ---- remote_syscall ---- */

void remote_ctx_init(struct remote_ctx *ctx, pid_t pid, pid_t tid)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->pid = pid;
	ctx->tid = tid;
}

int remote_syscall(struct remote_ctx *ctx, long nr, long a1, long a2, long a3,
		   long a4, long a5, long a6, long *ret)
{
	static const uint8_t stub_code[REMOTE_ARCH_STUB_LEN] = REMOTE_ARCH_STUB;
	const long args[6] = { a1, a2, a3, a4, a5, a6 };
	uint8_t saved_code[REMOTE_ARCH_STUB_LEN];
	uint64_t oldmask, rseq_cs = 0, rseq_at, stub;
	remote_regs_t saved, regs;
	struct held_sigs held = { .n = 0 };
	enum entry_stop kind;
	int err, err2, swapped = 0, regs_dirty = 0, mask_dirty = 0, ran = 0;
	int sysstop;
	siginfo_t entry_si;
	pid_t tid = ctx->tid;

	if (ctx->gone)
		return -ESRCH;
	err = classify_stop(tid, &entry_si, &kind);
	if (err)
		return err;
	sysstop = sigtrap_ignored(ctx->tid);
	if (sysstop && kind == ENTRY_SIGNAL)
		return -EOPNOTSUPP;
	err = get_regs(tid, &saved);
	if (err)
		return err;
	err = get_sigmask(tid, &oldmask);
	if (err)
		return err;
	rseq_at = rseq_cs_addr(tid);
	if (rseq_at && remote_mem_read(tid, rseq_at, &rseq_cs, sizeof(rseq_cs)))
		rseq_at = 0;

	stub = ctx->stub;
	if (!stub) {
		if (!ctx->swap_addr) {
			err = find_swap_addr(ctx->tid, &ctx->swap_addr);
			if (err)
				return err;
		}
		stub = ctx->swap_addr;
		err = remote_mem_read(tid, stub, saved_code, sizeof(saved_code));
		if (err)
			return err;
		err = remote_mem_write(tid, stub, stub_code, sizeof(stub_code));
		if (err)
			return err;
		swapped = 1;
	}

	mask_dirty = 1;
	err = set_sigmask(tid, sysstop ? ~0ULL : ~(1ULL << (SIGTRAP - 1)));
	if (err)
		goto restore;
	regs = saved;
	remote_arch_setup_syscall(&regs, stub, nr, args);
	regs_dirty = 1;
	err = set_regs(tid, &regs);
	if (err)
		goto restore;
	if (ptrace(sysstop ? PTRACE_SYSCALL : PTRACE_CONT, tid, NULL, NULL) < 0) {
		err = -errno;
		goto restore;
	}
	ran = 1;
	if (sysstop)
		err = wait_for(ctx, WANT_SYSEXIT, stub + REMOTE_ARCH_SYSCALL_LEN,
			       &held);
	else
		err = wait_for(ctx, WANT_TRAP, stub + REMOTE_ARCH_TRAP_OFF, &held);
	if (err)
		goto restore;
	err = get_regs(tid, &regs);
	if (!err)
		*ret = remote_arch_ret(&regs);

restore:
	if (swapped) {
		err2 = remote_mem_write(tid, stub, saved_code, sizeof(saved_code));
		if (err2) {
			pr_err("remote: cannot restore %d code bytes at 0x%" PRIx64
			       " in %d: %s", REMOTE_ARCH_STUB_LEN, stub,
			       (int)ctx->pid, strerror(-err2));
			err = err ? err : err2;
		}
	}
	if (ctx->gone)
		return -ESRCH;
	if (regs_dirty && (err2 = set_regs(tid, &saved)) && !err)
		err = err2;
	if (mask_dirty && (err2 = set_sigmask(tid, oldmask)) && !err)
		err = err2;
	if (rseq_at && remote_mem_write(tid, rseq_at, &rseq_cs, sizeof(rseq_cs)))
		pr_warn("remote: cannot restore rseq_cs of thread %d", (int)tid);
	if (!ran)
		goto out;	/* never resumed: still in the caller's stop */

	if (kind == ENTRY_SIGNAL) {
		if (ptrace(PTRACE_SETSIGINFO, tid, NULL, &entry_si) < 0 && !err)
			err = -errno;
	} else if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 ||
		   ptrace(PTRACE_CONT, tid, NULL, NULL) < 0) {
		if (!err)
			err = -errno;
	} else {
		err2 = wait_for(ctx, WANT_EVENT, 0, &held);
		if (err2 && !err)
			err = err2;
	}
out:
	for (int i = 0; i < held.n && !ctx->gone; i++) {
		if (syscall(SYS_tgkill, ctx->pid, tid, held.sig[i]) < 0)
			pr_perror("remote: cannot re-send signal %d to %d",
				  held.sig[i], (int)tid);
		else
			ctx->requeued++;
	}
	return ctx->gone ? -ESRCH : err;
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
	char saved[256];
	size_t len = strlen(name) + 1;
	remote_regs_t r;
	uint64_t at;
	long ret = 0;
	int err, err2;

	if (len > sizeof(saved))
		return -ENAMETOOLONG;
	err = get_regs(ctx->tid, &r);
	if (err)
		return err;
	at = (remote_arch_sp(&r) - REMOTE_ARCH_RED_ZONE - len) & ~15ULL;
	err = remote_mem_read(ctx->tid, at, saved, len);
	if (err)
		return err;
	err = remote_mem_write(ctx->tid, at, name, len);
	if (err)
		return err;
	err = remote_syscall(ctx, SYS_memfd_create, (long)at, (long)flags, 0, 0,
			     0, 0, &ret);
	if (!ctx->gone && (err2 = remote_mem_write(ctx->tid, at, saved, len)))
		pr_warn("remote: cannot restore stack bytes of thread %d: %s",
			(int)ctx->tid, strerror(-err2));
	err = sys_result(err, ret);
	if (!err)
		*fd = (int)ret;
	return err;
}
