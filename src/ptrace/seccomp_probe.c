/* Learning what a seccomp filter heapattach may not read does to its calls, from a throwaway copy of the target. */
/* SPDX-License-Identifier: MIT */
/*
 * Reading a filter (PTRACE_SECCOMP_GET_FILTER) needs CAP_SYS_ADMIN and no
 * filter on heapattach itself, which a sidecar never has. A filter is a
 * pure function of the call's number, arch, instruction pointer and
 * arguments, and a fork inherits its thread's filters; so instead of
 * reading it, heapattach asks it, in a copy of the target that runs none
 * of its code:
 *
 * - The thread T of the target, stopped, runs clone(flags 0) as a remote
 *   syscall (remote.c; SIGSYS unblocked, so that a RET_TRAP on it is
 *   dropped without touching the target's handler). Exit signal 0: the
 *   target gets no SIGCHLD when the child ends, and wait() without __WALL
 *   or __WCLONE does not see it. This clone is the one call made in the
 *   target before its verdict is known.
 * - The child starts in a ptrace stop (PTRACE_O_TRACECLONE attached it),
 *   with T's registers at the syscall gadget's `ret` and, as its stack, an
 *   exit frame written below T's stack pointer (remote_exit_frame): left
 *   to run by a dying heapattach before its first stop is handled, it
 *   exits without running the program. At that stop it gets
 *   PTRACE_O_EXITKILL (heapattach's death kills it) and a core size limit
 *   of 1 (no core dump of the target's memory when a filter kills it).
 * - Each call of seccomp_plan_calls() runs in the child as a remote
 *   syscall, from the same gadget as in the target (same instruction
 *   pointer), with the arguments heapattach knows in advance and, for the
 *   others, values like the real ones: a free address near the same
 *   library, the fd of its own memfd, its own thread id. What the child
 *   shows is the verdict: killed by SIGSYS, kill; a seccomp SIGSYS, trap;
 *   still inside its syscall 2 s later, a supervisor's (user-notif); the
 *   effect the call has when it runs (a mapping where asked, a memfd, the
 *   word read, -ETIMEDOUT from a wait), allow; anything else, errno, which
 *   heapattach falls back from or refuses like any refusal.
 * - A child the filter killed is replaced by another from the same clone
 *   (same thread, registers, arguments and gadget: the verdict the target
 *   already survived).
 * - At the end the child is killed and reaped by heapattach (its tracer);
 *   its zombie, the target's child, is reaped by a remote wait4(pid,
 *   __WALL | WNOHANG) in T, a call the child made first with the same
 *   arguments.
 *
 * What a probe cannot tell (docs/threat-model.md, section 5): an argument
 * it had to make up (an address, an fd, a thread id) may be judged
 * otherwise when the real one comes; the agent's calls come from its own
 * code, not from the gadget, so a filter that tests the instruction
 * pointer may treat them otherwise; a supervisor that answers at once
 * (RET_USER_NOTIF) cannot be told from the filter, and may answer the
 * target otherwise; RET_ERRNO with an errno of 0 or of the expected
 * failure passes for the call itself.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sys_compat.h"
#include "model/proc.h"
#include "model/tmem.h"
#include "ptrace/forkcopy.h"
#include "ptrace/gadgets.h"
#include "ptrace/inject.h"
#include "ptrace/remote.h"
#include "ptrace/seccomp.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/seccomp_probe.h"
#include "remote_arch.h"
#include "shm.h"
#include "sigframe.h"

#define CALL_WAIT_NS	2000000000ULL	/* a call in its syscall longer: a supervisor's */
#define CLONE_WAIT_NS	5000000000ULL
#define MAX_CHILDREN	(SC_NCALLS + 4)	/* each killing call costs one */
#define CLONE_TRIES	3		/* -ERESTARTNOINTR: a signal came during the fork */

/*
 * Below T's stack pointer: the red zone and scratch, the frame of T's own
 * remote calls (up to SIGFRAME_MAX), a gap, then (top down) the work area,
 * the exit frame, and the frames of the child's remote calls.
 */
#define T_FRAMES	(REMOTE_ARCH_RED_ZONE + REMOTE_ARCH_SCRATCH + SIGFRAME_MAX)
#define GAP		8192
#define WORK_OFF	64		/* the work area, above the exit frame's top */
#define EXIT_FRAME_MAX	2048
#define ROOM		(T_FRAMES + GAP + EXIT_FRAME_MAX + T_FRAMES + 4096)

