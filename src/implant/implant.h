/* The implant: what heapattach puts into the target (regions, trampolines, jumps) and takes out again. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_IMPLANT_H
#define HEAPATTACH_IMPLANT_H

/*
 * One handle for everything heapattach writes into the target, in the
 * spirit of compel's parasite_ctl: the injected regions (a memfd mapped
 * next to each hooked object), the trampolines in them, the jumps written
 * over the entry points with the bytes they replaced, and the ranges of a
 * dead heapattach's leftovers being removed (recover.c). Install, wait
 * until no thread is inside, remove. What the trampolines do is the
 * backend's (struct implant_ops): trap mode's stop in the tool
 * (collect.c), fast mode's call the agent (agentlink.c).
 *
 * A region: [0, REGION_CODE) code (r-x in the target), then a data part
 * whose first page is a struct shm_hdr carrying at least the magic and the
 * patch records, so that a later heapattach can undo our jumps if this
 * one dies. With an agent backend the first region's data part is the
 * whole shared layout of shm.h, also mapped rw- in the target.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/hooks.h"
#include "ptrace/inject.h"
#include "ptrace/tracee.h"
#include "reloc.h"
#include "shm.h"
#include "tramp.h"

#define REGION_CODE (64 * 1024)
#define IMPLANT_MAX_REGIONS 16

struct implant;
struct seccomp_plan;
struct target;
struct unwinder;

/* The first region as a backend lays it out (implant_ops.setup). */
struct implant_area {
	uint8_t *code;                  /* our view of the code part */
	uint64_t code_remote;           /* its address in the target */
	size_t code_size;
	size_t used;                    /* bytes of code so far; setup may add (the agent) */
	struct shm_hdr *hdr;            /* the data part as shared: the target may write it */
	struct shm_hdr *want;           /* the header as written: ours only, never read back */
	uint64_t data_remote;           /* the data part in the target's rw- view (agent) */
	size_t data_size;
};

/* What the trampolines are: trap mode's or fast mode's (session.c picks). */
struct implant_ops {
	const char *name;
	/* The first region's data part is the agent's: mapped rw- in the
	 * target too, and every trampoline must reach it (one region only). */
	int agent;
	size_t tramp_max;               /* bytes of the longest trampoline */
	/* Bytes of each region's data part. */
	uint64_t (*data_size)(void *arg);
	/* Lay out the first region (agent: the shared data and the blob). 0 or -errno. */
	int (*setup)(void *arg, struct implant_area *a);
	/* Where in its trampoline the relocated prologue of h goes; or -errno. */
	int (*reloc_offset)(void *arg, const struct hook *h, enum tramp_class cls);
	/* Write h's trampoline (at `at` in the target) into buf. 0 or -errno. */
	int (*emit)(void *arg, const struct hook *h, enum tramp_class cls, uint64_t at,
		    const struct reloc_result *r, uint8_t *buf, size_t len, struct tramp_layout *lay);
	/* Called while threads are let out of the regions (agent: drain, so
	 * that writers waiting for room move on). May be NULL. */
	void (*quiesce)(void *arg);
	/* No thread will enter a region again: our view of the first region's
	 * memory (map, size) is the backend's from now on, to read what the
	 * agent left and unmap. May be NULL (the implant unmaps it). */
	void (*removed)(void *arg, void *map, size_t size);
};

/* A patched entry point and its trampoline (read-only outside implant.c). */
struct patch {
	const struct hook *hook;
	enum tramp_class cls;
	struct reloc_result reloc;      /* reloc.patch_addr: where the jmp goes */
	struct tramp_layout lay;
	uint64_t tramp;                 /* trampoline address in the target */
	uint8_t orig[RELOC_JMP_LEN];    /* bytes the jmp replaced */
	int region;
	int installed;                  /* the jmp is written */
};

/* A view of a region mapped in the target. */
struct implant_view {
	uint64_t remote;
	size_t size;
};

