/* heapattach snapshot: every block in use in a live process, leaked or kept alive by which root, and its type. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "model/allocstats.h"
#include "model/glibcfind.h"
#include "model/hooks.h"
#include "model/memcg.h"
#include "model/proc.h"
#include "model/target.h"
#include "ptrace/events.h"
#include "ptrace/forkcopy.h"
#include "ptrace/tracee.h"
#include "python/pyfind.h"
#include "regs.h"
#include "snapshot/allocsites.h"
#include "snapshot/copysafe.h"
#include "snapshot/frames.h"
#include "snapshot/glibcblocks.h"
#include "snapshot/hold.h"
#include "snapshot/jeblocks.h"
#include "snapshot/memread.h"
#include "snapshot/miblocks.h"
#include "snapshot/pyblocks.h"
#include "snapshot/pyroots.h"
#include "snapshot/pytypes.h"
#include "snapshot/roots.h"
#include "snapshot/snapout.h"
#include "snapshot/snapshot.h"
#include "snapshot/tcblocks.h"
#include "snapshot/types.h"

/* The state of one snapshot. */
struct snap {
	const struct snapshot_config *cfg;
	pid_t pid, reader;
	struct target *t;
	struct tracee tr;
	struct events ev;
	struct glibc_state gs;
	int have_gs;
	int mimalloc;                   /* its blocks are mimalloc's (miblocks.h) */
	struct miblocks_segs misegs;    /* then its segments */
	struct snapthread *th;
	size_t nth;
	struct heapgraph g;
	struct glibcblocks_stats bs;
	struct snaproots roots;
	struct snapnames names;
	struct snapshot_stats st;
	uint64_t je_root;               /* jemalloc's extents map (jeblocks.h), or 0: glibc */
	struct jeblocks_meta je_meta;
	struct jeblocks_stats js;
	int tc;                         /* its blocks are tcmalloc's (tcblocks.h), at tc_at */
	struct tcblocks_at tc_at;
	struct tcblocks_meta tc_meta;
	struct forkcopy fc;             /* the copy read instead of the target, or none */
	struct memread mr;              /* how its blocks are read */
	int no_copy;                    /* decided before the stop: no copy, why says why */
	char why[256];                  /* why there is none */
	uint64_t anon;                  /* the target's private anonymous memory, bytes */
	uint64_t deadline_ns;           /* stopped, no copy: the read ends then (--max-stop) */
	int cut;                        /* it did: the snapshot is partial */
	uint64_t max_stop_ns;           /* cfg's, or SNAPSHOT_MAX_STOP_NS */
	struct py_target py;            /* a CPython's interpreter, when have_py */
	int have_py;
	struct pyblocks pb;             /* its pymalloc blocks */
	struct pygcheads gch;           /* its GC objects' heads */
	struct pyroots pr;              /* its module globals, named roots (pyroots.h) */
	struct allocsites as;           /* stacks the allocator sampled itself */
	int hide_gc;                    /* read_spans hides the heads and the globals'
					 * entries (while scanning) */
};

static const struct events_ops snap_events = { 0 };

/* Whether the read must end now: a stop signal came, or the target is
 * stopped (no copy) and --max-stop is up (sn->cut then says so). */
static int read_ends(struct snap *sn)
{
	if (snaphold_stop_asked)
		return 1;
	if (sn->deadline_ns && !sn->cut && clock_ns(CLOCK_MONOTONIC) >= sn->deadline_ns)
		sn->cut = 1;
	return sn->cut;
}

/* glibc_read_fn: glibc_target_read, until the read must end (read_ends). */
static int read_target(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct snap *sn = arg;

	if (read_ends(sn))
		return -EINTR;
	return glibc_target_read(sn->t, addr, buf, len);
}

/* hg_read_fn: the spans of the reader (the copy: memread.h), a Python
 * GC's links hidden when asked; -EINTR once the read must end (read_ends). */
static int read_spans(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	struct snap *sn = arg;

	if (read_ends(sn))
		return -EINTR;
	if (memread_spans(&sn->mr, sn->reader, s, n, buf))
		return -EFAULT;
	if (sn->hide_gc) {	/* the scan: a Python GC's links are no references, */
		pygcheads_hide(&sn->gch, s, n, buf);
		pyroots_hide(&sn->pr, s, n, buf);	/* a module dict's edges are its globals' */
	}
	return 0;
}

