/* Test tool: reports every open of the files it watches (inotify), to prove heapattach never opened them. */
/* SPDX-License-Identifier: MIT */

/*
 * usage: watchopen OUT FILE...
 *
 * Watches each FILE (which must exist) for IN_OPEN and IN_ACCESS, writes
 * "watching" to OUT once every watch is in place, then appends one line per
 * event ("open FILE" or "access FILE") until SIGTERM or SIGINT. Exits 2 on
 * a usage or setup error. An O_PATH open (which opens nothing) is not an
 * event; any open() that could read the file is.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct sigaction sa;
	int fd, wd0 = -1;
	FILE *out;

	if (argc < 3) {
		fprintf(stderr, "usage: watchopen OUT FILE...\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0) {
		perror("inotify_init1");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		int wd = inotify_add_watch(fd, argv[i], IN_OPEN | IN_ACCESS);

		if (wd < 0) {
			fprintf(stderr, "watch %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if (wd0 < 0)
			wd0 = wd;
	}
	out = fopen(argv[1], "a");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	fprintf(out, "watching\n");
	fflush(out);
	while (!done) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			/* watch descriptors are handed out in order, from wd0 */
			int i = 2 + ev->wd - wd0;

			if (i >= 2 && i < argc)
				fprintf(out, "%s %s\n", ev->mask & IN_OPEN ? "open" : "access", argv[i]);
			p += sizeof(*ev) + ev->len;
		}
		fflush(out);
	}
	fclose(out);
	return 0;
}
