/* Several targets from one heapattach: a session per process (-p PID,PID,... and --tree PID). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/debugfile.h"
#include "model/elfobj.h"
#include "model/hooks.h"
#include "model/proc.h"
#include "model/proctree.h"
#include "model/target.h"
#include "model/tfile.h"
#include "ptrace/gadgets.h"
#include "session/fleet.h"
#include "session/fleettop.h"
#include "session/session.h"

#define SCAN_MS 100
#define TOP_EVERY_NS 1000000000ULL

/* One process of the run: its session's process while one runs. */
struct member {
	pid_t target;
	pid_t child;            /* its session's heapattach process; 0: none now */
	unsigned gen;           /* sessions started for it (a new one after each exec) */
	int code;               /* the last session's exit code; -1: none ended yet */
	int given;              /* named on the command line: its failure counts */
	int done;               /* no session will be started for it again */
	struct proctree_image img;   /* the image its last session attached to */
	uint64_t prev_alloc;    /* --top: its slot's alloc_bytes at the last refresh */
};

struct fleet {
	const struct fleet_config *fc;
	struct member *m;
	size_t n, cap;
	pid_t self;
	int sfd;                /* signalfd of the signals below */
	sigset_t sigs;
	int stopping;           /* a stop signal or the duration: start nothing more */
	uint64_t deadline;      /* CLOCK_MONOTONIC end of --duration; 0: none */
	size_t started;
	struct fleet_slot *slots;    /* FLEET_MAX, shared with the sessions, or NULL */
	uint64_t t0, top_ns;         /* the run's start; --top's last refresh */
};

char *fleet_output(const char *output, pid_t pid, unsigned gen)
{
	size_t len, stem;
	char tag[40];
	char *s;

	if (gen > 1)
		snprintf(tag, sizeof(tag), ".%d-%u.heap", (int)pid, gen);
	else
		snprintf(tag, sizeof(tag), ".%d.heap", (int)pid);
	if (!output)
		output = "heapattach";
	len = strlen(output);
	stem = len > 5 && !strcmp(output + len - 5, ".heap") ? len - 5 : len;
	s = xmalloc(stem + strlen(tag) + 1);
	memcpy(s, output, stem);
	strcpy(s + stem, tag);
	return s;
}

static struct member *find_target(struct fleet *f, pid_t pid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->m[i].target == pid)
			return &f->m[i];
	return NULL;
}

static struct member *add_member(struct fleet *f, pid_t pid, int given)
{
	struct member *m;

	if (f->n == FLEET_MAX)
		return NULL;
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->m = xrealloc(f->m, f->cap * sizeof(*f->m));
	}
	m = &f->m[f->n++];
	memset(m, 0, sizeof(*m));
	m->target = pid;
	m->code = -1;
	m->given = given;
	return m;
}

/* In the new session's process: signals as a lone heapattach has them,
 * its messages tagged with its target, then the session. Never returns. */
static void run_one(struct fleet *f, struct member *m, uint64_t duration_ns)
{
	struct session_config c = *f->fc->run;
	static char prefix[48];
	sigset_t none;
	int code;

	prctl(PR_SET_PDEATHSIG, SIGTERM);	/* the run killed: detach and write */
	if (getppid() != f->self)
		_exit(1);
	close(f->sfd);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	snprintf(prefix, sizeof(prefix), "heapattach[%d]: ", (int)m->target);
	log_prefix = prefix;
	c.pid = m->target;
	c.output = fleet_output(f->fc->run->output, m->target, m->gen);
	c.label_pid = 1;
	c.duration_ns = duration_ns;
	c.top = 0;
	if (f->slots) {
		c.slot = &f->slots[m - f->m];
		memset(c.slot, 0, sizeof(*c.slot));
	}
	code = f->fc->before ? f->fc->before(&c, f->fc->before_arg) : 0;
	if (!code)
		code = session_run(&c);
	fflush(NULL);
	_exit(code);
}

/* Start a session for m in a process of its own. 0 or -errno. */
static int start(struct fleet *f, struct member *m)
{
	uint64_t left = 0;
	pid_t ch;

	if (f->deadline) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);

		if (now + 100000000ULL >= f->deadline)
			return -ETIME;
		left = f->deadline - now;
	}
	if (proctree_image(m->target, &m->img))
		memset(&m->img, 0, sizeof(m->img));
	m->gen++;
	fflush(NULL);
	ch = fork();
	if (ch < 0)
		return -errno;
	if (ch == 0)
		run_one(f, m, left);
	m->child = ch;
	f->started++;
	return 0;
}

/* The process is still there and runs another image than its last
 * session attached to (an exec, or a reused pid): 1, else 0. */
