/* One profiling run: attach, collect until told to stop, dump, detach. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "implant/forkchild.h"
#include "implant/implant.h"
#include "implant/recover.h"
#include "model/debugfetch.h"
#include "model/jvmasker.h"
#include "model/jvmattach.h"
#include "model/perfmap.h"
#include "model/target.h"
#include "model/zsection.h"
#include "output/dump.h"
#include "output/topview.h"
#include "output/wrapfind.h"
#include "profile/profile.h"
#include "profile/skipsites.h"
#include "ptrace/events.h"
#include "python/pyattach.h"
#include "session/fleet.h"
#include "session/membudget.h"
#include "session/session.h"
#include "session/state.h"
#include "stacks/symbolize.h"
#include "stacks/unwind.h"

static struct session *live_session;

struct retiring {
	struct session *s;
	const struct proc_maps *old;
};

/* profile_map_pcs callback: a stand-in for a frame in code that is gone. */
static uint64_t retire_pc(void *arg, uint64_t pc)
{
	struct retiring *r = arg;
	const struct proc_map *o = proc_maps_find(r->old, pc - 1), *n;

	if (!o || !(o->prot & PROC_MAP_X) || !o->path)
		return pc;
	n = proc_maps_find(target_maps(r->s->t), pc - 1);
	if (n && proc_map_same(o, n))
		return pc;
	return symbolizer_retire(r->s->sym, r->old, pc);
}

/*
 * target_on_change listener (TARGET_ON_NAMES, the first): the frames recorded so far in code
 * that is gone (dlclose, or another library in its range) keep the names
 * they had, through stand-ins (symbolizer_retire), before the symbolizer
 * and the target drop that code's objects; the stack ids the agent sends
 * are reset by the agent link's listener. Events still in the rings when
 * the change is seen are recorded after it: a library swapped within
 * watch_maps' period can lend its names to the other's last frames.
 */
static void on_code_change(void *arg, const struct proc_maps *old)
{
	struct retiring r = { arg, old };
	size_t n = 0;

	if (r.s->prof && r.s->sym)
		n = profile_map_pcs(r.s->prof, retire_pc, &r);
	pr_debug("the target's code mappings changed (generation %llu): %zu stacks keep old names",
		 (unsigned long long)target_generation(r.s->t), n);
}


/*
 * Whether symbols may still be read before the attach: while half of
 * --duration is left since t0, when heapattach started. Never in a run
 * over several processes (label_pid), whose sessions attach at once and
 * would each read the same objects first (64 nginx workers: seconds), nor
 * in tests with HEAPATTACH_TEST_HOLD_ONLY=1, so that the dump reads every
 * object, as after a short --duration on a loaded machine.
 */
static int warm_may_load(const struct session *s, uint64_t t0)
{
	const char *v = getenv("HEAPATTACH_TEST_HOLD_ONLY");
	uint64_t d = s->opt->duration_ns;

	if ((v && *v == '1') || s->opt->label_pid)
		return 0;	/* several processes: each session's dump reads them */
	return !d || clock_ns(CLOCK_MONOTONIC) - t0 < d / 2;
}

/*
 * Before the attach, while the target runs untouched: make every object
 * of the maps the hooks were resolved in nameable by a dump, even one
 * written after the target is gone. One at a time, as long as no stop is
 * asked for: its files opened (symbolizer_hold, with what debuginfod
 * adds), then its symbols and DWARF read (tens of milliseconds for a big
 * object, hundreds on a loaded machine) while warm_may_load and no fetch
 * for it was put off, else left for the dump's first lookup to read.
 * Never after the attach, where nothing would drain the rings meanwhile:
 * an object mapped after it is opened by a dump's lookup, which may find
 * its files gone with the target.
 */
