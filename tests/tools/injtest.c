/* Test tool: seize a process, run remote syscalls, inject and remove a region, detach. */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: injtest [-a] [-v] [-m MODE] PID
 *   -a   use the shared-anonymous fallback instead of memfd
 *   -m sigdeliver: also run a syscall in a signal-delivery-stop (we send
 *        SIGWINCH, default-ignored, and run from the stop it causes)
 *   -m pendstop: queue a SIGSTOP for the main thread first; remote syscalls
 *        must hold it back and re-send it, so PID is stopped after detach
 *   -m groupstop: PID is already group-stopped (kill -STOP); it must still
 *        be after detach
 *   -b N time N remote getpid calls
 *   -o   seize with the options heapattach uses (TRACECLONE|TRACEFORK|
 *        TRACEVFORK|TRACEEXEC|TRACEEXIT) plus TRACESYSGOOD, instead of 0
 *   -d STEP -t TID: only run getpid in thread TID (picky, see remote.h),
 *        dying by SIGKILL at step STEP of remote_syscall (remote_die_at);
 *        exits 3 if the call returned instead, 4 if the thread was refused
 *   -c   function calls (remote_call) instead: in every thread, libc's
 *        snprintf into the data it passes (read back and checked), and in
 *        one thread usleep(300 ms) given 30 ms, which must time out and
 *        let the thread finish it by itself; with -d STEP -t TID, one
 *        call of usleep(20 ms) in TID dying at step STEP of remote_call
 * Exits 0 when every check passes, 1 otherwise (after detaching).
 *
 * The seize/interrupt/detach code here is a minimal local stand-in for the
 * real thread set (tracee.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/elfobj.h"
#include "model/tmem.h"
#include "ptrace/inject.h"
#include "model/proc.h"
#include "base/log.h"
#include "ptrace/remote.h"
#include "base/sys_compat.h"

#define MAX_THREADS 256

static int failures;

#define check(cond, ...) do { if (!(cond)) { \
	fprintf(stderr, "injtest:%d: check failed: %s: ", __LINE__, #cond); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

static pid_t tids[MAX_THREADS];
static int ntids;
static int expect_stopsig;	/* groupstop mode: SIGSTOP */
static unsigned requeued;	/* signals remote_syscall had to re-send */
static int nbench;		/* -b N */
static long seize_opts;		/* -o */

/* ---- minimal thread set ---- */

static int seized(pid_t tid)
{
	for (int i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/* Wait for tid's PTRACE_EVENT_STOP, delivering any signal that comes first. */
static int wait_event_stop(pid_t tid)
{
	for (;;) {
		int st;

		if (waitpid(tid, &st, __WALL) < 0)
			return -errno;
		if (!WIFSTOPPED(st))
			return -ESRCH;
		if (st >> 16 == PTRACE_EVENT_STOP)
			return 0;
		if (ptrace(PTRACE_CONT, tid, NULL,
			   (void *)(long)((st >> 16) ? 0 : WSTOPSIG(st))) < 0)
			return -errno;
	}
}

/* Seize and interrupt every thread, until a pass over task/ finds no new one. */
static int seize_all(pid_t pid)
{
	char path[64];
	int added;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	do {
		struct dirent *d;
		DIR *dir = opendir(path);

		if (!dir)
			return -errno;
		added = 0;
		while ((d = readdir(dir))) {
			pid_t tid = atoi(d->d_name);

			if (tid <= 0 || seized(tid) || ntids == MAX_THREADS)
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)seize_opts) < 0) {
				if (errno == ESRCH)
					continue;
				closedir(dir);
				return -errno;
			}
			if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
				closedir(dir);
				return -errno;
			}
			tids[ntids++] = tid;
			added = 1;
		}
		closedir(dir);
	} while (added);
	for (int i = 0; i < ntids; i++) {
		int err = wait_event_stop(tids[i]);

		if (err)
			return err;
	}
	return 0;
}

static void detach_all(void)
{
	for (int i = 0; i < ntids; i++)
		if (ptrace(PTRACE_DETACH, tids[i], NULL, NULL) < 0)
			fprintf(stderr, "injtest: detach %d: %s\n", (int)tids[i],
				strerror(errno));
}

/* ---- /proc helpers ---- */

/* Start of the first r-x mapping of libc, or 0. */
static uint64_t find_libc(pid_t pid)
{
	char path[64], line[4096], perms[8];
	unsigned long long s, e;
	uint64_t found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %7s", &s, &e, perms) == 3 &&
		    perms[2] == 'x' && (strstr(line, "/libc.so") ||
					strstr(line, "/libc-"))) {
			found = s;
			break;
		}
	fclose(f);
	return found;
}

