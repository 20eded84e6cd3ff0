/* Reading spans of a copy that does not run through /proc/PID/mem: none of its pages unshared, nearby spans in one read. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "snapshot/memread.h"

/* All of len bytes of fd at addr: 0 or -errno. */
static int pread_all(int fd, uint64_t addr, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(addr + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* The spans through process_vm_readv, IOV_MAX at a time (no mem file). */
static int readv_spans(pid_t pid, const struct hg_span *s, size_t n, uint8_t *buf)
{
	struct iovec loc[64], rem[64];

	while (n) {
		size_t k = n < 64 ? n : 64, want = 0;

		for (size_t i = 0; i < k; i++) {
			loc[i] = (struct iovec){ buf + want, s[i].len };
			rem[i] = (struct iovec){ (void *)(uintptr_t)s[i].addr, s[i].len };
			want += s[i].len;
		}
		if (process_vm_readv(pid, loc, k, rem, k, 0) != (ssize_t)want)
			return -EFAULT;
		buf += want;
		s += k;
		n -= k;
	}
	return 0;
}

/* Open pid's mem file unless open: 0, or -errno (m->fd -1). */
static int open_mem(struct memread *m, pid_t pid)
{
	char path[40];

	if (m->pid == pid)
		return m->fd < 0 ? -ENOENT : 0;
	if (m->pid && m->fd >= 0)
		close(m->fd);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	m->pid = pid;
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	return m->fd < 0 ? -errno : 0;
}

/* How many spans from s[0] are read as one range (at least one). */
static size_t run_of(const struct hg_span *s, size_t n)
{
	uint64_t lo = s[0].addr, end = s[0].addr + s[0].len;
	size_t k = 1;

	while (k < n && s[k].addr >= end && s[k].addr - end <= MEMREAD_GAP &&
	       s[k].addr + s[k].len - lo <= MEMREAD_SCRATCH) {
		end = s[k].addr + s[k].len;
		k++;
	}
	return k;
}

int memread_spans(struct memread *m, pid_t pid, const struct hg_span *s, size_t n, uint8_t *buf)
{
	if (open_mem(m, pid))
		return readv_spans(pid, s, n, buf);
	while (n) {
		size_t k = run_of(s, n);
		uint64_t lo = s[0].addr, len = s[k - 1].addr + s[k - 1].len - lo;
		int rc;

		if (k == 1) {
			rc = pread_all(m->fd, lo, buf, s[0].len);
			if (rc)
				return rc;
			buf += s[0].len;
		} else {
			if (!m->scratch)
				m->scratch = xmap(MEMREAD_SCRATCH);
			rc = pread_all(m->fd, lo, m->scratch, (size_t)len);
			if (rc)
				return rc;
			for (size_t i = 0; i < k; i++) {
				memcpy(buf, m->scratch + (s[i].addr - lo), s[i].len);
				buf += s[i].len;
			}
		}
		s += k;
		n -= k;
	}
	return 0;
}

void memread_close(struct memread *m)
{
	if (m->pid && m->fd >= 0)
		close(m->fd);
	xunmap(m->scratch, MEMREAD_SCRATCH);
	memset(m, 0, sizeof(*m));
}
