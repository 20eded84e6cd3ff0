/* Unit tests for mapguard.c: a shared view truncated under us reads zeros instead of killing us. */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "model/mapguard.h"

#define PAGES 4

/* A shared mapping of a fresh memfd (not sealed), its fd in *fd. */
static uint8_t *shared_map(int *fd, size_t size)
{
	uint8_t *p;

	*fd = memfd_create("mapguard-test", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, (off_t)size) < 0)
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The memory shrinks (as a target could make it through map_files): our
 * reads beyond its end see zeros, our writes there go on, and the guard
 * says how many pages it replaced in that view. */
static void test_truncated_reads_zero(void)
{
	size_t size = PAGES * 4096;
	int fd;
	uint8_t *p = shared_map(&fd, size);
	volatile uint8_t *v = p;

	expect_true(p != NULL);
	if (!p)
		return;
	memset(p, 0x5a, size);
	mapguard_add_rw(p, size);
	expect_int_eq(mapguard_zeroed_in(p), 0);
	expect_int_eq(v[4096 + 7], 0x5a);
	expect_int_eq(ftruncate(fd, 4096), 0);
	expect_int_eq(v[2 * 4096 + 1], 0);	/* beyond the end: was SIGBUS */
	expect_int_eq(mapguard_zeroed_in(p), 1);
	v[3 * 4096] = 7;
	expect_int_eq(v[3 * 4096], 7);
	expect_int_eq(mapguard_zeroed_in(p), 2);
	expect_int_eq(v[7], 0x5a);		/* still shared below the new end */
	mapguard_remove(p);
	munmap(p, size);
	close(fd);
}

/* The child died of its SIGBUS: killed by it, or (in a sanitizer build,
 * whose handler came first) reported and exited, but neither unharmed (3)
 * nor unable to set up (2). */
static int died_of_sigbus(int status)
{
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGBUS;
	return WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2 &&
	       WEXITSTATUS(status) != 3;
}

/* A SIGBUS outside every guarded range still kills. */
static void test_unguarded_still_kills(void)
{
	size_t size = PAGES * 4096;
	uint8_t *g, *p;
	int fd, gfd, status = 0;
	pid_t pid;

	g = shared_map(&gfd, size);
	expect_true(g != NULL);
	if (g)
		mapguard_add_rw(g, size);	/* the handler is in place */
	pid = fork();
	if (pid == 0) {
		p = shared_map(&fd, size);
		if (!p || ftruncate(fd, 0) < 0)
			_exit(2);
		_exit(*(volatile uint8_t *)p + 3);
	}
	expect_true(pid > 0);
	expect_int_eq(waitpid(pid, &status, 0), pid);
	expect_true(died_of_sigbus(status));
	/* and so does one sent by someone: it has no address of ours */
	pid = fork();
	if (pid == 0) {
		kill(getpid(), SIGBUS);
		_exit(3);
	}
	expect_int_eq(waitpid(pid, &status, 0), pid);
	expect_true(died_of_sigbus(status));
	if (g) {
		mapguard_remove(g);
		munmap(g, size);
		close(gfd);
	}
}

HARNESS_MAIN("mapguard", T(test_truncated_reads_zero), T(test_unguarded_still_kills))