/* The maps line that starts at addr, copied into out; 0 if none. */
static int maps_line_at(pid_t pid, uint64_t addr, char *out, size_t outlen)
{
	char path[64], line[4096];
	unsigned long long s;
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-", &s) == 1 && s == addr) {
			snprintf(out, outlen, "%s", line);
			found = 1;
			break;
		}
	fclose(f);
	return found;
}

/* Number of entries in /proc/PID/fd and a signature of their names. */
static int fd_list(pid_t pid, char *sig, size_t siglen)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;
	size_t used = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	sig[0] = '\0';
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			n++;
			used += (size_t)snprintf(sig + used, used < siglen ? siglen - used : 0,
						 "%s,", d->d_name);
		}
	closedir(dir);
	return n;
}

/* ---- checks ---- */

static void check_ids(pid_t pid, const char *how)
{
	for (int i = 0; i < ntids; i++) {
		struct remote_ctx ctx;
		long ret = -1;
		int err;

		siginfo_t a, b;

		remote_ctx_init(&ctx, pid, tids[i]);
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		ptrace(PTRACE_GETSIGINFO, tids[i], NULL, &a);
		if (log_verbose) {
			struct user_regs_struct r;

			if (ptrace(PTRACE_GETREGS, tids[i], NULL, &r) == 0)
				fprintf(stderr, "injtest: %s %d rip %llx orig_rax %lld rax %lld\n",
					how, (int)tids[i], r.rip,
					(long long)r.orig_rax, (long long)r.rax);
		}
		err = remote_syscall(&ctx, SYS_gettid, 0, 0, 0, 0, 0, 0, &ret);
		check(!err && ret == tids[i], "%s gettid in %d: err %d ret %ld",
		      how, (int)tids[i], err, ret);
		err = remote_syscall(&ctx, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret);
		check(!err && ret == pid, "%s getpid in %d: err %d ret %ld",
		      how, (int)tids[i], err, ret);
		ptrace(PTRACE_GETSIGINFO, tids[i], NULL, &b);
		check(a.si_signo == b.si_signo && a.si_code == b.si_code,
		      "%s: stop of %d changed: signo %d code 0x%x -> %d 0x%x",
		      how, (int)tids[i], a.si_signo, a.si_code, b.si_signo,
		      b.si_code);
		if (expect_stopsig)
			check(b.si_signo == expect_stopsig &&
			      b.si_code >> 8 == PTRACE_EVENT_STOP,
			      "%s: %d not in a group-stop: signo %d code 0x%x",
			      how, (int)tids[i], b.si_signo, b.si_code);
		requeued += ctx.requeued;
	}
}

/* Read and write back odd-sized pieces of libc text, both ways. */
static void check_mem(pid_t pid, uint64_t libc)
{
	unsigned char a[37], b[37];
	int err;

	for (int mode = 0; mode < 2; mode++) {
		tmem_ptrace_only = mode;
		err = tmem_read(pid, libc + 5, a, sizeof(a));
		check(!err, "read libc text (ptrace only %d): %d", mode, err);
		err = tmem_write(pid, libc + 5, a, sizeof(a));
		check(!err, "write libc text (ptrace only %d): %d", mode, err);
		err = tmem_read(pid, libc + 5, b, sizeof(b));
		check(!err && !memcmp(a, b, sizeof(a)),
		      "libc text round trip (ptrace only %d): %d", mode, err);
	}
	tmem_ptrace_only = 0;
}

/* Run getpid from a signal-delivery-stop of SIGWINCH and resume with it. */
static void check_sigdeliver(pid_t pid)
{
	struct remote_ctx ctx;
	siginfo_t si;
	long ret = -1;
	int st, err;

	/* Let the main thread pick up a SIGWINCH sent to it alone. */
	syscall(SYS_tgkill, pid, pid, SIGWINCH);
	if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0 ||
	    waitpid(pid, &st, __WALL) < 0) {
		check(0, "resume main thread: %s", strerror(errno));
		return;
	}
	check(WIFSTOPPED(st) && WSTOPSIG(st) == SIGWINCH && !(st >> 16),
	      "expected a SIGWINCH stop, status 0x%x", st);
	remote_ctx_init(&ctx, pid, pid);
	err = remote_syscall(&ctx, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret);
	check(!err && ret == pid, "getpid in sigdeliver stop: %d %ld", err, ret);
	/* SIGWINCH was delivered (ignored by default): now an event stop. */
	check(ctx.delivered && ctx.stop_sig == SIGTRAP, "delivered %d, stop %d",
	      ctx.delivered, ctx.stop_sig);
	check(ptrace(PTRACE_GETSIGINFO, pid, NULL, &si) == 0 &&
	      si.si_signo == SIGTRAP && si.si_code >> 8 == PTRACE_EVENT_STOP,
	      "in an event stop: signo %d code 0x%x", si.si_signo, si.si_code);
}

