/* Unit tests for shmguard.c: a shared mapping truncated under us reads zeros instead of killing us. */
/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "shmguard.h"

#define PAGES 4

/* A shared mapping of a fresh memfd (not sealed), its fd in *fd. */
static uint8_t *shared_map(int *fd, size_t size)
{
	uint8_t *p;

	*fd = memfd_create("shmguard-test", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, (off_t)size) < 0)
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The file shrinks to nothing (as a target could through map_files): our
 * reads see zeros and our writes go nowhere, and the guard says so. */
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
	expect_int_eq(shmguard_add(p, size), 0);
	expect_int_eq(shmguard_tripped(), 0);
	expect_int_eq(v[4096 + 7], 0x5a);
	expect_int_eq(ftruncate(fd, 4096), 0);
	expect_int_eq(v[2 * 4096 + 1], 0);	/* beyond the end: was SIGBUS */
	expect_int_eq(shmguard_tripped(), 1);
	v[3 * 4096] = 7;
	expect_int_eq(v[3 * 4096], 7);
	expect_int_eq(v[7], 0);			/* the whole range is ours now */
	shmguard_remove(p);
	munmap(p, size);
	close(fd);
}

/* A SIGBUS outside every guarded range still kills (with SIGBUS). */
static void test_unguarded_still_kills(void)
{
	size_t size = PAGES * 4096;
	uint8_t *g, *p;
	int fd, gfd, status = 0;
	pid_t pid;

	g = shared_map(&gfd, size);
	expect_true(g != NULL);
	if (g)
		shmguard_add(g, size);	/* the handler is in place */
	pid = fork();
	if (pid == 0) {
		p = shared_map(&fd, size);
		if (!p || ftruncate(fd, 0) < 0)
			_exit(2);
		_exit(*(volatile uint8_t *)p + 3);
	}
	expect_true(pid > 0);
	expect_int_eq(waitpid(pid, &status, 0), pid);
	expect_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	/* and so does one sent by someone: it has no address of ours */
	pid = fork();
	if (pid == 0) {
		kill(getpid(), SIGBUS);
		_exit(3);
	}
	expect_int_eq(waitpid(pid, &status, 0), pid);
	expect_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	if (g) {
		shmguard_remove(g);
		munmap(g, size);
		close(gfd);
	}
}

HARNESS_MAIN("shmguard", T(test_truncated_reads_zero), T(test_unguarded_still_kills))
