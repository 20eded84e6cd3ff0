/* HotSpot's dynamic attach: one jcmd command (Compiler.perfmap, VM.flags) to a running JVM through its attach socket. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/xmalloc.h"
#include "model/jvmattach.h"
#include "model/tcred.h"
#include "model/tfile.h"

/*
 * HotSpot's dynamic attach, as jcmd uses it on Linux (facts of OpenJDK's
 * attachListener_linux.cpp and VirtualMachineImpl.java): the JVM listens
 * on the UNIX socket /tmp/.java_pid<PID> (its own pid, in its own root)
 * once its attach listener is up; it starts it on SIGQUIT when a file
 * .attach_pid<PID> owned by its effective uid (or root) is in its cwd or
 * /tmp, and prints a thread dump otherwise. It takes a peer whose
 * effective uid and gid are its own, or root's, as it sees them. A request
 * is NUL-terminated strings: the protocol version "1", the command
 * ("jcmd"), then three arguments (the command line, two empty); the answer
 * is a decimal code on its first line (0: done), then the command's
 * output, then EOF.
 *
 * Everything here is bounded by the caller's deadline: the socket and the
 * listener are waited for in short steps. What the JVM sends is input
 * from the target: at most JVM_ANSWER_MAX bytes are kept, its first line
 * shown with control bytes made '?', the rest only searched.
 */

#define JVM_STEP_MS	50		/* between looks while waiting */

/* The JVM as the attach needs it. */
struct jvm_target {
	pid_t pid, ns;          /* host pid; its pid in its own namespace */
	uid_t euid;             /* its effective ids, as the host sees them */
	gid_t egid;
};

/* The JVM's pid in its namespace and effective ids, from /proc. 0 or -errno. */
static int target_ids(pid_t pid, struct jvm_target *t)
{
	unsigned r = 0, e = 0;
	char v[128];
	int rc;

	t->pid = pid;
	rc = proc_ns_tgid(pid, &t->ns);
	if (!rc)
		rc = proc_status_read(pid, "Uid", v, sizeof(v));
	if (!rc && sscanf(v, "%u %u", &r, &e) != 2)
		rc = -EINVAL;
	t->euid = e;
	if (!rc)
		rc = proc_status_read(pid, "Gid", v, sizeof(v));
	if (!rc && sscanf(v, "%u %u", &r, &e) != 2)
		rc = -EINVAL;
	t->egid = e;
	return rc;
}

/* An O_PATH fd of the JVM's socket, in its root: a socket owned by its
 * effective uid (as jcmd checks). The fd, or -errno (-ENOENT: none yet). */