/* Is SIGSTOP pending for thread tid (its own queue)? */
static int sigstop_pending(pid_t pid, pid_t tid)
{
	char path[96], line[256];
	unsigned long long m = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
		 (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigPnd: %llx", &m) == 1)
			break;
	fclose(f);
	return !!(m & (1ULL << (SIGSTOP - 1)));
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Print the mean cost of n remote getpid calls in the main thread. */
static void bench(pid_t pid, int n)
{
	struct remote_ctx ctx;
	double t0 = now_us();
	long ret;

	remote_ctx_init(&ctx, pid, pid);
	for (int i = 0; i < n; i++)
		if (remote_syscall(&ctx, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret) ||
		    ret != pid) {
			check(0, "bench getpid %d", i);
			return;
		}
	printf("injtest: %.1f us per remote syscall\n", (now_us() - t0) / n);
}

/* The memfd of the region at [at, at + size) is sealed against resizing:
 * even root, through the target's map_files, cannot shrink it. */
static void check_sealed(pid_t pid, uint64_t at, size_t size)
{
	char path[128];
	int fd, seals, want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, at,
		 at + size);
	fd = open(path, O_RDWR | O_CLOEXEC);
	check(fd >= 0, "open %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	seals = fcntl(fd, F_GET_SEALS);
	check(seals >= 0 && (seals & want) == want, "memfd seals %#x", seals);
	check(ftruncate(fd, 0) < 0 && errno == EPERM, "memfd could be shrunk");
	close(fd);
}

static void check_region(pid_t pid, uint64_t libc, unsigned flags)
{
	static const char marker[] = "heapattach-marker-0123456789";
	struct inject_region reg, alias;
	struct remote_ctx ctx;
	char line[4096], fds_before[4096], fds_after[4096], got[64];
	struct iovec lv = { got, sizeof(marker) }, rv;
	int err, nfd;
	int64_t dist;
	uint64_t where;

	remote_ctx_init(&ctx, pid, pid);
	nfd = fd_list(pid, fds_before, sizeof(fds_before));
	err = inject_region_near_flags(&ctx, libc, 8192, flags, &reg);
	check(!err, "inject_region_near: %s", strerror(-err));
	if (err)
		return;
	dist = (int64_t)(reg.remote - libc);
	check(dist > -(int64_t)INJECT_REACH && dist < (int64_t)INJECT_REACH,
	      "region 0x%" PRIx64 " too far from libc 0x%" PRIx64, reg.remote,
	      libc);

	memcpy((char *)reg.local + 64, marker, sizeof(marker));
	rv.iov_base = (void *)(reg.remote + 64);
	rv.iov_len = sizeof(marker);
	check(process_vm_readv(pid, &lv, 1, &rv, 1, 0) == sizeof(marker) &&
	      !memcmp(got, marker, sizeof(marker)), "marker visible in target");

	check(maps_line_at(pid, reg.remote, line, sizeof(line)), "mapping listed");
	check(strstr(line, " r-xs ") != NULL, "mapping is r-xs: %s", line);
	if (flags & INJECT_F_ANON)
		check(strstr(line, "/dev/zero") || strstr(line, "SYSV"),
		      "anonymous shared mapping: %s", line);
	else
		check(strstr(line, "memfd:heapattach") != NULL,
		      "memfd mapping: %s", line);
	if (!(flags & INJECT_F_ANON))
		check_sealed(pid, reg.remote, reg.size);
	check(fd_list(pid, fds_after, sizeof(fds_after)) == nfd &&
	      !strcmp(fds_before, fds_after), "no fd left in target: %s / %s",
	      fds_before, fds_after);

	/* Syscalls with the region mapped, in every thread. */
	check_ids(pid, "mapped");
	if (nbench)
		bench(pid, nbench);

	/* A second, RW view of the same pages. */
	err = inject_region_alias(&ctx, &reg, libc, PROT_READ | PROT_WRITE,
				  &alias);
	check(!err, "inject_region_alias: %s", strerror(-err));
	if (!err) {
		check(maps_line_at(pid, alias.remote, line, sizeof(line)) &&
		      strstr(line, " rw-s "), "alias is rw-s: %s", line);
		err = tmem_write(pid, alias.remote + 200, "xyz", 4);
		check(!err && !memcmp((char *)reg.local + 200, "xyz", 4),
		      "write through alias seen locally: %d", err);
		err = tmem_read(pid, alias.remote + 64, got, sizeof(marker));
		check(!err && !memcmp(got, marker, sizeof(marker)),
		      "marker through alias");
		err = inject_region_remove(&ctx, &alias);
		check(!err, "remove alias: %s", strerror(-err));
	}

	where = reg.remote;
	err = inject_region_remove(&ctx, &reg);
	check(!err, "inject_region_remove: %s", strerror(-err));
	check(!maps_line_at(pid, where, line, sizeof(line)), "mapping gone: %s",
	      line);
	check(fd_list(pid, fds_after, sizeof(fds_after)) == nfd,
	      "fd count unchanged at the end");
}

/* ---- remote_call (-c) ---- */

/* The address of libc's function name in pid, or 0. */
static uint64_t libc_fn(pid_t pid, const char *name)
{
	struct proc_maps maps = { 0 };
	const struct elfobj_sym *s;
	struct elfobj *e = NULL;
	uint64_t bias, at = 0;

	if (proc_maps_read(pid, &maps))
		return 0;
	for (size_t i = 0; i < maps.n && !at; i++) {
		const struct proc_map *m = &maps.v[i];

		if (!m->path || !strstr(m->path, "/libc.so") || !(m->prot & PROC_MAP_X))
			continue;
		e = elfobj_open_fd(proc_open_mapped(pid, m));
		if (e && !elfobj_load_bias(e, m, &bias) && (s = elfobj_lookup(e, name, 1)))
			at = bias + s->value;
		elfobj_free(e);
	}
	proc_maps_free(&maps);
	return at;
}

/* snprintf(data + 64, 32, data, 4242, data + 16) in every thread: "4242-ok". */
static void check_calls(pid_t pid)
{
	uint64_t fn = libc_fn(pid, "snprintf");

	check(fn != 0, "snprintf found in libc");
	for (int i = 0; fn && i < ntids; i++) {
		struct remote_call c = {
			.fn = fn, .args = { 64, 32, 0, 4242, 16 }, .data_args = 1 | 4 | 16,
			.data_len = 96, .stack_need = 16384, .timeout_ns = 5000000000ULL,
		};
		struct remote_ctx ctx;
		int err;

		strcpy((char *)c.data, "%d-%s");
		strcpy((char *)c.data + 16, "ok");
		remote_ctx_init(&ctx, pid, tids[i]);
		err = remote_call(&ctx, &c);
		check(!err, "call in %d: %s", (int)tids[i], strerror(-err));
		check(err || !strcmp((char *)c.data + 64, "4242-ok"), "snprintf wrote \"%.32s\"",
		      (char *)c.data + 64);
	}
}

/* usleep(300 ms) given 30 ms in the first thread that takes it (picky: a
 * thread let go resumes through the frame, as if the tool had died): it
 * times out, the thread finishes by itself; stopped again for the detach. */
static void check_call_timeout(pid_t pid)
{
	struct remote_call c = {
		.fn = libc_fn(pid, "usleep"), .args = { 300000 }, .stack_need = 16384,
		.timeout_ns = 30000000ULL,
	};
	struct remote_ctx ctx;
	int err = -EAGAIN;

	check(c.fn != 0, "usleep found in libc");
	for (int i = 0; c.fn && i < ntids && err == -EAGAIN; i++) {
		remote_ctx_init(&ctx, pid, tids[i]);
		ctx.picky = 1;
		err = remote_call(&ctx, &c);
	}
	if (!c.fn || err == -EAGAIN)
		return;
	check(err == -ETIMEDOUT && ctx.running, "usleep given 30 ms: %s, running %d",
	      strerror(-err), ctx.running);
	if (ctx.running) {
		usleep(400000);	/* it returns through the frame meanwhile */
		if (ptrace(PTRACE_INTERRUPT, ctx.tid, NULL, NULL) < 0 || wait_event_stop(ctx.tid))
			check(0, "stop %d again", (int)ctx.tid);
	}
}

/* -c -d: one usleep(20 ms) in thread tid that dies at step die_step. Exit 3 or 4. */
static int die_in_call(pid_t pid, pid_t tid, int die_step)
{
	struct remote_call c = {
		.fn = libc_fn(pid, "usleep"), .args = { 20000 }, .stack_need = 16384,
		.timeout_ns = 5000000000ULL,
	};
	struct remote_ctx ctx;
	int err;

	if (!c.fn) {
		detach_all();
		return 1;
	}
	remote_ctx_init(&ctx, pid, tid);
	ctx.picky = 1;
	remote_die_at = die_step;
	err = remote_call(&ctx, &c);
	remote_die_at = 0;
	detach_all();
	if (err == -EAGAIN) {
		printf("injtest: thread %d refused (restart would be lost)\n", (int)tid);
		return 4;
	}
	printf("injtest: call step %d not reached in %d: %d\n", die_step, (int)tid, err);
	return 3;
}

/* -d: one getpid in thread tid that dies at step die_step. Exit 3 or 4. */
static int die_in(pid_t pid, pid_t tid, int die_step)
{
	struct user_regs_struct r;
	struct remote_ctx ctx;
	long ret = 0;
	int err;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r) == 0) {
		printf("injtest: step %d in thread %d: orig_rax %lld rax %lld\n", die_step,
		       (int)tid, (long long)r.orig_rax, (long long)r.rax);
		fflush(stdout);
	}
	remote_ctx_init(&ctx, pid, tid);
	ctx.picky = 1;
	remote_die_at = die_step;
	err = remote_syscall(&ctx, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret);
	remote_die_at = 0;
	detach_all();
	if (err == -EAGAIN) {
		printf("injtest: thread %d refused (restart would be lost)\n", (int)tid);
		return 4;
	}
	printf("injtest: step %d not reached in %d: %d, %ld\n", die_step, (int)tid, err, ret);
	return 3;
}