/*
 * Whether the target's malloc is one whose blocks can be listed: glibc's,
 * jemalloc's when its extents map is found (sn->je_root), tcmalloc's when
 * its state is found (sn->tc), or mimalloc's of the version miblocks knows
 * (sn->mimalloc). 0, or -ENOTSUP after one message.
 */
static int check_allocator(struct snap *sn)
{
	struct hook_set hooks = { 0 };
	struct allocstats_fn fn = { 0 };
	int rc = 0;

	if (hooks_resolve_target(sn->t, sn->reader, target_maps(sn->t), &hooks) == 0 &&
	    allocstats_find(sn->t, sn->pid, &hooks, &fn) == 0 && fn.allocator &&
	    strcmp(fn.allocator, "glibc")) {
		char why[160], ver[32] = "";
		unsigned v = 0;

		if (!strcmp(fn.allocator, "jemalloc") &&
		    jeblocks_find(sn->reader, target_maps(sn->t), &sn->je_root, why, sizeof(why)) == 0)
			goto out;
		if (!strcmp(fn.allocator, "tcmalloc") &&
		    !tcblocks_find(sn->t, target_maps(sn->t), read_spans, sn, &sn->tc_at, why,
				   sizeof(why))) {
			sn->tc = 1;
			goto out;
		}
		if (!strcmp(fn.allocator, "mimalloc") &&
		    !miblocks_version(sn->t, target_maps(sn->t), &v)) {
			if (v == MIBLOCKS_VERSION) {
				sn->mimalloc = 1;
				goto out;
			}
			snprintf(ver, sizeof(ver), " %u.%u.%u", v / 100, v / 10 % 10, v % 10);
		}
		if (!strcmp(fn.allocator, "jemalloc") || !strcmp(fn.allocator, "tcmalloc"))
			pr_err("%d allocates with %s, whose blocks cannot be listed: %s "
			       "(heapattach -p %d profiles what it allocates from now on)", sn->pid,
			       fn.allocator, why, sn->pid);
		else
			pr_err("%d allocates with %s%s: heapattach snapshot lists glibc malloc's, "
			       "jemalloc's, gperftools tcmalloc's and mimalloc 2.0.9's blocks only "
			       "(heapattach -p %d profiles what it allocates from now on)", sn->pid,
			       fn.allocator, ver, sn->pid);
		rc = -ENOTSUP;
	}
out:
	hooks_free(&hooks);
	return rc;
}

/* A CPython target's interpreter (pyfind.h), for its pymalloc blocks and its types. */
static void py_prepare(struct snap *sn)
{
	char err[200];
	int rc = py_target_find(sn->t, &sn->py, err, sizeof(err));

	sn->have_py = rc == 0;
	if (rc && rc != -ENOENT)
		pr_err("%s: its objects are not listed as Python's (glibc's blocks only)", err);
}

/* The pymalloc blocks of a CPython target merged into the graph (none
 * when that cannot be: its pools then stay roots). */
static void py_blocks(struct snap *sn, const struct proc_maps *maps)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), t1;

	if (pyblocks_find(sn->py.minor, maps, &sn->g, read_spans, sn, &sn->pb)) {
		pr_err("python %s: no pymalloc pool found (PYTHONMALLOC=malloc?)", sn->py.version);
		return;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	if (pyblocks_merge(&sn->g, &sn->pb)) {
		pr_err("python %s: %zu pymalloc blocks are too many: glibc's only", sn->py.version,
		       sn->pb.n);
		pyblocks_free(&sn->pb);
		return;
	}
	pr_debug("snapshot: python %s: %zu pymalloc blocks in %zu pools of %llu KiB "
		 "(%llu headers read, %llu pools refused, %llu blocks free) in %.1f ms, "
		 "merged in %.1f ms", sn->py.version, sn->pb.n, sn->pb.npools,
		 (unsigned long long)sn->pb.pool_size >> 10, (unsigned long long)sn->pb.slots,
		 (unsigned long long)sn->pb.refused, (unsigned long long)sn->pb.free_blocks,
		 (t1 - t0) / 1e6, (clock_ns(CLOCK_MONOTONIC) - t1) / 1e6);
}

