/* The traced thread set: seize, interrupt, resume and detach every thread of a target. */
/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/proc.h"
#include "ptrace/tracee.h"

#define TRACE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
		       PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_TRACESYSGOOD)
#define PF_KTHREAD 0x00200000

int tracee_stopping;

/* ---- the thread set ---- */

struct thread *tracee_find(struct tracee *tr, pid_t tid)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].tid == tid)
			return &tr->t[i];
	return NULL;
}

/* Add tid (or return the existing entry). Pointers into the set are invalidated. */
struct thread *tracee_add(struct tracee *tr, pid_t tid, enum thread_state st)
{
	struct thread *th = tracee_find(tr, tid);

	if (th)
		return th;
	if (tr->n == tr->cap) {
		tr->cap = tr->cap ? tr->cap * 2 : 16;
		tr->t = xrealloc(tr->t, tr->cap * sizeof(*tr->t));
	}
	th = &tr->t[tr->n++];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->state = st;
	return th;
}

void tracee_remove(struct tracee *tr, pid_t tid)
{
	struct thread *th = tracee_find(tr, tid);

	if (th)
		*th = tr->t[--tr->n];
}

void tracee_release(struct tracee *tr)
{
	free(tr->t);
	tr->t = NULL;
	tr->n = tr->cap = 0;
}

/* ---- checks before attaching ---- */

/* A small file's text into out (truncated to len - 1 bytes); 0 or -errno. */
static int read_file(const char *path, char *out, size_t len)
{
	char *buf;
	size_t n;
	int rc = proc_read_file(path, &buf, &n);

	if (rc)
		return rc;
	snprintf(out, len, "%s", buf);
	free(buf);
	return 0;
}

/* Flags word (field 9) of /proc/PID/stat, or 0 if unreadable. */
static unsigned long stat_flags(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)))
		return 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return 0;
	return flags;
}

/* Non-zero if thread tid of pid has exited (a zombie, dead, or gone). */
static int thread_dead(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_file(path, buf, sizeof(buf)))
		return 1;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

pid_t tracee_live_tid(pid_t pid)
{
	pid_t *tids = NULL, live = 0;
	size_t n = 0;

	if (!thread_dead(pid, pid))
		return pid;
	if (proc_tasks_read(pid, &tids, &n))
		return 0;
	for (size_t i = 0; i < n && !live; i++)
		if (tids[i] != pid && !thread_dead(pid, tids[i]))
			live = tids[i];
	free(tids);
	return live;
}

/* Explain an EPERM from PTRACE_SEIZE: another tracer, another owner, Yama. */
static void diagnose_eperm(pid_t pid)
{
	char val[256], comm[64], scope[16] = "";
	long tracer = proc_tracer(tracee_live_tid(pid) ? tracee_live_tid(pid) : pid);

	if (tracer > 0) {
		proc_comm_read((pid_t)tracer, comm, sizeof(comm));
		pr_err("cannot attach to %d: it is already traced by process %ld (%s)",
		       pid, tracer, comm);
		return;
	}
	read_file("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope));
	scope[strcspn(scope, "\n")] = 0;
	if (!proc_status_read(pid, "Uid", val, sizeof(val))) {
		unsigned ruid, euid;

		if (sscanf(val, "%u %u", &ruid, &euid) == 2 && geteuid() != 0 &&
		    (euid != geteuid() || ruid != getuid())) {
			pr_err("cannot attach to %d: permission denied: it belongs to uid %u "
			       "and we run as uid %u without CAP_SYS_PTRACE", pid, euid, geteuid());
			return;
		}
	}
	if (scope[0] && scope[0] != '0') {
		pr_err("cannot attach to %d: permission denied by Yama "
		       "(kernel.yama.ptrace_scope=%s: only a parent or a process with "
		       "CAP_SYS_PTRACE may attach; try as root or set the sysctl to 0)", pid, scope);
		return;
	}
	pr_err("cannot attach to %d: permission denied (missing CAP_SYS_PTRACE? "
	       "a seccomp or LSM policy?)", pid);
}

/* Said when heapattach is PID 1 of its PID namespace, as in a sidecar
 * container that does not share its target's: it sees no other process. */
#define OWN_PIDNS " (heapattach is PID 1 of its own PID namespace: share the target's, " \
	"e.g. --pid=container:NAME, kubectl debug --target=NAME, shareProcessNamespace)"

int tracee_probe(pid_t pid, pid_t *live)
{
	char path[64], val[64], comm[64];
	struct stat st;

	if (pid == getpid()) {
		pr_err("cannot attach to %d: that is heapattach itself%s", pid,
		       pid == 1 ? OWN_PIDNS : "");
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) || (kill(pid, 0) && errno == ESRCH)) {
		pr_err("cannot attach to %d: no such process%s", pid,
		       getpid() == 1 ? OWN_PIDNS : "");
		return -ESRCH;
	}
	if (!proc_status_read(pid, "Tgid", val, sizeof(val)) && atol(val) != pid) {
		pr_err("cannot attach to %d: it is a thread of process %s; give the process id",
		       pid, val);
		return -EINVAL;
	}
	if (stat_flags(pid) & PF_KTHREAD) {
		proc_comm_read(pid, comm, sizeof(comm));
		pr_err("cannot attach to %d (%s): it is a kernel thread, it has no heap",
		       pid, comm);
		return -EINVAL;
	}
	/* A leader that called pthread_exit is a zombie too, but its other
	 * threads run: only a process without a live thread is one. */
	*live = tracee_live_tid(pid);
	if (!*live) {
		pr_err("cannot attach to %d: it is a zombie (exited, not yet reaped)", pid);
		return -ESRCH;
	}
	return 0;
}