int main(int argc, char **argv)
{
	unsigned flags = 0;
	int sigdeliver = 0, pendstop = 0, die_step = 0, calls = 0, opt, err;
	pid_t pid, die_tid = 0;
	uint64_t libc;

	while ((opt = getopt(argc, argv, "ab:cd:ot:vm:")) != -1) {
		switch (opt) {
		case 'c':
			calls = 1;
			break;
		case 'd':
			die_step = atoi(optarg);
			break;
		case 't':
			die_tid = atoi(optarg);
			break;
		case 'o':
			seize_opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
				     PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
				     PTRACE_O_TRACEEXIT | PTRACE_O_TRACESYSGOOD;
			break;
		case 'b':
			nbench = atoi(optarg);
			break;
		case 'a':
			flags |= INJECT_F_ANON;
			break;
		case 'v':
			log_verbose = 1;
			break;
		case 'm':
			sigdeliver = !strcmp(optarg, "sigdeliver");
			pendstop = !strcmp(optarg, "pendstop");
			if (!strcmp(optarg, "groupstop"))
				expect_stopsig = SIGSTOP;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	pid = atoi(argv[optind]);
	err = seize_all(pid);
	if (err) {
		fprintf(stderr, "injtest: seize %d: %s\n", (int)pid, strerror(-err));
		detach_all();
		return 1;
	}
	if (die_step && calls)
		return die_in_call(pid, die_tid ? die_tid : pid, die_step);
	if (die_step)
		return die_in(pid, die_tid ? die_tid : pid, die_step);
	if (calls) {
		check_calls(pid);
		check_call_timeout(pid);
		check_calls(pid);
		detach_all();
		printf("injtest: %d threads, calls, %d failures\n", ntids, failures);
		return failures ? 1 : 0;
	}
	libc = find_libc(pid);
	check(libc != 0, "libc found in maps");
	if (sigdeliver)
		check_sigdeliver(pid);
	if (pendstop)
		syscall(SYS_tgkill, pid, pid, SIGSTOP);
	check_ids(pid, "first");
	if (pendstop) {
		check(requeued > 0, "the pending SIGSTOP was held and re-sent");
		check(sigstop_pending(pid, pid), "SIGSTOP pending again");
	}
	if (libc) {
		check_mem(pid, libc);
		check_region(pid, libc, flags);
	}
	detach_all();
	printf("injtest: %d threads, %u signals re-sent, %d failures\n", ntids,
	       requeued, failures);
	return failures ? 1 : 0;
usage:
	fprintf(stderr, "usage: injtest [-a] [-c] [-o] [-v] [-b N] [-m sigdeliver|pendstop|groupstop] "
		"[-d STEP [-t TID]] PID\n");
	return 2;
}
