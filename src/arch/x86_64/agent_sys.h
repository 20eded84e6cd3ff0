/* The agent's system calls, atomics and clocks (x86-64), included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_SYS_H
#define HEAPATTACH_AGENT_SYS_H

#define NR_SCHED_YIELD		24
#define NR_MADVISE		28
#define NR_GETTID		186
#define NR_FUTEX		202
#define NR_CLOCK_GETTIME	228
#define NR_PROCESS_VM_READV	310
#define CLOCK_MONOTONIC		1
#define EPERM			1
#define ENOSYS			38
#define EACCES			13
#define EINTR			4
#define EAGAIN			11
#define EINVAL			22
#define MADV_POPULATE_WRITE	23
#define ETIMEDOUT		110
#define FUTEX_WAIT		0	/* not private: the tool wakes from its own mapping */
#define FUTEX_WAKE		1

static inline long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

static inline void cpu_pause(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

static inline void lock_inc(volatile uint64_t *p)
{
	__atomic_fetch_add(p, 1, __ATOMIC_RELAXED);
}

static inline int64_t now_ns(void)
{
	struct {
		int64_t sec, nsec;
	} ts;

	if (sys6(NR_CLOCK_GETTIME, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0))
		return 0;
	return ts.sec * 1000000000LL + ts.nsec;
}

/*
 * The time stamp: rdtscp reads the counter only once every earlier
 * instruction has executed (the allocator's loads, the ring head's), and
 * it retires before any later store (the record, the real free's) can be
 * seen. "lfence; rdtsc; lfence" orders more and was measured to cost a
 * third more per event in exact mode.
 */
static inline uint64_t rdtsc_ordered(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi) :: "rcx", "memory");
	return (uint64_t)hi << 32 | lo;
}

#endif