/* The work area: what the child's calls point to, written in the target
 * below its stack pointer before the first clone, so every child has it. */
#define W_NAME		0	/* "heapattach": memfd_create */
#define W_TS		64	/* clock_gettime's answer */
#define W_SLEEP		128	/* 1 ms: the futex waits */
#define W_WORD		192	/* a futex word, 0 */
#define W_IOV		256	/* process_vm_readv: local iovec, then remote */
#define W_DST		512	/* ... their words */
#define W_SRC		520
#define W_SIZE		528

#define PATTERN		0x6865617061747461ULL
#define SLEEP_NS	1000000L

struct probe {
	struct remote_ctx t;		/* the target's thread that forks */
	struct remote_ctx c;		/* the child, while one lives (c.tid != 0) */
	pid_t ns_pid;			/* the child's id in the target's PID namespace */
	unsigned gen;			/* children made so far */
	pid_t zombies[MAX_CHILDREN];	/* children to reap in the target (namespace ids) */
	int reap_ok[MAX_CHILDREN];	/* wait4 on it ran in a child */
	size_t nz;
	uint64_t stack, work;		/* the child's stack (the exit frame), work area */
	uint64_t near;			/* the library regions are put near (the gadget's) */
	size_t size;			/* bytes of a region */
	char *why;
	size_t whylen;
};

/* ---- the child ---- */

/* Say why in p->why (once: the first reason stays); returns err. */
static int say(struct probe *p, int err, const char *fmt, ...)
{
	va_list ap;

	if (p->why[0])
		return err;
	va_start(ap, fmt);
	vsnprintf(p->why, p->whylen, fmt, ap);
	va_end(ap);
	return err;
}

/* Kill the child and reap it as its tracer (it stays the target's zombie). */
static void end_child(struct probe *p)
{
	if (!p->c.tid)
		return;
	forkcopy_kill(p->c.tid);
	p->c.tid = 0;
}

/*
 * The clone in the target's thread, and the child's first stop. 0, or
 * -errno with p->why said.
 */
static int spawn(struct probe *p)
{
	struct rlimit core = { 1, 1 };	/* 1: no core file, and no core pipe either */
	long ret = -REMOTE_ERESTARTNOINTR;
	int err = 0;

	if (p->nz == MAX_CHILDREN)
		return say(p, -EAGAIN, "%u copies lost", p->gen);
	for (int i = 0; i < CLONE_TRIES && ret == -REMOTE_ERESTARTNOINTR && !err; i++) {
		p->t.child = 0;
		p->t.deadline_ns = clock_ns(CLOCK_MONOTONIC) + CLONE_WAIT_NS;
		err = remote_syscall(&p->t, SYS_clone, 0, (long)p->stack, 0, 0, 0, 0, &ret);
		p->t.deadline_ns = 0;
	}
	if (err && p->t.gone && p->t.exit_status != -1 && WIFSIGNALED(p->t.exit_status) &&
	    WTERMSIG(p->t.exit_status) == SIGSYS)
		return say(p, err, "its filter killed it on clone, the one call heapattach "
			   "makes before it knows the filter's verdict");
	if (err)
		return say(p, err, "clone: %s", strerror(-err));
	if (p->t.trapped)
		return say(p, -EPERM, "its filter raises SIGSYS on clone");
	if (ret <= 0)
		return say(p, -EPERM, "clone %s: %s", p->t.timed_out ?
			   "was held (a seccomp supervisor?)" : "failed",
			   strerror(ret < 0 && ret > -4096 ? (int)-ret : EPROTO));
	p->gen++;
	p->zombies[p->nz++] = (pid_t)ret;
	if (!p->t.child)	/* not attached: its exit frame ends it */
		return say(p, -ECHILD, "the copy was not traced");
	remote_ctx_init(&p->c, p->t.child, p->t.child);
	p->c.flags = REMOTE_F_SECCOMP_TRAP;
	p->ns_pid = (pid_t)ret;
	err = forkcopy_first_stop(p->c.tid);
	if (!err && ptrace(PTRACE_SETOPTIONS, p->c.tid, NULL,
			   (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)) < 0)
		err = -errno;
	if (err) {
		end_child(p);
		return say(p, err, "the copy did not stop: %s", strerror(-err));
	}
	if (prlimit(p->c.tid, RLIMIT_CORE, &core, NULL) < 0)
		pr_debug("seccomp probe: cannot limit the core size of %d: %s", (int)p->c.tid,
			 strerror(errno));
	pr_debug("seccomp probe: %d (%d in the target) forked from thread %d", (int)p->c.tid,
		 (int)p->ns_pid, (int)p->t.tid);
	return 0;
}