/* Before the stop, while the target runs: glibc's state, every object's symbols. */
static void prepare(struct snap *sn)
{
	const struct proc_maps *maps = target_maps(sn->t);
	const char *how;
	char why[160];

	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];

		if (!m->path || m->path[0] != '/')
			continue;
		target_object(sn->t, m, TARGET_OBJ_SYMS, NULL);
		if (!sn->have_gs && (m->prot & PROC_MAP_X) && strstr(m->path, "/libc.so"))
			sn->have_gs = glibc_find(sn->t, m, &sn->gs, &how, why, sizeof(why)) == 0;
	}
	if (!sn->have_gs)
		pr_debug("snapshot: no glibc state (fast bins counted in use)");
	py_prepare(sn);
}

/* Every thread's registers, stopped. */
static int take_threads(struct snap *sn)
{
	sn->th = calloc(sn->tr.n + 1, sizeof(*sn->th));
	if (!sn->th)
		return -ENOMEM;
	for (size_t i = 0; i < sn->tr.n; i++) {
		arch_regs_t r;
		struct snapthread *t = &sn->th[sn->nth];

		if (sn->tr.t[i].state != TS_STOPPED || arch_regs_get(sn->tr.t[i].tid, &r))
			continue;
		t->tid = sn->tr.t[i].tid;
		t->sp = r.rsp;
		t->fs_base = r.fs_base;
		memcpy(t->regs, &r, sizeof(t->regs) < sizeof(r) ? sizeof(t->regs) : sizeof(r));
		sn->nth++;
	}
	return 0;
}

/* Scan the roots: a Python's module globals first, the others then of
 * the second rank (pyroots.h); data (named globals own what they hold),
 * threads' stacks and TLS, registers, other anonymous memory last. */
static void scan(struct snap *sn)
{
	pyroots_scan(&sn->pr, &sn->g);
	heapgraph_weak(&sn->g, sn->pr.n > 0);
	for (size_t i = 0; i < sn->roots.n; i++)
		heapgraph_root_range(&sn->g, sn->roots.v[i].name, sn->roots.v[i].lo,
				     sn->roots.v[i].hi);
	for (size_t i = 0; i < sn->nth; i++)
		heapgraph_root_words(&sn->g, snapnames_idf(&sn->names, SNAP_THREAD_ROOT,
							   (int)sn->th[i].tid),
				     sn->th[i].regs, SNAP_REGS);
	heapgraph_weak(&sn->g, 0);
}

/* jemalloc's blocks into sn->g (jeblocks.h). 0 or -errno (said). */
static int list_je(struct snap *sn, const struct proc_maps *maps)
{
	char why[160];
	int rc = jeblocks_list(maps, sn->je_root, sn->th, sn->nth, &sn->g, read_spans, sn,
			       &sn->je_meta, &sn->as, &sn->js, why, sizeof(why));

	if (rc) {
		if (!snaphold_stop_asked && !sn->cut)
			pr_err("jemalloc's blocks in %d cannot be listed: %s", sn->pid, why);
		return rc;
	}
	sn->bs = (struct glibcblocks_stats){ .chunks = sn->g.n, .tcaches = sn->js.tcaches,
					     .tcache_free = sn->js.tcache_free, .fast_known = 1,
					     .mm_known = 1 };
	pr_err("jemalloc: %llu slabs, %llu large extents; %u thread caches of %u threads, "
		"%llu regions in them counted free%s", (unsigned long long)sn->js.slabs,
		(unsigned long long)sn->js.large, sn->js.tcaches, sn->js.threads,
		(unsigned long long)sn->js.tcache_free, sn->js.tcaches < sn->js.threads ?
		" (a thread whose cache was not found, or has none: the blocks cached by "
		"it count as in use)" : "");
	return 0;
}

/* tcmalloc's blocks into sn->g (tcblocks.h). 0 or -errno (said). */
static int list_tc(struct snap *sn, const struct proc_maps *maps)
{
	struct tcblocks_stats ts;
	char why[160];
	int rc = tcblocks_list(maps, &sn->tc_at, &sn->g, read_spans, sn, &sn->tc_meta, &sn->as, &ts,
			       why, sizeof(why));

	if (rc) {
		if (!snaphold_stop_asked && !sn->cut)
			pr_err("tcmalloc's blocks in %d cannot be listed: %s", sn->pid, why);
		return rc;
	}
	sn->bs = (struct glibcblocks_stats){ .chunks = sn->g.n, .tcaches = ts.tcaches,
					     .tcache_free = ts.tcache_free, .fast_known = 1,
					     .mm_known = 1 };
	pr_err("tcmalloc: %llu spans of small objects, %llu large%s; %u thread caches, %llu "
	       "objects in them and %llu in the central transfer slots counted free",
	       (unsigned long long)ts.small, (unsigned long long)ts.large,
	       ts.torn ? " (some torn: skipped)" : "", ts.tcaches,
	       (unsigned long long)ts.tcache_free, (unsigned long long)ts.central_free);
	return 0;
}

