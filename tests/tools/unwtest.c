/* Test and benchmark driver for the unwinder: runs fixtures/deepstack under ptrace and walks its stack. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libunwind.h>
#include <libunwind-ptrace.h>

#include "stacks/copywalk.h"
#include "stacks/frametab.h"
#include "stacks/unwind.h"
#include "testtarget.h"

/*
 * Usage:
 *   unwtest check FIXTURE MODE      walk the trapped thread, compare with the
 *                                   expected chain for MODE; exit 0/1
 *   unwtest seize FIXTURE sleep     start the fixture untraced, seize and
 *                                   interrupt it in pause(), walk from the
 *                                   live registers, detach; exit 0/1
 *   unwtest bench FIXTURE MODE [N]  N walks of the trapped thread (unwinds/s), then N
 *                                   of an 8 KiB copy of its stack (copies/s)
 *                                   (env UNWTEST_NO_BASELINE=1: skip the slow
 *                                   stock libunwind-ptrace comparison)
 * FIXTURE is build/fixtures/deepstack; MODE is one of its modes. The fixture
 * runs under PTRACE_TRACEME, stops on the int3 in hook_trap, is walked, then
 * resumed; it must exit 0. Exit 77 when ptrace is not permitted.
 */

#define MAXF 64

static pid_t pid;		/* the fixture */
static char exe_path[PATH_MAX];

/* ---- small private maps reader (src/model/proc.h has not landed yet) ---- */

struct tmap {
	uint64_t start, end, off;
	char path[PATH_MAX];
};

static struct tmap *maps;
static size_t nmaps;

static void maps_read(void)
{
	char fn[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "r");
	if (!f) {
		perror(fn);
		exit(1);
	}
	free(maps);
	maps = NULL;
	nmaps = 0;
	while (fgets(line, sizeof(line), f)) {
		struct tmap m = { 0 };
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*u %n", &m.start, &m.end, &m.off, &pos) < 3)
			continue;
		snprintf(m.path, sizeof(m.path), "%s", line + pos);
		m.path[strcspn(m.path, "\n")] = 0;
		maps = realloc(maps, (nmaps + 1) * sizeof(*maps));
		maps[nmaps++] = m;
	}
	fclose(f);
}

static const struct tmap *map_of(uint64_t a)
{
	for (size_t i = 0; i < nmaps; i++)
		if (a >= maps[i].start && a < maps[i].end)
			return &maps[i];
	return NULL;
}

/* ---- symbols of the fixture executable ---- */

struct tsym {
	uint64_t lo, hi;
	char *name;
	int func;		/* STT_FUNC, else a label (STT_NOTYPE) */
};

static struct tsym *syms;
static size_t nsyms;

/* Load STT_FUNC and STT_NOTYPE symbols of the executable, relocated by the PIE
 * load bias. */
static void syms_load(void)
{
	uint64_t bias = 0;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *e;
	int fd;

	for (size_t i = 0; i < nmaps; i++)
		if (!strcmp(maps[i].path, exe_path) && maps[i].off == 0) {
			bias = maps[i].start;
			break;
		}
	elf_version(EV_CURRENT);
	fd = open(exe_path, O_RDONLY);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!e || !gelf_getehdr(e, &eh)) {
		fprintf(stderr, "cannot read ELF %s\n", exe_path);
		exit(1);
	}
	if (eh.e_type != ET_DYN)
		bias = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, i, &s) || !s.st_value || s.st_shndx == SHN_UNDEF)
				continue;
			if (GELF_ST_TYPE(s.st_info) != STT_FUNC &&
			    GELF_ST_TYPE(s.st_info) != STT_NOTYPE)
				continue;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			syms = realloc(syms, (nsyms + 1) * sizeof(*syms));
			syms[nsyms].lo = s.st_value + bias;
			syms[nsyms].hi = s.st_value + bias + (s.st_size ? s.st_size : 1);
			syms[nsyms].name = strdup(n ? n : "?");
			syms[nsyms].func = GELF_ST_TYPE(s.st_info) == STT_FUNC;
			nsyms++;
		}
	}
	elf_end(e);
	close(fd);
}

