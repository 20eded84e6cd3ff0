/* Command-line parsing for heapattach. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "model/jvmasker.h"
#include "serve/serve.h"

enum { OPT_SAMPLE_RATE = 256, OPT_INTERVAL, OPT_EVERY, OPT_DURATION, OPT_FORMAT,
       OPT_LIST_HOOKS, OPT_MODE, OPT_MAX_DEPTH, OPT_VERSION, OPT_INUSE_INTERVAL, OPT_TOP,
       OPT_CENSUS, OPT_NO_PYTHON, OPT_NO_DEBUGINFOD, OPT_PYTHON_C_FRAMES, OPT_NO_SECCOMP_PROBE, OPT_SKIP,
       OPT_JVM_PERFMAP, OPT_SNAPSHOT, OPT_LISTEN, OPT_TREE, OPT_KEEP };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "tree", required_argument, NULL, OPT_TREE },
	{ "output", required_argument, NULL, 'o' },
	{ "sample-rate", required_argument, NULL, OPT_SAMPLE_RATE },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "inuse-interval", required_argument, NULL, OPT_INUSE_INTERVAL },
	{ "every", required_argument, NULL, OPT_EVERY },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "list-hooks", no_argument, NULL, OPT_LIST_HOOKS },
	{ "top", no_argument, NULL, OPT_TOP },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "census", no_argument, NULL, OPT_CENSUS },
	{ "snapshot", no_argument, NULL, OPT_SNAPSHOT },
	{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
	{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
	{ "python-c-frames", no_argument, NULL, OPT_PYTHON_C_FRAMES },
	{ "no-seccomp-probe", no_argument, NULL, OPT_NO_SECCOMP_PROBE },
	{ "jvm-perfmap", optional_argument, NULL, OPT_JVM_PERFMAP },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

void cli_usage(FILE *f)
{
	fprintf(f,
"usage: heapattach -p PID[,PID...] | --tree PID [-o FILE] [options]\n"
"       heapattach --list-hooks -p PID\n"
"       heapattach report [options] FILE...   (heapattach report --help)\n"
"\n"
"Profile the heap of a running process; writes a pprof heap profile.\n"
"\n"
"  -p, --pid PID[,PID...]   process(es) to attach to; several: one profile\n"
"                           each, FILE.PID.heap, samples labelled pid=PID\n"
"      --tree PID           PID and its descendants, followed as they fork\n"
"                           and exec (pre-fork servers: nginx, postgres,\n"
"                           gunicorn); profiles as for several -p\n"
"  -o, --output FILE        profile path (default heapattach.PID.heap), mode\n"
"                           0600; an existing FILE must be a regular file\n"
"      --sample-rate SIZE   mean bytes between samples, 1 to 1T (default\n"
"                           512K; 1 records every allocation)\n"
"      --interval SIZE      also write FILE.0001.heap, ... every SIZE allocated\n"
"      --inuse-interval SIZE  also write one each time the live bytes reach\n"
"                           a new high by SIZE\n"
"      --every DURATION     also write numbered profiles every DURATION\n"
"      --keep N             keep only the newest N numbered profiles (1 to\n"
"                           100000): older ones this run wrote are removed\n"
"      --duration DURATION  detach after DURATION (default: until Ctrl-C,\n"
"                           SIGTERM or the target's exit)\n"
"      --format pprof|legacy|folded  output format (default pprof)\n"
"      --mode fast|trap     fast: sampled in the target, events through a\n"
"                           shared ring (default); trap: every call stops\n"
"                           in heapattach (slow, for cross-checks)\n"
"      --max-depth N        frames kept of each stack, 1 to 1024 (default\n"
"                           128); a stack cut there ends in [truncated]\n"
"      --top                a live view: RSS, allocation rate, top sites, every\n"
"                           second (keys: q quit, d dump now, s sort); a plain\n"
"                           table when stdout is not a terminal; with several\n"
"                           processes, a table of them\n"
"      --skip REGEX         --top names a site by its first frame that is not an\n"
"                           allocator wrapper (known ones: zmalloc, ngx_alloc,\n"
"                           palloc, PyMem_Malloc, xmalloc, ...; and functions\n"
"                           whose code returns what they allocate); also skip\n"
"                           the functions matching REGEX (grep -E; repeatable,\n"
"                           up to %d). The profile keeps every frame\n"
"      --census             before attaching, walk glibc's heaps once: chunks in\n"
"                           use and free by size (what no sample can show)\n"
"      --snapshot           before attaching, list every block in use as\n"
"                           heapattach snapshot does (leaked, owners, types):\n"
"                           each profile also holds them, one sample a block,\n"
"                           labelled kind=snapshot (the others kind=sampled)\n"
"      --no-python          no Python frames: in a CPython target (3.8 to 3.13)\n"
"                           stacks show the Python functions, files and lines\n"
"                           in place of the interpreter's eval loop by default\n"
"      --python-c-frames    keep the interpreter's own frames between Python\n"
"                           frames (the eval loop, call dispatch)\n"
"      --no-debuginfod      never fetch debug files from the debuginfod servers\n"
"                           of DEBUGINFOD_URLS (by default asked for what the\n"
"                           disk lacks before attaching and after detaching)\n"
"      --jvm-perfmap[=PERIOD]  a HotSpot JVM target: ask it for a fresh perf\n"
"                           map (as jcmd PID Compiler.perfmap) at attach,\n"
"                           every PERIOD (default 30s, at least 1s) and before\n"
"                           the final profile, so that code compiled while\n"
"                           attached is named too\n"
"      --no-seccomp-probe   refuse a target whose seccomp filter heapattach may\n"
"                           not read (no CAP_SYS_ADMIN) instead of learning it\n"
"                           from a throwaway copy of the target\n"
"      --listen [ADDR:]PORT  while attached, serve over HTTP: /debug/pprof/heap\n"
"                           and /debug/pprof/allocs (pprof, ?seconds=N: a\n"
"                           delta), /metrics (Prometheus); ADDR 127.0.0.1 unless\n"
"                           given (0.0.0.0, [::1], ...); PORT 0: any free one\n"
"      --list-hooks         print the allocator entry points calls bind to\n"
"  -v, --verbose            debug messages\n"
"  -h, --help               this help\n"
"      --version            print the version\n"
"\n"
"SIZE: 512, 64K, 200M, 1G.  DURATION: 500ms, 30s, 5m, 1h.\n"
"SIGUSR1 writes the next numbered profile at once.\n"
"\n"
"Exit status: 0 profile written (the target may have exited, with any\n"
"status); 1 could not attach or write; 2 bad command line; 3 profile\n"
"written, but the target was killed by a signal; 4 profile written, but\n"
"heapattach mappings had to stay in the target; 5 profile written, but\n"
"--sample-rate 1 lost events (how many is said, and in the profile).\n",
		CLI_MAX_SKIP);
}

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;	/* strtoull would take a sign or blanks */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	case 't': case 'T': mul = 1ULL << 40; end++; break;
	default: break;
	}
	if (mul > 1 && (!strcmp(end, "B") || !strcmp(end, "iB")))
		end += strlen(end);
	else if (mul == 1 && !strcmp(end, "B"))
		end++;
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int cli_parse_duration(const char *s, uint64_t *out_ns)
{
	char *end;
	double v;
	double mul;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v != v)
		return -EINVAL;
	if (!*end || !strcmp(end, "s"))
		mul = 1e9;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "m"))
		mul = 60e9;
	else if (!strcmp(end, "h"))
		mul = 3600e9;
	else
		return -EINVAL;
	if (v * mul > 1e18)
		return -EINVAL;
	*out_ns = (uint64_t)(v * mul);
	return 0;
}

