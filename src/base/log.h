/* Logging macros: every message is prefixed "heapattach: " and goes to stderr. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_LOG_H
#define HEAPATTACH_LOG_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

extern int log_verbose;
/* What every message starts with: "heapattach: ", or "heapattach[PID]: " in
 * a session of a run over several processes. */
extern const char *log_prefix;

void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A reason into the caller's buffer of len bytes, if it gave one (buf NULL
 * or len 0: nothing). */
void log_say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define pr_err(fmt, ...)   log_msg(fmt "\n", ##__VA_ARGS__)
#define pr_warn(fmt, ...)  log_msg("warning: " fmt "\n", ##__VA_ARGS__)
/* pr_perror: message plus the text of the current errno. */
#define pr_perror(fmt, ...) log_msg(fmt ": %s\n", ##__VA_ARGS__, strerror(errno))
#define pr_debug(fmt, ...) do { if (log_verbose) log_msg("debug: " fmt "\n", ##__VA_ARGS__); } while (0)

#endif
