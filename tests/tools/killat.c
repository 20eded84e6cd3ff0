/* Test tool: run a command and SIGKILL it a given time after a process becomes traced. */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: killat PID DELAY_US CMD [ARG...]
 *
 * Starts CMD, polls /proc/PID/status until its TracerPid is non-zero (as
 * fast as it can: one pread per look), sleeps DELAY_US microseconds from
 * that moment, then sends SIGKILL to CMD and reaps it. Prints one line:
 * "killat: traced after T us, killed D us later (CMD pid N)".
 *
 * Exit: 0 CMD was killed as planned; 2 CMD exited before the kill (its
 * status is printed; "exit 0" may be fine for the caller); 3 PID was not
 * traced within 30 s or vanished; 4 usage or system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOOK_LIMIT_NS (30 * 1000000000LL)

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* TracerPid of the status file open at fd; -1 if it cannot be read. */
static long tracer_of(int fd)
{
	char buf[4096], *p;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nTracerPid:");
	return p ? strtol(p + 11, NULL, 10) : -1;
}

/* Print how CMD ended; exit 2. */
static int report_early(pid_t child, int status)
{
	if (WIFEXITED(status))
		printf("killat: %d exited %d before the kill\n", (int)child, WEXITSTATUS(status));
	else
		printf("killat: %d died of signal %d before the kill\n", (int)child,
		       WTERMSIG(status));
	return 2;
}

int main(int argc, char **argv)
{
	char path[64];
	long long t_start, t_traced, t_kill;
	struct timespec until;
	long delay_us;
	int fd, status;
	pid_t pid, child;

	if (argc < 4) {
		fprintf(stderr, "usage: killat PID DELAY_US CMD [ARG...]\n");
		return 4;
	}
	pid = atoi(argv[1]);
	delay_us = atol(argv[2]);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pid <= 0 || delay_us < 0) {
		perror(path);
		return 4;
	}
	t_start = now_ns();
	child = fork();
	if (child < 0) {
		perror("fork");
		return 4;
	}
	if (!child) {
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		_exit(127);
	}
	for (;;) {
		long tracer = tracer_of(fd);

		if (tracer > 0)
			break;
		if (tracer < 0 || now_ns() - t_start > LOOK_LIMIT_NS) {
			printf("killat: %d %s\n", (int)pid, tracer < 0 ? "vanished" :
			       "was not traced within 30 s");
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			return 3;
		}
		if (waitpid(child, &status, WNOHANG) == child)
			return report_early(child, status);
	}
	t_traced = now_ns();
	t_kill = t_traced + delay_us * 1000LL;
	until.tv_sec = t_kill / 1000000000LL;
	until.tv_nsec = t_kill % 1000000000LL;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
	if (waitpid(child, &status, WNOHANG) == child)
		return report_early(child, status);
	kill(child, SIGKILL);
	if (waitpid(child, &status, 0) != child) {
		perror("waitpid");
		return 4;
	}
	printf("killat: traced after %lld us, killed %lld us later (%s pid %d)\n",
	       (t_traced - t_start) / 1000, (now_ns() - t_traced) / 1000, argv[3], (int)child);
	return 0;
}
