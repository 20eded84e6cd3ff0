/* Test helper: a fake target (this process): its text a byte array, its regions mapped by the test, its threads made up. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TEST_FAKE_TARGET_H
#define HEAPATTACH_TEST_FAKE_TARGET_H

/*
 * The implant and the agent link see a target through a pid (whose memory
 * they read and write), a thread set, and the system calls that map and
 * unmap regions (struct implant_sys). Here the pid is the test's own, so
 * "the target's memory" is a byte array of the test (FAKE_TEXT bytes, rwx,
 * at ft->text: the hooked functions, which the test may call), regions are
 * memfds the test maps near it (the "target's" views) and once more
 * anywhere (the tool's view), and the threads are made-up tids in a
 * struct tracee that no ptrace call reaches.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/hooks.h"
#include "model/target.h"
#include "implant/implant.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/tracee.h"
#include "stacks/unwind.h"

#define FAKE_TEXT (64u << 10)
#define FAKE_TID_BASE 0x3ffff000	/* above pid_max: no such thread */

struct fake_target {
	pid_t pid;
	struct tracee tr;
	int gone;
	struct seccomp_plan sc;
	uint8_t *text;                  /* FAKE_TEXT bytes, rwx */
	struct target *t;               /* this process, read through itself */
	int map_err;                    /* the next map fails with this */
	unsigned maps, unmaps;          /* views mapped and unmapped by the implant */
};

static struct fake_target fake;

/* len bytes of fd (anonymous if fd < 0) with prot within 1 GiB of near. */
static inline void *fake_map_near(uint64_t near, size_t len, int prot, int fd)
{
	int flags = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED;
	uint64_t base = near & ~(uint64_t)0xfffff;

	for (long k = 1; k < 512; k++) {
		for (int dir = -1; dir <= 1; dir += 2) {
			uint64_t hint = base + (uint64_t)(dir * k) * (2u << 20);
			void *p = mmap((void *)hint, len, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);

			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p == hint)
				return p;
			munmap(p, len);
		}
	}
	return NULL;
}

/* implant_sys.map: the code view near `near` (the header prefilled
 * first, as inject.c does), the data view too when asked, our view anywhere. */
