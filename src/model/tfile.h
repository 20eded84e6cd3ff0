/* Opening files the target names: inside its root, with its access, never blocking, regular files only. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TFILE_H
#define HEAPATTACH_TFILE_H

#include <sys/stat.h>
#include <sys/types.h>

/* tfile_open()'s root for a path of heapattach's own making (a /proc file,
 * a host debug directory): opened as it is, on the host. */
#define TFILE_HOST (-1)

/* tfile_open()'s opener for a file heapattach reads for itself (a /proc
 * file, the mapped file through map_files): its own access. */
#define TFILE_SELF 0

/*
 * An O_PATH descriptor of the target's root directory (/proc/PID/root: its
 * chroot in its own mount namespace), to resolve the target's paths in.
 * Returns the fd or -errno.
 */
int tfile_root(pid_t pid);

/*
 * Open a regular file for reading. With root >= 0, path (a path the target
 * chose) is resolved as if root were "/": neither ".." nor an absolute
 * symlink leads out of it and no /proc magic link is followed (openat2
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS; without openat2 the call fails,
 * it never falls back to the host). With root == TFILE_HOST path is opened
 * as is. Either way path is first opened O_PATH, which opens nothing, and
 * only a regular file is reopened O_RDONLY | O_NONBLOCK | O_NOCTTY: a FIFO,
 * a device or a socket is never opened, so nothing blocks or has side
 * effects. Both steps are taken with the access of thread as (tcred_run:
 * its ids, groups and DAC capabilities; every directory on the way must be
 * searchable by it, the file readable by it), or heapattach's own for
 * TFILE_SELF. *st (may be NULL) describes the file. Returns the fd, or
 * -errno (-EINVAL: not a regular file; -EACCES: as may not reach or read
 * it; -EPERM: heapattach cannot take as's credentials).
 */
int tfile_open(int root, const char *path, struct stat *st, pid_t as);

/* An O_PATH descriptor of path, resolved as tfile_open() resolves it, with
 * heapattach's own access, whatever the file is (nothing is opened). The
 * fd or -errno. */
int tfile_opath(int root, const char *path);

/* stat() of path resolved as tfile_open() resolves it, by as, without
 * opening it. 0 or -errno. */
int tfile_stat(int root, const char *path, struct stat *st, pid_t as);

#endif