/* A process id: plain decimal digits only (no sign, blank or base prefix),
 * 1..INT_MAX. 0 or -EINVAL. */
int cli_parse_pid(const char *s, pid_t *out)
{
	unsigned long long v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*c - '0');
		if (v > INT_MAX)
			return -EINVAL;
	}
	if (!v)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

/* -p PID or PID,PID,...: appended to o->pids (repeats allowed, one
 * session each). 0 or -EINVAL. */
static int parse_pids(const char *s, struct options *o)
{
	char one[16];

	for (const char *p = s;; p++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len >= sizeof(one) || o->npids == FLEET_MAX)
			return -EINVAL;
		memcpy(one, p, len);
		one[len] = 0;
		if (cli_parse_pid(one, &o->pids[o->npids]))
			return -EINVAL;
		o->npids++;
		if (!end)
			return 0;
		p = end;
	}
}

/* A plain count (digits only: no K/M suffix), 1..max. 0 or -EINVAL. */
static int parse_count(const char *s, uint64_t max, unsigned *out)
{
	uint64_t n;

	if (cli_parse_size(s, &n) || n == 0 || n > max || s[strspn(s, "0123456789")])
		return -EINVAL;
	*out = (unsigned)n;
	return 0;
}

static int bad(const char *what, const char *val)
{
	fprintf(stderr, "heapattach: invalid %s '%s' (try --help)\n", what, val);
	return -EINVAL;
}

