/* One profiling run against one target, from its configuration to the exit code. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SESSION_H
#define HEAPATTACH_SESSION_H

#include "session/config.h"

/* Run a whole profile: attach, collect until a stop condition, dump, detach.
 * Returns the process exit code: 0 profile written (the target may have
 * exited, with any status), 1 could not attach or write (or the target wrote
 * over the shared memory: the profile is partial), 3 written but the
 * target was killed by a signal, 4 written but detach had to leave
 * heapattach mappings in the target, 5 written but an exact profile
 * misses events it dropped. */
int session_run(const struct session_config *cfg);

#endif
