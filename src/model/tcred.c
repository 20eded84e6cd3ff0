/* Another process's file access: its credentials from /proc, worn by a short-lived thread of ours. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "base/xmalloc.h"
#include "model/proc.h"
#include "model/tcred.h"

/*
 * heapattach opens files on the target's behalf (its perf map, the debug
 * files its objects name) as root. The kernel answers "may it read this?"
 * only for the thread that asks, from that thread's credentials: so a
 * thread of ours takes the target's (tcred_run) and opens the file
 * itself. Mode bits, ACLs, every directory's search permission, bind
 * mounts and hard links are then the kernel's business, exactly as for
 * the target. What is not copied: the target's LSM label (AppArmor,
 * SELinux, Landlock); see docs/threat-model.md.
 */

/* ---- parsing /proc/TID/status ---- */

/* The value of "key:" in status (past its blanks), its end in *end; NULL if absent. */
static const char *field(const char *status, const char *key, const char **end)
{
	size_t klen = strlen(key);
	const char *s = status;

	while (s && *s) {
		const char *nl = strchr(s, '\n');

		if (!strncmp(s, key, klen) && s[klen] == ':') {
			s += klen + 1;
			while (*s == ' ' || *s == '\t')
				s++;
			*end = nl ? nl : s + strlen(s);
			return s;
		}
		s = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* A decimal id at *p (advanced past it and the blanks after), below
 * (uint32_t)-1, the invalid id. 0 or -EINVAL. */
static int parse_id(const char **p, const char *end, uint32_t *id)
{
	unsigned long long v = 0;
	const char *s = *p;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v >= UINT32_MAX)
			return -EINVAL;
	}
	if (s < end && *s != ' ' && *s != '\t')
		return -EINVAL;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*p = s;
	*id = (uint32_t)v;
	return 0;
}

/* The fourth (file system) id of a "Uid:" or "Gid:" line. 0 or -EINVAL. */
static int parse_fsid(const char *status, const char *key, uint32_t *id)
{
	const char *end, *p = field(status, key, &end);
	uint32_t v[4];

	if (!p)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		if (parse_id(&p, end, &v[i]))
			return -EINVAL;
	if (p != end && *p != '\r')
		return -EINVAL;
	*id = v[3];
	return 0;
}

static int cmp_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;

	return x < y ? -1 : x > y;
}

/* The "Groups:" list, sorted, into *groups (malloc'd, NULL when empty). 0 or -EINVAL. */
static int parse_groups(const char *status, gid_t **groups, size_t *n)
{
	const char *end, *p = field(status, "Groups", &end);
	size_t cnt = 0, cap = 0;
	gid_t *v = NULL;

	if (!p)
		return -EINVAL;
	while (p < end && *p != '\r') {
		uint32_t g;

		if (cnt == TCRED_MAX_GROUPS || parse_id(&p, end, &g)) {
			free(v);
			return -EINVAL;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[cnt++] = g;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_gid);
	*groups = v;
	*n = cnt;
	return 0;
}

/* The DAC bits of "CapEff:" (16 hex digits). 0 or -EINVAL. */
static int parse_caps(const char *status, uint32_t *caps)
{
	const char *end, *p = field(status, "CapEff", &end);
	uint64_t v = 0;
	int nd = 0;

	if (!p)
		return -EINVAL;
	for (; p < end && *p != '\r'; p++, nd++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' :
			(*p | 0x20) >= 'a' && (*p | 0x20) <= 'f' ? (*p | 0x20) - 'a' + 10 : -1;

		if (d < 0 || nd == 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	if (!nd)
		return -EINVAL;
	*caps = (uint32_t)v & TCRED_DAC_CAPS;
	return 0;
}

int tcred_parse(const char *status, struct tcred *c)
{
	struct tcred t = { 0 };

	if (parse_fsid(status, "Uid", &t.fsuid) || parse_fsid(status, "Gid", &t.fsgid) ||
	    parse_caps(status, &t.dac_caps) || parse_groups(status, &t.groups, &t.ngroups))
		return -EINVAL;
	*c = t;
	return 0;
}

void tcred_release(struct tcred *c)
{
	free(c->groups);
	c->groups = NULL;
	c->ngroups = 0;
}

/* ---- reading a thread's ---- */

/* The last credentials read, by thread id: a thread that is gone keeps them. */
static struct {
	pid_t tid;
	struct tcred c;
} last;

static void copy_cred(struct tcred *to, const struct tcred *from)
{
	*to = *from;
	to->groups = NULL;
	if (from->ngroups) {
		to->groups = xmalloc(from->ngroups * sizeof(*to->groups));
		memcpy(to->groups, from->groups, from->ngroups * sizeof(*to->groups));
	}
}

/* 1 if thread tid is in heapattach's user namespace. */
static int same_userns(pid_t tid)
{
	char path[64], ours[64], theirs[64];
	ssize_t a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)tid);
	a = readlink("/proc/self/ns/user", ours, sizeof(ours));
	b = readlink(path, theirs, sizeof(theirs));
	return a > 0 && a == b && !memcmp(ours, theirs, (size_t)a);
}

int tcred_read(pid_t tid, struct tcred *c)
{
	char path[64], *buf;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	ret = proc_read_file(path, &buf, &len);
	if (!ret) {
		ret = tcred_parse(buf, c);
		free(buf);
	}
	if (ret) {
		if ((ret == -ENOENT || ret == -ESRCH) && last.tid == tid && tid > 0) {
			copy_cred(c, &last.c);
			return 0;
		}
		return ret;
	}
	if (!same_userns(tid))
		c->dac_caps = 0;
	tcred_release(&last.c);
	copy_cred(&last.c, c);
	last.tid = tid;
	return 0;
}

/* ---- wearing them ---- */

/* The calling thread's credentials, as struct tcred (groups malloc'd). 0 or -errno. */
static int own_cred(struct tcred *c)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	int n;

	memset(c, 0, sizeof(*c));
	c->fsuid = (uid_t)syscall(SYS_setfsuid, -1);	/* an invalid id: only says the current one */
	c->fsgid = (gid_t)syscall(SYS_setfsgid, -1);
	if (syscall(SYS_capget, &h, d))
		return -errno;
	c->dac_caps = d[0].effective & TCRED_DAC_CAPS;
	n = getgroups(0, NULL);
	if (n < 0)
		return -errno;
	if (n) {
		c->groups = xmalloc((size_t)n * sizeof(*c->groups));
		n = getgroups(n, c->groups);
		if (n < 0) {
			tcred_release(c);
			return -errno;
		}
		qsort(c->groups, (size_t)n, sizeof(*c->groups), cmp_gid);
	}
	c->ngroups = (size_t)n;
	return 0;
}

