/* Unit tests for option, size and duration parsing. */
/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include "cli/cli.h"
#include "model/jvmasker.h"

static void sizes(void)
{
	uint64_t v = 0;

	expect_int_eq(cli_parse_size("512", &v), 0); expect_u64_eq(v, 512);
	expect_int_eq(cli_parse_size("64K", &v), 0); expect_u64_eq(v, 65536);
	expect_int_eq(cli_parse_size("200M", &v), 0); expect_u64_eq(v, 200ULL << 20);
	expect_int_eq(cli_parse_size("1G", &v), 0); expect_u64_eq(v, 1ULL << 30);
	expect_int_eq(cli_parse_size("4KiB", &v), 0); expect_u64_eq(v, 4096);
	expect_int_eq(cli_parse_size("", &v), -EINVAL);
	expect_int_eq(cli_parse_size("-1", &v), -EINVAL);
	expect_int_eq(cli_parse_size("12X", &v), -EINVAL);
	expect_int_eq(cli_parse_size("K", &v), -EINVAL);
	expect_int_eq(cli_parse_size("99999999999999999999", &v), -EINVAL);
	expect_int_eq(cli_parse_size("20000000000000G", &v), -EINVAL);
	expect_int_eq(cli_parse_size(" 64K", &v), -EINVAL);
	expect_int_eq(cli_parse_size("+64K", &v), -EINVAL);
}

static void durations(void)
{
	uint64_t ns = 0;

	expect_int_eq(cli_parse_duration("500ms", &ns), 0); expect_u64_eq(ns, 500000000ULL);
	expect_int_eq(cli_parse_duration("30s", &ns), 0); expect_u64_eq(ns, 30000000000ULL);
	expect_int_eq(cli_parse_duration("5m", &ns), 0); expect_u64_eq(ns, 300000000000ULL);
	expect_int_eq(cli_parse_duration("2", &ns), 0); expect_u64_eq(ns, 2000000000ULL);
	expect_int_eq(cli_parse_duration("1.5s", &ns), 0); expect_u64_eq(ns, 1500000000ULL);
	expect_int_eq(cli_parse_duration("5x", &ns), -EINVAL);
	expect_int_eq(cli_parse_duration("-5s", &ns), -EINVAL);
	expect_int_eq(cli_parse_duration("", &ns), -EINVAL);
}

static int parse(struct options *o, int argc, char **argv)
{
	FILE *saved = stderr;
	int rc;

	stderr = fopen("/dev/null", "w");
	rc = cli_parse(argc, argv, o);
	fclose(stderr);
	stderr = saved;
	return rc;
}

static void options(void)
{
	struct options o;
	char *a1[] = { "heapattach", "-p", "123", "-o", "x.heap", "--sample-rate", "64K",
		       "--interval", "200M", "--every", "30s", "--duration", "5m",
		       "--format", "legacy", NULL };
	char *a2[] = { "heapattach", "-p", "12a", NULL };
	char *a3[] = { "heapattach", "--sample-rate", "0", "-p", "1", NULL };
	char *a4[] = { "heapattach", "-o", "x", NULL };
	char *a5[] = { "heapattach", "--list-hooks", "-p", "7", NULL };
	char *a6[] = { "heapattach", "-p", "7", "--format", "json", NULL };
	char *a7[] = { "heapattach", "-p", NULL };
	char *a8[] = { "heapattach", "--bogus", "-p", "7", NULL };
	char *a9[] = { "heapattach", "-p", "7", "--no-seccomp-probe", NULL };

	expect_int_eq(parse(&o, 15, a1), 0);
	expect_int_eq(o.run.pid, 123);
	expect_str_eq(o.run.output, "x.heap");
	expect_u64_eq(o.run.sample_rate, 65536);
	expect_u64_eq(o.run.interval, 200ULL << 20);
	expect_u64_eq(o.run.every_ns, 30000000000ULL);
	expect_u64_eq(o.run.duration_ns, 300000000000ULL);
	expect_int_eq(o.run.format, DUMP_LEGACY);
	expect_int_eq(parse(&o, 3, a2), -EINVAL);
	expect_int_eq(parse(&o, 5, a3), -EINVAL);
	expect_int_eq(parse(&o, 3, a4), -EINVAL);
	expect_int_eq(parse(&o, 4, a5), 0);
	expect_int_eq(o.list_hooks, 1);
	expect_u64_eq(o.run.sample_rate, CLI_DEFAULT_RATE);
	expect_int_eq(o.run.format, DUMP_PPROF);
	expect_int_eq(o.run.no_seccomp_probe, 0);
	expect_int_eq(parse(&o, 4, a9), 0);
	expect_int_eq(o.run.no_seccomp_probe, 1);
	expect_int_eq(parse(&o, 5, a6), -EINVAL);
	expect_int_eq(parse(&o, 2, a7), -EINVAL);
	expect_int_eq(parse(&o, 4, a8), -EINVAL);
}