/*
 * How regions get in and out of the target: syscalls run in one of its
 * stopped threads (the default, implant_sys_remote); a test maps them into
 * itself. Each returns 0 or -errno.
 */
struct implant_sys {
	/* Map a region of size bytes near `near` (r-x; prefill writes the
	 * header into the file first), and with alias also rw- (*alias). */
	int (*map)(struct implant *im, uint64_t near, size_t size, inject_prefill_fn prefill,
		   void *prefill_arg, struct inject_region *code, struct inject_region *alias);
	/* Unmap one view (and, unless an alias, our mapping of it). */
	int (*unmap)(struct implant *im, struct inject_region *view);
	/* munmap / close in the target. */
	int (*munmap)(struct implant *im, uint64_t addr, size_t len);
	int (*close)(struct implant *im, int fd);
};
extern const struct implant_sys implant_sys_remote;

/* What the implant needs of the target and the run. */
struct implant_params {
	pid_t pid;
	struct target *target;          /* its memory (read through the thread it names) */
	struct tracee *tr;              /* its threads */
	const int *gone;                /* set once every thread has exited */
	const struct seccomp_plan *sc;  /* which threads may run syscalls, how to inject */
	struct unwinder *unw;           /* is a thread inside a region? */
	tracee_event_fn on_event;       /* events seen while it stops the threads */
	void *event_arg;
	const struct implant_ops *ops;
	void *ops_arg;
	const struct implant_sys *sys;  /* NULL: implant_sys_remote */
};

struct implant *implant_new(const struct implant_params *p);
/* Frees the handle (after implant_remove). NULL is fine. */
void implant_free(struct implant *im);

/* Bytes of each injected region. */
uint64_t implant_region_size(const struct implant *im);

/* Inject regions and install a trampoline and a jump for every hook of
 * set (which must outlive im); threads must all be stopped. 0, or -errno
 * after undoing everything. */
int implant_install(struct implant *im, const struct hook_set *set);
/* Restore every patched byte, wait until no thread is inside a region
 * (resuming briefly), then unmap the regions; what had to stay mapped is
 * counted (implant_left) and said once. Threads are all stopped on return. */
void implant_remove(struct implant *im);
/* Resume and re-stop the threads until none is inside a region (or a
 * leftover); 0 when quiet, -EBUSY (count in *busy) after the time limit. */
int implant_wait_quiet(struct implant *im, int *busy);
/* Mappings of ours that implant_remove had to leave in the target. */
size_t implant_left(const struct implant *im);

/* The patches installed (or being installed), *n of them. */
const struct patch *implant_patches(const struct implant *im, size_t *n);
/* The patch whose trampoline holds ip, or NULL. */
const struct patch *implant_patch_at(const struct implant *im, uint64_t ip);
/* The views of our regions still mapped in the target, at most max; the count. */
size_t implant_views(const struct implant *im, struct implant_view *out, size_t max);
/* Non-zero if addr lies in a region (or a leftover being removed). */
int implant_in_region(const struct implant *im, uint64_t addr);
/* Non-zero if a call returning to ip was made from inside a hooked call:
 * from a region, or from the hooked allocator's own text. */
int implant_nested(const struct implant *im, uint64_t ip);
/* Non-zero if the stopped thread tid runs in, or will return into, a region
 * (its memory read as the target's: a thread of it, or a child just forked). */
int implant_in_flight(struct implant *im, pid_t tid);

/* A dead heapattach's leftover [lo, hi) to wait for (recover.c); 0, or
 * -ENOSPC when IMPLANT_MAX_REGIONS are listed. */
int implant_add_leftover(struct implant *im, uint64_t lo, uint64_t hi);
void implant_clear_leftovers(struct implant *im);
/* munmap / close in the target, by a syscall in some stopped thread. 0 or -errno. */
int implant_unmap_remote(struct implant *im, uint64_t addr, size_t len);
int implant_close_remote(struct implant *im, int fd);

#endif
