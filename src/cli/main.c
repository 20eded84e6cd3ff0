/* heapattach: profile the heap of a running process. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "base/log.h"
#include "cli/cli.h"
#include "model/hooks.h"
#include "model/perfmap.h"
#include "model/proc.h"
#include "ptrace/tracee.h"
#include "report/report.h"
#include "session/fleet.h"
#include "session/session.h"
#include "snapshot/snapshot.h"

/* --list-hooks: print where allocator calls bind; no ptrace stop needed. */
static int list_hooks(pid_t pid)
{
	struct proc_maps maps = { 0 };
	struct hook_set set = { 0 };
	pid_t live;
	int rc;

	if (tracee_probe(pid, &live))
		return 1;	/* no such process, a kernel thread, a zombie: said */
	rc = proc_maps_read(live, &maps);
	if (rc == -ENOENT || rc == -ESRCH) {
		pr_err("no such process: %d", pid);
		return 1;
	}
	if (rc) {
		pr_err("cannot read the memory map of %d: %s", pid, strerror(-rc));
		return 1;
	}
	if (!maps.n) {
		pr_err("%d has no memory map (it is exiting?)", pid);
		proc_maps_free(&maps);
		return 1;
	}
	rc = hooks_resolve(live, &maps, &set);
	if (rc) {
		pr_err("no allocator found in %d: %s", pid, strerror(-rc));
		proc_maps_free(&maps);
		return 1;
	}
	rc = hooks_print(stdout, &set);
	perfmap_describe(stdout, live);
	hooks_free(&set);
	proc_maps_free(&maps);
	return rc ? 1 : 0;
}

/* --snapshot: the blocks in use now, kept for the profiles of the attach
 * that follows (stopped and read from a copy as heapattach snapshot
 * does, before the attach's own stop). 0, or 1 after a message. */
static int snapshot_first(struct options *o, struct snapshot_keep *keep)
{
	struct snapshot_config cfg = { .pid = o->run.pid, .top = 10, .keep = keep };

	if (snapshot_run(&cfg))
		return 1;
	o->run.snapshot = keep;
	return 0;
}

/* A session's process in a run over several (fleet_before_fn): its own
 * --snapshot, kept for its profiles. */
static int snapshot_each(struct session_config *cfg, void *arg)
{
	static struct snapshot_keep keep;
	struct snapshot_config sc = { .pid = cfg->pid, .top = 10, .keep = &keep };

	(void)arg;
	if (snapshot_run(&sc))
		return 1;
	cfg->snapshot = &keep;
	return 0;
}

int main(int argc, char **argv)
{
	struct snapshot_keep keep = { 0 };
	struct options o;
	int rc;

	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "snapshot"))
		return snapshot_main(argc - 1, argv + 1, cli_parse_duration);
	rc = cli_parse(argc, argv, &o);
	if (rc)
		return rc > 0 ? 0 : 2;
	log_verbose = o.verbose;
	if (o.list_hooks)
		return list_hooks(o.run.pid);
	if (o.tree || o.npids > 1)
		return fleet_run(&(struct fleet_config){
			.run = &o.run, .pids = o.pids, .npids = o.npids, .tree = o.tree,
			.top = o.run.top,
			.before = o.snapshot ? snapshot_each : NULL });
	if (o.snapshot && snapshot_first(&o, &keep))
		return 1;
	rc = session_run(&o.run);
	snapshot_keep_free(&keep);
	return rc;
}