/*
 * Make call nr(a) in the child (rt_sigreturn: on its own frame), one made
 * first if none lives. 0 if it returned (*ret), else the SECCOMP_O_* class
 * of what happened instead, the child then ended.
 */
static unsigned run(struct probe *p, long nr, const long *a, long *ret)
{
	unsigned o;
	int err;

	*ret = -ENOSYS;
	if (!p->c.tid && spawn(p))
		return SECCOMP_O_BAD;
	p->c.deadline_ns = clock_ns(CLOCK_MONOTONIC) + CALL_WAIT_NS;
	if (nr == SYS_rt_sigreturn)
		err = *ret = remote_sigreturn(&p->c);
	else
		err = remote_syscall(&p->c, nr, a[0], a[1], a[2], a[3], a[4], a[5], ret);
	p->c.deadline_ns = 0;
	if (nr == SYS_rt_sigreturn && !p->c.gone && !p->c.trapped && !p->c.timed_out)
		err = 0;	/* a refusal is the answer */
	if (p->c.gone)	/* killed by the filter, or lost for a reason unknown */
		o = p->c.exit_status != -1 && WIFSIGNALED(p->c.exit_status) &&
		    WTERMSIG(p->c.exit_status) == SIGSYS ? SECCOMP_O_KILL : SECCOMP_O_BAD;
	else if (err)
		o = SECCOMP_O_BAD;
	else if (p->c.timed_out)
		o = SECCOMP_O_NOTIF;
	else if (p->c.trapped)
		return SECCOMP_O_TRAP;	/* dropped: the child can go on */
	else
		return 0;
	pr_debug("seccomp probe: syscall %ld: %s in %d", nr, o == SECCOMP_O_KILL ? "killed" :
		 o == SECCOMP_O_NOTIF ? "no answer" : "lost", (int)p->c.tid);
	end_child(p);
	return o;
}

/* A helper call in the child, not judged: its result, or -ENOSYS if it did
 * not return (the child is then replaced at the next call). */
static long helper(struct probe *p, long nr, long a0, long a1, long a2, long a3, long a4)
{
	const long a[6] = { a0, a1, a2, a3, a4, 0 };
	long ret;

	return run(p, nr, a, &ret) ? -ENOSYS : ret;
}

/* ---- what a call did in the child ---- */

/* The target of the child's /proc/PID/fd/fd into buf; 0 or -errno. */
static int fd_link(struct probe *p, long fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int)p->c.tid, fd);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int is_memfd(struct probe *p, long fd)
{
	char l[128];

	return fd >= 0 && !fd_link(p, fd, l, sizeof(l)) && !strncmp(l, "/memfd:heapattach", 17);
}

/* Whether the child maps something at addr. */
static int mapped(struct probe *p, uint64_t addr)
{
	struct proc_maps m = { 0 };
	int found = !proc_maps_read(p->c.tid, &m) && proc_maps_find(&m, addr);

	proc_maps_free(&m);
	return found;
}

/* A free address for a region in the child (0 if none, or no child). */
static uint64_t free_addr(struct probe *p)
{
	uint64_t a = 0;

	if (!p->c.tid && spawn(p))
		return 0;
	return inject_candidates_for(p->c.tid, p->near, p->size, &a, 1) == 1 ? a : 0;
}

/* The arguments call i passes as far as they are known; the rest 0. */
static void known(const struct seccomp_call *c, long *a)
{
	for (int j = 0; j < 6; j++)
		a[j] = c->known & (1u << j) ? (long)c->args[j] : 0;
}

/* The verdict on a call that returned: allow if ok (it did what it does), else errno. */
static unsigned verdict(unsigned o, int ok)
{
	return o ? o : ok ? SECCOMP_O_ALLOW : SECCOMP_O_ERRNO;
}

/* ---- the calls ---- */

