/* The traced process as heapattach knows it: its maps with a generation, its memory, its objects. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TARGET_H
#define HEAPATTACH_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/proc.h"

/*
 * One struct target per traced process, shared by the modules that look at
 * it (the unwinder, the frame-rule compiler, the symbolizer): one cache of
 * /proc/PID/maps, one reader of its memory, one cache of the ELF objects
 * behind its mappings. Everything it reads is the target's word (see
 * docs/threat-model.md): maps are parsed by proc.c, files are opened only
 * through proc_open_mapped (inside the target's root, regular files, never
 * blocking), the vDSO is copied out of its memory with a size bound.
 *
 * The maps carry a generation, bumped whenever a read of them shows other
 * code mappings than the previous one (executable mappings of files or the
 * vDSO: dlopen, dlclose, mmap or munmap of code, exec, recovery). A bump
 * calls the change listeners first (each drops what it derived from the
 * old code: unwind tables, frame rules, symbols), then frees the objects
 * no mapping holds any more. Anonymous and data mappings change all the
 * time and derive nothing: they replace the maps array (a new version)
 * without a bump. Not thread-safe.
 */
struct target;
struct elfobj;

/* Counters for tuning and benchmarks. */
struct target_stats {
	uint64_t maps_reads;	/* /proc/PID/maps parses */
	uint64_t changes;	/* generation bumps */
	uint64_t mem_reads;	/* memory reads (calls) */
	uint64_t objects;	/* objects opened */
};

/* A target for process pid, read through thread reader (0: pid). Nothing is
 * read yet. NULL on failure (errno set). */
struct target *target_new(pid_t pid, pid_t reader);
void target_free(struct target *t);

pid_t target_pid(const struct target *t);
/* The thread through which /proc and memory are read. */
pid_t target_reader(const struct target *t);
/* Read through thread tid from now on (the previous reader has exited). */
void target_set_reader(struct target *t, pid_t tid);
void target_get_stats(const struct target *t, struct target_stats *st);

/* ---- maps ---- */

/* The cached maps, read on first use; NULL if they cannot be read. Valid
 * until the next read (target_maps_version changes): keep no pointer into
 * them across calls that may read the maps. */
const struct proc_maps *target_maps(struct target *t);
/* Generation of the code mappings: 0 before the first read, then 1, 2, ... */
uint64_t target_generation(const struct target *t);
/* Bumped at every read of the maps (the array is replaced). */
uint64_t target_maps_version(const struct target *t);
/* Read the maps now. 1 if the code changed (generation bumped, listeners
 * called), 0 if not, -errno (the cache is left as it was). */
int target_maps_reload(struct target *t);
/* Test seam: take maps text buf[0..len) as if read from /proc. Same
 * returns as target_maps_reload. */
int target_maps_set(struct target *t, const char *buf, size_t len);
/*
 * The mapping holding addr. When addr is in no cached mapping the maps
 * are read again (a new mapping), at most once every TARGET_MAPS_GAP_NS:
 * the addresses come from the target, which could send garbage ones at
 * any rate. NULL if none.
 */
const struct proc_map *target_map_at(struct target *t, uint64_t addr);
/* The same, telling why not: 0 with *m, -ENOENT (read and not there),
 * -EAGAIN (not there, and the maps were read less than the gap ago), or
 * another -errno. */
int target_find(struct target *t, uint64_t addr, const struct proc_map **m);
#define TARGET_MAPS_GAP_NS 10000000ULL	/* 10 ms */
/* Let the next miss read the maps at once (the caller knows they changed). */
void target_maps_expire(struct target *t);

/*
 * Called on every generation bump, after the new maps are in place and
 * before the old ones (old) and the objects no new mapping holds are
 * freed: drop everything derived from the old code (or name what must
 * keep the old names first: target_object still opens the files of old's
 * mappings). The one dispatcher calls them in the order of who they are,
 * below, whatever the order they were registered in (several of one kind
 * in registration order). At most TARGET_MAX_LISTENERS. 0 or -ENOSPC.
 */
typedef void (*target_change_fn)(void *arg, const struct proc_maps *old);
enum target_listener {
	TARGET_ON_NAMES,        /* the session: frames in code that is gone keep their
				 * names, before the symbolizer drops that code's */
	TARGET_ON_UNWIND,       /* the unwinder: its tables and pages */
	TARGET_ON_SYMBOLS,      /* the symbolizer: its mappings and objects */
	TARGET_ON_FRAMES,       /* the frame table: its rules */
	TARGET_ON_STACKIDS,     /* the agent link: the stack ids the agent walks with,
				 * after the frame table's reset */
	TARGET_ON_OTHER,        /* anyone else (tests) */
	TARGET_LISTENER_KINDS
};
#define TARGET_MAX_LISTENERS 8
int target_on_change(struct target *t, enum target_listener who, target_change_fn fn, void *arg);
void target_off_change(struct target *t, target_change_fn fn, void *arg);

/* ---- memory ---- */

/*
 * Copy up to len bytes at addr into buf: process_vm_readv, then for the
 * rest /proc/PID/mem, then PTRACE_PEEKDATA (the reader must be a thread we
 * trace in a ptrace stop for that one). The number of bytes read from
 * addr on (short at the first unreadable byte), or -errno if none.
 */
ssize_t target_read_some(struct target *t, uint64_t addr, void *buf, size_t len);
/* All of len bytes, or -errno (tmem_read through the reader). */
int target_read(struct target *t, uint64_t addr, void *buf, size_t len);
/* Write all of len bytes at addr, or -errno (tmem_write through the reader:
 * /proc/PID/mem, which writes read-only text too, then PTRACE_POKEDATA). */
int target_write(struct target *t, uint64_t addr, const void *buf, size_t len);
/* 1 once process_vm_readv is refused (EPERM, ENOSYS): every read then costs
 * a system call per word, and callers should read only what they need. */
int target_reads_slow(const struct target *t);

/* ---- objects ---- */

/* target_object() flags */
#define TARGET_OBJ_SYMS 1	/* with .symtab/.dynsym (else perhaps without) */

/*
 * The ELF object behind mapping m (a file mapping, or the vDSO, copied out
 * of memory), opened on first use and cached per file (device, inode,
 * path) until no mapping holds that file. m is a mapping of the current
 * maps, or, in a change listener, of the old ones (its file is then opened
 * by its path, and only if that is still the file: see open_gone). NULL (cached too)
 * when it cannot be read or is no ELF; *err (may be NULL) then gets -errno.
 * Owned by the target.
 */
struct elfobj *target_object(struct target *t, const struct proc_map *m, unsigned flags,
			     int *err);
/* 1 if object e stays after a change (a mapping of the current maps holds
 * its file): a change listener keeps what it derived from e, else drops it. */
int target_object_held(const struct target *t, const struct elfobj *e);
/*
 * Load bias of mapping m (target_object(m)): m->start minus the link-time
 * address of its first byte, from the PT_LOAD segment holding m->offset:
 * per mapping, since a file may be mapped more than once at unrelated
 * addresses (node maps its builtins a second time). A mapping whose offset
 * no segment holds takes the bias of the file's lowest mapping. 0 or
 * -ENOENT.
 */
int target_map_bias(struct target *t, const struct proc_map *m, struct elfobj *e,
		    uint64_t *bias);

#endif