/* mimalloc's blocks into sn->g (miblocks.h). 0 or -errno (said). */
static int list_mi(struct snap *sn, const struct proc_maps *maps)
{
	struct miblocks_stats ms;
	char why[160];
	int rc = miblocks_list(maps, read_target, sn, &sn->g, read_spans, sn, &sn->misegs, &ms,
			       why, sizeof(why));

	if (rc) {
		if (!snaphold_stop_asked && !sn->cut)
			pr_err("mimalloc's blocks in %d cannot be listed: %s", sn->pid, why);
		return rc;
	}
	sn->bs = (struct glibcblocks_stats){ .chunks = sn->g.n, .fast_known = 1, .mm_known = 1 };
	return 0;
}

/* With the target stopped, or from its copy: list, scan, type. 0 or -errno (said). */
static int analyse(struct snap *sn)
{
	const struct proc_maps *maps;
	int rc;

	maps = target_maps(sn->t);
	if (!maps) {
		pr_err("cannot read the memory map of %d", sn->pid);
		return -EIO;
	}
	if (sn->je_root)
		rc = list_je(sn, maps);
	else if (sn->tc)
		rc = list_tc(sn, maps);
	else if (sn->mimalloc)
		rc = list_mi(sn, maps);
	else
		rc = glibcblocks_list(sn->reader, maps, read_target, sn,
				      sn->have_gs ? &sn->gs : NULL, &sn->g, read_spans, sn, &sn->bs);
	if (rc && (sn->je_root || sn->tc || sn->mimalloc))
		return rc;
	if (rc) {
		if (!snaphold_stop_asked && !sn->cut)
			pr_err("no glibc heap found in %d: its blocks cannot be listed "
			       "(another allocator?)", sn->pid);
		return rc;
	}
	if (sn->have_py)
		py_blocks(sn, maps);
	snaproots_build(sn->t, maps, &sn->g, sn->th, sn->nth, &sn->names, &sn->roots);
	pyblocks_trim_roots(&sn->pb, &sn->roots);
	if (sn->je_root)
		jeblocks_cut_roots(&sn->je_meta, &sn->roots);
	snaproots_cut(&sn->roots, sn->tc_meta.v, sn->tc_meta.n);	/* tcmalloc's free spans */
	miblocks_unroot(&sn->roots, &sn->misegs);
	/* typed before the scan: a Python GC's links are then known */
	sn->st.classed = snaptypes_classify(sn->t, maps, &sn->g, &sn->names);
	if (sn->have_py) {
		struct pytypes_stats ps;
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

		pytypes_name(&sn->py, maps, &sn->g, &sn->names, &ps, &sn->gch);
		pr_debug("snapshot: python types in %.1f ms", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
		pr_err("python %s: %zu pymalloc blocks; %llu objects named by %llu types, "
		       "%llu dict keys tables, %llu dict values", sn->py.version, sn->pb.n,
		       (unsigned long long)ps.objects, (unsigned long long)ps.types,
		       (unsigned long long)ps.dict_keys, (unsigned long long)ps.dict_values);
		t0 = clock_ns(CLOCK_MONOTONIC);
		pyroots_find(sn->py.minor, &sn->g, &sn->names, &sn->pr);
		pr_debug("snapshot: python: %zu module globals of %llu modules are roots, in %.1f ms",
			 sn->pr.n, (unsigned long long)sn->pr.modules,
			 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	}
	/* the data symbols' names first: roots are ordered as built */
	sn->hide_gc = sn->gch.n > 0 || sn->pr.nhidden > 0;
	scan(sn);
	sn->hide_gc = 0;
	snapframes_credit(sn->t, &sn->g, sn->th, sn->nth, &sn->roots, &sn->names);
	sn->st.roots = sn->roots.n + sn->nth + sn->pr.n;
	sn->st.words = sn->g.words;
	return 0;
}

/*
 * Before the stop, while the target runs: whether it may be copied.
 * Not with --no-fork, nor when its memory cgroup has not the room the
 * copy may cost at worst (copysafe_copy_cost): sn->no_copy and sn->why.
 * sn->anon: what a stopped read reads at least.
 */
static void plan_copy(struct snap *sn)
{
	struct memcg_info cg;
	uint64_t cost = 0;
	char room[32];

	if (copysafe_copy_cost(sn->reader, &cost, &sn->anon))
		cost = sn->anon = 0;
	if (sn->cfg->no_fork) {
		snprintf(sn->why, sizeof(sn->why), "--no-fork");
		sn->no_copy = 1;
		return;
	}
	if (memcg_read(sn->reader, &cg))
		return;
	pr_debug("snapshot: a copy could cost %d's memory cgroup %s up to %s (room %s)",
		 sn->pid, cg.tight[0] ? cg.tight : cg.dir, memcg_fmt(cost, room, sizeof(room)),
		 memcg_fmt(cg.avail, (char[32]){ 0 }, 32));
	sn->no_copy = !copysafe_memcg_fits(&cg, cost, sn->why, sizeof(sn->why));
}

/* No copy: refuse when even the fastest read of the target's anonymous
 * memory (copysafe_read_ns) would outlast --max-stop. 1 (said), else 0. */
static int too_big(const struct snap *sn)
{
	uint64_t ns = copysafe_read_ns(sn->anon);
	char mem[32];

	if (ns <= sn->max_stop_ns)
		return 0;
	pr_err("heapattach snapshot: %d cannot be copied (%s), and a read of its %s of memory "
	       "with it stopped would take %.1f s at least, more than --max-stop %.3g s: "
	       "nothing done (raise --max-stop to stop it that long)", sn->pid, sn->why,
	       memcg_fmt(sn->anon, mem, sizeof(mem)), ns / 1e9, sn->max_stop_ns / 1e9);
	return 1;
}

/*
 * Whether the target may be asked to fork its copy: not when plan_copy
 * said no, nor when the thread that would fork has a seccomp filter (a
 * clone it refuses could kill it: heapattach does not read filters here).
 * 1, or 0 with the reason in sn->why.
 */
static int may_fork(struct snap *sn, pid_t tid)
{
	char mode[16] = "";

	if (sn->no_copy)
		return 0;
	if (proc_status_read(tid, "Seccomp", mode, sizeof(mode)) || strcmp(mode, "0")) {
		snprintf(sn->why, sizeof(sn->why), "thread %d has a seccomp filter (a clone it "
			 "refuses could kill it)", (int)tid);
		return 0;
	}
	return 1;
}

/* The first thread stopped, not a vfork child sharing the memory: 0 if none. */
static pid_t fork_thread(const struct tracee *tr)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].state == TS_STOPPED && !tr->t[i].vfork_child)
			return tr->t[i].tid;
	return 0;
}

