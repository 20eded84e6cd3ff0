/* For tests that know only a pid: an unwinder or a frame table over a target of its own. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TESTTARGET_H
#define HEAPATTACH_TESTTARGET_H

#include <sys/types.h>

struct unwinder;
struct frametab;
struct shm_frame;

/* An unwinder over a target made for process pid (read through pid). NULL
 * on failure (errno set). Free it with testtarget_unwinder_free. */
struct unwinder *testtarget_unwinder(pid_t pid);
/* Free u and the target testtarget_unwinder made for it. NULL is fine. */
void testtarget_unwinder_free(struct unwinder *u);

/* A frame table writing into table over a target made for process pid.
 * NULL on failure (errno set). Free it with testtarget_frametab_free. */
struct frametab *testtarget_frametab(pid_t pid, struct shm_frame *table);
/* Free ft and the target testtarget_frametab made for it. NULL is fine. */
void testtarget_frametab_free(struct frametab *ft);

#endif