int cli_parse(int argc, char **argv, struct options *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->run.skip = o->skip;
	o->run.sample_rate = CLI_DEFAULT_RATE;
	o->run.format = DUMP_PPROF;
	o->run.mode = MODE_FAST;
	o->run.max_depth = CLI_DEFAULT_DEPTH;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:o:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, o))
				return bad("PID", optarg);
			break;
		case OPT_TREE:
			if (o->tree || cli_parse_pid(optarg, &o->pids[o->npids]))
				return bad("--tree PID (one)", optarg);
			o->npids++;
			o->tree = 1;
			break;
		case 'o':
			if (!*optarg)
				return bad("output file", optarg);
			o->run.output = optarg;
			break;
		case OPT_SAMPLE_RATE:
			if (cli_parse_size(optarg, &o->run.sample_rate) || o->run.sample_rate == 0 ||
			    o->run.sample_rate > CLI_MAX_RATE)
				return bad("sample rate (1 to 1T)", optarg);
			break;
		case OPT_INTERVAL:
			if (cli_parse_size(optarg, &o->run.interval) || o->run.interval == 0)
				return bad("interval", optarg);
			break;
		case OPT_TOP:
			o->run.top = 1;
			break;
		case OPT_SKIP: {
			regex_t re;

			if (o->run.nskip == CLI_MAX_SKIP)
				return bad("--skip (too many)", optarg);
			if (regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB))
				return bad("regular expression", optarg);
			regfree(&re);
			o->skip[o->run.nskip++] = optarg;
			break;
		}
		case OPT_CENSUS:
			o->run.census = 1;
			break;
		case OPT_SNAPSHOT:
			o->snapshot = 1;
			break;
		case OPT_NO_PYTHON:
			o->run.no_python = 1;
			break;
		case OPT_NO_DEBUGINFOD:
			o->run.no_debuginfod = 1;
			break;
		case OPT_PYTHON_C_FRAMES:
			o->run.python_c_frames = 1;
			break;
		case OPT_NO_SECCOMP_PROBE:
			o->run.no_seccomp_probe = 1;
			break;
		case OPT_JVM_PERFMAP:
			o->run.jvm_perfmap_ns = JVM_PERFMAP_DEFAULT_NS;
			if (optarg && (cli_parse_duration(optarg, &o->run.jvm_perfmap_ns) ||
				       o->run.jvm_perfmap_ns < JVM_PERFMAP_MIN_NS))
				return bad("period for --jvm-perfmap (at least 1s)", optarg);
			break;
		case OPT_LISTEN:
			if (serve_check_addr(optarg))
				return bad("address for --listen ([ADDR:]PORT)", optarg);
			o->run.listen = optarg;
			break;
		case OPT_INUSE_INTERVAL:
			if (cli_parse_size(optarg, &o->run.inuse_interval) || o->run.inuse_interval == 0)
				return bad("in-use interval", optarg);
			break;
		case OPT_EVERY:
			if (cli_parse_duration(optarg, &o->run.every_ns) || o->run.every_ns == 0)
				return bad("duration for --every", optarg);
			break;
		case OPT_KEEP:
			if (parse_count(optarg, CLI_MAX_KEEP, &o->run.keep))
				return bad("count for --keep (1 to 100000)", optarg);
			break;
		case OPT_DURATION:
			if (cli_parse_duration(optarg, &o->run.duration_ns) || o->run.duration_ns == 0)
				return bad("duration", optarg);
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "pprof"))
				o->run.format = DUMP_PPROF;
			else if (!strcmp(optarg, "legacy"))
				o->run.format = DUMP_LEGACY;
			else if (!strcmp(optarg, "folded"))
				o->run.format = DUMP_FOLDED;
			else
				return bad("format (pprof, legacy or folded)", optarg);
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "trap"))
				o->run.mode = MODE_TRAP;
			else if (!strcmp(optarg, "fast"))
				o->run.mode = MODE_FAST;
			else
				return bad("mode (trap or fast)", optarg);
			break;
		case OPT_MAX_DEPTH:
			if (parse_count(optarg, CLI_MAX_DEPTH, &o->run.max_depth))
				return bad("stack depth (1 to 1024)", optarg);
			break;
		case OPT_LIST_HOOKS:
			o->list_hooks = 1;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			cli_usage(stdout);
			return 1;
		case OPT_VERSION:
			printf("heapattach %s\n", HEAPATTACH_VERSION);
			return 1;
		case ':':
			fprintf(stderr, "heapattach: option '%s' needs a value (try --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "heapattach: unknown option '%s' (try --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "heapattach: unexpected argument '%s' (try --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (o->list_hooks && o->run.jvm_perfmap_ns) {
		fprintf(stderr, "heapattach: --jvm-perfmap asks for a map while attached; "
			"--list-hooks does not attach (try --help)\n");
		return -EINVAL;
	}
	if (o->list_hooks && o->run.listen) {
		fprintf(stderr, "heapattach: --listen serves while attached; "
			"--list-hooks does not attach (try --help)\n");
		return -EINVAL;
	}
	if (o->snapshot && (o->list_hooks || o->run.format != DUMP_PPROF)) {
		fprintf(stderr, "heapattach: --snapshot goes into pprof profiles%s (try --help)\n",
			o->list_hooks ? "; --list-hooks writes none" : " only");
		return -EINVAL;
	}
	if (o->run.keep && !o->run.every_ns && !o->run.interval && !o->run.inuse_interval) {
		fprintf(stderr, "heapattach: --keep keeps numbered profiles; give --every, "
			"--interval or --inuse-interval to write them (try --help)\n");
		return -EINVAL;
	}
	if (o->tree && o->npids > 1) {
		fprintf(stderr, "heapattach: --tree PID takes one process and its descendants; "
			"not with -p (try --help)\n");
		return -EINVAL;
	}
	if ((o->tree || o->npids > 1) && (o->list_hooks || o->run.listen)) {
		fprintf(stderr, "heapattach: %s takes one process, not %s (try --help)\n",
			o->list_hooks ? "--list-hooks" : "--listen",
			o->tree ? "--tree" : "several");
		return -EINVAL;
	}
	if (!o->npids) {
		fprintf(stderr, "heapattach: no target: give -p PID (try --help)\n");
		return -EINVAL;
	}
	o->run.pid = o->pids[0];
	return 0;
}