static int find_socket(const struct jvm_target *t)
{
	char path[64];
	struct stat st;
	int root, fd;

	snprintf(path, sizeof(path), "/tmp/.java_pid%d", (int)t->ns);
	root = tfile_root(t->pid);
	if (root < 0)
		return root;
	fd = tfile_opath(root, path);
	close(root);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != t->euid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* 1 if the process of tid catches SIGQUIT, 0 if not (the signal would
 * end it), or -errno. */
static int catches_quit(pid_t tid)
{
	char v[64];
	int rc = proc_status_read(tid, "SigCgt", v, sizeof(v));

	if (rc)
		return rc;
	return (strtoull(v, NULL, 16) >> (SIGQUIT - 1)) & 1;
}

int jvm_check(pid_t tid, const struct proc_maps *maps, char *why, size_t len)
{
	struct jvm_target t;
	int rc, jvm = 0, fd;

	for (size_t i = 0; i < maps->n && !jvm; i++) {
		const char *p = maps->v[i].path, *base = p ? strrchr(p, '/') : NULL;

		jvm = base && !strcmp(base, "/libjvm.so");
	}
	if (!jvm) {
		snprintf(why, len, "%d is not a HotSpot JVM (no libjvm.so mapped)", (int)tid);
		return -ENOEXEC;
	}
	rc = catches_quit(tid);
	if (rc < 0) {
		snprintf(why, len, "cannot read the signals %d catches: %s", (int)tid, strerror(-rc));
		return rc;
	}
	if (rc)
		return 0;
	/* -Xrs: SIGQUIT is not the JVM's, and its listener is up from the start */
	rc = target_ids(tid, &t);
	fd = rc ? rc : find_socket(&t);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	snprintf(why, len, "the JVM %d has no attach socket and does not catch SIGQUIT "
		 "(-Xrs?): the signal that would start its listener would end it", (int)tid);
	return -EPERM;
}

/* ---- the socket, and the file that has the JVM make it ---- */

static int stopped(const int *stop)
{
	return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

/* .attach_pid<NS> made by us in dir (so removed by us), by its identity. */
struct trigger {
	int dir;
	char name[32];
	dev_t dev;
	ino_t ino;
	int made;
};

static int make_req(void *arg)
{
	struct trigger *tr = arg;
	struct stat st;
	int fd = openat(tr->dir, tr->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0) {
		tr->dev = st.st_dev;
		tr->ino = st.st_ino;
		tr->made = 1;
	}
	close(fd);
	return 0;
}

/* Remove the file we made, if it is still that one. */
static int drop_req(void *arg)
{
	struct trigger *tr = arg;
	struct stat st;

	if (fstatat(tr->dir, tr->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == tr->dev && st.st_ino == tr->ino)
		return unlinkat(tr->dir, tr->name, 0) ? -errno : 0;
	return 0;
}

/* A directory fd: the JVM's cwd (cwd) or its /tmp. */
static int trigger_dir(const struct jvm_target *t, int cwd)
{
	char path[64];
	struct stat st;
	int root, fd;

	if (cwd) {
		snprintf(path, sizeof(path), "/proc/%d/cwd", (int)t->pid);
		fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	root = tfile_root(t->pid);
	if (root < 0)
		return root;
	fd = tfile_opath(root, "/tmp");
	close(root);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISDIR(st.st_mode))) {
		close(fd);
		fd = -ENOTDIR;
	}
	return fd;
}

/* Make .attach_pid<NS> in the JVM's cwd, else its /tmp, with the JVM's
 * file access (so owned by its uid). 0 (also when one is there already:
 * someone else's, kept), or -errno. */
static int make_trigger(const struct jvm_target *t, struct trigger *tr)
{
	int rc = -ENOENT;

	snprintf(tr->name, sizeof(tr->name), ".attach_pid%d", (int)t->ns);
	for (int cwd = 1; cwd >= 0; cwd--) {
		tr->dir = trigger_dir(t, cwd);
		if (tr->dir < 0) {
			rc = tr->dir;
			continue;
		}
		rc = tcred_run_as(t->pid, make_req, tr);
		if (rc == -EEXIST)
			rc = 0;
		if (!rc)
			return 0;
		close(tr->dir);
		tr->dir = -1;
	}
	return rc;
}

static void drop_trigger(const struct jvm_target *t, struct trigger *tr)
{
	if (tr->dir < 0)
		return;
	if (tr->made)
		tcred_run_as(t->pid, drop_req, tr);
	close(tr->dir);
	tr->dir = -1;
}

/*
 * The JVM's socket, its listener started if it is not up: the trigger
 * file, SIGQUIT, and again at half the time left (as jcmd does), waiting
 * for the socket in steps. The O_PATH fd, or -errno.
 */
static int wait_socket(const struct jvm_target *t, uint64_t deadline, const int *stop)
{
	struct trigger tr = { .dir = -1 };
	uint64_t now = clock_ns(CLOCK_MONOTONIC), half = now + (deadline - now) / 2;
	int fd = find_socket(t), again = 1, rc;

	if (fd != -ENOENT)
		return fd;
	if (catches_quit(t->pid) != 1)
		return -ENOTSUP;	/* the signal would end it */
	rc = make_trigger(t, &tr);
	if (rc)
		return rc;
	if (kill(t->pid, SIGQUIT)) {
		fd = -errno;
		goto out;
	}
	while ((fd = find_socket(t)) == -ENOENT) {
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline || stopped(stop)) {
			fd = stopped(stop) ? -EINTR : -ECONNREFUSED;
			break;
		}
		if (again && now >= half && catches_quit(t->pid) == 1) {
			again = 0;
			kill(t->pid, SIGQUIT);
		}
		poll(NULL, 0, JVM_STEP_MS);
	}
out:
	drop_trigger(t, &tr);
	return fd;
}

/* ---- connecting with the JVM's ids ---- */

struct connect_job {
	int sock;
	const struct sockaddr_un *addr;
	const struct jvm_target *t;
	int ret;
};

/* connect(), from a thread of its own that takes the JVM's effective ids
 * first (raw system calls: this thread alone) and ends after. */
static void *connect_as(void *p)
{
	struct connect_job *j = p;

	if (syscall(SYS_setresgid, -1, j->t->egid, -1) ||
	    syscall(SYS_setresuid, -1, j->t->euid, -1)) {
		j->ret = -EPERM;
		return NULL;
	}
	j->ret = connect(j->sock, (const struct sockaddr *)j->addr, sizeof(*j->addr)) ? -errno : 0;
	return NULL;
}

/* Connect sock to the socket at the O_PATH fd path, as the JVM's effective
 * ids when they are not ours. 0 or -errno (-EAGAIN: its backlog is full;
 * -ENOMEM: no thread for it). */
static int connect_jvm(int sock, int path, const struct jvm_target *t)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct connect_job j = { .sock = sock, .addr = &addr, .t = t };
	sigset_t all, old;
	pthread_t th;
	int made;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d", path);
	if (geteuid() == t->euid && getegid() == t->egid)
		return connect(sock, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	made = pthread_create(&th, NULL, connect_as, &j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (made)
		return -ENOMEM;
	pthread_join(th, NULL);
	return j.ret;
}

/* ---- the request ---- */

/* Wait for events on fd until deadline or *stop. 0, or -ETIMEDOUT, -EINTR. */
static int wait_fd(int fd, short events, uint64_t deadline, const int *stop)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);

		if (stopped(stop))
			return -EINTR;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, JVM_STEP_MS) > 0)
			return 0;
	}
}