int tracee_check(pid_t pid)
{
	pid_t live;
	int rc;

	rc = tracee_probe(pid, &live);
	if (rc)
		return rc;
	if (proc_tracer(live) > 0) {
		diagnose_eperm(pid);
		return -EBUSY;
	}
	return 0;
}

/* ---- stopping and resuming ---- */

static int is_group_stop(int status)
{
	int sig = WSTOPSIG(status);

	return (status >> 16) == PTRACE_EVENT_STOP &&
	       (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU);
}

/* Interrupt th unless it is stopped: again even if an interrupt is
 * outstanding, since any stop it entered after that one used it up (the
 * stops it stood in before are collected first: take_reported). */
static int interrupt_one(struct thread *th)
{
	if (th->state == TS_STOPPED)
		return 0;
	if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) < 0)
		return -errno;
	th->interrupted = 1;
	return 0;
}

/*
 * A leader that exited while other threads run is a zombie whose exit the
 * kernel reports only after theirs: it never stops again and nothing waits
 * for it. Forget it (th is then replaced by the set's last entry) and
 * return 1; 0 if th is anything else.
 */
static int drop_dead_leader(struct tracee *tr, struct thread *th)
{
	if (th->tid != tr->pid || tr->n == 1 || !thread_dead(tr->pid, th->tid))
		return 0;
	pr_debug("the leader %d has exited; its other threads go on", th->tid);
	tracee_remove(tr, th->tid);
	return 1;
}

/* One status from waitpid while stopping everyone: our interrupt's stop
 * or a group stop marks the thread stopped, anything else goes to fn. */
static int take_stop(struct tracee *tr, pid_t tid, int status, tracee_event_fn fn, void *arg)
{
	struct thread *th = tracee_find(tr, tid);

	if (th && WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP &&
	    th->interrupted && !is_group_stop(status)) {
		th->interrupted = 0;
		th->state = TS_STOPPED;
		return 0;
	}
	if (th && WIFSTOPPED(status) && is_group_stop(status)) {
		/* A group stop counts as stopped; it also consumes our interrupt. */
		th->interrupted = 0;
		th->state = TS_STOPPED;
		th->pending_sig = -1;	/* resume with PTRACE_LISTEN */
		return 0;
	}
	return fn(arg, tid, status);
}

/* Wait for every thread to be TS_STOPPED, feeding other stops to fn. */
static int wait_all_stopped(struct tracee *tr, tracee_event_fn fn, void *arg)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int status, rc = 0;
	pid_t tid;

	tr->unstopped = 0;
	tracee_stopping++;
	for (;;) {
		struct thread *th;
		size_t i;

		for (i = 0; i < tr->n && tr->t[i].state == TS_STOPPED; i++)
			;
		if (i == tr->n)
			break;
		if (clock_ns(CLOCK_MONOTONIC) - t0 >= TRACEE_STOP_WAIT_MS * 1000000ULL) {
			tr->unstopped = tr->t[i].tid;
			rc = -ETIMEDOUT;
			break;
		}
		/* a dead leader is looked for only when nothing else is pending
		 * (its /proc file read at each stop cost 0.1 s in 4000) */
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid == 0) {
			th = tracee_find(tr, tr->pid);
			if (th && th->state != TS_STOPPED && drop_dead_leader(tr, th))
				continue;
			tid = waitpid(-1, &status, __WALL);
		}
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		rc = take_stop(tr, tid, status, fn, arg);
		if (rc)
			break;
	}
	tracee_stopping--;
	return rc;
}