static int new_image(const struct member *m)
{
	struct proctree_image now;

	if (proctree_image(m->target, &now))
		return 0;
	return now.dev != m->img.dev || now.ino != m->img.ino || now.start != m->img.start;
}

/* Collect every session that ended; in a tree, a process that exec'd
 * gets a new one. */
static void reap(struct fleet *f)
{
	int status;
	pid_t ch;

	while ((ch = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < f->n; i++) {
			struct member *m = &f->m[i];

			if (m->child != ch)
				continue;
			m->child = 0;
			m->code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
			m->done = 1;
			if (f->fc->tree && !f->stopping &&
			    ((f->slots && f->slots[i].execd) || new_image(m)))
				m->done = 0;	/* the next scan attaches to the new image */
			break;
		}
	}
}

/* --tree: attach to the descendants not yet seen (those another tracer
 * holds, as a just-forked child is until its parent's session hands it
 * back, on a later scan). 0, or -ENOENT once the root is gone. */
static int scan(struct fleet *f, pid_t *buf)
{
	size_t n;
	int rc;

	rc = proctree_descendants(f->fc->pids[0], buf, FLEET_MAX, &n);
	if (rc == -ENOENT)
		n = 0;	/* the root is gone: its exec'd descendants may still wait */
	if (rc == -ENOTSUP) {
		pr_warn("--tree: this kernel does not list a process's children "
			"(/proc/PID/task/TID/children): only %d is profiled", (int)f->fc->pids[0]);
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++) {
		int ours = buf[i] == f->self;

		for (size_t k = 0; !ours && k < f->n; k++)
			ours = f->m[k].child == buf[i];
		if (!ours && !find_target(f, buf[i]))
			add_member(f, buf[i], 0);	/* NULL at FLEET_MAX: said at the end */
	}
	/* the new ones, and those that exec'd (the root too) */
	for (size_t i = 0; i < f->n; i++) {
		struct member *m = &f->m[i];

		if (!m->done && !m->child && proc_tracer(m->target) <= 0 && start(f, m))
			m->done = 1;
	}
	return rc == -ENOENT ? rc : 0;
}

static size_t running(const struct fleet *f)
{
	size_t k = 0;

	for (size_t i = 0; i < f->n; i++)
		k += f->m[i].child != 0;
	return k;
}

static void signal_all(const struct fleet *f, int sig)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->m[i].child)
			kill(f->m[i].child, sig);
}

/* Read the signals that arrived: stop requests are passed on to every
 * session, as is SIGUSR1. */
static void on_signals(struct fleet *f)
{
	struct signalfd_siginfo si;

	while (read(f->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;	/* reap() runs after every wake */
		if (si.ssi_signo == SIGUSR1) {
			signal_all(f, SIGUSR1);
			continue;
		}
		f->stopping = 1;
		signal_all(f, (int)si.ssi_signo);
	}
}

/* --top: the table, once a second. */
static void top_refresh(struct fleet *f)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct fleettop_line *l;
	struct winsize ws = { 0 };
	double dt = f->top_ns ? (now - f->top_ns) / 1e9 : 0;

	if (!f->slots || !f->fc->top || (f->top_ns && now - f->top_ns < TOP_EVERY_NS))
		return;
	l = xcalloc(f->n ? f->n : 1, sizeof(*l));
	for (size_t i = 0; i < f->n; i++) {
		struct member *m = &f->m[i];
		const struct fleet_slot *sl = &f->slots[i];
		uint64_t alloc = __atomic_load_n(&sl->alloc_bytes, __ATOMIC_RELAXED);

		l[i].pid = m->target;
		l[i].state = m->child ? (sl->attached ? "attached" : "attaching") :
			     m->code == 0 || m->code >= 3 ? "ended" : "failed";
		l[i].live = __atomic_load_n(&sl->live, __ATOMIC_RELAXED);
		l[i].events = __atomic_load_n(&sl->events, __ATOMIC_RELAXED);
		l[i].rate = alloc > m->prev_alloc && dt > 0 ? (uint64_t)((alloc - m->prev_alloc) / dt) : 0;
		m->prev_alloc = alloc;
	}
	ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	fleettop_draw(stdout, isatty(STDOUT_FILENO), ws.ws_row, l, f->n, now - f->t0);
	free(l);
	f->top_ns = now;
}

/*
 * Before the first session: read the objects pid maps (its code and their
 * debug files) with its access, and resolve its hooks, as its session
 * would, so that every session forked after has them read (elfobj's cache),
 * their code disassembled (hooks_code.c), their symbols indexed by name
 * and its gadgets found (gadgets.c): the processes of a
 * service map the same files, and each session read them all again
 * (64 processes: most of the CPU their attaches took).
 */
