/* One profiling run: attach, collect until told to stop, dump, detach. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "fast/agentlink.h"
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
#include "session/membudget.h"
#include "session/session.h"
#include "stacks/symbolize.h"
#include "stacks/unwind.h"
#include "trap/collect.h"

#define TICK_MS 50
#define RECONCILE_TICKS 4	/* 200 ms: frees the agent did not report */
#define SESSION_MAPS_EVERY_NS 100000000ULL	/* watch_maps: 100 ms */
#define LIVE_EVERY_NS 100000000ULL	/* live bytes counted for new highs: at every
					 * reconcile (200 ms) unless counting is slow */
#define LIVE_READ_EVERY_NS 1000000000ULL	/* ... and the accounting read at least
						 * every second (see track_live) */

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t ticked;
static volatile sig_atomic_t child_event = 1;
static volatile sig_atomic_t dump_asked;	/* SIGUSR1: write the next numbered dump now */
static struct session *live_session;

/* What the trap and fast modes do differently (modes[], below). */
struct session_mode {
	const char *name;
	int agent;                      /* an agent runs in the target (its syscalls: seccomp) */
	int syscall_stops;              /* the traps are syscall-stops */
	const struct implant_ops *implant;
	int (*prepare)(struct session *s);      /* before the attach */
	void (*loop)(struct session *s);        /* collect until told to stop */
	void (*sync)(struct session *s);        /* what the target holds, into the profile (or NULL) */
};

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void on_tick(int sig)
{
	(void)sig;
	ticked = 1;
}

static void on_child(int sig)
{
	(void)sig;
	child_event = 1;
}

static void on_dump_signal(int sig)
{
	(void)sig;
	dump_asked = 1;
}

/* From the first instant: a stop request before the attach leaves the
 * target untouched, one after it detaches cleanly. */
static void install_stop_handlers(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a mask inherited blocked would hide them (and one pending since
	 * before exec is delivered now) */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Handlers without SA_RESTART, so waitpid returns EINTR; a periodic tick
 * bounds the time a flag set just before waitpid goes unseen. */
static void install_signals(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, TICK_MS * 1000 }, { 0, TICK_MS * 1000 } };

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_tick;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = on_dump_signal;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a background heapattach (timeout(1), &) that writes to its terminal
	 * or sets its modes must not stop while attached: the target's
	 * signals and faults would wait for it */
	signal(SIGTTOU, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * Tests only: hold the session for the milliseconds the environment
 * variable var says (at most a minute), hooks in place and nothing
 * drained: HEAPATTACH_TEST_START_DELAY_MS between the attach and the loop
 * (a tool that gets no CPU then), HEAPATTACH_TEST_DETACH_DELAY_MS between
 * the loop and the detach (as a slow memory report would).
 */
static void test_delay(const char *var)
{
	const char *v = getenv(var);
	long ms = v ? strtol(v, NULL, 10) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	if (ms <= 0 || ms > 60000)
		return;
	while (nanosleep(&ts, &ts) && errno == EINTR)	/* our timer's signals */
		;
}

static void stop_timer(void)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
}