static uint64_t sym_addr(const char *name)
{
	for (size_t i = 0; i < nsyms; i++)
		if (!strcmp(syms[i].name, name))
			return syms[i].lo;
	return 0;
}

/*
 * Name of the frame at pc: the function for the executable, "[lib.so]"
 * (basename without the version) for another object. Return addresses are
 * looked up at pc - 1.
 */
static void frame_name(uint64_t pc, int exact, char *buf, size_t len)
{
	uint64_t a = exact ? pc : pc - 1;
	const struct tmap *m = map_of(a);
	const char *b;
	char *v;

	if (m && !strcmp(m->path, exe_path)) {
		for (size_t i = 0; i < nsyms; i++)
			if (syms[i].func && a >= syms[i].lo && a < syms[i].hi) {
				snprintf(buf, len, "%.200s", syms[i].name);
				return;
			}
		snprintf(buf, len, "?");
		return;
	}
	b = m ? strrchr(m->path, '/') : NULL;
	snprintf(buf, len, "[%.200s", b ? b + 1 : m ? m->path : "?");
	v = strstr(buf, ".so");
	if (v)
		v[3] = 0;
	snprintf(buf + strlen(buf), len - strlen(buf), "]");
}

/* Frames as names, runs of the same library folded into one token,
 * space-separated into out. */
static void chain_string(const uint64_t *pcs, int n, int exact0, char *out, size_t len)
{
	char prev[256] = "", nm[256];
	size_t o = 0;

	out[0] = 0;
	for (int i = 0; i < n; i++) {
		frame_name(pcs[i], i == 0 && exact0, nm, sizeof(nm));
		printf("  #%-2d 0x%012lx %s\n", i, (unsigned long)pcs[i], nm);
		if (nm[0] == '[' && !strcmp(nm, prev))
			continue;
		o += snprintf(out + o, o < len ? len - o : 0, "%s%s", o ? " " : "", nm);
		snprintf(prev, sizeof(prev), "%s", nm);
	}
}

/* ---- tracing the fixture ---- */

static int exit_status = -1;	/* of the fixture, once it has ended */

/*
 * Resume thread resume (0: none) and run the fixture until a thread stops on
 * the int3 of hook_trap; returns that thread, or 0 once the fixture has
 * ended (exit_status set).
 */
static pid_t run_to_trap(pid_t resume)
{
	int st;

	if (resume)
		ptrace(PTRACE_CONT, resume, NULL, NULL);
	for (;;) {
		pid_t t = waitpid(-1, &st, __WALL);
		siginfo_t si;
		int sig;

		if (t < 0) {
			perror("waitpid");
			exit(1);
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (t == pid) {
				exit_status = st;
				return 0;
			}
			continue;
		}
		sig = WSTOPSIG(st);
		if (st >> 16 || sig == SIGSTOP) {
			ptrace(PTRACE_CONT, t, NULL, NULL);
			continue;
		}
		if (sig == SIGTRAP && ptrace(PTRACE_GETSIGINFO, t, NULL, &si) == 0 &&
		    si.si_code == SI_KERNEL)
			return t;
		ptrace(PTRACE_CONT, t, NULL, (void *)(long)sig);
	}
}

/* Start the fixture traced and run it to its first trap; returns the
 * trapped thread. */
static pid_t spawn_until_trap(const char *fixture, const char *mode)
{
	pid_t tid;
	int st;

	pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(77);
		raise(SIGSTOP);
		execl(fixture, fixture, mode, (char *)NULL);
		_exit(99);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			fprintf(stderr, "SKIP: ptrace not permitted\n");
			exit(77);
		}
		fprintf(stderr, "fixture did not stop\n");
		exit(1);
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
	tid = run_to_trap(pid);
	if (!tid) {
		fprintf(stderr, "fixture ended before the trap (status 0x%x)\n", exit_status);
		exit(1);
	}
	return tid;
}

