/* The trap backend: every hooked call stops in the tool, which records it (trap/collect.c). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/wait.h>
#include "session/budget.h"
#include "session/state.h"
#include "trap/collect.h"

/* Before the attach: the target's limits (budget.h), no rings. */
static int trap_prepare(struct session *s)
{
	const struct budget_ask ask = { .agent = 0 };

	return membudget_plan(s->pid, &ask, &s->mem);
}

static void trap_loop(struct session *s)
{
	int status;
	pid_t tid;

	while (!session_stop_signal && !s->ev.gone && !s->ev.exec_seen) {
		if (session_ticked || s->opt->interval) {
			session_ticked = 0;
			session_watch_maps(s);
			s->live_fresh = 1;	/* every free stops here */
			if (session_housekeeping(s))
				break;
		}
		session_serve_poll(s);	/* an atomic load when nobody asks */
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

static int trap_syscall_stop(struct session *s, pid_t tid, int record)
{
	return collect_trap(&s->trap, tid, record);
}

const struct session_mode session_trap_mode = {
	.name = "trap",
	.syscall_stops = 1,
	.implant = &collect_implant_ops,
	.prepare = trap_prepare,
	.loop = trap_loop,
	.syscall_stop = trap_syscall_stop,
};
