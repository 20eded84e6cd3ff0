/* The one reader and writer of a target's memory by thread id: process_vm_readv, /proc/PID/mem, PTRACE_PEEK/POKEDATA. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TMEM_H
#define HEAPATTACH_TMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * pid may be any thread id of the target. The PTRACE_PEEK/POKEDATA
 * fallbacks work only if pid is a thread we trace that is in a ptrace stop.
 * Both return 0 once all len bytes are transferred, else -errno. Whoever
 * holds a struct target reads through it (target_read, target_read_some,
 * target_write); these are for callers that know only a thread.
 *
 * tmem_write goes through /proc/PID/mem (FOLL_FORCE), so it can write
 * read-only text the way a debugger does; process_vm_writev cannot.
 */
int tmem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int tmem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);
/* Test seam: nonzero makes both use only PTRACE_PEEKDATA/POKEDATA. */
extern int tmem_ptrace_only;

#endif