/* ---- seize a running fixture ---- */

/*
 * Start the fixture untraced with stdout on a pipe, wait for its "ready"
 * line, then PTRACE_SEIZE and PTRACE_INTERRUPT it. Returns the stopped
 * thread (the main one).
 */
static pid_t spawn_and_seize(const char *fixture, const char *mode)
{
	char line[128] = "";
	int fd[2], st;
	FILE *f;

	if (pipe(fd) < 0) {
		perror("pipe");
		exit(99);
	}
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl(fixture, fixture, mode, (char *)NULL);
		_exit(99);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "ready", 5)) {
		fprintf(stderr, "fixture not ready: '%s'\n", line);
		exit(1);
	}
	/* "ready" is printed just before pause(): wait until it is in there */
	for (int i = 0; i < 200; i++) {
		char fn[64], sc[64] = "";
		FILE *p;

		snprintf(fn, sizeof(fn), "/proc/%d/syscall", pid);
		p = fopen(fn, "r");
		if (p && fgets(sc, sizeof(sc), p) && !strncmp(sc, "34 ", 3)) {
			fclose(p);
			break;
		}
		if (p)
			fclose(p);
		usleep(10000);
	}
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
		fprintf(stderr, "SKIP: PTRACE_SEIZE: %s\n", strerror(errno));
		kill(pid, SIGKILL);
		exit(errno == EPERM ? 77 : 1);
	}
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0 || waitpid(pid, &st, __WALL) != pid ||
	    !WIFSTOPPED(st)) {
		fprintf(stderr, "cannot interrupt the fixture\n");
		kill(pid, SIGKILL);
		exit(1);
	}
	return pid;
}

/* ---- check ---- */

static int failures;

#define CHECK(c, ...) do { if (!(c)) { printf("FAIL: " __VA_ARGS__); printf("\n"); failures++; } } while (0)

