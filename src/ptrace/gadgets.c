/* Finding "syscall; ret" and an rt_sigreturn in the target's own code (see gadgets.h). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "model/proc.h"
#include "model/tmem.h"
#include "ptrace/gadgets.h"
#include "ptrace/remote.h"
#include "remote_arch.h"

#define CHUNK (256 * 1024)
#define OVERLAP 16	/* longer than any pattern: none is missed across chunks */

static const uint8_t syscall_ret[] = REMOTE_ARCH_SYSCALL_RET;
static const uint8_t sigret_rax[] = REMOTE_ARCH_SIGRETURN_RAX;
static const uint8_t sigret_eax[] = REMOTE_ARCH_SIGRETURN_EAX;

static struct {
	pid_t pid;
	struct gadgets g;
} cache;

/* Address of the first pattern in buf, or 0. */
static uint64_t find(const uint8_t *buf, size_t len, uint64_t base, const uint8_t *pat,
		     size_t plen)
{
	const uint8_t *p = memmem(buf, len, pat, plen);

	return p ? base + (uint64_t)(p - buf) : 0;
}

int gadgets_scan(const uint8_t *buf, size_t len, uint64_t base, struct gadgets *g)
{
	if (!g->syscall_ret)
		g->syscall_ret = find(buf, len, base, syscall_ret, sizeof(syscall_ret));
	if (!g->sigreturn)
		g->sigreturn = find(buf, len, base, sigret_rax, sizeof(sigret_rax));
	if (!g->sigreturn)
		g->sigreturn = find(buf, len, base, sigret_eax, sizeof(sigret_eax));
	return g->syscall_ret && g->sigreturn;
}

/* Whether pid's memory at addr still holds pat. */
static int holds(pid_t pid, uint64_t addr, const uint8_t *pat, size_t plen)
{
	uint8_t cur[16];

	return addr && !tmem_read(pid, addr, cur, plen) && !memcmp(cur, pat, plen);
}

static int still_there(pid_t pid, const struct gadgets *g)
{
	return holds(pid, g->syscall_ret, syscall_ret, sizeof(syscall_ret)) &&
	       (holds(pid, g->sigreturn, sigret_rax, sizeof(sigret_rax)) ||
		holds(pid, g->sigreturn, sigret_eax, sizeof(sigret_eax)));
}

/* Whether thread tid of pid has a user shadow stack (x86_Thread_features). */
static int shadow_stack(pid_t pid, pid_t tid)
{
	char path[64], *buf = NULL, val[256];
	size_t n;
	int on = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (proc_read_file(path, &buf, &n))
		return 0;
	if (!proc_status_get(buf, "x86_Thread_features", val, sizeof(val)))
		on = strstr(val, "shstk") != NULL;
	free(buf);
	return on;
}

/* A mapping the gadgets are looked for in: private, readable and
 * executable code of a file (not a memfd: ours, or a JIT's). */
static int scannable(const struct proc_map *m)
{
	return (m->prot & PROC_MAP_X) && (m->prot & PROC_MAP_R) && !(m->prot & PROC_MAP_SHARED) &&
	       m->path && m->path[0] == '/' && strncmp(m->path, "/memfd:", 7);
}

/* Scan the private executable file mappings of pid, in chunks. */
static int scan_maps(pid_t pid, struct gadgets *g)
{
	static uint8_t buf[CHUNK + OVERLAP];
	struct proc_maps maps = { 0 };
	int err, found = 0;

	memset(g, 0, sizeof(*g));
	err = proc_maps_read(pid, &maps);
	if (err)
		return err;
	for (size_t i = 0; i < maps.n && !found; i++) {
		const struct proc_map *m = &maps.v[i];

		if (!scannable(m))
			continue;
		for (uint64_t a = m->start; a < m->end && !found; a += CHUNK) {
			size_t len = m->end - a > CHUNK + OVERLAP ? CHUNK + OVERLAP : m->end - a;

			if (tmem_read(pid, a, buf, len))
				break;
			found = gadgets_scan(buf, len, a, g);
		}
	}
	proc_maps_free(&maps);
	return found ? 0 : -ENOENT;
}

/* Whether [addr, addr + len) lies in one scannable mapping of maps. */
static int in_code(const struct proc_maps *maps, uint64_t addr, size_t len)
{
	for (size_t i = 0; i < maps->n; i++)
		if (addr >= maps->v[i].start && addr + len <= maps->v[i].end)
			return scannable(&maps->v[i]);
	return 0;
}

/*
 * Another process's gadgets at the same addresses: a pre-fork server's
 * workers map their code where their master does (a run over several
 * processes finds them once). Only if both lie in scannable code of pid
 * and hold their patterns, and tid has no shadow stack.
 */
static int same_as_cached(pid_t pid, pid_t tid)
{
	struct proc_maps maps = { 0 };
	int ok;

	if (!cache.pid || shadow_stack(pid, tid) || proc_maps_read(tid, &maps))
		return 0;
	ok = in_code(&maps, cache.g.syscall_ret, sizeof(syscall_ret)) &&
	     in_code(&maps, cache.g.sigreturn, sizeof(sigret_rax)) && still_there(tid, &cache.g);
	proc_maps_free(&maps);
	return ok;
}

int gadgets_get(pid_t pid, pid_t tid, struct gadgets *g)
{
	int err;

	/* maps and memory through tid: pid's are empty once its leader exited */
	if ((cache.pid == pid && still_there(tid, &cache.g)) ||
	    (cache.pid != pid && same_as_cached(pid, tid))) {
		cache.pid = pid;
		*g = cache.g;
		return 0;
	}
	cache.pid = 0;
	if (shadow_stack(pid, tid)) {
		pr_err("thread %d of %d runs with a shadow stack: remote syscalls are not supported",
		       (int)tid, (int)pid);
		return -EOPNOTSUPP;
	}
	err = scan_maps(tid, g);
	if (err) {
		pr_err("no \"syscall; ret\" and rt_sigreturn found in the code of %d", (int)pid);
		return err;
	}
	pr_debug("gadgets in %d: syscall;ret at %#llx, rt_sigreturn at %#llx", (int)pid,
		 (unsigned long long)g->syscall_ret, (unsigned long long)g->sigreturn);
	cache.pid = pid;
	cache.g = *g;
	return 0;
}