static void warm(pid_t pid)
{
	struct target *t = target_new(pid, pid);
	const struct proc_maps *maps = t ? target_maps(t) : NULL;
	int root = t ? tfile_root(pid) : -1;

	struct hook_set set = { 0 };
	struct gadgets g;

	if (maps && !hooks_resolve_target(t, pid, maps, &set))
		hooks_free(&set);	/* its code's branches kept (hooks_code.c) */
	if (maps)
		gadgets_get(pid, pid, &g);	/* a worker's are where its master's are */
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		struct elfobj *e, *dbg;
		int err;

		if (!(m->prot & PROC_MAP_X) || !m->path || m->path[0] != '/')
			continue;
		e = target_object(t, m, TARGET_OBJ_SYMS, &err);
		if (e)
			elfobj_index_names(e);	/* glibcfind.c's lookups, the dumps' */
		if (e && root >= 0 && (dbg = debugfile_open(e, root, pid, m->path, NULL))) {
			elfobj_index_names(dbg);
			elfobj_free(dbg);	/* kept by the cache */
		}
	}
	if (root >= 0)
		close(root);
	target_free(t);
}

/* The exit code: the gravest of the sessions' that count. */
static int outcome(const struct fleet *f)
{
	static const int grave[] = { 1, 4, 5, 3 };
	size_t wrote = 0, failed = 0;

	for (size_t i = 0; i < f->n; i++) {
		int c = f->m[i].code;

		wrote += c == 0 || c >= 3;
		failed += c == 1 || c == 2;
	}
	fprintf(stderr, "heapattach: %zu process%s profiled, %zu not%s\n", wrote,
		wrote == 1 ? "" : "es", failed, f->n == FLEET_MAX ? " (and more not: at most "
		"4096 processes a run)" : "");
	for (size_t g = 0; g < sizeof(grave) / sizeof(grave[0]); g++)
		for (size_t i = 0; i < f->n; i++)
			if (f->m[i].code == grave[g] && (f->m[i].given || grave[g] != 1))
				return grave[g];
	return wrote ? 0 : 1;
}

int fleet_run(const struct fleet_config *fc)
{
	struct fleet f = { .fc = fc, .self = getpid(), .sfd = -1 };
	pid_t *buf = xmalloc(FLEET_MAX * sizeof(*buf));
	int code, root_gone = 0;

	sigemptyset(&f.sigs);
	sigaddset(&f.sigs, SIGINT);
	sigaddset(&f.sigs, SIGTERM);
	sigaddset(&f.sigs, SIGHUP);
	sigaddset(&f.sigs, SIGUSR1);
	sigaddset(&f.sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &f.sigs, NULL);
	f.sfd = signalfd(-1, &f.sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (f.sfd < 0) {
		pr_perror("signalfd");
		free(buf);
		return 1;
	}
	f.t0 = clock_ns(CLOCK_MONOTONIC);
	f.top_ns = f.t0;
	if (fc->run->duration_ns)
		f.deadline = f.t0 + fc->run->duration_ns;
	f.slots = mmap(NULL, FLEET_MAX * sizeof(*f.slots), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f.slots == MAP_FAILED) {
		pr_perror("mmap of the sessions' figures");	/* no --top, no exec seen */
		f.slots = NULL;
	}
	elfobj_cache_start();
	warm(fc->pids[0]);
	for (size_t i = 0; i < fc->npids; i++) {
		struct member *m = find_target(&f, fc->pids[i]);

		if (m)
			continue;	/* named twice: one session */
		m = add_member(&f, fc->pids[i], 1);
		if (m && start(&f, m)) {
			pr_perror("cannot start a session for %d", (int)fc->pids[i]);
			m->code = 1;
			m->done = 1;
		}
	}
	for (;;) {
		struct pollfd p = { .fd = f.sfd, .events = POLLIN };

		reap(&f);
		if (f.deadline && clock_ns(CLOCK_MONOTONIC) >= f.deadline)
			f.stopping = 1;	/* the sessions end by their own --duration */
		if (fc->tree && !f.stopping && !root_gone)
			root_gone = scan(&f, buf) == -ENOENT;
		if (!running(&f) && (!fc->tree || f.stopping || root_gone))
			break;
		top_refresh(&f);
		if (poll(&p, 1, SCAN_MS) > 0)
			on_signals(&f);
	}
	f.top_ns = 0;
	top_refresh(&f);	/* the last figures of each */
	code = outcome(&f);
	close(f.sfd);
	sigprocmask(SIG_UNBLOCK, &f.sigs, NULL);
	if (f.slots)
		munmap(f.slots, FLEET_MAX * sizeof(*f.slots));
	free(f.m);
	free(buf);
	return code;
}