/* Walk from start, print and fold the chain into out; returns the count. */
static int walk(struct unwinder *u, pid_t tid, const struct unwind_regs *r, uint64_t *pcs,
		uint64_t lo, uint64_t hi, char *out, size_t len, const char *what)
{
	int n = unwind_stack(u, tid, r, pcs, MAXF, lo, hi);

	printf("%s: %d\n", what, n);
	out[0] = 0;
	if (n > 0)
		chain_string(pcs, n, r->flags & UNWIND_IP_EXACT, out, len);
	printf("  = %s\n", out);
	return n;
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A copy as heapattach walks it (fast/records.c): the frame table, and where
 * it misses the mixed walk. Frames; *slow: libunwind had a part. */
static int tool_walk(const struct copywalk *cw, const struct unwind_regs *r, const uint8_t *copy,
		     uint32_t len, uint64_t *pcs, int *trunc, int *slow)
{
	struct frame_regs fr = { r->ip, r->sp, r->bp, r->bx, r->r12, r->r13, r->r14, r->r15 }, miss;
	uint32_t flags;
	int n = (int)copywalk_table(cw, &fr, copy, len, r->sp, pcs, cw->depth, &flags, &miss);

	*trunc = !!(flags & SHM_EVF_TRUNC);
	*slow = !!(flags & SHM_EVF_MISS);
	if (*slow)
		n = copywalk_mixed(cw, &miss, copy, len, r->sp, pcs, (size_t)n, trunc);
	return n;
}

/* One "warm" line of the bench: rate, time and the unwinder's reads per walk. */
static void print_warm(const char *label, const char *unit, const char *one, long iters,
		       double dt, int n, const struct unwind_stats *s0, const struct unwind_stats *s1)
{
	printf("%s%9.0f %s/s  %6.2f us/%s  frames=%d  per %s: %.2f mem reads, "
	       "%.3f unwind-info lookups\n", label, iters / dt, unit, dt / iters * 1e6, one, n, one,
	       (double)(s1->mem_reads - s0->mem_reads) / iters,
	       (double)(s1->find_proc_info - s0->find_proc_info) / iters);
}

/*
 * A copy of the stack at r as the agent sends it, walked as heapattach
 * walks it (the frame table learnt from a first walk where it has rules,
 * libunwind for the rest: a signal frame, the trampoline) must give the
 * frames libunwind alone gives.
 */
static void check_tool_path(struct unwinder *u, pid_t tid, const struct unwind_regs *r)
{
	static uint8_t copy[8192];
	struct shm_frame *table = calloc(SHM_NFRAMES, sizeof(*table));
	struct frametab *ft = testtarget_frametab(pid, table);
	struct copywalk cw = { .unw = u, .table = table, .depth = MAXF - 1 };
	struct iovec lv = { copy, sizeof(copy) }, rv = { (void *)(uintptr_t)r->sp, sizeof(copy) };
	uint64_t a[MAXF], b[MAXF];
	ssize_t len = process_vm_readv(tid, &lv, 1, &rv, 1, 0);
	int na, nb = 0, trunc = 0, round, slow;

	CHECK(ft && len > 0, "tool path: no frame table or copy");
	if (!ft || len <= 0)
		goto out;
	na = unwind_stack_copy(u, r, copy, (size_t)len, a, MAXF - 1);
	CHECK(na > 0, "tool path: libunwind walk of the copy: %d", na);
	/* round 0: an empty table (libunwind all the way); 1: the table learnt */
	for (round = 0; round < 2 && na > 0; round++) {
		if (round)
			frametab_learn_many(ft, a, (size_t)na);
		nb = tool_walk(&cw, r, copy, (uint32_t)len, b, &trunc, &slow);
		CHECK(nb == na && !memcmp(a, b, (size_t)na * 8) && !trunc,
		      "tool path (round %d): %d frames, libunwind %d", round, nb, na);
		printf("tool path (round %d, %s): %d frames\n", round,
		       slow ? "table and libunwind" : "table", nb);
	}
out:
	testtarget_frametab_free(ft);
	free(table);
}

/* Check the walks of the idx-th trap of the fixture in mode. */
static void check(struct unwinder *u, const char *mode, pid_t tid, int idx)
{
	uint64_t lo = sym_addr("tramp_lo"), hi = sym_addr("tramp_hi");
	uint64_t pu[MAXF], pl[MAXF];
	struct user_regs_struct ur;
	struct unwind_regs ru, rl;
	char su[4096], sl[4096];
	const char *want = NULL;
	int nu, nl;

	CHECK(lo && hi, "no tramp_lo/tramp_hi symbols");
	CHECK(ptrace(PTRACE_GETREGS, tid, NULL, &ur) == 0, "GETREGS: %s", strerror(errno));
	CHECK(ur.rip == sym_addr("hook_trap") + 1, "stopped at 0x%llx, not in hook_trap", ur.rip);
	CHECK(unwind_regs_from_user(tid, &ur, &ru) == 0, "unwind_regs_from_user");
	unwind_regs_from_live(&ur, &rl);
	nu = walk(u, tid, &ru, pu, lo, hi, su, sizeof(su), "after-return start");
	nl = walk(u, tid, &rl, pl, lo, hi, sl, sizeof(sl), "live start");

	if (!strcmp(mode, "nested")) {
		CHECK(nu == -UNWIND_ENESTED, "after-return start: %d, expected -EDEADLK", nu);
		CHECK(nl == -UNWIND_ENESTED, "live start: %d, expected -EDEADLK", nl);
		/* without a stop range the walk goes on through the trampoline */
		nu = walk(u, tid, &ru, pu, 0, 0, su, sizeof(su), "no stop range");
		CHECK(nu >= 2 && starts_with(su, "nested_inner fake_tramp"),
		      "no stop range: got '%s'", su);
		return;
	}
	if (!strcmp(mode, "chain") || (!strcmp(mode, "dlopen") && idx == 0))
		want = "f3 f2 f1 f0 main [libc.so]";
	else if (!strcmp(mode, "thread"))
		want = "f3 f2 f1 f0 thread_main [libc.so]";
	else if (!strcmp(mode, "dlopen"))
		want = "zin [libz.so] zmain main [libc.so]";
	else if (!strcmp(mode, "signal"))
		want = "f3 f2 f1 f0 on_usr1 [libc.so] sigmain main [libc.so]";
	else if (!strcmp(mode, "qsort"))
		want = "cmp [libc.so] q0 main [libc.so]";
	else if (!strcmp(mode, "mixed"))
		want = "ucb [libgcc_s.so] cmp_mixed [libc.so] q0 main [libc.so]";
	CHECK(want, "unknown mode %s", mode);
	if (!want)
		return;
	if (!strcmp(mode, "thread"))
		CHECK(tid != pid, "trap on the main thread, expected a second thread");
	CHECK(nu > 0 && starts_with(su, want), "after-return start: got '%s', want '%s...'", su, want);
	CHECK(nu < MAXF, "walk did not end at the end of the stack");
	CHECK(nl == nu + 1, "live start: %d frames, after-return start %d", nl, nu);
	CHECK(nl > 0 && starts_with(sl, "hook_trap"), "live start: got '%s'", sl);
	for (int i = 0; nl == nu + 1 && i < nu; i++)
		CHECK(pl[i + 1] == pu[i], "frame %d differs: 0x%lx vs 0x%lx", i,
		      (unsigned long)pl[i + 1], (unsigned long)pu[i]);
	check_tool_path(u, tid, &ru);
	/* cached second walk gives the same answer */
	CHECK(unwind_stack(u, tid, &ru, pl, MAXF, lo, hi) == nu && !memcmp(pl, pu, nu * 8),
	      "second walk differs");
	/* and so does one after a flush (not before dlopen's second trap, which
	 * checks that a library mapped since the last walk is found unflushed) */
	if (strcmp(mode, "dlopen") || idx == 1) {
		unwinder_flush(u);
		CHECK(unwind_stack(u, tid, &ru, pl, MAXF, lo, hi) == nu &&
		      !memcmp(pl, pu, nu * 8), "walk after flush differs");
	}
}

/* ---- bench ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Stock libunwind-ptrace (_UPT_accessors) walk, for comparison. */
static int upt_walk(unw_addr_space_t as, void *upt, uint64_t *pcs)
{
	unw_cursor_t c;
	unw_word_t ip;
	int n = 0;

	if (unw_init_remote(&c, as, upt) < 0)
		return -1;
	do {
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		pcs[n++] = ip;
	} while (n < MAXF && unw_step(&c) > 0);
	return n;
}

/*
 * The copy as heapattach walks it (fast/records.c): the frame table (learnt
 * from a first walk, as the tool learns it) where it has rules, libunwind
 * where it has none (a signal frame, code without CFI).
 */
static void bench_tool_path(struct unwinder *u, const struct unwind_regs *r, const uint8_t *copy,
			    size_t len, long iters)
{
	struct shm_frame *table = calloc(SHM_NFRAMES, sizeof(*table));
	struct frametab *ft = testtarget_frametab(pid, table);
	struct copywalk cw = { .unw = u, .table = table, .depth = MAXF - 1 };
	uint64_t pcs[MAXF];
	long i, nslow = 0;
	double t, dt;
	int n = 0, trunc, slow;

	n = unwind_stack_copy(u, r, copy, len, pcs, MAXF);
	if (!ft || n <= 0) {
		printf("tool path: no frame table\n");
		goto out;
	}
	frametab_learn_many(ft, pcs, (size_t)n);
	t = now();
	for (i = 0; i < iters; i++) {
		n = tool_walk(&cw, r, copy, (uint32_t)len, pcs, &trunc, &slow);
		nslow += slow;
	}
	dt = now() - t;
	printf("copies, tool path:   %9.0f copies/s  %6.2f us/copy  frames=%d"
	       "  (libunwind for part of %ld%% of them)\n",
	       iters / dt, dt / iters * 1e6, n, nslow * 100 / iters);
out:
	testtarget_frametab_free(ft);
	free(table);
}

/*
 * unwind_stack_copy over a copy of the trapped thread's stack as the agent
 * sends it (SHM_STACK_COPY bytes from the caller's sp): warm (caches kept),
 * then cold (a flush before each). Prints copies/s.
 */
static void bench_copies(struct unwinder *u, pid_t tid, const struct user_regs_struct *ur,
			 long iters)
{
	static uint8_t copy[8192];
	struct unwind_stats s0, s1;
	struct unwind_regs r;
	uint64_t pcs[MAXF];
	struct iovec lv = { copy, sizeof(copy) }, rv;
	ssize_t len;
	double t, dt;
	long i, k;
	int n = 0;

	unwind_regs_from_user(tid, ur, &r);
	rv = (struct iovec){ (void *)(uintptr_t)r.sp, sizeof(copy) };
	len = process_vm_readv(tid, &lv, 1, &rv, 1, 0);
	if (len <= 0) {
		printf("copies: cannot read the stack: %s\n", strerror(errno));
		return;
	}
	unwinder_get_stats(u, &s0);
	t = now();
	for (i = 0; i < iters; i++)
		n = unwind_stack_copy(u, &r, copy, (size_t)len, pcs, MAXF);
	dt = now() - t;
	unwinder_get_stats(u, &s1);
	print_warm("copies, warm:        ", "copies", "copy", iters, dt, n, &s0, &s1);
	k = iters / 100 > 10 ? iters / 100 : 10;
	t = now();
	for (i = 0; i < k; i++) {
		unwinder_flush(u);
		n = unwind_stack_copy(u, &r, copy, (size_t)len, pcs, MAXF);
	}
	dt = now() - t;
	printf("copies, cold (flush):%9.0f copies/s   %6.1f us/copy    frames=%d\n",
	       k / dt, dt / k * 1e6, n);
	bench_tool_path(u, &r, copy, (size_t)len, iters);
}

static void bench(pid_t tid, long iters)
{
	uint64_t lo = sym_addr("tramp_lo"), hi = sym_addr("tramp_hi"), pcs[MAXF];
	struct user_regs_struct ur;
	struct unwind_stats s0, s1;
	struct unwind_regs r;
	struct unwinder *u = testtarget_unwinder(pid);
	unw_addr_space_t as;
	double t, dt;
	void *upt;
	long i, k;
	int n = 0;

	ptrace(PTRACE_GETREGS, tid, NULL, &ur);
	/* cold: a flush before every walk (maps parse, ELF checks, table search) */
	k = iters / 100 > 10 ? iters / 100 : 10;
	t = now();
	for (i = 0; i < k; i++) {
		unwinder_flush(u);
		unwind_regs_from_user(tid, &ur, &r);
		n = unwind_stack(u, tid, &r, pcs, MAXF, lo, hi);
	}
	dt = now() - t;
	printf("cold (flush each):   %9.0f unwinds/s  %6.1f us/unwind  frames=%d\n",
	       k / dt, dt / k * 1e6, n);

	unwinder_get_stats(u, &s0);
	t = now();
	for (i = 0; i < iters; i++) {
		unwind_regs_from_user(tid, &ur, &r);
		n = unwind_stack(u, tid, &r, pcs, MAXF, lo, hi);
	}
	dt = now() - t;
	unwinder_get_stats(u, &s1);
	print_warm("warm:                ", "unwinds", "unwind", iters, dt, n, &s0, &s1);
	printf("objects=%lu maps_reads=%lu\n", (unsigned long)s1.objects,
	       (unsigned long)s1.maps_reads);
	bench_copies(u, tid, &ur, iters);
	testtarget_unwinder_free(u);

	/* baseline: stock _UPT_accessors from the live registers */
	as = unw_create_addr_space(&_UPT_accessors, 0);
	upt = _UPT_create(tid);
	k = getenv("UNWTEST_NO_BASELINE") ? 1 : iters / 20 > 10 ? iters / 20 : 10;
	t = now();
	for (i = 0; i < k; i++)
		n = upt_walk(as, upt, pcs);
	dt = now() - t;
	printf("stock _UPT_accessors:%9.0f unwinds/s  %6.1f us/unwind  frames=%d (from rip)\n",
	       k / dt, dt / k * 1e6, n);
	_UPT_destroy(upt);
	unw_destroy_addr_space(as);
}

int main(int argc, char **argv)
{
	struct unwinder *u;
	pid_t tid;
	char link[64];
	ssize_t len;

	if (argc < 4 || (strcmp(argv[1], "check") && strcmp(argv[1], "bench") &&
			 strcmp(argv[1], "seize"))) {
		fprintf(stderr, "usage: unwtest check|seize|bench FIXTURE MODE [N]\n");
		return 99;
	}
	if (!strcmp(argv[1], "seize"))
		tid = spawn_and_seize(argv[2], argv[3]);
	else
		tid = spawn_until_trap(argv[2], argv[3]);
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	len = readlink(link, exe_path, sizeof(exe_path) - 1);
	if (len <= 0) {
		perror(link);
		return 1;
	}
	exe_path[len] = 0;
	maps_read();
	syms_load();
	printf("pid %d, trapped thread %d, mode %s\n", pid, tid, argv[3]);
	if (!strcmp(argv[1], "seize")) {
		struct user_regs_struct ur;
		struct unwind_regs r;
		uint64_t pcs[MAXF];
		char s[4096];
		int n;

		u = testtarget_unwinder(pid);
		CHECK(ptrace(PTRACE_GETREGS, tid, NULL, &ur) == 0, "GETREGS");
		unwind_regs_from_live(&ur, &r);
		n = walk(u, tid, &r, pcs, 0, 0, s, sizeof(s), "live start in pause()");
		CHECK(n > 0 && starts_with(s, "[libc.so] sleeper f3 f2 f1 f0 main [libc.so]"),
		      "got '%s'", s);
		testtarget_unwinder_free(u);
		CHECK(ptrace(PTRACE_DETACH, tid, NULL, NULL) == 0, "detach");
		usleep(20000);
		CHECK(kill(pid, 0) == 0 && waitpid(pid, NULL, WNOHANG) == 0,
		      "fixture did not survive the detach");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		printf("%s\n", failures ? "FAILED" : "OK");
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "check")) {
		u = testtarget_unwinder(pid);
		CHECK(u, "testtarget_unwinder");
		if (u)
			check(u, argv[3], tid, 0);
		if (u && !strcmp(argv[3], "dlopen")) {
			tid = run_to_trap(tid);
			CHECK(tid, "no second trap");
			maps_read();	/* the tool's symbolizer needs libz */
			if (tid)
				check(u, argv[3], tid, 1);
		}
		testtarget_unwinder_free(u);
	} else {
		bench(tid, argc > 4 ? atol(argv[4]) : 100000);
	}
	while (tid && (tid = run_to_trap(tid)))
		CHECK(0, "unexpected trap in thread %d", tid);
	CHECK(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0,
	      "fixture did not exit 0 after the walks (status 0x%x)", exit_status);
	printf("%s\n", failures ? "FAILED" : "OK");
	return failures ? 1 : 0;
}
