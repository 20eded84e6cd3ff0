/* Test helper: a child process that is nobody, whose access files are opened with. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TEST_AS_NOBODY_H
#define HEAPATTACH_TEST_AS_NOBODY_H

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

struct nobody {
	pid_t pid;
	int pipe_w;             /* closing it ends the child */
};

/*
 * As root: a child that is nobody (every uid and gid 65534), in
 * supplementary group group only, until nobody_end; waits until its
 * status says so. 0, or -1 (not root, or the child did not start).
 */
static inline int nobody_start(struct nobody *n, gid_t group)
{
	char path[64], line[256];
	int p[2];

	n->pid = -1;
	if (geteuid() || pipe(p))
		return -1;
	n->pid = fork();
	if (n->pid == 0) {
		char c;

		close(p[1]);
		if (setgroups(1, &group) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(1);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(p[0]);
	n->pipe_w = p[1];
	if (n->pid < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)n->pid);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		int done = 0;

		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "Uid:", 4) && strstr(line, "\t65534\t65534\t65534\t65534"))
				done = 1;
		if (f)
			fclose(f);
		if (done)
			return 0;
		usleep(2000);
	}
	return -1;
}

/* End the child and reap it. */
static inline void nobody_end(struct nobody *n)
{
	if (n->pid <= 0)
		return;
	close(n->pipe_w);
	waitpid(n->pid, NULL, 0);
	n->pid = -1;
}

#endif
