/* Another process's file access: its credentials from /proc, worn by a short-lived thread of ours. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TCRED_H
#define HEAPATTACH_TCRED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At most this many supplementary groups (the kernel's NGROUPS_MAX). */
#define TCRED_MAX_GROUPS 65536

/* The capabilities that let an opener past a file's permissions. */
#define TCRED_DAC_CAPS ((1u << 1) | (1u << 2))	/* CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH */

/*
 * What the kernel checks a file's access against (path_permission,
 * generic_permission): the file system ids, the supplementary groups and
 * the two capabilities above in the effective set.
 */
struct tcred {
	uid_t fsuid;
	gid_t fsgid;
	size_t ngroups;
	gid_t *groups;          /* sorted; malloc'd, or NULL */
	uint32_t dac_caps;      /* TCRED_DAC_CAPS bits */
};

/*
 * Parse a /proc/TID/status text: the fourth ids of "Uid:" and "Gid:",
 * "Groups:" (at most TCRED_MAX_GROUPS) and the DAC bits of "CapEff:".
 * 0, or -EINVAL (a field missing or malformed; *c untouched).
 */
int tcred_parse(const char *status, struct tcred *c);

/*
 * The credentials of thread tid now. Its capabilities count only if it is
 * in heapattach's own user namespace (a capability in another one does
 * not reach every file; heapattach would have to know which). A thread
 * that is gone (its status cannot be read) is taken with what the last
 * successful read of that same tid gave. 0 or -errno; free with
 * tcred_release.
 */
int tcred_read(pid_t tid, struct tcred *c);
void tcred_release(struct tcred *c);

/*
 * fn(arg), run with c's file access: in a thread of heapattach made for
 * this call, which takes c's fsuid, fsgid, groups and DAC capabilities
 * (those heapattach holds itself: it never gains one) with the raw system
 * calls, which change the calling thread alone, and ends with the call.
 * No other thread of heapattach ever changes credentials, and signals are
 * blocked in that one. When c is heapattach's own, fn runs in the caller.
 * fn's value, or -errno: -EPERM if heapattach may not take c (it lacks
 * CAP_SETUID or CAP_SETGID), -EAGAIN if no thread could be made.
 */
int tcred_run(const struct tcred *c, int (*fn)(void *), void *arg);

/* tcred_read(tid) then tcred_run; tid 0: fn(arg) as heapattach itself. */
int tcred_run_as(pid_t tid, int (*fn)(void *), void *arg);

#endif
