/* Target memory by thread id: process_vm_readv, then /proc/PID/mem, then PTRACE_PEEKDATA/POKEDATA. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#include "model/tmem.h"

/* pread/pwrite all of len through /proc/PID/mem. 0 or -errno. */
static int proc_mem_xfer(pid_t pid, uint64_t addr, void *buf, size_t len,
			 int write)
{
	char path[64];
	size_t done = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n;

		if (write)
			n = pwrite(fd, (char *)buf + done, len - done,
				   (off_t)(addr + done));
		else
			n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(addr + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto out;
		}
		done += (size_t)n;
	}
out:
	close(fd);
	return err;
}

/* Read with PTRACE_PEEKDATA word by word; pid must be a stopped tracee. */
static int peek_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint64_t base = addr & ~7ULL;
	size_t done = 0;

	while (done < len) {
		uint64_t skip = (addr + done) - base;
		size_t n = 8 - skip;
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKDATA, pid, (void *)base, NULL);
		if (errno)
			return -errno;
		if (n > len - done)
			n = len - done;
		memcpy((char *)buf + done, (char *)&w + skip, n);
		done += n;
		base += 8;
	}
	return 0;
}

/*
 * Write with PTRACE_POKEDATA; an unaligned head or tail word is read first
 * and merged. pid must be a stopped tracee.
 */
static int poke_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	uint64_t base = addr & ~7ULL;
	size_t done = 0;

	while (done < len) {
		uint64_t skip = (addr + done) - base;
		size_t n = 8 - skip;
		long w = 0;

		if (n > len - done)
			n = len - done;
		if (n != 8) {
			errno = 0;
			w = ptrace(PTRACE_PEEKDATA, pid, (void *)base, NULL);
			if (errno)
				return -errno;
		}
		memcpy((char *)&w + skip, (const char *)buf + done, n);
		if (ptrace(PTRACE_POKEDATA, pid, (void *)base, (void *)w) < 0)
			return -errno;
		done += n;
		base += 8;
	}
	return 0;
}

int tmem_ptrace_only;

/* All of len bytes: process_vm_readv, the rest through /proc/PID/mem, then PEEKDATA. */
int tmem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)addr, .iov_len = len };
	ssize_t n;
	int err;

	if (!len)
		return 0;
	if (tmem_ptrace_only)
		return peek_read(pid, addr, buf, len);
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0)
		n = 0;
	/* The rest may be unreadable to process_vm_readv only (PROT_NONE...). */
	err = proc_mem_xfer(pid, addr + n, (char *)buf + n, len - n, 0);
	if (err)
		err = peek_read(pid, addr + n, (char *)buf + n, len - n);
	return err;
}

/* All of len bytes: /proc/PID/mem (FOLL_FORCE), then POKEDATA. */
int tmem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	int err;

	if (!len)
		return 0;
	if (tmem_ptrace_only)
		return poke_write(pid, addr, buf, len);
	err = proc_mem_xfer(pid, addr, (void *)buf, len, 1);
	if (err)
		err = poke_write(pid, addr, buf, len);
	return err;
}