/* Send the request, read the answer into reply (NUL-terminated, at most
 * JVM_ANSWER_MAX bytes kept). 0 or -errno. */
static int exchange(int sock, const char *cmd, char *reply, uint64_t deadline, const int *stop)
{
	char req[512];
	size_t n = 0, len, sent = 0;
	int rc;

	len = (size_t)snprintf(req, sizeof(req), "1%cjcmd%c%s%c%c%c", 0, 0, cmd, 0, 0, 0);
	if (len >= sizeof(req))
		return -E2BIG;
	while (sent < len) {
		ssize_t w = send(sock, req + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (w > 0)
			sent += (size_t)w;
		else if ((rc = wait_fd(sock, POLLOUT, deadline, stop)))
			return rc;
	}
	for (;;) {
		char sink[4096];
		char *to = n < JVM_ANSWER_MAX ? reply + n : sink;
		size_t room = n < JVM_ANSWER_MAX ? JVM_ANSWER_MAX - n : sizeof(sink);
		ssize_t r = recv(sock, to, room, MSG_DONTWAIT);

		if (r == 0)
			break;
		if (r > 0) {
			if (to != sink)
				n += (size_t)r;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if ((rc = wait_fd(sock, POLLIN, deadline, stop)))
			return rc;
	}
	reply[n] = '\0';
	return 0;
}

/* The answer's code, or -EPROTO with its first line (sanitized) in why;
 * what follows its code in out (may be NULL). */
static int answer(const char *reply, char *out, size_t outlen, char *why, size_t len)
{
	const char *nl = strchr(reply, '\n'), *text;
	char *end;
	long code = strtol(reply, &end, 10);
	size_t k = 0;

	if (end != reply && (*end == '\n' || !*end) && code == 0) {
		if (out && outlen)
			snprintf(out, outlen, "%s", nl ? nl + 1 : "");
		return 0;
	}
	text = nl && end != reply ? nl + 1 : reply;
	k = strcspn(text, "\n");
	if (k > 200)
		k = 200;
	snprintf(why, len, "the JVM answered %ld: %.*s", end != reply ? code : -1L, (int)k, text);
	for (char *p = why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return -EPROTO;
}

int jvm_request(pid_t pid, const char *cmd, uint64_t deadline_ns, const int *stop,
		char *out, size_t outlen, char *why, size_t len)
{
	char *reply = xmalloc(JVM_ANSWER_MAX + 1);
	struct jvm_target t;
	int path = -1, sock = -1, rc;

	rc = target_ids(pid, &t);
	if (rc) {
		snprintf(why, len, "cannot read the ids of %d: %s", (int)pid, strerror(-rc));
		goto out;
	}
	path = wait_socket(&t, deadline_ns, stop);
	if (path < 0) {
		rc = path;
		if (rc == -ECONNREFUSED)
			snprintf(why, len, "no attach listener in the JVM %d after SIGQUIT "
				 "(-XX:+DisableAttachMechanism?): not asked again", (int)pid);
		else if (rc == -ENOTSUP)
			snprintf(why, len, "the JVM %d has no attach socket (any more) and does not "
				 "catch SIGQUIT: not asked again", (int)pid);
		else if (rc == -EPERM)
			snprintf(why, len, "/tmp/.java_pid%d of %d is not a socket of the JVM's "
				 "user: not used", (int)t.ns, (int)pid);
		else
			snprintf(why, len, "cannot start the attach listener of %d: %s",
				 (int)pid, strerror(-rc));
		goto out;
	}
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0) {
		rc = -errno;
		goto fail;
	}
	/* a full backlog (the listener serves one request at a time) is waited out */
	while ((rc = connect_jvm(sock, path, &t)) == -EAGAIN) {
		if (clock_ns(CLOCK_MONOTONIC) >= deadline_ns || stopped(stop)) {
			rc = stopped(stop) ? -EINTR : -ETIMEDOUT;
			break;
		}
		poll(NULL, 0, JVM_STEP_MS);
	}
	if (!rc)
		rc = exchange(sock, cmd, reply, deadline_ns, stop);
	if (!rc) {
		rc = answer(reply, out, outlen, why, len);
		goto out;
	}
fail:
	snprintf(why, len, "the attach socket of the JVM %d: %s", (int)pid, strerror(-rc));
out:
	if (sock >= 0)
		close(sock);
	if (path >= 0)
		close(path);
	free(reply);
	return rc;
}