/* A resource made in the child: valid while the child that made it lives. */
struct made {
	long v;
	unsigned gen;
	int ok;
};

static int alive(const struct probe *p, const struct made *m)
{
	return m->ok && m->gen == p->gen && p->c.tid;
}

static void made_set(const struct probe *p, struct made *m, long v, int ok)
{
	m->v = v;
	m->gen = p->gen;
	m->ok = ok;
}

/* The remote calls: making, mapping and removing regions, as inject.c does. */
static void probe_remote(struct probe *p, const struct seccomp_call *c, unsigned *out)
{
	struct made fdx = { 0 }, fd = { 0 }, shared = { 0 }, resv = { 0 };
	long a[6], r;
	uint64_t at;
	unsigned o;

	known(&c[SC_MEMFD_EXEC], a);
	a[0] = (long)p->work + W_NAME;
	o = run(p, c[SC_MEMFD_EXEC].nr, a, &r);
	made_set(p, &fdx, r, !o && is_memfd(p, r));
	out[SC_MEMFD_EXEC] = verdict(o, fdx.ok);

	known(&c[SC_MEMFD], a);
	a[0] = (long)p->work + W_NAME;
	o = run(p, c[SC_MEMFD].nr, a, &r);
	made_set(p, &fd, r, !o && is_memfd(p, r));
	out[SC_MEMFD] = verdict(o, fd.ok);

	/* the fd inject.c would map: MFD_EXEC's if it worked */
	at = free_addr(p);
	known(&c[SC_MMAP_MEMFD], a);
	a[0] = (long)at;
	a[4] = alive(p, &fdx) ? fdx.v : alive(p, &fd) ? fd.v : -1;
	o = run(p, c[SC_MMAP_MEMFD].nr, a, &r);
	made_set(p, &shared, r, !o && at && (uint64_t)r == at);
	out[SC_MMAP_MEMFD] = verdict(o, shared.ok);

	known(&c[SC_CLOSE], a);
	a[0] = alive(p, &fd) ? fd.v : alive(p, &fdx) ? fdx.v : -1;
	o = run(p, c[SC_CLOSE].nr, a, &r);
	{
		char l[128];

		out[SC_CLOSE] = verdict(o, a[0] >= 0 && r == 0 && fd_link(p, a[0], l,
								       sizeof(l)) == -ENOENT);
	}

	at = free_addr(p);
	known(&c[SC_MMAP_ANON], a);
	a[0] = (long)at;
	o = run(p, c[SC_MMAP_ANON].nr, a, &r);
	out[SC_MMAP_ANON] = verdict(o, at && (uint64_t)r == at);
	if (!alive(p, &shared))
		made_set(p, &shared, r, out[SC_MMAP_ANON] == SECCOMP_O_ALLOW);

	/* the data view: a reservation, the shared pages moved onto it, made rw */
	at = free_addr(p);
	known(&c[SC_MMAP_RESV], a);
	a[0] = (long)at;
	o = run(p, c[SC_MMAP_RESV].nr, a, &r);
	made_set(p, &resv, r, !o && at && (uint64_t)r == at);
	out[SC_MMAP_RESV] = verdict(o, resv.ok);

	at = alive(p, &resv) ? (uint64_t)resv.v : free_addr(p);
	known(&c[SC_MREMAP], a);
	a[0] = alive(p, &shared) ? shared.v : 0;
	a[4] = (long)at;
	o = run(p, c[SC_MREMAP].nr, a, &r);
	out[SC_MREMAP] = verdict(o, a[0] && at && (uint64_t)r == at);

	known(&c[SC_MPROTECT], a);
	a[0] = (long)at;
	o = run(p, c[SC_MPROTECT].nr, a, &r);
	out[SC_MPROTECT] = verdict(o, at && r == 0 && mapped(p, at));

	known(&c[SC_MUNMAP], a);
	a[0] = (long)(at ? at : free_addr(p));
	a[1] = (long)p->size;
	o = run(p, c[SC_MUNMAP].nr, a, &r);
	out[SC_MUNMAP] = verdict(o, a[0] && r == 0 && !mapped(p, (uint64_t)a[0]));

	known(&c[SC_SIGRETURN], a);
	o = run(p, c[SC_SIGRETURN].nr, a, &r);
	out[SC_SIGRETURN] = verdict(o, r == 0);
}