/*
 * Collect the stops already reported, before any interrupt is sent: an
 * interrupt sent to a thread that stands in an uncollected stop stays
 * pending in the kernel (only a stop entered after it clears it), so the
 * next resume would stop the thread again at once, before it ran, and a
 * caller that resumes and re-stops a thread in rounds (implant_wait_quiet)
 * would hold it there for good.
 */
static int take_reported(struct tracee *tr, tracee_event_fn fn, void *arg)
{
	int status, rc = 0;
	pid_t tid;

	tracee_stopping++;
	while (!rc && ((tid = waitpid(-1, &status, __WALL | WNOHANG)) > 0 ||
		       (tid < 0 && errno == EINTR)))
		if (tid > 0)
			rc = take_stop(tr, tid, status, fn, arg);
	tracee_stopping--;
	return rc;
}

int tracee_thread_alive(pid_t pid, pid_t tid)
{
	return syscall(SYS_tgkill, pid, tid, 0) == 0 || errno != ESRCH;
}

int tracee_stop_all(struct tracee *tr, tracee_event_fn fn, void *arg)
{
	int rc = take_reported(tr, fn, arg);

	if (rc)
		return rc;
	for (size_t i = 0; i < tr->n;) {
		int rc = interrupt_one(&tr->t[i]);

		if (rc == -ESRCH && !tracee_thread_alive(tr->pid, tr->t[i].tid)) {
			tracee_remove(tr, tr->t[i].tid);	/* gone and reaped */
			continue;
		}
		i++;
		if (rc && rc != -ESRCH)
			return rc;	/* -ESRCH: exiting, its exit status will arrive */
	}
	return wait_all_stopped(tr, fn, arg);
}

int tracee_resume(struct tracee *tr, struct thread *th)
{
	long rc;

	if (th->pending_sig == -1) {
		rc = ptrace(PTRACE_LISTEN, th->tid, 0, 0);
		th->pending_sig = 0;
		th->state = TS_LISTENING;
	} else {
		rc = ptrace(tr->syscall_stops ? PTRACE_SYSCALL : PTRACE_CONT, th->tid, 0,
			    (void *)(long)th->pending_sig);
		th->pending_sig = 0;
		th->state = TS_RUNNING;
	}
	return rc < 0 ? -errno : 0;
}

int tracee_resume_all(struct tracee *tr)
{
	int rc = 0;

	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].state == TS_STOPPED) {
			int r = tracee_resume(tr, &tr->t[i]);

			if (r && r != -ESRCH)
				rc = r;
		}
	return rc;
}

void tracee_detach_all(struct tracee *tr)
{
	for (size_t i = 0; i < tr->n; i++) {
		struct thread *th = &tr->t[i];
		int sig = th->pending_sig > 0 ? th->pending_sig : 0;

		ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)sig);
	}
	tr->n = 0;
}

/* ---- seizing ---- */

static int seize_new_threads(struct tracee *tr, int *added)
{
	pid_t *tids = NULL;
	size_t n = 0;
	int rc;

	*added = 0;
	rc = proc_tasks_read(tr->pid, &tids, &n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct thread *th;

		if (tracee_find(tr, tids[i]))
			continue;
		if (ptrace(PTRACE_SEIZE, tids[i], 0, (void *)(long)TRACE_OPTIONS) < 0) {
			/* exited meanwhile; an exited thread (a leader that
			 * called pthread_exit) answers EPERM, and so does a
			 * thread that a seized one just created (traced by us
			 * already: its first stop comes through the events) */
			if (errno == ESRCH || (errno == EPERM && (thread_dead(tr->pid, tids[i]) ||
								  proc_tracer(tids[i]) == getpid())))
				continue;
			rc = -errno;
			goto out;
		}
		th = tracee_add(tr, tids[i], TS_RUNNING);
		interrupt_one(th);
		(*added)++;
	}
out:
	free(tids);
	return rc;
}

int tracee_seize(struct tracee *tr, pid_t pid)
{
	int added, rc;

	memset(tr, 0, sizeof(*tr));
	tr->pid = pid;
	do {
		rc = seize_new_threads(tr, &added);
		if (rc)
			goto err;
	} while (added);
	if (!tr->n) {
		pr_err("cannot attach to %d: it exited", pid);
		return -ESRCH;
	}
	return 0;
err:
	if (rc == -EPERM && !tr->n)
		diagnose_eperm(pid);
	else if (rc == -ESRCH)
		pr_err("cannot attach to %d: no such process", pid);
	else
		pr_err("cannot attach to %d: %s", pid, strerror(-rc));
	for (size_t i = 0; i < tr->n; i++)
		ptrace(PTRACE_DETACH, tr->t[i].tid, 0, 0);
	tracee_release(tr);
	return rc;
}
