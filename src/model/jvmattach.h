/* HotSpot's dynamic attach: one jcmd command (Compiler.perfmap, VM.flags) to a running JVM through its attach socket. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_JVMATTACH_H
#define HEAPATTACH_JVMATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "model/proc.h"

/* One request at most this long (the first starts the JVM's listener). */
#define JVM_REQUEST_NS		(10ull * 1000000000)
/* Answer bytes kept. */
#define JVM_ANSWER_MAX		16384u

/*
 * Whether the process of tid, whose maps are maps, can be asked: 0, or
 * -errno with why (a sentence) in why: -ENOEXEC not a HotSpot JVM (no
 * libjvm.so mapped), -EPERM it does not catch SIGQUIT (-Xrs: the signal
 * that starts the listener would end it) and has no attach socket yet,
 * or what reading its status gave.
 */
int jvm_check(pid_t tid, const struct proc_maps *maps, char *why, size_t len);

/*
 * One request, in the caller: send cmd (a jcmd command line) to the JVM
 * of pid and wait for its answer until deadline_ns (CLOCK_MONOTONIC) or
 * until *stop (read atomically; NULL: never). 0 when the JVM says it ran
 * it, with its output in out (NUL-terminated, cut to outlen and to the
 * first JVM_ANSWER_MAX bytes of the answer; out may be NULL), else -errno and why: -ETIMEDOUT, -ECONNREFUSED (no listener came:
 * -XX:+DisableAttachMechanism?), -EPROTO (the JVM's error, its first
 * line in why), -EPERM (a socket not the JVM's, or its ids not ours to
 * take).
 */
int jvm_request(pid_t pid, const char *cmd, uint64_t deadline_ns, const int *stop,
		char *out, size_t outlen, char *why, size_t len);

#endif