/* The agent's calls: its stack copies, doorbell, waits, clock, pages. */
static void probe_agent(struct probe *p, const struct seccomp_call *c, unsigned *out)
{
	struct timespec ts;
	uint64_t got, chunk;
	long a[6], r;
	unsigned o;

	known(&c[SC_GETTID], a);
	o = run(p, c[SC_GETTID].nr, a, &r);
	out[SC_GETTID] = verdict(o, r == p->ns_pid);

	/* its own thread id, as the agent's stack copy passes */
	if (!p->c.tid && spawn(p))
		return;
	known(&c[SC_VM_READV], a);
	a[0] = p->ns_pid;
	a[1] = (long)(p->work + W_IOV);
	a[3] = (long)(p->work + W_IOV + sizeof(struct iovec));
	o = run(p, c[SC_VM_READV].nr, a, &r);
	out[SC_VM_READV] = verdict(o, r == sizeof(uint64_t) &&
				   !tmem_read(p->c.tid, p->work + W_DST, &got, sizeof(got)) &&
				   got == PATTERN);

	known(&c[SC_FUTEX_WAKE], a);
	a[0] = (long)(p->work + W_WORD);
	o = run(p, c[SC_FUTEX_WAKE].nr, a, &r);
	out[SC_FUTEX_WAKE] = verdict(o, r == 0);

	known(&c[SC_FUTEX_WAIT], a);
	a[0] = (long)(p->work + W_WORD);
	a[2] = 0;
	a[3] = (long)(p->work + W_SLEEP);
	o = run(p, c[SC_FUTEX_WAIT].nr, a, &r);
	out[SC_FUTEX_WAIT] = verdict(o, r == -ETIMEDOUT);

	known(&c[SC_YIELD], a);
	o = run(p, c[SC_YIELD].nr, a, &r);
	out[SC_YIELD] = verdict(o, r == 0);

	known(&c[SC_CLOCK], a);
	a[1] = (long)(p->work + W_TS);
	o = run(p, c[SC_CLOCK].nr, a, &r);
	out[SC_CLOCK] = verdict(o, r == 0 &&
			       !tmem_read(p->c.tid, p->work + W_TS, &ts, sizeof(ts)) &&
			       ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);

	known(&c[SC_GETPID], a);
	o = run(p, c[SC_GETPID].nr, a, &r);
	out[SC_GETPID] = verdict(o, r == p->ns_pid);

	known(&c[SC_LOCK_WAIT], a);
	a[0] = (long)(p->work + W_WORD);
	a[2] = 0;
	a[3] = (long)(p->work + W_SLEEP);
	o = run(p, c[SC_LOCK_WAIT].nr, a, &r);
	out[SC_LOCK_WAIT] = verdict(o, r == -ETIMEDOUT);

	known(&c[SC_LOCK_WAKE], a);
	a[0] = (long)(p->work + W_WORD);
	a[2] = 1;
	o = run(p, c[SC_LOCK_WAKE].nr, a, &r);
	out[SC_LOCK_WAKE] = verdict(o, r == 0);

	/* a ring's chunk: private pages here (the agent's are shared) */
	chunk = (uint64_t)helper(p, SYS_mmap, 0, SHM_RING_CHUNK, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1);
	known(&c[SC_POPULATE], a);
	a[0] = (long)chunk;
	o = run(p, c[SC_POPULATE].nr, a, &r);
	out[SC_POPULATE] = verdict(o, (long)chunk > 0 && r == 0);
}

/* ---- the target's side ---- */

/* Whether pid ignores SIGSYS: a trapped clone would reset that to the default. */
static int sigsys_ignored(pid_t pid)
{
	char v[32];

	if (proc_status_read(pid, "SigIgn", v, sizeof(v)))
		return 1;	/* cannot tell */
	return (int)((strtoull(v, NULL, 16) >> (SIGSYS - 1)) & 1);
}

