/* Unit tests for the symbolizer: own functions with DWARF lines, libc, C++ demangling in another process, speed. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "stacks/symbolize.h"
#include "model/target.h"

/* Not static and never inlined, so that it has a symbol of its own. */
__attribute__((noinline)) int symbolize_probe(int x)
{
	return x * 3 + 1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

static void test_self(void)
{
	struct proc_maps m;
	struct symbolizer *s;
	struct target *t;
	struct sym_info si;
	uint64_t a = (uint64_t)(uintptr_t)&symbolize_probe;

	expect_int_eq(proc_maps_read(getpid(), &m), 0);
	t = target_new(getpid(), 0);
	s = symbolizer_new(t);
	expect_true(s != NULL);
	if (!s)
		goto out;
	expect_int_eq(symbolizer_lookup(s, a + 2, &si), 0);
	expect_str_eq(si.function, "symbolize_probe");
	expect_str_eq(si.system_name, "symbolize_probe");
	expect_u64_eq(si.offset, 2);
	expect_true(ends_with(si.file, "test_symbolize.c"));
	expect_true(si.line >= 13 && si.line <= 16);
	expect_true(si.map && si.map->path);
	expect_true(symbolizer_build_id(s, si.map) != NULL);

	/* a libc function, through the same cache */
	expect_int_eq(symbolizer_lookup(s, (uint64_t)(uintptr_t)&getpid + 1, &si), 0);
	expect_true(si.function && strstr(si.function, "getpid"));

	/* unmapped, anonymous and special mappings */
	expect_int_eq(symbolizer_lookup(s, 1, &si), -ENOENT);
	expect_true(si.map == NULL);
	{
		void *heap = malloc(16);
		const struct proc_map *hm;

		/* the map list is a snapshot: only test if the block is in it */
		hm = proc_maps_find(&m, (uint64_t)(uintptr_t)heap);
		if (hm)
			expect_int_eq(symbolizer_lookup(s, (uint64_t)(uintptr_t)heap, &si), -ENOENT);
		free(heap);
	}
	symbolizer_free(s);
	target_free(t);
out:
	proc_maps_free(&m);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Repeated lookups must hit the caches: 300k of them well under a second. */
static void test_speed(void)
{
	struct proc_maps m;
	struct symbolizer *s;
	struct target *tg;
	struct sym_info si;
	uint64_t a[3] = {
		(uint64_t)(uintptr_t)&symbolize_probe + 1,
		(uint64_t)(uintptr_t)&getpid + 1,
		(uint64_t)(uintptr_t)&test_speed + 5,
	};
	double t;
	int ok = 0;

	expect_int_eq(proc_maps_read(getpid(), &m), 0);
	tg = target_new(getpid(), 0);
	s = symbolizer_new(tg);
	symbolizer_lookup(s, a[0], &si);
	t = now();
	for (int i = 0; i < 300000; i++)
		ok += !symbolizer_lookup(s, a[i % 3], &si);
	t = now() - t;
	expect_int_eq(ok, 300000);
	if (t > 1.0)
		fprintf(stderr, "300k lookups took %.2fs\n", t);
	expect_true(t < 1.0);
	symbolizer_free(s);
	target_free(tg);
	proc_maps_free(&m);
}

/*
 * Start fixture (fixtures/printaddrs*: "NAME 0xADDR" lines, then "ready")
 * and read the address it prints for name into *addr (0 if none). Its
 * pid, or -1 (said) when it cannot run.
 */
static pid_t start_printer(const char *fixture, const char *name, unsigned long *addr)
{
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	char path[4096], line[256];
	int fds[2];
	pid_t pid;
	FILE *f;

	*addr = 0;
	snprintf(path, sizeof(path), "%s/fixtures/%s", b, fixture);
	if (access(path, X_OK)) {
		fprintf(stderr, "no %s (run make fixtures)\n", path);
		expect_true(0);
		return -1;
	}
	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	while (f && fgets(line, sizeof(line), f) && strncmp(line, "ready", 5)) {
		size_t n = strlen(name);

		if (!strncmp(line, name, n) && line[n] == ' ')
			*addr = strtoul(line + n + 1, NULL, 16);
	}
	if (f)
		fclose(f);
	return pid;
}

/* Another process (a C++ fixture): libstdc++'s operator new, demangled. */
static void test_other_process_cxx(void)
{
	unsigned long addr;
	struct proc_maps m;
	struct symbolizer *s;
	struct target *t;
	struct sym_info si;
	pid_t pid = start_printer("printaddrs_cxx", "_Znwm", &addr);

	if (pid < 0)
		return;
	expect_true(addr != 0);
	expect_int_eq(proc_maps_read(pid, &m), 0);
	t = target_new(pid, 0);
	s = symbolizer_new(t);
	expect_int_eq(symbolizer_lookup(s, addr, &si), 0);
	expect_str_eq(si.system_name, "_Znwm");
	/* demangled when libstdc++'s __cxa_demangle is loadable */
	expect_true(si.function && (!strcmp(si.function, "operator new(unsigned long)") ||
				    !strcmp(si.function, "_Znwm")));
	expect_true(si.map && strstr(si.map->path, "libstdc++"));
	symbolizer_free(s);
	target_free(t);
	proc_maps_free(&m);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Files opened (symbolizer_hold) while another process lived name its
 * code once it is gone, reaped: libc's malloc, read only then, as a
 * symbolizer that read it while the process lived names it (with the
 * file and line of libc's debug file, when the host has one).
 */
static void test_hold_gone(void)
{
	struct symbolizer *held, *read;
	struct target *t, *t2;
	struct sym_info a, b;
	unsigned long addr;
	char proc[64];
	pid_t pid = start_printer("printaddrs", "malloc", &addr);

	if (pid < 0)
		return;
	expect_true(addr != 0);
	t = target_new(pid, 0);
	t2 = target_new(pid, 0);
	held = symbolizer_new(t);
	read = symbolizer_new(t2);
	expect_int_eq(symbolizer_hold(held, addr + 1), 0);
	expect_int_eq(symbolizer_hold(held, 1), -ENOENT);
	expect_int_eq(symbolizer_lookup(read, addr + 1, &b), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	expect_true(access(proc, F_OK) != 0);
	expect_int_eq(symbolizer_lookup(held, addr + 1, &a), 0);
	expect_true(a.function && strstr(a.function, "malloc"));
	expect_str_eq(a.function, b.function);
	expect_true(a.file == b.file || (a.file && b.file && !strcmp(a.file, b.file)));
	expect_int_eq(a.line, b.line);
	symbolizer_free(held);
	symbolizer_free(read);
	target_free(t);
	target_free(t2);
}

/* Code that is gone keeps its name through a stand-in. */
static void test_retire(void)
{
	struct target *t = target_new(getpid(), 0);
	struct symbolizer *s = symbolizer_new(t);
	uint64_t pc = (uint64_t)(uintptr_t)&symbolize_probe + 3, stand;
	struct proc_maps old;
	struct sym_info si;

	expect_int_eq(proc_maps_read(getpid(), &old), 0);
	stand = symbolizer_retire(s, &old, pc);
	expect_true(stand >= SYMBOLIZE_RETIRED_BASE);
	expect_u64_eq(symbolizer_retire(s, &old, pc), stand);	/* one per pc */
	expect_int_eq(symbolizer_lookup(s, stand - 1, &si), 0);
	expect_str_eq(si.function, "symbolize_probe");
	expect_u64_eq(si.offset, 2);
	expect_u64_eq(si.addr, pc - 1);
	expect_true(si.map == NULL);
	/* in no mapping of old: unchanged; past the stand-ins: nothing */
	expect_u64_eq(symbolizer_retire(s, &old, 8), 8);
	expect_int_eq(symbolizer_lookup(s, stand + 15, &si), -ENOENT);
	symbolizer_free(s);
	target_free(t);
	proc_maps_free(&old);
}

HARNESS_MAIN("symbolize", T(test_self), T(test_retire), T(test_speed), T(test_other_process_cxx),
	     T(test_hold_gone))