/* --jvm-perfmap: a default period, an explicit one of at least 1s, and no
 * --list-hooks with it. */
static void jvm_perfmap(void)
{
	struct options o;
	char *a1[] = { "heapattach", "-p", "7", "--jvm-perfmap", NULL };
	char *a2[] = { "heapattach", "-p", "7", "--jvm-perfmap=5s", NULL };
	char *a3[] = { "heapattach", "-p", "7", "--jvm-perfmap=100ms", NULL };
	char *a4[] = { "heapattach", "--list-hooks", "--jvm-perfmap", "-p", "7", NULL };
	char *a5[] = { "heapattach", "-p", "7", NULL };

	expect_int_eq(parse(&o, 4, a1), 0);
	expect_u64_eq(o.run.jvm_perfmap_ns, JVM_PERFMAP_DEFAULT_NS);
	expect_int_eq(parse(&o, 4, a2), 0);
	expect_u64_eq(o.run.jvm_perfmap_ns, 5000000000ULL);
	expect_int_eq(parse(&o, 4, a3), -EINVAL);
	expect_int_eq(parse(&o, 5, a4), -EINVAL);
	expect_int_eq(parse(&o, 3, a5), 0);
	expect_u64_eq(o.run.jvm_perfmap_ns, 0);
}

/* -p takes plain decimal digits only: strtol's blanks, sign and trailing
 * garbage used to pass ("+123", " 123"). */
static void pids(void)
{
	static const char *const badv[] = { "+123", " 123", "123 ", "0x10", "123abc", "-1",
					    "0", "", "2147483648", "99999999999999999999" };
	struct options o;
	pid_t pid = 0;

	expect_int_eq(cli_parse_pid("123", &pid), 0); expect_int_eq(pid, 123);
	expect_int_eq(cli_parse_pid("2147483647", &pid), 0); expect_int_eq(pid, 2147483647);
	for (size_t i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		char *argv[] = { "heapattach", "-p", (char *)badv[i], NULL };

		pid = 77;
		expect_int_eq(cli_parse_pid(badv[i], &pid), -EINVAL);
		expect_int_eq(pid, 77);
		if (parse(&o, 3, argv) != -EINVAL)
			fprintf(stderr, "-p '%s' was accepted\n", badv[i]);
		expect_int_eq(parse(&o, 3, argv), -EINVAL);
	}
}