void session_note(struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (s->nnotes == SESSION_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(s->notes[s->nnotes], sizeof(s->notes[0]), fmt, ap);
	va_end(ap);
	pr_warn("%s", s->notes[s->nnotes++]);
}

/* What zsection skipped since the last look: said once, kept in the profile. */
static void zsection_notes(struct session *s)
{
	char note[sizeof(s->notes[0])];

	while (zsection_take_note(note, sizeof(note)))
		session_note(s, "%s", note);
}

/* The agent link's notes (agentlink.h). */
static void note_cb(void *arg, const char *msg)
{
	session_note(arg, "%s", msg);
}

void session_note_caps(struct session *s)
{
	unsigned hit = profile_caps_hit(s->prof) & ~s->noted;

	s->noted |= hit;
	if (hit & PROFILE_CAP_STACKS)
		session_note(s, "more distinct stacks than the cap (%u stacks, %u frames): new ones "
			     "are counted under an empty stack", PROFILE_MAX_STACKS, PROFILE_MAX_PCS);
	if (hit & PROFILE_CAP_BUCKETS)
		session_note(s, "more (stack, size) pairs than the cap (%u): new ones are counted "
			     "under an empty stack, by size rounded down to a power of two",
			     PROFILE_MAX_BUCKETS);
	if (hit & PROFILE_CAP_LIVE)
		session_note(s, "more live %sblocks than the cap (%zu%s): new ones count as "
			     "allocated, not as in use", s->opt->sample_rate == 1 ? "" : "sampled ",
			     profile_live_cap(s->prof), s->opt->sample_rate == 1 ?
			     ": half of heapattach's memory at start, 32 bytes a block" : "");
}

/* Take what the target's perf map gained since the last read (its names
 * are the latest for each range, as perf has them; all of it again when
 * the JVM wrote it anew on our asking); say once what is cut, and why the
 * JVM was not asked.
 * 0, or -errno: no perf map (-ENOENT), not a regular file (-EINVAL). */
static int jit_refresh(struct session *s)
{
	char note[sizeof(s->notes[0])];
	int rc;

	if (!s->jit)
		return -ENOENT;
	if (s->jvm) {
		unsigned n = jvm_asker_done(s->jvm);

		if (n != s->jvm_maps)	/* rewritten on our asking: read all again */
			perfmap_rewind(s->jit);
		s->jvm_maps = n;
		while (jvm_asker_take_note(s->jvm, note, sizeof(note)))
			session_note(s, "%s", note);
	}
	perfmap_set_tid(s->jit, s->ev.gone || s->ev.exec_seen ? 0 : s->ev.reader);
	rc = perfmap_refresh(s->jit);
	while (perfmap_take_note(s->jit, note, sizeof(note)))
		session_note(s, "%s", note);
	return rc;
}

static const char before_attach[] =
	"allocations made before heapattach attached are not in this profile's samples "
	"(the heapattach-rss line says how many bytes they hold, where the allocator tells)";

/* FILE.peak.heap (pprof only): the final profile's d with the in-use
 * figures of the peak snapshot, and one more comment (comments has room). */
static void write_peak(struct session *s, struct dump_info *d, const char **comments)
{
	char note[160];
	char *path;

	if (!s->peak.bytes || s->opt->format != DUMP_PPROF)
		return;
	snprintf(note, sizeof(note), "peak: the live set at the session's highest point, "
		 "%.1f MiB at +%.1f s (in-use sample types only)", s->peak.bytes / 1048576.0,
		 s->peak.at_ns / 1e9);
	comments[d->ncomments++] = note;
	d->peak = &s->peak;
	path = dump_tagged_path(s->output, "peak");
	if (dump_write_at(&s->out, path, s->opt->format, s->prof, d) == 0)
		fprintf(stderr, "heapattach: wrote %s (%s)\n", path, note + 6);
	free(path);
}

/* Lines of the breakdown, kept for the profile's comments. */
struct breakdown_text {
	char v[BREAKDOWN_MAX_LINES + 2][1024];
	size_t n;
};

static void keep_line(void *arg, const char *text)
{
	struct breakdown_text *t = arg;

	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		snprintf(t->v[t->n++], sizeof(t->v[0]), "%s", text);
}

static int read_target(void *arg, uint64_t addr, void *buf, size_t len)
{
	return target_read(arg, addr, buf, len);
}

/*
 * The functions found allocator wrappers by their code (wrapfind.h) over
 * the profile so far, each a "heapattach-wrapper: NAME" comment (at most
 * WRAPPER_NOTES, into notes) so that heapattach report names sites past
 * them as --top does; how many.
 */
#define WRAPPER_NOTES 128
static size_t wrapper_notes(struct session *s, char (*notes)[WRAPFIND_NAME + 24])
{
	struct wrapfind_src src = { s->sym, read_target, s->t, 0, 0 };
	char (*names)[WRAPFIND_NAME];
	size_t n;

	pyattach_interp(s->py, &src.interp_lo, &src.interp_hi);
	if (!s->sym)
		return 0;
	if (!s->wf) {
		s->skip = skipsites_new();
		for (size_t i = 0; s->skip && i < s->opt->nskip; i++)
			skipsites_add(s->skip, s->opt->skip[i]);	/* checked by cli.c */
		s->wf = wrapfind_new(s->skip);
	}
	wrapfind_scan(s->wf, &src, s->prof);
	names = xcalloc(WRAPPER_NOTES, sizeof(*names));
	n = wrapfind_found(s->wf, &src, names, WRAPPER_NOTES);
	for (size_t i = 0; i < n; i++)
		snprintf(notes[i], sizeof(notes[i]), "heapattach-wrapper: %s", names[i]);
	free(names);
	return n;
}

int session_dump(struct session *s, unsigned seq)
{
	struct symbolizer *sym = s->sym;
	const struct proc_maps *maps;
	char comment[128];
	char sc_note[sizeof(s->sc.note) + 32];
	const char **comments = xcalloc(5 + SESSION_MAX_NOTES + BREAKDOWN_MAX_LINES + 2 +
					WRAPPER_NOTES + s->mr.ncensus, sizeof(*comments));
	char (*wnotes)[WRAPFIND_NAME + 24] = xcalloc(WRAPPER_NOTES, sizeof(*wnotes));
	size_t nwnotes;
	struct breakdown_text bt = { .n = 0 };
	struct breakdown bd;
	size_t ncomments;
	struct dump_info d;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	char *path;
	int rc;

	if (s->mode->sync)
		s->mode->sync(s);
	session_note_caps(s);
	jit_refresh(s);
	zsection_notes(s);
	/* Objects loaded since the last read: a fresh view while we can. */
	if (!s->ev.gone && !s->ev.exec_seen)
		target_maps_reload(s->t);
	maps = target_maps(s->t);
	if (!maps)
		maps = &s->maps;
	if (sym)
		symbolizer_set_perfmap(sym, s->jit);
	snprintf(sc_note, sizeof(sc_note), "seccomp filter: %s", s->sc.note);
	comments[0] = comment;
	comments[1] = before_attach;
	comments[2] = s->mem.note;
	comments[3] = sc_note;
	ncomments = s->sc.note[0] ? 4 : 3;
	for (size_t i = 0; i < s->nnotes; i++)
		comments[ncomments++] = s->notes[i];
	/* heap vs RSS: smaps now while attached (the final dump comes after
	 * the detach and uses the snapshot taken just before it) */
	if (seq)
		memreport_snapshot(s);
	memreport_compute(s, &bd);
	breakdown_print(&bd, keep_line, &bt);
	for (size_t i = 0; i < s->mr.ncensus; i++)
		comments[ncomments++] = s->mr.census[i];
	for (size_t i = 0; i < bt.n; i++) {
		comments[ncomments++] = bt.v[i];
		if (log_verbose || !seq)
			fprintf(stderr, "heapattach: %s\n", bt.v[i]);
	}
	nwnotes = wrapper_notes(s, wnotes);
	for (size_t i = 0; i < nwnotes; i++)
		comments[ncomments++] = wnotes[i];
	snprintf(comment, sizeof(comment), "events=%llu nested=%llu unwind_errors=%llu",
		 (unsigned long long)s->stats.events, (unsigned long long)s->stats.nested,
		 (unsigned long long)s->stats.unwind_errors);
	if (s->link_xacct)	/* allocations that sent no event */
		snprintf(comment + strlen(comment), sizeof(comment) - strlen(comment),
			 " accounted=%llu", (unsigned long long)s->stats.xacct_allocs);
	d = (struct dump_info){
		.pid = s->pid,
		.time_nanos = s->start_wall_ns,
		.duration_nanos = clock_ns(CLOCK_MONOTONIC) - s->start_ns,
		.maps = maps,
		.sym = sym,
		.comments = comments,
		.ncomments = ncomments,
	};
	path = seq ? dump_numbered_path(s->output, seq) : xstrdup(s->output);
	rc = dump_write_at(&s->out, path, s->opt->format, s->prof, &d);
	if (!rc)
		pr_debug("wrote %s in %.1f ms (%zu live blocks)", path,
			 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6, profile_nlive(s->prof));
	free(path);
	if (!rc && !seq)
		write_peak(s, &d, comments);
	free(comments);
	free(wnotes);
	return rc;
}

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
 * target_on_change listener, the first: the frames recorded so far in code
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
 * Read the target's maps every SESSION_MAPS_EVERY_NS: a change of its code
 * (dlopen, dlclose, mmap of code) bumps the target's generation, which
 * flushes the unwinder, the frame table and stack ids the agent walks with,
 * and the symbolizer (target_on_change). Misses find new mappings on their
 * own (an address outside every known mapping re-reads the maps), but
 * nothing misses when a library replaces another in the same range, and in
 * fast mode nothing stops the tool at an mmap. A read costs about 1 us per
 * line: 0.1% of a CPU for a thousand mappings.
 */
static void watch_maps(struct session *s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (now < s->next_maps_ns || s->ev.gone || s->ev.exec_seen)
		return;
	s->next_maps_ns = now + SESSION_MAPS_EVERY_NS;
	target_maps_reload(s->t);
}

/* Whether live bytes of about est would be a new high or call for an
 * --inuse-interval dump. */
static int live_may_rise(const struct session *s, uint64_t est)
{
	return est > s->peak.bytes ||
	       (s->opt->inuse_interval && est >= s->inuse_mark + s->opt->inuse_interval);
}

/*
 * The profile's live bytes, every LIVE_EVERY_NS: a new high by
 * --inuse-interval writes a numbered dump, and a new high at all is
 * snapshotted for the peak profile (final: the last count, no dump).
 * In fast mode the profile learns of sampled frees only when it reconciles
 * with the agent's live table, so the count waits for one (live_fresh).
 * Counting them walks the live table, which holds millions of blocks in
 * exact mode at scale: the walks are spaced so that they take at most 2%
 * of the time, by the CPU time they took (a count preempted for 12 ms on
 * a loaded machine would otherwise put off the next one by 600 ms, past a
 * short peak or a whole --inuse-interval step). With in-target accounting
 * a count also reads the agent's tables, whose lines the target then
 * takes back from our CPU's cache one miss at a time. Between reads (at
 * least one a second) an estimate
 * stands in: the last count, plus what the lanes' totals say the agent
 * holds more, plus every byte the events allocated since (their frees
 * left out: an estimate too high only reads sooner). The tables are read
 * when it says the live bytes may have risen to a new high (or to an
 * --inuse-interval dump). Not with --top, which shows the profile as the
 * last count left it.
 */
static void track_live(struct session *s, uint64_t now, int final)
{
	uint64_t live, cost, cpu, x = 0;
	int have_x;

	if (!final && (now < s->live_next_ns || !s->live_fresh))
		return;
	s->live_fresh = 0;
	have_x = agent_link_xacct_live(s->link, &x) == 0;
	if (!final && have_x && !s->tv && s->live_read_ns &&
	    now - s->live_read_ns < LIVE_READ_EVERY_NS &&
	    !live_may_rise(s, s->live_read + (x - s->xlive_read) +
				  (profile_total_alloc_bytes(s->prof) - s->alloc_read))) {
		s->live_next_ns = now + LIVE_EVERY_NS;
		return;
	}
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	agent_link_xacct_sync(s->link);	/* what the agent accounted itself */
	live = breakdown_profile_live(s->prof);
	peak_update(&s->peak, s->prof, live, now - s->start_ns);
	s->live_read_ns = now;
	s->live_read = live;
	s->xlive_read = x;
	s->alloc_read = profile_total_alloc_bytes(s->prof);
	cost = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	s->live_next_ns = now + (cost * 50 > LIVE_EVERY_NS ? cost * 50 : LIVE_EVERY_NS);
	if (s->opt->inuse_interval && !final && live >= s->inuse_mark + s->opt->inuse_interval) {
		s->inuse_mark = live;
		session_dump(s, ++s->dump_seq);
	}
}

/* --top's d: a numbered profile now, and the view says which file. */
static void top_dump(struct session *s)
{
	char *path = dump_numbered_path(s->output, ++s->dump_seq);
	char msg[PATH_MAX + 32];

	snprintf(msg, sizeof(msg), "%s %s", session_dump(s, s->dump_seq) ? "could not write" :
		 "wrote", path);
	topview_say(s->tv, msg);
	free(path);
}

/* --top: the view's keys and refresh. 1: the user quit. */
static int top_tick(struct session *s, uint64_t now)
{
	struct topview_in ti = {
		.pid = s->pid, .prof = s->prof, .sym = s->sym,
		.as = s->mr.have_as ? &s->mr.as : NULL,
		.elapsed_ns = now - s->start_ns, .dumps = s->dump_seq,
	};

	if (!s->tv)
		return 0;
	pyattach_interp(s->py, &ti.interp_lo, &ti.interp_hi);
	switch (topview_tick(s->tv, &ti, now)) {
	case TOPVIEW_QUIT:
		return 1;
	case TOPVIEW_DUMP:
		top_dump(s);
		break;
	default:
		break;
	}
	return 0;
}

/* Periodic work between events: --duration, --every, --interval, SIGUSR1,
 * new highs, the allocator's figures, --top. 1 to stop. */
static int housekeeping(struct session *s)
{
	const struct options *o = s->opt;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (o->duration_ns && now - s->start_ns >= o->duration_ns)
		return 1;
	if (o->every_ns && now >= s->next_every_ns) {
		session_dump(s, ++s->dump_seq);
		s->next_every_ns = now + o->every_ns;
	}
	if (o->interval && s->stats.bytes >= o->interval) {
		s->stats.bytes %= o->interval;
		session_dump(s, ++s->dump_seq);
	}
	if (dump_asked) {
		dump_asked = 0;
		session_dump(s, ++s->dump_seq);
	}
	track_live(s, now, 0);
	memreport_poll(s);
	return top_tick(s, now);
}

/*
 * Whether symbols may still be read before the attach: while half of
 * --duration is left since t0, when heapattach started. Tests only: never
 * with HEAPATTACH_TEST_HOLD_ONLY=1, so that the dump reads every object,
 * as after a short --duration on a loaded machine.
 */
static int warm_may_load(const struct session *s, uint64_t t0)
{
	const char *v = getenv("HEAPATTACH_TEST_HOLD_ONLY");
	uint64_t d = s->opt->duration_ns;

	if (v && *v == '1')
		return 0;
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

	for (size_t i = 0; s->sym && i < s->maps.n && !stop_signal; i++) {
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

/* ---- fast mode: the agent decides in the target, events come through rings ---- */

/* Before the attach: rings sized to the target's limits (budget.h), and the link. */
static int fast_prepare(struct session *s)
{
	struct agent_link_params lp;
	struct budget_ask ask = {
		.agent = 1,
		.exact = s->opt->sample_rate == 1,
		.ring_want = agent_link_ring_size(s->opt->sample_rate),
	};
	int rc;

	rc = membudget_plan(s->pid, &ask, &s->mem);
	if (rc)
		return rc;
	lp = (struct agent_link_params){
		.pid = s->pid,
		.rate = s->opt->sample_rate,
		.max_depth = s->opt->max_depth,
		.ring_size = s->mem.ring_size,
		.prefault = s->mem.prefault,
		.count_bytes = s->opt->interval != 0,
		.xlive_slots = agent_link_xacct_slots(s->mem.xlive_slots),
		.sc = &s->sc,	/* made at attach, before the area is set up */
		.prof = s->prof,
		.sampler = &s->sampler,
		.unw = s->unw,
		.target = s->t,
		.stats = &s->stats,
		.note = note_cb,
		.note_arg = s,
	};
	if (s->py) {
		lp.py = pyattach_shm(s->py);
		lp.pyframes = pyattach_frames(s->py);
		lp.pymerge = *pyattach_merge(s->py);
	}
	s->link_xacct = lp.xlive_slots != 0;
	membudget_set_xlive(&s->mem, lp.xlive_slots);	/* what the link will map */
	s->link = agent_link_new(&lp);
	return 0;
}

/* What the rings, the agent's live table and its accounting hold, into the profile. */
static void fast_sync(struct session *s)
{
	agent_link_reconcile(s->link);
	agent_link_xacct_sync(s->link);
}

/*
 * Poll the rings and ptrace events. The tool shares the CPUs with its
 * target, and every wake-up of ours may preempt one of its threads, so it
 * batches: it sleeps between drains for as long as the writers take to
 * fill an eighth of the ring (1 to 20 ms, agent_link_nap_ns), not at all
 * while the ring is more than a quarter full (exact mode under load).
 * SIGCHLD, which every tracee stop sends us, cuts a nap short, and
 * waitpid is called only after one; so does a writer that finds its ring
 * past a quarter full (agent_link_nap's doorbell).
 */
static void fast_loop(struct session *s)
{
	size_t got;
	int status;
	pid_t tid;

	while (!stop_signal && !s->ev.gone && !s->ev.exec_seen && !agent_link_hostile(s->link)) {
		if (ticked) {
			ticked = 0;
			child_event = 1;	/* also poll, in case a SIGCHLD was missed */
			/* frees found this tick: live bytes are right */
			s->live_fresh = ++s->ticks % RECONCILE_TICKS == 0;
			if (s->live_fresh)
				agent_link_reconcile(s->link);
			if (housekeeping(s))
				break;
		} else if (s->opt->interval && housekeeping(s)) {
			break;
		}
		agent_link_heartbeat(s->link);
		got = agent_link_drain(s->link, AGENT_LINK_DRAIN_ALL);
		watch_maps(s);	/* after the drain: what the rings held came first */
		session_note_caps(s);
		if (child_event) {
			child_event = 0;
			while ((tid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
				events_dispatch(&s->ev, tid, status);
				child_event = 1;	/* more may be queued */
			}
			if (tid < 0 && errno == ECHILD) {
				s->ev.gone = 1;
				break;
			}
			if (child_event)
				continue;
		}
		if (got && agent_link_busy(s->link))
			continue;	/* no nap, unless a writer mid-record held the drain */
		agent_link_nap(s->link, agent_link_nap_ns(s->link));
	}
	/* the heartbeat goes on until the detach has stopped every thread
	 * (session_run): till then the hooks run, and exact-mode writers
	 * waiting for room must not take us for gone */
	if (s->ev.gone || s->ev.exec_seen)
		agent_link_final(s->link);	/* writers gone, maybe mid-record */
}

/* ---- trap mode: every hooked call stops in the tool ---- */

static int trap_prepare(struct session *s)
{
	const struct budget_ask ask = { .agent = 0 };

	return membudget_plan(s->pid, &ask, &s->mem);
}

static void trap_loop(struct session *s)
{
	int status;
	pid_t tid;

	while (!stop_signal && !s->ev.gone && !s->ev.exec_seen) {
		if (ticked || s->opt->interval) {
			ticked = 0;
			watch_maps(s);
			s->live_fresh = 1;	/* every free stops here */
			if (housekeeping(s))
				break;
		}
		tid = waitpid(-1, &status, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				s->ev.gone = 1;
			break;
		}
		events_dispatch(&s->ev, tid, status);
	}
}

/* The trap/fast choice: made here only. */
static const struct session_mode modes[] = {
	[MODE_TRAP] = {
		.name = "trap",
		.syscall_stops = 1,
		.implant = &collect_implant_ops,
		.prepare = trap_prepare,
		.loop = trap_loop,
	},
	[MODE_FAST] = {
		.name = "fast",
		.agent = 1,
		.implant = &agent_link_implant_ops,
		.prepare = fast_prepare,
		.loop = fast_loop,
		.sync = fast_sync,
	},
};

/* ---- the stops of the target ---- */

static void on_fork_child(void *arg, pid_t child)
{
	struct session *s = arg;

	forkchild_clean(s->im, s->pid, child);
}

static int on_syscall_stop(void *arg, pid_t tid, int record)
{
	struct session *s = arg;

	return collect_trap(&s->trap, tid, record);
}

static int on_fault_stop(void *arg, pid_t tid)
{
	struct session *s = arg;

	return agent_link_fault(s->link, tid);
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

/* Before a new thread runs: can exact mode's accounting tell it apart? */
static void on_new_thread(void *arg, struct thread *th)
{
	struct session *s = arg;

	if (s->link)
		agent_link_xacct_thread(s->link, &s->tr, th);
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
		.ops_arg = s->link,
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
	if (s->link) {	/* sizes the area: before anything asks its size */
		s->link_xacct = agent_link_xacct_threads(s->link, &s->tr);
		if (!s->link_xacct && s->mem.xlive_slots) {
			membudget_set_xlive(&s->mem, 0);
			pr_debug("no in-target accounting: %s", s->mem.note);
		}
	}
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
	/* beating before the hooks run: an exact-mode writer that finds its
	 * ring full before our loop starts must not take us for gone */
	agent_link_beat_start(s->link);
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
 * keep up raises its sampling interval (agentlink.c) rather than take
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
	if (agent_link_hostile(s->link))
		return 1;	/* the target fought us: the profile is partial */
	if (implant_left(s->im))
		return 4;	/* said by implant_remove */
	if (s->ev.gone && s->ev.exit_status != -1 && WIFSIGNALED(s->ev.exit_status))
		return 3;
	if (s->opt->sample_rate == 1 && profile_drops(s->prof))
		return 5;	/* the exact profile misses events (said, and in the profile) */
	return 0;
}

int session_run(const struct options *opt)
{
	struct session s;
	char defout[64];
	uint64_t t0;
	int rc, code = 1;

	memset(&s, 0, sizeof(s));
	s.out.fd = -1;
	s.opt = opt;
	s.mode = &modes[opt->mode];
	s.pid = opt->pid;
	s.ev = (struct events){ .pid = s.pid, .tr = &s.tr, .ops = &session_events, .arg = &s,
				.exit_status = -1 };
	install_stop_handlers();
	t0 = clock_ns(CLOCK_MONOTONIC);
	/* inflating a compressed section stops soon after a stop request,
	 * and, before the attach, where the symbols' loading does */
	zsection_watch_stop(&stop_signal);
	debugfetch_watch_stop(&stop_signal);
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
	rc = proc_maps_read(s.ev.reader, &s.maps);
	if (rc) {
		pr_err("cannot read the memory map of %d: %s", s.pid, strerror(-rc));
		goto out_maps;
	}
	s.t = target_new(s.pid, s.ev.reader);
	if (s.t)
		target_on_change(s.t, on_code_change, &s);	/* before the others */
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
	if (!jit_refresh(&s)) {
		struct perfmap_stats st;

		perfmap_get_stats(s.jit, &st);
		pr_debug("perf map %s: %zu entries, %zu malformed lines", perfmap_path(s.jit),
			 st.entries, st.garbage);
	}
	zsection_notes(&s);
	if (opt->census && !stop_signal)
		memreport_census(&s);
	if (!stop_signal)
		memreport_prepare(&s);
	if (stop_signal) {
		fprintf(stderr, "heapattach: interrupted before attaching; PID %d untouched\n", s.pid);
		goto out;
	}
	install_signals();
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
	memreport_arm(&s);
	if (opt->jvm_perfmap_ns) {
		s.jvm = jvm_asker_start(s.pid, opt->jvm_perfmap_ns);
		if (!s.jvm)
			session_note(&s, "--jvm-perfmap: no thread to ask the JVM: not asked");
	}
	if (opt->top)
		s.tv = topview_new(STDIN_FILENO, STDOUT_FILENO, opt->skip, opt->nskip);
	test_delay("HEAPATTACH_TEST_START_DELAY_MS");
	s.mode->loop(&s);
	topview_free(s.tv);
	s.tv = NULL;
	memreport_snapshot(&s);
	test_delay("HEAPATTACH_TEST_DETACH_DELAY_MS");
	if (s.ev.exec_seen && !s.ev.gone)
		fprintf(stderr, "heapattach: %d called exec; profile of the old image ends here\n",
			s.pid);
	urgent(1);
	t0 = clock_ns(CLOCK_MONOTONIC);
	detach(&s);
	s.attached = 0;
	/* a last map for the final profile, from the JVM no longer traced */
	jvm_asker_stop(s.jvm, !s.ev.gone && !s.ev.exec_seen);
	agent_link_beat_stop(s.link);	/* no writer runs the agent any more */
	urgent(0);
	if (s.ev.gone) {
		char how[96];

		describe_end(s.ev.exit_status, how, sizeof(how));
		fprintf(stderr, "heapattach: %d %s\n", s.pid, how);
	} else {
		fprintf(stderr, "heapattach: detached from %d in %.1f ms\n", s.pid,
			(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	}
	stop_timer();
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

		agent_link_drop_reasons(s.stats.drop_why, why, sizeof(why));
		pr_warn("%llu events dropped%s%s", (unsigned long long)profile_drops(s.prof),
			opt->sample_rate == 1 ? " in exact mode: the profile misses them (exit 5)" :
			"", why);
	}
	pr_debug("profile: %llu allocations at an address already live",
		 (unsigned long long)profile_live_again(s.prof));
	track_live(&s, clock_ns(CLOCK_MONOTONIC), 1);	/* the end may be the highest point */
	/* the names the final profile still lacks: a short while to inflate them */
	zsection_set_deadline(clock_ns(CLOCK_MONOTONIC) + ZSECTION_GRACE_NS);
	if (session_dump(&s, 0) == 0) {
		fprintf(stderr, "heapattach: wrote %s (%llu events)\n", s.output,
			(unsigned long long)s.stats.events);
		code = outcome(&s);
	}
out:
	live_session = NULL;
	agent_link_free(s.link);
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
	urgent(0);
	target_free(s.t);
	proc_maps_free(&s.maps);
	tracee_release(&s.tr);
	dump_dir_close(&s.out);
	return code;
}
