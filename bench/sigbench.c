/* A malloc loop in a process that takes a timer signal RATE times a second: what each signal's ptrace stop costs it. */
/* SPDX-License-Identifier: MIT */
/*
 * usage: sigbench RATE SECONDS GOFILE
 * Prints "ready PID", waits for GOFILE, then for SECONDS one thread
 * mallocs and frees (16 to 1024 bytes) while a POSIX timer sends the
 * process SIGALRM RATE times a second (0: none; a handler counts them).
 * Prints "ops N signals S" and exits 0.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t signals;

static void on_alarm(int sig)
{
	(void)sig;
	signals++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long rate = argc > 1 ? atol(argv[1]) : 0;
	double secs = argc > 2 ? atof(argv[2]) : 3, end;
	struct sigaction sa;
	struct sigevent sev;
	timer_t timer;
	uint64_t rng = 88172645463325252ull;
	unsigned long ops = 0;
	void *keep[64] = { 0 };

	if (argc < 4) {
		fprintf(stderr, "usage: sigbench RATE SECONDS GOFILE\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (access(argv[3], F_OK))
		usleep(2000);
	if (rate > 0) {
		struct itimerspec its = { { 0, 1000000000L / rate }, { 0, 1000000000L / rate } };

		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = SIGALRM;
		if (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &its, NULL))
			return 99;
	}
	end = now() + secs;
	while (now() < end) {
		for (int i = 0; i < 256; i++, ops++) {
			unsigned k;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			k = rng & 63;
			free(keep[k]);
			keep[k] = malloc(16 + (rng >> 8) % 1009);
		}
	}
	printf("ops %lu signals %d\n", ops, (int)signals);
	return 0;
}