/* Sample rates above 1 TiB are refused (they used to give no event at all). */
static void rates(void)
{
	static const char *const badv[] = { "1025G", "2T", "1099511627777", "0", " 64K",
					    "+64K" };
	struct options o;
	char *ok[] = { "heapattach", "-p", "1", "--sample-rate", "1T", NULL };
	char *ok2[] = { "heapattach", "-p", "1", "--sample-rate", "1099511627776", NULL };

	expect_int_eq(parse(&o, 5, ok), 0);
	expect_u64_eq(o.run.sample_rate, 1ULL << 40);
	expect_int_eq(parse(&o, 5, ok2), 0);
	expect_u64_eq(o.run.sample_rate, 1ULL << 40);
	for (size_t i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		char *argv[] = { "heapattach", "-p", "1", "--sample-rate", (char *)badv[i], NULL };

		if (parse(&o, 5, argv) != -EINVAL)
			fprintf(stderr, "--sample-rate '%s' was accepted\n", badv[i]);
		expect_int_eq(parse(&o, 5, argv), -EINVAL);
	}
}

/* --max-depth: a plain count, 1 to 1024; 128 when not given. */
static void depths(void)
{
	static const char *const badv[] = { "0", "1025", "2K", "1k", "-1", "+5", " 5", "5 ",
					    "", "5B", "0x10", "99999999999999999999" };
	struct options o;
	char *dflt[] = { "heapattach", "-p", "1", NULL };
	char *lo[] = { "heapattach", "-p", "1", "--max-depth", "1", NULL };
	char *hi[] = { "heapattach", "--max-depth=1024", "-p", "1", NULL };

	expect_int_eq(parse(&o, 3, dflt), 0);
	expect_int_eq(o.run.max_depth, CLI_DEFAULT_DEPTH);
	expect_int_eq(CLI_DEFAULT_DEPTH, 128);
	expect_int_eq(parse(&o, 5, lo), 0);
	expect_int_eq(o.run.max_depth, 1);
	expect_int_eq(parse(&o, 4, hi), 0);
	expect_int_eq(o.run.max_depth, 1024);
	for (size_t i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		char *argv[] = { "heapattach", "-p", "1", "--max-depth", (char *)badv[i], NULL };

		if (parse(&o, 5, argv) != -EINVAL)
			fprintf(stderr, "--max-depth '%s' was accepted\n", badv[i]);
		expect_int_eq(parse(&o, 5, argv), -EINVAL);
	}
}

/* --keep: a plain count, 1 to 100000, only with numbered dumps to keep. */
static void keeps(void)
{
	static const char *const badv[] = { "0", "100001", "1K", "-1", "", "5 ", "0x10" };
	static const char *const with[] = { "--every", "--interval", "--inuse-interval" };
	static const char *const val[] = { "1s", "1M", "1M" };
	char *alone[] = { "heapattach", "-p", "1", "--keep", "3", NULL };
	struct options o;

	expect_int_eq(parse(&o, 5, alone), -EINVAL);
	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++) {
		char *argv[] = { "heapattach", "-p", "1", "--keep", "100000", (char *)with[i],
				 (char *)val[i], NULL };

		expect_int_eq(parse(&o, 7, argv), 0);
		expect_int_eq(o.run.keep, 100000);
	}
	for (size_t i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		char *argv[] = { "heapattach", "-p", "1", "--every", "1s", "--keep",
				 (char *)badv[i], NULL };

		if (parse(&o, 7, argv) != -EINVAL)
			fprintf(stderr, "--keep '%s' was accepted\n", badv[i]);
		expect_int_eq(parse(&o, 7, argv), -EINVAL);
	}
}

/* --listen: a port, an IPv4 or IPv6 address with one, localhost; no
 * names to resolve, no port past 65535, not with --list-hooks. */
