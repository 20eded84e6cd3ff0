/* A guard against SIGBUS in shared mappings the target can shrink under us. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "shmguard.h"

#define SHMGUARD_MAX 32

/* Ranges written by the main thread only, read by the handler: a slot's
 * bounds are set before it is marked used, and it is unmarked first. */
static struct {
	uintptr_t lo, hi;
	volatile sig_atomic_t used;
} ranges[SHMGUARD_MAX];
static volatile sig_atomic_t tripped;
static int installed;

/* Our own fault in a guarded range: private zeros in its place, and the
 * access is retried. Anything else: the default action, as without us. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	(void)uc;
	if (si->si_code > 0) {
		for (int i = 0; i < SHMGUARD_MAX; i++) {
			if (!ranges[i].used || a < ranges[i].lo || a >= ranges[i].hi)
				continue;
			if (mmap((void *)ranges[i].lo, ranges[i].hi - ranges[i].lo,
				 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				 -1, 0) == MAP_FAILED)
				break;
			tripped = 1;
			return;
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

int shmguard_add(void *addr, size_t len)
{
	struct sigaction sa;

	if (!installed) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, NULL) < 0)
			return -errno;
		installed = 1;
	}
	for (int i = 0; i < SHMGUARD_MAX; i++) {
		if (ranges[i].used)
			continue;
		ranges[i].lo = (uintptr_t)addr;
		ranges[i].hi = (uintptr_t)addr + len;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		ranges[i].used = 1;
		return 0;
	}
	return -ENOSPC;
}

void shmguard_remove(void *addr)
{
	for (int i = 0; i < SHMGUARD_MAX; i++)
		if (ranges[i].used && ranges[i].lo == (uintptr_t)addr)
			ranges[i].used = 0;
}

int shmguard_tripped(void)
{
	return tripped;
}
