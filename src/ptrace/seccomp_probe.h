/* Learning what a seccomp filter heapattach may not read does to its calls, from a throwaway copy of the target. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SECCOMP_PROBE_H
#define HEAPATTACH_SECCOMP_PROBE_H

#include <stddef.h>
#include <sys/types.h>

struct seccomp_params;

/*
 * What the seccomp filters of thread tid of pid do to each call of
 * seccomp_plan_calls(pp), learnt by making it in a throwaway child that
 * tid forks and that never runs the program's code: out[SC_NCALLS] gets
 * the SECCOMP_O_* outcome of each (seccomp_probe.c says how, and what a
 * probe cannot tell). Every thread of pid must be in a ptrace stop of
 * ours, seized with PTRACE_O_TRACECLONE (tracee_seize). The clone that
 * makes the child is the one call heapattach makes in the target without
 * knowing the filter's verdict on it.
 *
 * 0; -EAGAIN if tid cannot serve and another thread may (no room below
 * its stack pointer); else -errno with why[] saying in a few words why no
 * child could be made or used (the clone refused or trapped, ...).
 */
int seccomp_probe_run(pid_t pid, pid_t tid, const struct seccomp_params *pp, unsigned *out,
		      char *why, size_t whylen);

#endif
