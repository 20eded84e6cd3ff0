/* Children forked while attached: their original text back, our mappings gone. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FORKCHILD_H
#define HEAPATTACH_FORKCHILD_H

#include <sys/types.h>

struct implant;

/* A child of pid forked while attached, stopped before it ran: give it its
 * original text back and, when nothing in it can reach our regions any
 * more, unmap them in it. Leaves a child that shares the target's memory
 * alone. */
void forkchild_clean(struct implant *im, pid_t pid, pid_t child);
/* 0 if processes a and b use one address space, 1 if not, -errno when
 * unknown (no kcmp). */
int forkchild_separate_memory(pid_t a, pid_t b);

#endif
