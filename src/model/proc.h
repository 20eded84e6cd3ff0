/* /proc parsing: memory maps, thread lists, status fields (from a path or a buffer). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PROC_H
#define HEAPATTACH_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_MAP_R 1
#define PROC_MAP_W 2
#define PROC_MAP_X 4
#define PROC_MAP_SHARED 8

/* One line of /proc/PID/maps. */
struct proc_map {
	uint64_t start, end;    /* [start, end) */
	uint64_t offset;        /* file offset of start */
	unsigned prot;          /* PROC_MAP_* bits */
	unsigned dev_major, dev_minor;
	uint64_t inode;
	char *path;             /* NULL when anonymous; " (deleted)" stripped */
	int deleted;            /* path had " (deleted)" */
};

struct proc_maps {
	struct proc_map *v;
	size_t n;
};

/* Parse one maps line [s, end) without its newline into *m; m->path is
 * the caller's to free. 0 or -EINVAL. */
int proc_maps_parse_line(const char *s, const char *end, struct proc_map *m);
/* Parse maps text; 0 or -errno (-EINVAL on a malformed line). Caller frees with proc_maps_free. */
int proc_maps_parse(const char *buf, size_t len, struct proc_maps *out);
/* Read and parse a maps file at path (e.g. "/proc/123/maps" or a fixture). */
int proc_maps_load(const char *path, struct proc_maps *out);
/* Read /proc/PID/maps. */
int proc_maps_read(pid_t pid, struct proc_maps *out);
void proc_maps_free(struct proc_maps *m);
/* 1 if a and b describe the same mapping of the same thing. */
int proc_map_same(const struct proc_map *a, const struct proc_map *b);
/* The mapping containing addr, or NULL. */
const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr);

/* Thread ids listed in a task directory (e.g. "/proc/123/task"); sorted.
 * Caller frees *tids. 0 or -errno. */
int proc_tasks_load(const char *task_dir, pid_t **tids, size_t *n);
int proc_tasks_read(pid_t pid, pid_t **tids, size_t *n);

/* Value of "Key:" in a status-format buffer, leading blanks trimmed, copied into
 * out (NUL-terminated). 0, or -ENOENT if the key is absent. */
int proc_status_get(const char *buf, const char *key, char *out, size_t outlen);
/* The same, reading /proc/PID/status (tid may name a thread). */
int proc_status_read(pid_t pid, const char *key, char *out, size_t outlen);
/* The process tracing tid (TracerPid of /proc/TID/status): its pid, 0 when
 * none, -1 when unreadable (tid gone). */
pid_t proc_tracer(pid_t tid);
/* A process's command name (/proc/PID/comm) without its newline, every
 * byte outside printable ASCII as '?' (the process sets it: no escape
 * sequence reaches a terminal), or "?" when unreadable. */
void proc_comm_read(pid_t pid, char *out, size_t len);
/* The id of tid's process in its own pid namespace (the last NStgid of
 * /proc/TID/status; Tgid without NStgid). 0 or -errno. */
int proc_ns_tgid(pid_t tid, pid_t *out);

/* Open the file behind a mapping as the target sees it, with tfile_open()'s
 * rules (a regular file only, never blocking): the mapped file itself through
 * "/proc/PID/map_files/START-END", else path resolved inside the target's
 * root and opened with the access of thread pid. Returns an open fd or
 * -errno. */
int proc_open_mapped(pid_t pid, const struct proc_map *m);
/* Test seam: nonzero makes proc_open_mapped skip map_files (only the
 * /proc/PID/root fallback is tried). */
extern int proc_no_map_files;

/* Read a whole file (procfs ones too, which report size 0) into a NUL-terminated
 * buffer; *buf is the caller's to free. 0 or -errno. */
int proc_read_file(const char *path, char **buf, size_t *len);

/* The value of auxv entry type (AT_*) in /proc/PID/auxv, or 0. */
uint64_t proc_auxv_get(pid_t pid, uint64_t type);

#endif
