/* File mappings that may shrink under us: a SIGBUS in one reads zeros instead of killing heapattach. */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "base/xmalloc.h"
#include "model/mapguard.h"

struct range {
	uintptr_t start, end;		/* end 0: a free slot (written last, cleared first) */
	int prot;			/* of the zero pages */
	volatile unsigned long zeroed;	/* pages replaced */
};

/*
 * Read by the handler, which may run in any thread (fast/heartbeat.c's heartbeat
 * thread writes into a registered view) while the main thread registers or
 * forgets a mapping: an entry is written before n grows or its end is set,
 * an array outgrown is kept (retired) rather than freed, and a mapping
 * forgotten leaves its slot in place with end 0, so that no entry moves
 * under a reader.
 */
static struct range *volatile ranges;
static volatile size_t nranges;
static size_t cap;
static struct range *retired[64];	/* arrays outgrown (each twice the last) */
static size_t nretired;
static volatile unsigned long zeroed;
static struct sigaction old_action;
static int installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr, page;
	long psz = sysconf(_SC_PAGESIZE);
	size_t n = nranges;	/* then the array: it holds at least n entries */
	struct range *r = ranges;

	(void)uc;
	for (size_t i = 0; i < n; i++) {
		if (a < r[i].start || a >= __atomic_load_n(&r[i].end, __ATOMIC_ACQUIRE))
			continue;
		page = a & ~((uintptr_t)psz - 1);
		if (mmap((void *)page, psz, r[i].prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == MAP_FAILED)
			break;
		r[i].zeroed++;
		zeroed++;
		return;
	}
	/* not ours: the default action, when the fault repeats */
	sigaction(sig, &old_action, NULL);
	if (old_action.sa_handler == SIG_IGN)
		signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);	/* sent, not a fault: it does not repeat */
}

/* Register [p, p + len), its zero pages of protection prot. */
static void add(const void *p, size_t len, int prot)
{
	struct range *v, *old;
	struct sigaction sa;
	size_t i;

	if (!p || !len)
		return;
	if (!installed) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGBUS, &sa, &old_action);
		installed = 1;
	}
	for (i = 0; i < nranges && ranges[i].end; i++)	/* a free slot, or a new one */
		;
	if (i == cap) {
		/* swap in a full copy: the handler never sees a half-moved array,
		 * and one reading the old one meanwhile still can */
		old = ranges;
		v = xmalloc((cap ? 2 * cap : 64) * sizeof(*v));
		if (nranges)
			memcpy(v, old, nranges * sizeof(*v));
		ranges = v;
		cap = cap ? 2 * cap : 64;
		if (old)
			retired[nretired++] = old;
	}
	v = ranges;
	v[i].start = (uintptr_t)p;
	v[i].prot = prot;
	v[i].zeroed = 0;
	__atomic_store_n(&v[i].end, (uintptr_t)p + len, __ATOMIC_RELEASE);
	if (i == nranges)
		nranges = i + 1;
}

void mapguard_add(const void *p, size_t len)
{
	add(p, len, PROT_READ);
}

void mapguard_add_rw(void *p, size_t len)
{
	add(p, len, PROT_READ | PROT_WRITE);
}

void mapguard_remove(const void *p)
{
	for (size_t i = 0; i < nranges; i++) {
		if (ranges[i].start != (uintptr_t)p || !ranges[i].end)
			continue;
		__atomic_store_n(&ranges[i].end, 0, __ATOMIC_RELEASE);
		ranges[i].start = 0;
		return;
	}
}

unsigned long mapguard_zeroed(void)
{
	return zeroed;
}

unsigned long mapguard_zeroed_in(const void *p)
{
	for (size_t i = 0; i < nranges; i++)
		if (ranges[i].start == (uintptr_t)p && ranges[i].end)
			return ranges[i].zeroed;
	return 0;
}
