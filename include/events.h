/* Dispatch of ptrace stops: new threads, children, exec, exit, signals and our traps. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_EVENTS_H
#define HEAPATTACH_EVENTS_H

#include <sys/types.h>

/* Handle one waitpid status of the run sess (a struct session): a
 * tracee_event_fn. Resumes the thread unless tracee_stopping. */
int events_dispatch(void *sess, pid_t tid, int status);

#endif