static int same_groups(const struct tcred *a, const struct tcred *b)
{
	return a->ngroups == b->ngroups &&
	       (!a->ngroups || !memcmp(a->groups, b->groups, a->ngroups * sizeof(*a->groups)));
}

/* Set the calling thread's fsuid (nr SYS_setfsuid) or fsgid to id. 0 or -EPERM. */
static int set_fsid(long nr, uint32_t id)
{
	if ((uint32_t)syscall(nr, -1) == id)
		return 0;
	syscall(nr, id);
	return (uint32_t)syscall(nr, -1) == id ? 0 : -EPERM;
}

/*
 * Make the calling thread's file access c's, with system calls that change
 * this thread only (glibc's setgroups would change every thread). The
 * fsuid goes last but one: leaving 0 drops the file capabilities from the
 * effective set, and then only c's DAC capabilities (those we hold) come
 * back. 0 or -errno.
 */
static int take(const struct tcred *c, const struct tcred *own)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (!same_groups(c, own) && syscall(SYS_setgroups, c->ngroups, c->groups))
		return -errno;
	if (set_fsid(SYS_setfsgid, c->fsgid) || set_fsid(SYS_setfsuid, c->fsuid))
		return -EPERM;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[0].effective = (d[0].effective & ~TCRED_DAC_CAPS) | (c->dac_caps & d[0].permitted);
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

struct wear_job {
	const struct tcred *c, *own;
	int (*fn)(void *);
	void *arg;
	int ret;
};

static void *wear(void *p)
{
	struct wear_job *j = p;

	j->ret = take(j->c, j->own);
	if (!j->ret)
		j->ret = j->fn(j->arg);
	return NULL;
}

int tcred_run(const struct tcred *c, int (*fn)(void *), void *arg)
{
	struct tcred own;
	struct wear_job j = { .c = c, .fn = fn, .arg = arg, .own = &own };
	sigset_t all, old;
	pthread_t th;
	int ret;

	ret = own_cred(&own);
	if (ret)
		return ret;
	if (own.fsuid == c->fsuid && own.fsgid == c->fsgid && own.dac_caps == c->dac_caps &&
	    same_groups(&own, c)) {
		ret = fn(arg);
		goto out;
	}
	/* the thread starts with every signal blocked: our handlers' flags and
	 * the interrupted waits they are for stay the main thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&th, NULL, wear, &j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		ret = -EAGAIN;
		goto out;
	}
	pthread_join(th, NULL);
	ret = j.ret;
out:
	tcred_release(&own);
	return ret;
}

int tcred_run_as(pid_t tid, int (*fn)(void *), void *arg)
{
	struct tcred c;
	int ret;

	if (!tid)
		return fn(arg);
	ret = tcred_read(tid, &c);
	if (ret)
		return ret;
	ret = tcred_run(&c, fn, arg);
	tcred_release(&c);
	return ret;
}
