/* Malloc-heavy benchmark target: N threads mixing malloc/calloc/realloc/free of 16..4096 bytes. */
/* SPDX-License-Identifier: MIT */
/*
 * usage: mallocbench THREADS SECONDS [GOFILE]
 * Prints "ready PID", waits for GOFILE to exist (if given), runs the workload
 * for SECONDS and prints "ops N secs S rate R cpu C" (operations per second,
 * all threads; C = CPU seconds the process used meanwhile), then exits 0. Each operation is one malloc, calloc, realloc or
 * free on a per-thread pool of 1024 slots; every block is written and its
 * pattern checked before it is freed, so a broken allocator is noticed.
 * With MALLOCBENCH_WINDOWS set it also prints "w T OPS" every 10 ms
 * (CLOCK_MONOTONIC seconds, operations so far), for measuring attached and
 * detached stretches of one long run.
 * With MALLOCBENCH_JIT set, each batch of 256 operations is called through
 * a stub in anonymous executable memory (push rbp; mov rbp, rsp; call the
 * batch through an absolute address; pop rbp; ret): every allocation's
 * stack passes through a frame that has no unwind info, as under a JIT.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "../fixtures/jitstub.h"

#define SLOTS 1024

static volatile int running = 1;
static int bad;
static uint64_t total_ops;	/* all threads, updated every 256 operations */

/* One per thread, on a cache line of its own: batch() writes seed on every
 * operation. (Fresh processes still differ in speed, by up to 2.5x with 2
 * threads and 1.5x with 1: bench/run.py --against-heaptrack measures
 * within one.) */
struct worker {
	pthread_t t;
	uint64_t seed;
	uint64_t ops;
} __attribute__((aligned(64)));

/* One thread's blocks. */
struct pool {
	unsigned char *slot[SLOTS];
	size_t len[SLOTS];
};

typedef uint64_t (*batch_fn)(struct worker *, struct pool *);
static batch_fn call_batch;	/* the batch itself, or the JIT stub that calls it */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double clock_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static void check(unsigned char *p, unsigned char tag)
{
	if (p && p[0] != tag)
		__atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
}

/* 256 operations on the pool; returns how many counted. */
static __attribute__((noinline)) uint64_t batch(struct worker *w, struct pool *p)
{
	uint64_t ops = 0;

	for (int k = 0; k < 256; k++) {
		uint64_t r = rnd(&w->seed);
		unsigned i = r % SLOTS;
		size_t n = 16 + (r >> 20) % 4081;
		unsigned char tag = (unsigned char)(i | 1);

		check(p->slot[i], tag);
		switch ((r >> 12) & 7) {
		case 0: case 1: case 2:
			free(p->slot[i]);
			p->slot[i] = malloc(n);
			break;
		case 3:
			free(p->slot[i]);
			p->slot[i] = calloc(1, n);
			break;
		case 4: case 5:
			p->slot[i] = realloc(p->slot[i], n);
			break;
		default:
			free(p->slot[i]);
			p->slot[i] = NULL;
			p->len[i] = 0;
			ops++;
			continue;
		}
		if (!p->slot[i])
			abort();
		p->slot[i][0] = tag;
		p->len[i] = n;
		ops++;
	}
	return ops;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct pool *p = calloc(1, sizeof(*p));
	uint64_t ops = 0;

	if (!p)
		abort();
	while (running) {
		ops += call_batch(w, p);
		__atomic_fetch_add(&total_ops, 256, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < SLOTS; i++) {
		check(p->slot[i], (unsigned char)(i | 1));
		free(p->slot[i]);
	}
	free(p);
	w->ops = ops;
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 1;
	double secs = argc > 2 ? atof(argv[2]) : 2;
	struct worker w[64];
	int windows = getenv("MALLOCBENCH_WINDOWS") != NULL;
	uint64_t total = 0;
	double t0, t1, c0, c1;

	if (nthreads < 1 || nthreads > 64)
		return 2;
	call_batch = batch;
	if (getenv("MALLOCBENCH_JIT") &&
	    !(call_batch = (batch_fn)(uintptr_t)jit_stub_to((void *)(uintptr_t)batch))) {
		perror("mallocbench: JIT stub");
		return 2;
	}
	prctl(0x59616d61 /* PR_SET_PTRACER */, -1UL, 0, 0, 0);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (argc > 3)
		while (access(argv[3], F_OK) != 0)
			usleep(1000);
	t0 = now();
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < nthreads; i++) {
		w[i].seed = 0x9E3779B97F4A7C15ULL * (i + 1);
		pthread_create(&w[i].t, NULL, work, &w[i]);
	}
	while (now() - t0 < secs) {
		usleep(10000);
		if (windows) {
			printf("w %.6f %llu\n", now(),
			       (unsigned long long)__atomic_load_n(&total_ops, __ATOMIC_RELAXED));
			fflush(stdout);
		}
	}
	running = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].ops;
	}
	t1 = now();
	c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	printf("ops %llu secs %.3f rate %.0f cpu %.3f\n", (unsigned long long)total, t1 - t0,
	       total / (t1 - t0), c1 - c0);
	if (bad) {
		fprintf(stderr, "mallocbench: corrupted block detected\n");
		return 1;
	}
	return 0;
}