/*
 * The copy done with: kill it, then stop the target again (stop: once no
 * vfork is in flight) for as long as a wait4 of the copy's zombie takes
 * (its child, not ours to reap); the time it was stopped into *ns. When
 * it cannot be stopped, the zombie stays (said).
 */
static void end_copy(struct snap *sn, uint64_t *ns)
{
	struct tracee tr = { 0 };
	struct events ev = sn->ev;
	char why[256];
	uint64_t t0;
	pid_t tid;

	forkcopy_end(&sn->fc);
	ev.tr = &tr;
	ev.gone = 0;
	if (snaphold_stop(sn->pid, 0, &tr, &ev, why, sizeof(why), &t0)) {
		pr_warn("the copy's zombie %d stays a child of %d (until it exits, or waits for "
			"any child): %s", (int)sn->fc.ns_child, sn->pid, why);
		*ns = 0;
		tracee_release(&tr);
		return;
	}
	if ((tid = fork_thread(&tr)))
		forkcopy_reap(&sn->fc, tid);
	tracee_detach_all(&tr);
	*ns = clock_ns(CLOCK_MONOTONIC) - t0;
	pr_debug("snapshot: stopped again %.1f ms to reap the copy", *ns / 1e6);
	tracee_release(&tr);
}

/* The snapshot ended early by a stop signal: say so. 1. */
static int interrupted(const struct snap *sn)
{
	pr_err("heapattach snapshot: interrupted (%s): nothing written; %d runs on",
	       strsignal(snaphold_stop_asked), sn->pid);
	return 1;
}