static void warm_all(struct session *s, uint64_t t0)
{
	uint64_t w0 = clock_ns(CLOCK_MONOTONIC);
	size_t taken[2] = { 0, 0 };	/* only opened, read */
	struct sym_info si;

	for (size_t i = 0; s->sym && i < s->maps.n && !session_stop_signal; i++) {
		const struct proc_map *m = &s->maps.v[i];
		int load;

		if (!(m->prot & PROC_MAP_X) || !m->path || m->path[0] != '/')
			continue;
		load = symbolizer_hold(s->sym, m->start) == 0 && warm_may_load(s, t0);
		if (load)
			symbolizer_lookup(s->sym, m->start, &si);
		taken[load]++;
	}
	pr_debug("symbols of %zu code mappings read before the attach, of %zu more only opened "
		 "(the dump reads them), in %.1f ms", taken[1], taken[0],
		 (clock_ns(CLOCK_MONOTONIC) - w0) / 1e6);
}


/* memreport's large blocks beyond the profile's: what the backend accounts. */
static void more_big(void *arg, void (*add)(uint64_t ptr, uint64_t size, void *a), void *a)
{
	struct session *s = arg;

	if (s->mode->big_blocks)
		s->mode->big_blocks(s, add, a);
}

/* ---- the stops of the target ---- */

static void on_fork_child(void *arg, pid_t child)
{
	struct session *s = arg;

	forkchild_clean(s->im, s->pid, child);
}

static int on_syscall_stop(void *arg, pid_t tid, int record)
{
	struct session *s = arg;

	return s->mode->syscall_stop ? s->mode->syscall_stop(s, tid, record) : 0;
}

static int on_fault_stop(void *arg, pid_t tid)
{
	struct session *s = arg;

	return s->mode->fault_stop ? s->mode->fault_stop(s, tid) : 0;
}

static void on_reader_moved(void *arg, pid_t tid)
{
	struct session *s = arg;

	/* the one owner of the reader: the unwinder, the frame table and
	 * the agent link read through s->t */
	target_set_reader(s->t, tid);
	if (s->unw)
		unwinder_flush(s->unw);
}

/* Before a new thread runs. */
static void on_new_thread(void *arg, struct thread *th)
{
	struct session *s = arg;

	if (s->mode->new_thread)
		s->mode->new_thread(s, th);
}

static const struct events_ops session_events = {
	.fork_child = on_fork_child,
	.syscall_stop = on_syscall_stop,
	.fault_stop = on_fault_stop,
	.reader_moved = on_reader_moved,
	.new_thread = on_new_thread,
};

/* ---- attach and detach ---- */

/* Detach after exec: the old image and our patches are gone with it. */
static void detach_after_exec(struct session *s)
{
	for (size_t i = 0; i < s->tr.n; i++)
		ptrace(PTRACE_DETACH, s->tr.t[i].tid, 0, 0);
	s->tr.n = 0;
}

/* How the target ended, from the wait status of its last thread: "exited
 * with status 3", "was killed by SIGKILL (the OOM killer?)". */
static void describe_end(int status, char *buf, size_t len)
{
	const char *name, *why = "";
	int sig;

	if (status == -1) {
		snprintf(buf, len, "is gone (how it ended was not seen)");
		return;
	}
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
		return;
	}
	sig = WTERMSIG(status);
	name = sigabbrev_np(sig);
	if (sig == SIGKILL)
		why = " (the OOM killer?)";
	else if (sig == SIGSYS)
		why = " (seccomp)";
	if (name)
		snprintf(buf, len, "was killed by SIG%s%s%s", name, why,
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, len, "was killed by signal %d", sig);
}

/* The implant's handle, for the mode's trampolines. */
static struct implant *new_implant(struct session *s)
{
	struct implant_params ip = {
		.pid = s->pid,
		.target = s->t,
		.tr = &s->tr,
		.gone = &s->ev.gone,
		.sc = &s->sc,
		.unw = s->unw,
		.on_event = events_dispatch,
		.event_arg = &s->ev,
		.ops = s->mode->implant,
		.ops_arg = s->implant_arg,
	};

	return implant_new(&ip);
}