static void listen_addrs(void)
{
	static const char *const good[] = { "6060", "0", "127.0.0.1:6060", "0.0.0.0:80",
					    "[::1]:6060", "[::]:0", "localhost:65535" };
	static const char *const badv[] = { "", "65536", "-1", "x", "6060x", "1.2.3:80",
					    "example.com:80", "[::1]80", "[::1:80", ":80",
					    "127.0.0.1:", "[zz]:80", "127.0.0.1:123456" };
	char *lh[] = { "heapattach", "--list-hooks", "--listen", "6060", "-p", "7", NULL };
	struct options o;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *argv[] = { "heapattach", "-p", "1", "--listen", (char *)good[i], NULL };

		if (parse(&o, 5, argv) != 0)
			fprintf(stderr, "--listen '%s' was refused\n", good[i]);
		expect_int_eq(parse(&o, 5, argv), 0);
		expect_str_eq(o.run.listen, good[i]);
	}
	for (size_t i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		char *argv[] = { "heapattach", "-p", "1", "--listen", (char *)badv[i], NULL };

		if (parse(&o, 5, argv) != -EINVAL)
			fprintf(stderr, "--listen '%s' was accepted\n", badv[i]);
		expect_int_eq(parse(&o, 5, argv), -EINVAL);
	}
	expect_int_eq(parse(&o, 6, lh), -EINVAL);
}

/* Several processes: -p PID,PID,... (and -p again), --tree PID alone, and
 * the options that take one process refused with them. */
static void several(void)
{
	static const char *const badv[] = { "1,", ",1", "1,,2", "1,x", "1, 2", "1,0" };
	char *list[] = { "heapattach", "-p", "3,1,2", "-p", "9", NULL };
	char *tree[] = { "heapattach", "--tree", "5", NULL };
	char *both[] = { "heapattach", "--tree", "5", "-p", "6", NULL };
	char *two[] = { "heapattach", "--tree", "5", "--tree", "6", NULL };
	char *lis[] = { "heapattach", "--tree", "5", "--listen", "6060", NULL };
	char *top[] = { "heapattach", "-p", "1,2", "--top", NULL };
	char *hooks[] = { "heapattach", "-p", "1,2", "--list-hooks", NULL };
	struct options o;

	expect_int_eq(parse(&o, 5, list), 0);
	expect_int_eq((int)o.npids, 4);
	expect_int_eq(o.pids[0], 3);
	expect_int_eq(o.pids[3], 9);
	expect_int_eq(o.run.pid, 3);
	expect_int_eq(o.tree, 0);
	expect_int_eq(parse(&o, 3, tree), 0);
	expect_int_eq(o.tree, 1);
	expect_int_eq(o.run.pid, 5);
	expect_int_eq(parse(&o, 5, both), -EINVAL);
	expect_int_eq(parse(&o, 5, two), -EINVAL);
	expect_int_eq(parse(&o, 5, lis), -EINVAL);
	expect_int_eq(parse(&o, 4, top), 0);
	expect_int_eq(o.run.top, 1);
	expect_int_eq(parse(&o, 4, hooks), -EINVAL);
	for (size_t i = 0; i < sizeof(badv) / sizeof(badv[0]); i++) {
		char *argv[] = { "heapattach", "-p", (char *)badv[i], NULL };

		if (parse(&o, 3, argv) != -EINVAL)
			fprintf(stderr, "-p '%s' was accepted\n", badv[i]);
		expect_int_eq(parse(&o, 3, argv), -EINVAL);
	}
}

/* FILE.PID.heap: FILE's .heap replaced, the default's name, an exec's generation. */
static void fleet_names(void)
{
	static const struct { const char *out; int pid; unsigned gen; const char *want; } v[] = {
		{ "out.heap", 12, 1, "out.12.heap" },
		{ "/d/app", 7, 1, "/d/app.7.heap" },
		{ NULL, 9, 1, "heapattach.9.heap" },
		{ "out.heap", 12, 3, "out.12-3.heap" },
		{ ".heap", 4, 1, ".heap.4.heap" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *s = fleet_output(v[i].out, v[i].pid, v[i].gen);

		expect_str_eq(s, v[i].want);
		free(s);
	}
}

HARNESS_MAIN("cli", T(sizes), T(durations), T(options), T(jvm_perfmap), T(pids), T(rates),
	     T(depths), T(keeps), T(listen_addrs), T(several), T(fleet_names))