int snapshot_run(const struct snapshot_config *cfg)
{
	struct sigaction old[3];
	struct snap sn = { .cfg = cfg, .pid = cfg->pid };
	uint64_t t0, t1, reap_ns = 0;
	int rc, code = 1, copy = 0, caught = 0;
	pid_t tid;

	snaphold_stop_asked = 0;
	sn.max_stop_ns = cfg->max_stop_ns ? cfg->max_stop_ns : SNAPSHOT_MAX_STOP_NS;
	if (tracee_check(sn.pid))
		return 1;
	sn.reader = tracee_live_tid(sn.pid);
	sn.ev = (struct events){ .pid = sn.pid, .reader = sn.reader, .tr = &sn.tr,
				 .ops = &snap_events, .arg = &sn, .exit_status = -1 };
	sn.t = target_new(sn.pid, sn.reader);
	if (!sn.t || !target_maps(sn.t)) {
		pr_err("cannot read the memory map of %d", sn.pid);
		goto out;
	}
	if (check_allocator(&sn))
		goto out;
	prepare(&sn);
	plan_copy(&sn);
	if (sn.no_copy && too_big(&sn))
		goto out;
	snaphold_catch_signals(1, old);
	caught = 1;
	/* the pause counts from the seize */
	if (snaphold_stop(sn.pid, 1, &sn.tr, &sn.ev, sn.why, sizeof(sn.why), &t0)) {
		if (snaphold_stop_asked)
			code = interrupted(&sn);
		else if (sn.why[0])
			pr_err("heapattach snapshot: not %d: %s", sn.pid, sn.why);
		goto out;
	}
	rc = take_threads(&sn);
	target_maps_reload(sn.t);
	tid = fork_thread(&sn.tr);
	t1 = clock_ns(CLOCK_MONOTONIC);
	if (!rc && !snaphold_stop_asked && tid && may_fork(&sn, tid)) {
		snaphold_tick(1);
		copy = forkcopy_make(&sn.fc, sn.pid, tid, sn.why, sizeof(sn.why)) == 0;
		snaphold_tick(0);
	}
	if (!rc && !copy && !snaphold_stop_asked && !sn.no_copy && too_big(&sn)) {
		tracee_detach_all(&sn.tr);
		goto out;
	}
	if (copy) {	/* the target goes on; the copy is read */
		uint64_t t2 = clock_ns(CLOCK_MONOTONIC);

		tracee_detach_all(&sn.tr);
		sn.st.pause_ns = clock_ns(CLOCK_MONOTONIC) - t0;
		pr_debug("snapshot: stopped %.1f ms: seize, registers and maps %.1f, fork %.1f, "
			 "detach %.1f",
			 sn.st.pause_ns / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
			 (clock_ns(CLOCK_MONOTONIC) - t2) / 1e6);
		sn.reader = sn.fc.child;
		target_set_reader(sn.t, sn.fc.child);
		sn.ev.gone = 0;
	} else {
		sn.deadline_ns = t0 + sn.max_stop_ns;
		pr_debug("snapshot: no copy (%s): %d stays stopped for the read, %.3g s at most",
			 sn.why, sn.pid, sn.max_stop_ns / 1e9);
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	if (!rc && !snaphold_stop_asked)
		rc = analyse(&sn);
	sn.st.scan_ns = clock_ns(CLOCK_MONOTONIC) - t1;
	if (copy) {
		end_copy(&sn, &reap_ns);
		sn.st.pause_ns += reap_ns;
	} else {
		tracee_detach_all(&sn.tr);
		sn.st.pause_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	}
	snaphold_catch_signals(0, old);
	caught = 0;
	if (snaphold_stop_asked) {
		code = interrupted(&sn);
		goto out;
	}
	pr_debug("snapshot: %u glibc heaps walked, %llu blocks listed", sn.bs.heaps,
		 (unsigned long long)sn.bs.chunks);
	sn.st.copied = copy;
	if (sn.cut)
		snprintf(sn.st.how, sizeof(sn.st.how), "%.110s; PARTIAL: the read was cut at "
			 "--max-stop %.3g s", sn.why, sn.max_stop_ns / 1e9);
	else
		snprintf(sn.st.how, sizeof(sn.st.how), "%.199s", copy ? "a copy it forked" : sn.why);
	if (rc) {
		if (sn.cut)
			pr_err("heapattach snapshot: the read of %d was cut at --max-stop %.3g s "
			       "before its heap was listed: nothing written", sn.pid,
			       sn.max_stop_ns / 1e9);
		goto out;
	}
	code = snapout_write(cfg, &sn.g, &sn.names, &sn.as, sn.t, &sn.bs, &sn.st) ? 1 : 0;
	if (sn.cut) {
		pr_warn("the snapshot of %d is partial: its read was cut at --max-stop %.3g s (%d "
			"stopped %.1f ms); blocks not reached count as leaked", sn.pid,
			sn.max_stop_ns / 1e9, sn.pid, sn.st.pause_ns / 1e6);
		code = 1;
	}
out:
	if (caught)
		snaphold_catch_signals(0, old);
	memread_close(&sn.mr);
	heapgraph_free(&sn.g);
	jeblocks_meta_free(&sn.je_meta);
	tcblocks_meta_free(&sn.tc_meta);
	snaproots_free(&sn.roots);
	pyblocks_free(&sn.pb);
	pygcheads_free(&sn.gch);
	miblocks_segs_free(&sn.misegs);
	snapnames_free(&sn.names);
	allocsites_free(&sn.as);
	free(sn.th);
	target_free(sn.t);
	tracee_release(&sn.tr);
	return code;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: heapattach snapshot -p PID [-o FILE] [--top N] [--no-fork] [--max-stop DURATION]\n"
"                           [-v]\n"
"\n"
"Every block in use in PID's heap (glibc malloc, jemalloc 5.3, gperftools 2.10's\n"
"tcmalloc or mimalloc 2.0.9; CPython's pymalloc too),\n"
"as it is now: which are leaked (no root reaches them), which root keeps the\n"
"others alive (a global variable, a thread's stack), and what each holds (a\n"
"C++ class by its vtable, a Python object by its type, else its size), and\n"
"where it was allocated if jemalloc (prof:true) or tcmalloc sampled it. The\n"
"target is stopped only while it forks a copy of itself that never runs; the\n"
"copy is read and removed. Without a copy (a seccomp filter, a memory cgroup\n"
"without the room the copy could take, --no-fork) the target stays stopped\n"
"while its heap is read, --max-stop at most. A vfork in flight is waited for\n"
"(200 ms), else the target is left alone. Ctrl-C, SIGTERM or SIGHUP end the\n"
"read early: the target is let go, nothing written.\n"
"\n"
"  -p, --pid PID     the process\n"
"  -o, --output FILE the profile (pprof; default heapattach.PID.snapshot.heap):\n"
"                    inuse_space and inuse_objects, each stack type <- owners <- root\n"
"      --top N       lines of each table in the summary (default 10)\n"
"      --no-fork     no copy: the target stays stopped while it is read\n"
"      --max-stop DURATION  without a copy, let the target go after DURATION\n"
"                    (500ms, 30s, 5m; default 10s): the snapshot is then partial;\n"
"                    refused before the stop when even a fast read takes longer\n"
"  -v, --verbose     say how long each step took\n"
"  -h, --help        this help\n");
}

