/* Profile writers (pprof, legacy text) and atomic dump files. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_DUMP_H
#define HEAPATTACH_DUMP_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "model/proc.h"
#include "profile/profile.h"
#include "stacks/symbolize.h"

struct peak;

enum dump_format { DUMP_PPROF, DUMP_LEGACY, DUMP_FOLDED };

/*
 * The samples of a second profile written into the same pprof file (the
 * blocks a snapshot found before the attach, heapattach --snapshot): each
 * labelled key=value, the profile's own samples key=own; its frames at
 * SYMBOLIZE_SNAPSHOT_BASE and above are named by namer(namer_arg, ...).
 */
struct dump_extra {
	const struct profile *p;
	const char *key, *value, *own;
	symbolize_namer_fn namer;
	const void *namer_arg;
};

/*
 * A profile's figures at an earlier time, by bucket number (profile_foreach
 * order: creation, never removed), scaled as pprof_write writes them:
 * alloc_objects, alloc_space, inuse_objects, inuse_space. Written with a
 * profile, each bucket's figures less these (a delta, as Go's
 * net/http/pprof serves for ?seconds=N), and a bucket whose four are then
 * all 0 left out.
 */
struct pprof_base {
	int64_t (*v)[4];
	size_t n;
	uint64_t wall_ns;       /* when taken (CLOCK_REALTIME) */
};

/* Everything a writer needs besides the profile. */
struct dump_info {
	pid_t pid;
	uint64_t time_nanos;      /* when profiling started (wall clock) */
	uint64_t duration_nanos;  /* how long it has run */
	const struct proc_maps *maps;  /* the target's maps, for Mapping entries */
	struct symbolizer *sym;   /* may be NULL: no Function/Line entries */
	const char **comments;    /* extra comment lines, may be NULL */
	size_t ncomments;
	const struct peak *peak;  /* non-NULL: in-use figures as they were at this
				   * snapshot (the peak profile; pprof only) */
	const struct dump_extra *extra;  /* NULL: none (pprof only) */
	const char *default_type; /* pprof: its default_sample_type, NULL: none said */
	const struct pprof_base *base;   /* pprof: the figures since base, NULL: all */
	int label_pid;            /* pprof: every sample labelled pid=<pid> */
};

/* Write p as a gzipped pprof profile.proto to f. 0 or -errno. */
int pprof_write(FILE *f, const struct profile *p, const struct dump_info *d);
/* p's figures now into b (xmalloc'd), for a delta written later. */
void pprof_base_take(const struct profile *p, struct pprof_base *b);
void pprof_base_free(struct pprof_base *b);
/* Write p in the gperftools legacy heap text format to f. 0 or -errno. */
int legacy_write(FILE *f, const struct profile *p, const struct dump_info *d);
/* Write p's live bytes as folded stacks (folded.h), one line per bucket
 * holding any, scaled as in pprof. 0 or -errno. */
int folded_write(FILE *f, const struct profile *p, const struct dump_info *d);
/* The directory profiles go to, opened once: every dump is created and
 * renamed through this one fd, so no component of its path is resolved twice. */
struct dump_dir {
	int fd;                   /* -1: not open */
};

/*
 * Open the directory of path and check that a profile can be written
 * there: the name must be free or a regular file (a device, FIFO, socket,
 * directory or symbolic link is refused, never replaced) and, with probe,
 * a temporary file with 64 KiB allocated must be creatable (it is removed
 * again): a missing, read-only or full directory fails here, before any
 * work. 0, or -errno after one message.
 */
int dump_dir_open(struct dump_dir *dd, const char *path, int probe);
void dump_dir_close(struct dump_dir *dd);
/* Write p to path, a name in dd's directory (its last component is used),
 * through a temporary file (mode 0600) and renameat. 0, or -errno after one
 * message. */
int dump_write_at(const struct dump_dir *dd, const char *path, enum dump_format fmt,
		  const struct profile *p, const struct dump_info *d);
/* dump_write_at, and the file written (its st_dev, st_ino: the same after
 * the rename) into *st. */
int dump_write_at_stat(const struct dump_dir *dd, const char *path, enum dump_format fmt,
		       const struct profile *p, const struct dump_info *d, struct stat *st);
/* The last component of path ("" when path ends with a slash). */
const char *dump_base_name(const char *path);
/* dump_dir_open (no probe) + dump_write_at + dump_dir_close. */
int dump_write_file(const char *path, enum dump_format fmt,
		    const struct profile *p, const struct dump_info *d);
/* "out.heap", 3 -> "out.0003.heap"; "out" -> "out.0003". Caller frees. */
char *dump_numbered_path(const char *path, unsigned n);
/* "out.heap", "peak" -> "out.peak.heap"; "out" -> "out.peak". Caller frees. */
char *dump_tagged_path(const char *path, const char *tag);

#endif
