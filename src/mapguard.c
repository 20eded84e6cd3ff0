/* File mappings that may shrink under us: a SIGBUS in one reads zeros instead of killing heapattach. */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "mapguard.h"
#include "xmalloc.h"

struct range {
	uintptr_t start, end;
	int prot;			/* of the zero pages */
	volatile unsigned long zeroed;	/* pages replaced */
};

/* Read by the handler: entries are written before n grows, and the handler
 * only runs on a fault in a parser, never inside these functions. */
static struct range *ranges;
static volatile size_t nranges;
static size_t cap;
static volatile unsigned long zeroed;
static struct sigaction old_action;
static int installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr, page;
	long psz = sysconf(_SC_PAGESIZE);

	(void)uc;
	for (size_t i = 0; i < nranges; i++) {
		if (a < ranges[i].start || a >= ranges[i].end)
			continue;
		page = a & ~((uintptr_t)psz - 1);
		if (mmap((void *)page, psz, ranges[i].prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == MAP_FAILED)
			break;
		ranges[i].zeroed++;
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
	if (nranges == cap) {
		/* swap in a full copy: the handler never sees a half-moved array */
		old = ranges;
		v = xmalloc((cap ? 2 * cap : 64) * sizeof(*v));
		if (nranges)
			memcpy(v, old, nranges * sizeof(*v));
		ranges = v;
		cap = cap ? 2 * cap : 64;
		free(old);
	}
	ranges[nranges] = (struct range) { (uintptr_t)p, (uintptr_t)p + len, prot, 0 };
	nranges = nranges + 1;
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
		if (ranges[i].start != (uintptr_t)p)
			continue;
		ranges[i] = ranges[nranges - 1];
		nranges = nranges - 1;
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
		if (ranges[i].start == (uintptr_t)p)
			return ranges[i].zeroed;
	return 0;
}