int snapshot_main(int argc, char **argv, int (*parse_duration)(const char *s, uint64_t *ns))
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 't' },
		{ "no-fork", no_argument, NULL, 'F' },
		{ "max-stop", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct snapshot_config cfg = { .top = 10, .max_stop_ns = SNAPSHOT_MAX_STOP_NS };
	char *end;
	long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:o:hv", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 0x3fffffff || optarg[0] < '0' || optarg[0] > '9') {
				fprintf(stderr, "heapattach snapshot: bad PID: %s\n", optarg);
				return 2;
			}
			cfg.pid = (pid_t)v;
			break;
		case 'o':
			cfg.output = optarg;
			break;
		case 't':
			v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 1000) {
				fprintf(stderr, "heapattach snapshot: bad --top: %s\n", optarg);
				return 2;
			}
			cfg.top = (unsigned)v;
			break;
		case 'F':
			cfg.no_fork = 1;
			break;
		case 'M':
			if (parse_duration(optarg, &cfg.max_stop_ns) || !cfg.max_stop_ns) {
				fprintf(stderr, "heapattach snapshot: bad --max-stop: %s\n", optarg);
				return 2;
			}
			break;
		case 'v':
			log_verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !cfg.pid) {
		fprintf(stderr, "heapattach snapshot: %s\n", optind < argc ? "unexpected argument" :
			"-p PID is required");
		return 2;
	}
	return snapshot_run(&cfg);
}
