/* The thread that asks a running HotSpot JVM for a fresh perf map every period (--jvm-perfmap). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_JVMASKER_H
#define HEAPATTACH_JVMASKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* --jvm-perfmap: the period without one, the shortest one taken. */
#define JVM_PERFMAP_DEFAULT_NS	(30ull * 1000000000)
#define JVM_PERFMAP_MIN_NS	(1ull * 1000000000)

struct jvm_asker;

/*
 * Start a thread that asks the JVM of pid (a host id) for a fresh
 * /tmp/perf-PID.map at once, then every period_ns, as
 * `jcmd PID Compiler.perfmap` does: through /tmp/.java_pidNSPID in its
 * root, made by its attach listener when no socket is there yet
 * (.attach_pidNSPID in its cwd, else its /tmp, made with its file access
 * and removed after, then SIGQUIT), connected with its effective ids
 * (HotSpot refuses a peer with others unless it is root). Each request
 * ends within JVM_REQUEST_NS. After the first map, its VM.flags once: a
 * note when it lacks -XX:+PreserveFramePointer. NULL if no thread could
 * be made.
 */
struct jvm_asker *jvm_asker_start(pid_t pid, uint64_t period_ns);

/* Maps the JVM wrote on our asking so far. */
unsigned jvm_asker_done(struct jvm_asker *a);

/* One line into buf about the latest failure not said yet: 1 if written. */
int jvm_asker_take_note(struct jvm_asker *a, char *buf, size_t len);

/* End the thread (its request in progress cut short), after one more
 * request if last and the thread has not given up. */
void jvm_asker_stop(struct jvm_asker *a, int last);
void jvm_asker_free(struct jvm_asker *a);

#endif