static int fake_sys_map(struct implant *im, uint64_t near, size_t size, inject_prefill_fn prefill,
			void *prefill_arg, struct inject_region *code, struct inject_region *alias)
{
	uint8_t *at, *local, *data = NULL;
	int fd, rc = -ENOMEM;

	(void)im;
	if (fake.map_err) {
		rc = fake.map_err;
		fake.map_err = 0;
		return rc;
	}
	fd = memfd_create("heapattach", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		goto out;
	at = fake_map_near(near, size, PROT_NONE, -1);	/* where it will go */
	if (!at)
		goto out;
	rc = prefill(prefill_arg, fd, (uint64_t)at, size);
	if (rc || mmap(at, size, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED, fd, 0) != at) {
		munmap(at, size);
		rc = rc ? rc : -ENOMEM;
		goto out;
	}
	local = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (alias)
		data = fake_map_near(near, size, PROT_READ | PROT_WRITE, fd);
	if (local == MAP_FAILED || (alias && !data)) {
		munmap(at, size);
		rc = -ENOMEM;
		goto out;
	}
	*code = (struct inject_region){ .local = local, .remote = (uint64_t)at, .size = size,
					.prot = PROT_READ | PROT_EXEC };
	fake.maps++;
	if (alias) {
		*alias = (struct inject_region){ .local = local, .remote = (uint64_t)data,
						 .size = size, .prot = PROT_READ | PROT_WRITE,
						 .alias = 1 };
		fake.maps++;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* implant_sys.unmap: the view, and our mapping unless it is an alias. */
static int fake_sys_unmap(struct implant *im, struct inject_region *v)
{
	(void)im;
	munmap((void *)v->remote, v->size);
	if (!v->alias && v->local)
		munmap(v->local, v->size);
	memset(v, 0, sizeof(*v));
	fake.unmaps++;
	return 0;
}

static int fake_sys_munmap(struct implant *im, uint64_t addr, size_t len)
{
	(void)im;
	return munmap((void *)addr, len) ? -errno : 0;
}

static int fake_sys_close(struct implant *im, int fd)
{
	(void)im;
	(void)fd;
	return -EBADF;
}

static const struct implant_sys fake_sys = {
	.map = fake_sys_map,
	.unmap = fake_sys_unmap,
	.munmap = fake_sys_munmap,
	.close = fake_sys_close,
};

/* A fresh fake target with nthreads made-up threads, all stopped. 0 or -1. */
static inline int fake_target_init(unsigned nthreads)
{
	if (!fake.text) {
		fake.text = mmap(NULL, FAKE_TEXT, PROT_READ | PROT_WRITE | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fake.text == MAP_FAILED) {
			fake.text = NULL;
			return -1;
		}
	}
	tracee_release(&fake.tr);
	memset(&fake.tr, 0, sizeof(fake.tr));
	memset(fake.text, 0xcc, FAKE_TEXT);
	fake.pid = getpid();
	if (!fake.t && !(fake.t = target_new(fake.pid, 0)))
		return -1;
	fake.tr.pid = fake.pid;
	fake.gone = 0;
	fake.map_err = 0;
	fake.maps = fake.unmaps = 0;
	memset(&fake.sc, 0, sizeof(fake.sc));
	for (unsigned i = 0; i < nthreads; i++)
		tracee_add(&fake.tr, FAKE_TID_BASE + (pid_t)i, TS_STOPPED);
	return 0;
}

/* Implant parameters for the fake target. */
static inline struct implant_params fake_implant_params(const struct implant_ops *ops, void *arg,
							struct unwinder *unw)
{
	return (struct implant_params){
		.pid = fake.pid,
		.target = fake.t,
		.tr = &fake.tr,
		.gone = &fake.gone,
		.sc = &fake.sc,
		.unw = unw,
		.ops = ops,
		.ops_arg = arg,
		.sys = &fake_sys,
	};
}

/* ---- a fake allocator in the fake target ---- */

/* Its functions, at these offsets of the fake text. */
#define OFF_MALLOC	0x100
#define OFF_FREE	0x200
#define OFF_CALLOC	0x300
#define OFF_SHORT	0x400	/* returns before 5 bytes: cannot be relocated */
#define OFF_ENDBR	0x500
#define OFF_MANY	0x1000	/* copies of malloc, 32 bytes apart */

/* glibc 2.36's malloc prologue (push r12; push rbp; push rbx; mov rbx,rdi),
 * then the epilogue: returns its argument. */
static const uint8_t f_malloc[] = {
	0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb,
	0x48, 0x89, 0xd8, 0x5b, 0x5d, 0x41, 0x5c, 0xc3,
};
/* test rdi,rdi; je +1 (a branch, re-encoded); nop; ret */
static const uint8_t f_free[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 0x01, 0x00, 0x00, 0x00, 0x90, 0xc3 };
/* push r13; mov rax,rdi; imul rax,rsi; pop r13; ret */
static const uint8_t f_calloc[] = { 0x41, 0x55, 0x48, 0x89, 0xf8, 0x48, 0x0f, 0xaf, 0xc6, 0x41, 0x5d, 0xc3 };
/* xor eax,eax; ret: returns within the bytes a jump would cover */
static const uint8_t f_short[] = { 0x31, 0xc0, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90 };
/* endbr64, then malloc's */
static const uint8_t f_endbr[] = {
	0xf3, 0x0f, 0x1e, 0xfa,
	0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb,
	0x48, 0x89, 0xd8, 0x5b, 0x5d, 0x41, 0x5c, 0xc3,
};

#define FAKE_MAX_HOOKS 256

static struct hook fake_hookv[FAKE_MAX_HOOKS];
static struct hook_set fake_hooks;              /* what the implant hooks */
static uint8_t fake_orig[FAKE_TEXT];            /* the text before: what removal restores */
static struct unwinder *fake_unw;               /* an unwinder of this process */

/* Start a new hook set (on a fresh fake target). */
static inline void fake_alloc_begin(void)
{
	memset(&fake_hooks, 0, sizeof(fake_hooks));
	fake_hooks.v = fake_hookv;
}

/* Put a function's bytes into the fake text at off and add its hook. */
static inline void fake_alloc_add(enum hook_kind kind, const char *name, size_t off,
				  const uint8_t *code, size_t len)
{
	struct hook *h = &fake_hookv[fake_hooks.n++];

	memcpy(fake.text + off, code, len);
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->addr = (uint64_t)(fake.text + off);
	h->size = len;
	h->names[0] = name;
	h->nnames = 1;
	h->path = "/fake/libc.so.6";
}

/* The text as it is now is what removal must restore. */
static inline void fake_alloc_end(void)
{
	memcpy(fake_orig, fake.text, FAKE_TEXT);
	if (!fake_unw)
		fake_unw = unwinder_new_target(fake.t);
}

/* A fake target (two made-up threads) holding malloc, free and calloc, and
 * a valloc too short to hook and an endbr64 pvalloc if asked. 0 or -1. */
static inline int fake_alloc_setup(int with_short, int with_endbr)
{
	if (fake_target_init(2))
		return -1;
	fake_alloc_begin();
	fake_alloc_add(HOOK_ALLOC, "malloc", OFF_MALLOC, f_malloc, sizeof(f_malloc));
	fake_alloc_add(HOOK_FREE, "free", OFF_FREE, f_free, sizeof(f_free));
	fake_alloc_add(HOOK_CALLOC, "calloc", OFF_CALLOC, f_calloc, sizeof(f_calloc));
	if (with_short)
		fake_alloc_add(HOOK_ALLOC, "valloc", OFF_SHORT, f_short, sizeof(f_short));
	if (with_endbr)
		fake_alloc_add(HOOK_ALLOC, "pvalloc", OFF_ENDBR, f_endbr, sizeof(f_endbr));
	fake_alloc_end();
	return 0;
}

static inline void fake_target_release(void)
{
	if (fake_unw)
		unwinder_free(fake_unw);
	fake_unw = NULL;
	target_free(fake.t);
	fake.t = NULL;
	tracee_release(&fake.tr);
}

#endif