/* The work area's constants, into the target at p->work. 0 or -errno. */
static int write_work(struct probe *p)
{
	uint8_t w[W_SIZE];
	const struct iovec iov[2] = {
		{ (void *)(p->work + W_DST), sizeof(uint64_t) },
		{ (void *)(p->work + W_SRC), sizeof(uint64_t) },
	};
	const struct timespec sleep = { 0, SLEEP_NS };
	const uint64_t pattern = PATTERN;

	memset(w, 0, sizeof(w));
	memcpy(w + W_NAME, "heapattach", sizeof("heapattach"));
	memset(w + W_TS, 0xff, sizeof(struct timespec));	/* no time */
	memcpy(w + W_SLEEP, &sleep, sizeof(sleep));
	memcpy(w + W_IOV, iov, sizeof(iov));
	memcpy(w + W_SRC, &pattern, sizeof(pattern));
	return tmem_write(p->t.tid, p->work, w, sizeof(w));
}

/*
 * Lay the child's stack out below tid's stack pointer: the exit frame
 * (remote_exit_frame) the child is born on, and the work area above it.
 * -EAGAIN when the stack mapping does not reach far enough.
 */
static int prepare(struct probe *p)
{
	struct proc_maps maps = { 0 };
	const struct proc_map *m;
	uint64_t sp, top;
	int err;

	err = remote_get_sp(p->t.tid, &sp);
	if (!err)
		err = proc_maps_read(p->t.tid, &maps);
	if (err)
		return err;
	m = proc_maps_find(&maps, sp - 1);
	if (!m || !(m->prot & PROC_MAP_W) || sp - m->start < ROOM) {
		proc_maps_free(&maps);
		return -EAGAIN;
	}
	proc_maps_free(&maps);
	top = (sp - T_FRAMES - GAP - W_SIZE - WORK_OFF) & ~(uint64_t)63;
	p->work = top + WORK_OFF;
	err = remote_exit_frame(&p->t, top, &p->stack);
	if (!err && top - p->stack > EXIT_FRAME_MAX)
		err = -E2BIG;
	if (!err)
		err = write_work(p);
	return err;
}

/*
 * wait4 on each zombie, in the live child first (none: nothing is reaped),
 * then in the target where the child's ran; the child itself ends, a
 * zombie too.
 */
static void reap(struct probe *p)
{
	long a[6] = { 0, 0, __WALL | WNOHANG, 0, 0, 0 }, r;

	for (size_t i = 0; i < p->nz && p->c.tid; i++) {
		a[0] = p->zombies[i];
		p->reap_ok[i] = !run(p, SYS_wait4, a, &r) && r == -ECHILD;
	}
	end_child(p);
	for (size_t i = 0; i < p->nz; i++) {
		int err = -EPERM;

		r = 0;
		if (p->reap_ok[i])
			err = remote_syscall(&p->t, SYS_wait4, p->zombies[i], 0, __WALL | WNOHANG,
					     0, 0, 0, &r);
		if (err || r != p->zombies[i])
			pr_debug("seccomp probe: %d left a zombie in the target (%s)",
				 (int)p->zombies[i], err ? strerror(-err) : "not reaped");
	}
}

int seccomp_probe_run(pid_t pid, pid_t tid, const struct seccomp_params *pp, unsigned *out,
		      char *why, size_t whylen)
{
	struct seccomp_call c[SC_NCALLS];
	struct gadgets g;
	struct probe p = { .why = why, .whylen = whylen };
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int err;

	why[0] = '\0';
	for (int i = 0; i < SC_NCALLS; i++)
		out[i] = SECCOMP_O_BAD;
	if (sigsys_ignored(pid))
		return say(&p, -EPERM, "it ignores SIGSYS, which a trap on the clone would reset");
	remote_ctx_init(&p.t, pid, tid);
	p.t.flags = REMOTE_F_SECCOMP_TRAP;
	err = gadgets_get(pid, tid, &g);
	if (err)
		return say(&p, err, "no syscall gadget: %s", strerror(-err));
	p.near = g.syscall_ret;
	p.size = (pp->region_size + 4095) & ~(size_t)4095;
	if (p.size < 4096)
		p.size = 4096;
	err = prepare(&p);
	if (err == -EAGAIN)
		return err;
	if (err)
		return say(&p, err, "no stack for the copy: %s", strerror(-err));
	err = spawn(&p);
	if (!err) {
		seccomp_plan_calls(pp, c);
		probe_remote(&p, c, out);
		probe_agent(&p, c, out);
	}
	reap(&p);
	pr_debug("seccomp probe of thread %d: %u cop%s in %.1f ms", (int)tid, p.gen,
		 p.gen == 1 ? "y" : "ies", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	return err;
}
