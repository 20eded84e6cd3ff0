/* Reading spans of a copy that does not run through /proc/PID/mem: none of its pages unshared, nearby spans in one read. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_MEMREAD_H
#define HEAPATTACH_MEMREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot/heapgraph.h"

/*
 * process_vm_readv pins the pages it reads (FOLL_PIN), and the kernel
 * will not pin for reading an anonymous page two processes share: it
 * copies it first. Every page of a forked copy is shared with the target,
 * so the first read of the copy's heap through it copies the heap (0.4
 * GiB/s here). /proc/PID/mem reads without pinning (4-5 GiB/s), but one
 * range a call: spans at most MEMREAD_GAP bytes apart are read as one
 * range into a scratch buffer and copied out.
 */
#define MEMREAD_GAP 4096
#define MEMREAD_SCRATCH (1u << 20)

struct memread {
	pid_t pid;                      /* whose mem fd is open (0: none yet) */
	int fd;                         /* -1: cannot be opened: process_vm_readv */
	uint8_t *scratch;               /* MEMREAD_SCRATCH bytes, made on the first merge */
};

/* Read spans s[0..n) of pid (ascending or not), one after the other, into
 * buf: 0 or -errno. The file is opened on the first call for a pid. */
int memread_spans(struct memread *m, pid_t pid, const struct hg_span *s, size_t n, uint8_t *buf);
/* Close the file and free the scratch buffer. */
void memread_close(struct memread *m);

#endif