static int attach(struct session *s)
{
	struct seccomp_params pp;
	int rc;

	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	rc = tracee_seize(&s->tr, s->pid);
	if (rc)
		return rc;
	rc = tracee_stop_all(&s->tr, events_dispatch, &s->ev);
	pr_debug("seized and stopped %zu threads in %.1f ms", s->tr.n,
		 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	if (rc == -ETIMEDOUT && !s->ev.gone) {
		pr_err("cannot attach to %d: its thread %d does not stop (a vfork parent waiting "
		       "for its child to exec, or an uninterruptible sleep); %d untouched", s->pid,
		       s->tr.unstopped, s->pid);
		tracee_detach_all(&s->tr);	/* the stopped ones; the rest when we exit */
		return rc;
	}
	if (rc || s->ev.gone) {
		char how[96];

		describe_end(s->ev.exit_status, how, sizeof(how));
		pr_err("cannot attach to %d: it %s while attaching", s->pid, how);
		tracee_detach_all(&s->tr);
		return rc ? rc : -ESRCH;
	}
	if (s->mode->seized)
		s->mode->seized(s);
	pp = (struct seccomp_params){ s->pid, s->mode->agent, s->opt->sample_rate == 1,
				      implant_region_size(s->im), s->opt->no_seccomp_probe };
	rc = seccomp_plan_make(&s->tr, &pp, &s->sc);	/* before any remote syscall */
	if (!rc)
		rc = recover_leftovers(s->im, s->pid, s->ev.reader, &s->maps, &s->hooks);
	if (rc < 0) {
		tracee_resume_all(&s->tr);
		tracee_detach_all(&s->tr);
		return rc;
	}
	if (rc > 0)
		target_maps_reload(s->t);	/* leftovers unmapped */
	rc = implant_install(s->im, &s->hooks);
	if (rc) {
		tracee_detach_all(&s->tr);
		return rc;
	}
	s->attached = 1;
	pr_debug("hooks installed at %.1f ms", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	s->start_ns = clock_ns(CLOCK_MONOTONIC);
	s->start_wall_ns = clock_ns(CLOCK_REALTIME);
	s->next_every_ns = s->start_ns + s->opt->every_ns;
	s->tr.syscall_stops = s->mode->syscall_stops;	/* trap mode: the traps are syscall-stops */
	if (s->mode->started)
		s->mode->started(s);
	tracee_resume_all(&s->tr);
	return 0;
}

static void detach(struct session *s)
{
	if (s->ev.gone)
		return;
	if (s->ev.exec_seen) {
		detach_after_exec(s);
		return;
	}
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	s->tr.syscall_stops = 0;	/* the traps are plain getpid calls from now on */
	tracee_stop_all(&s->tr, events_dispatch, &s->ev);
	pr_debug("stopped %zu threads in %.1f ms", s->tr.n, (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	implant_remove(s->im);	/* the rings are drained after: the target need not wait */
	pr_debug("hooks removed at %.1f ms", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	tracee_detach_all(&s->tr);
}

/*
 * Run at a higher priority when allowed (root), else as is: for the
 * attach and the detach, where the target is stopped and every
 * millisecond counts, and in exact mode for the whole session, where
 * its writers wait for the drain: with many busy threads on few CPUs the
 * tool, one thread among them, would wait its turn behind them all while
 * they wait for it. A sampled session runs as is: a tool that cannot
 * keep up raises its sampling interval (fast/interval.c) rather than take
 * the target's CPU. Before the attach and after the detach the target
 * does not wait for the tool, and runs first.
 */
static void urgent(int on)
{
	static int saved = 0, raised;

	if (on && !raised) {
		errno = 0;
		saved = getpriority(PRIO_PROCESS, 0);
		if (errno == 0 && setpriority(PRIO_PROCESS, 0, -15) == 0)
			raised = 1;
	} else if (!on && raised) {
		setpriority(PRIO_PROCESS, 0, saved);
		raised = 0;
	}
}

/* xmalloc's last word: never exit with our jumps in the target. */
static void emergency_detach(void)
{
	if (live_session && live_session->attached) {
		live_session->attached = 0;
		detach(live_session);
	}
}

/* The exit code once the profile is written (session_run). */
static int outcome(const struct session *s)
{
	if (s->mode->hostile && s->mode->hostile(s))
		return 1;	/* the target fought us: the profile is partial */
	if (implant_left(s->im))
		return 4;	/* said by implant_remove */
	if (s->ev.gone && s->ev.exit_status != -1 && WIFSIGNALED(s->ev.exit_status))
		return 3;
	if (s->opt->sample_rate == 1 && profile_drops(s->prof))
		return 5;	/* the exact profile misses events (said, and in the profile) */
	return 0;
}

int session_run(const struct session_config *opt)
{
	struct session s;
	char defout[64];
	uint64_t t0;
	int rc, code = 1;

	memset(&s, 0, sizeof(s));
	s.out.fd = -1;
	s.opt = opt;
	s.mode = opt->mode == MODE_TRAP ? &session_trap_mode : &session_fast_mode;
	s.pid = opt->pid;
	s.ev = (struct events){ .pid = s.pid, .tr = &s.tr, .ops = &session_events, .arg = &s,
				.exit_status = -1 };
	session_install_stop_handlers();
	t0 = clock_ns(CLOCK_MONOTONIC);
	/* inflating a compressed section stops soon after a stop request,
	 * and, before the attach, where the symbols' loading does */
	zsection_watch_stop(&session_stop_signal);
	debugfetch_watch_stop(&session_stop_signal);
	if (opt->no_debuginfod)
		debugfetch_disable();
	if (opt->duration_ns)
		zsection_set_deadline(t0 + (opt->duration_ns / 2 > ZSECTION_MIN_NS ?
					    opt->duration_ns / 2 : ZSECTION_MIN_NS));
	if (tracee_check(s.pid))
		return 1;
	s.ev.reader = tracee_live_tid(s.pid);	/* the leader may have exited */
	snprintf(defout, sizeof(defout), "heapattach.%d.heap", s.pid);
	s.output = opt->output ? opt->output : defout;
	/* Before the target is touched: a profile that cannot be written
	 * must not cost it a whole session. */
	if (dump_dir_open(&s.out, s.output, 1))
		return 1;
	if (session_serve_open(&s)) {
		dump_dir_close(&s.out);
		return 1;
	}
	rc = proc_maps_read(s.ev.reader, &s.maps);
	if (rc) {
		pr_err("cannot read the memory map of %d: %s", s.pid, strerror(-rc));
		goto out_maps;
	}
	s.t = target_new(s.pid, s.ev.reader);
	if (s.t)
		target_on_change(s.t, TARGET_ON_NAMES, on_code_change, &s);
	rc = hooks_resolve_target(s.t, s.ev.reader, &s.maps, &s.hooks);
	if (rc) {
		pr_err("no allocator found in %d: %s", s.pid, strerror(-rc));
		goto out_maps;
	}
	s.prof = profile_new(opt->sample_rate);
	if (opt->sample_rate == 1)	/* every live block of the heap: the table may be big */
		profile_set_caps(s.prof, 0, 0, 0, membudget_live_cap());
	sampler_init(&s.sampler, opt->sample_rate, clock_ns(CLOCK_REALTIME) ^ (uint64_t)getpid());
	s.unw = s.t ? unwinder_new_target(s.t) : NULL;
	s.sym = s.t ? symbolizer_new(s.t) : NULL;
	s.jit = perfmap_open_target(s.ev.reader);
	if (opt->jvm_perfmap_ns) {
		char why[160];

		if (jvm_check(s.ev.reader, &s.maps, why, sizeof(why))) {
			pr_err("--jvm-perfmap: %s", why);
			goto out;
		}
	}
	if (!s.unw || !s.prof) {
		pr_err("cannot set up the unwinder for %d", s.pid);
		goto out;
	}
	s.skip = skipsites_new();
	for (size_t i = 0; s.skip && i < opt->nskip; i++)
		skipsites_add(s.skip, opt->skip[i]);	/* checked by cli.c */
	s.wf = wrapfind_new(s.skip);
	if (!opt->no_python && opt->mode == MODE_FAST)
		s.py = pyattach_new(s.t, s.sym, opt->max_depth, opt->python_c_frames);
	if (s.mode->prepare(&s))
		goto out;
	pr_debug("%s", s.mem.note);
	s.im = new_implant(&s);
	s.trap = (struct collect_ctx){ s.im, s.prof, &s.sampler, s.unw, &s.stats,
				       opt->max_depth };
	/* debuginfod only where its wait stalls nothing: not attached, and
	 * before the attach within the half of --duration symbols may take */
	symbolizer_allow_fetch(s.sym, 1);
	debugfetch_set_deadline(opt->duration_ns ? t0 + opt->duration_ns / 2 : 0);
	warm_all(&s, t0);
	symbolizer_allow_fetch(s.sym, 0);
	debugfetch_set_deadline(0);
	if (!session_jit_refresh(&s)) {
		struct perfmap_stats st;

		perfmap_get_stats(s.jit, &st);
		pr_debug("perf map %s: %zu entries, %zu malformed lines", perfmap_path(s.jit),
			 st.entries, st.garbage);
	}
	session_zsection_notes(&s);
	memreport_init(&s.mr, &(struct memreport_src){
		.pid = s.pid, .t = s.t, .hooks = &s.hooks, .maps = &s.maps, .ev = &s.ev,
		.tr = &s.tr, .sc = &s.sc, .unw = s.unw, .im = s.im, .prof = s.prof,
		.agent = s.mode->agent, .more_big = more_big, .more_big_arg = &s,
	});
	if (opt->census && !session_stop_signal)
		memreport_census(&s.mr);
	if (!session_stop_signal)
		memreport_prepare(&s.mr);
	if (session_stop_signal) {
		fprintf(stderr, "heapattach: interrupted before attaching; PID %d untouched\n", s.pid);
		goto out;
	}
	session_install_signals();
	live_session = &s;
	xmalloc_oom_hook = emergency_detach;
	urgent(1);
	t0 = clock_ns(CLOCK_MONOTONIC);
	rc = attach(&s);
	if (rc)
		goto out;
	if (opt->sample_rate != 1)
		urgent(0);	/* sampled: a tool that cannot keep up samples less */
	zsection_set_deadline(opt->duration_ns ? s.start_ns + (opt->duration_ns > ZSECTION_MIN_NS ?
							      opt->duration_ns : ZSECTION_MIN_NS) : 0);
	{
		size_t npatches;

		implant_patches(s.im, &npatches);
		fprintf(stderr, "heapattach: attached to %d in %.1f ms (%zu threads, %zu hooks, "
			"sample rate %llu, %s mode)\n", s.pid,
			(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6, s.tr.n, npatches,
			(unsigned long long)opt->sample_rate, s.mode->name);
	}
	memreport_arm(&s.mr);
	if (opt->jvm_perfmap_ns) {
		s.jvm = jvm_asker_start(s.pid, opt->jvm_perfmap_ns);
		if (!s.jvm)
			session_note(&s, "--jvm-perfmap: no thread to ask the JVM: not asked");
	}
	if (opt->top)
		s.tv = topview_new(STDIN_FILENO, STDOUT_FILENO);
	session_test_delay("HEAPATTACH_TEST_START_DELAY_MS");
	session_serve_start(&s);
	s.mode->loop(&s);
	session_serve_close(&s);	/* clients still waiting: 503 */
	topview_free(s.tv);
	s.tv = NULL;
	memreport_snapshot(&s.mr);
	session_test_delay("HEAPATTACH_TEST_DETACH_DELAY_MS");
	if (s.ev.exec_seen && !s.ev.gone) {
		fprintf(stderr, "heapattach: %d called exec; profile of the old image ends here\n",
			s.pid);
		if (opt->slot)
			opt->slot->execd = 1;	/* --tree attaches to the new image */
	}
	urgent(1);
	t0 = clock_ns(CLOCK_MONOTONIC);
	detach(&s);
	s.attached = 0;
	/* a last map for the final profile, from the JVM no longer traced */
	jvm_asker_stop(s.jvm, !s.ev.gone && !s.ev.exec_seen);
	if (s.mode->detached)
		s.mode->detached(&s);
	urgent(0);
	if (s.ev.gone) {
		char how[96];

		describe_end(s.ev.exit_status, how, sizeof(how));
		fprintf(stderr, "heapattach: %d %s\n", s.pid, how);
	} else {
		fprintf(stderr, "heapattach: detached from %d in %.1f ms\n", s.pid,
			(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	}
	session_stop_timer();
	/* detached: for objects first named now, also after the stop that
	 * ended the session (each fetch, and all, bounded in time) */
	symbolizer_allow_fetch(s.sym, 1);
	debugfetch_watch_stop(NULL);
	if (s.mode->sync)
		s.mode->sync(&s);	/* what the rings still hold (detach, exit or exec) */
	if (s.stats.walks)
		pr_debug("agent: %llu walks, %llu misses, %llu from the memo, %llu nested, "
			 "%llu doorbells, %llu allocations and %llu frees accounted in the target "
			 "(no events), writers waited at most %.1f ms for room",
			 (unsigned long long)s.stats.walks, (unsigned long long)s.stats.walk_misses,
			 (unsigned long long)s.stats.memo_hits, (unsigned long long)s.stats.nested,
			 (unsigned long long)s.stats.doorbells,
			 (unsigned long long)s.stats.xacct_allocs,
			 (unsigned long long)s.stats.xacct_frees, s.stats.wait_max_ns / 1e6);
	if (s.py)
		pr_debug("python: %llu samples found their thread's Python state, %llu did not",
			 (unsigned long long)s.stats.py_found,
			 (unsigned long long)s.stats.py_not_found);
	if (s.unw) {
		struct unwind_stats us;

		unwinder_get_stats(s.unw, &us);
		pr_debug("unwinder: %llu unwinds, %llu frames, %llu unwind-info lookups, "
			 "%llu memory reads, %llu maps reads", (unsigned long long)us.unwinds,
			 (unsigned long long)us.frames, (unsigned long long)us.find_proc_info,
			 (unsigned long long)us.mem_reads, (unsigned long long)us.maps_reads);
	}
	if (profile_drops(s.prof)) {
		char why[256];

		why[0] = 0;
		if (s.mode->why_dropped)
			s.mode->why_dropped(&s, why, sizeof(why));
		pr_warn("%llu events dropped%s%s", (unsigned long long)profile_drops(s.prof),
			opt->sample_rate == 1 ? " in exact mode: the profile misses them (exit 5)" :
			"", why);
	}
	pr_debug("profile: %llu allocations at an address already live",
		 (unsigned long long)profile_live_again(s.prof));
	session_track_live(&s, clock_ns(CLOCK_MONOTONIC), 1);	/* the end may be the highest point */
	session_publish(&s);
	/* the names the final profile still lacks: a short while to inflate them */
	zsection_set_deadline(clock_ns(CLOCK_MONOTONIC) + ZSECTION_GRACE_NS);
	if (session_dump(&s, 0) == 0) {
		fprintf(stderr, "heapattach: wrote %s (%llu events)\n", s.output,
			(unsigned long long)s.stats.events);
		code = outcome(&s);
	}
out:
	live_session = NULL;
	if (s.mode->free)
		s.mode->free(&s);
	implant_free(s.im);
	if (s.sym)
		symbolizer_free(s.sym);
	debugfetch_end();
	pyattach_free(s.py);
	jvm_asker_free(s.jvm);
	perfmap_free(s.jit);
	if (s.unw)
		unwinder_free(s.unw);
	if (s.prof)
		profile_free(s.prof);
	wrapfind_free(s.wf);
	skipsites_free(s.skip);
	peak_free(&s.peak);
	memreport_free(&s.mr);
	hooks_free(&s.hooks);
out_maps:
	session_serve_close(&s);
	urgent(0);
	target_free(s.t);
	proc_maps_free(&s.maps);
	tracee_release(&s.tr);
	rotate_free(&s.rot);
	dump_dir_close(&s.out);
	return code;
}
