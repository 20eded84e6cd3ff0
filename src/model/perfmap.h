/* JIT code names from the target's perf map (/tmp/perf-PID.map), read as it grows. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PERFMAP_H
#define HEAPATTACH_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What is read of a map the target writes (beyond them nothing more is). */
#define PERFMAP_MAX_BYTES	(64u << 20)	/* from the file's start */
#define PERFMAP_MAX_LINE	4096		/* longer lines are skipped */
#define PERFMAP_MAX_ENTRIES	(1u << 20)	/* lines taken */

/* perfmap_stats.caps bits */
#define PERFMAP_CAP_BYTES	1u
#define PERFMAP_CAP_LINE	2u
#define PERFMAP_CAP_ENTRIES	4u

struct perfmap;

/* "/tmp/perf-N.map" for the process of thread tid (a host id), N being its
 * pid as the process sees it (the last NStgid of /proc/TID/status: its id
 * in its own pid namespace). 0 or -errno. */
int perfmap_path_of(pid_t tid, char *path, size_t len);

/* For --list-hooks: one "# perf map ..." line on f if the process of tid
 * has a perf map in its root (what it is; opened with its access only if
 * it is a regular file). 0, or -errno (-ENOENT: none). */
int perfmap_describe(FILE *f, pid_t tid);

/*
 * A perf map at path inside root (an O_PATH directory fd, duplicated; see
 * tfile_open), opened with the access of thread as (TFILE_SELF: ours),
 * nothing read yet. Never NULL.
 */
struct perfmap *perfmap_new(int root, const char *path, pid_t as);
/* The same for the process of thread tid, in its root (/proc/TID/root,
 * opened afresh at each read), or NULL if its pid cannot be read. */
struct perfmap *perfmap_open_target(pid_t tid);
/* Another live thread of that process to find its root through, or 0: the
 * process is gone (or exec'd), only the file already open is read on. */
void perfmap_set_tid(struct perfmap *pm, pid_t tid);
void perfmap_free(struct perfmap *pm);

/*
 * Read what was appended since the last call (the whole file if it was
 * replaced, truncated or rewritten in place: the last bytes taken are not
 * there any more) and take its entries. A later entry wins over an
 * earlier one wherever they overlap, as perf does. While the target lives
 * the path is looked up again each time with tfile_open's rules (a regular
 * file in the target's root that the target may read, never blocking);
 * the file read last stays
 * open and is read on once the target is gone or the path names nothing.
 * Within the caps above. 0, or -errno (-ENOENT: no map yet; -EINVAL: not a
 * regular file; -EACCES, -EPERM: not opened with the target's access;
 * -ESRCH: no target and no file), which leaves the entries as they were.
 */
int perfmap_refresh(struct perfmap *pm);

/* Have the next perfmap_refresh forget every entry and read the map again
 * from its start: the caller knows it was rewritten (a JVM asked for a
 * fresh map). */
void perfmap_rewind(struct perfmap *pm);

/* The name of the entry holding addr and addr's offset in it, or NULL.
 * The string lives until the next perfmap_refresh or perfmap_free. */
const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr, uint64_t *offset);

const char *perfmap_path(const struct perfmap *pm);
struct perfmap_stats {
	size_t entries;         /* taken so far (of the file now read) */
	size_t garbage;         /* malformed lines skipped */
	unsigned caps;          /* PERFMAP_CAP_* bits hit */
};
void perfmap_get_stats(const struct perfmap *pm, struct perfmap_stats *st);

/*
 * One line (into buf) saying what is new since the last call: a cap first
 * reached, a map that is not a regular file or not for the target to read.
 * 1 if buf was written, else 0.
 */
int perfmap_take_note(struct perfmap *pm, char *buf, size_t len);

#endif
