/* Asking a running HotSpot JVM for a fresh perf map (jcmd's Compiler.perfmap) through its attach socket. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_JVMATTACH_H
#define HEAPATTACH_JVMATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "proc.h"

/* --jvm-perfmap: the period without one, the shortest one taken. */
#define JVM_PERFMAP_DEFAULT_NS	(30ull * 1000000000)
#define JVM_PERFMAP_MIN_NS	(1ull * 1000000000)
/* One request at most this long (the first starts the JVM's listener). */
#define JVM_REQUEST_NS		(10ull * 1000000000)

struct jvm_asker;

/*
 * Whether the process of tid, whose maps are maps, can be asked: 0, or
 * -errno with why (a sentence) in why: -ENOEXEC not a HotSpot JVM (no
 * libjvm.so mapped), -EPERM it does not catch SIGQUIT (-Xrs: the signal
 * that starts the listener would end it), or what reading its status
 * gave.
 */
int jvm_check(pid_t tid, const struct proc_maps *maps, char *why, size_t len);

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

/*
 * One request, in the caller: send cmd (a jcmd command line) to the JVM
 * of pid and wait for its answer until deadline_ns (CLOCK_MONOTONIC) or
 * until *stop (read atomically; NULL: never). 0 when the JVM says it ran
 * it, with its output in out (NUL-terminated, cut to outlen and to the
 * first 16 KiB of the answer; out may be NULL), else -errno and why: -ETIMEDOUT, -ECONNREFUSED (no listener came:
 * -XX:+DisableAttachMechanism?), -EPROTO (the JVM's error, its first
 * line in why), -EPERM (a socket not the JVM's, or its ids not ours to
 * take).
 */
int jvm_request(pid_t pid, const char *cmd, uint64_t deadline_ns, const int *stop,
		char *out, size_t outlen, char *why, size_t len);

#endif
