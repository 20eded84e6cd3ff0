/* Test tool: print what py_target_find finds in a running process, and check it by reading the target. */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: pyfind_probe PID. Prints "key value" lines: what py_target_find
 * returned, then what the layout gives when followed in the target's
 * memory: the thread ids in the main interpreter's thread list, the GIL
 * holder word, PyCode_Type's tp_name, and per thread its leaf frame's
 * function name (co_name). Exit 0 found, 1 not, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "python/pyfind.h"
#include "model/target.h"

static struct target *t;

static uint64_t word(uint64_t addr, int *ok)
{
	uint64_t v = 0;

	if (target_read(t, addr, &v, sizeof(v)))
		*ok = 0;
	return v;
}

/* A compact ASCII str object's text into buf, or "?". */
static void ascii(const struct py_layout *l, uint64_t obj, char *buf, size_t n)
{
	int ok = 1;
	uint64_t len = word(obj + l->uni_length, &ok);

	snprintf(buf, n, "?");
	if (!ok || len >= n || target_read(t, obj + l->uni_ascii_size, buf, len))
		snprintf(buf, n, "?");
	else
		buf[len] = 0;
}

/* The leaf Python frame of thread state ts (0 if none). */
static uint64_t leaf_frame(const struct py_layout *l, uint64_t ts, int *ok)
{
	uint64_t f = word(ts + l->ts_frame, ok);

	if (f && (l->has & PY_HAS_CFRAME))
		f = word(f + l->cf_current_frame, ok);
	return f;
}

static void threads(const struct py_target *pt)
{
	const struct py_layout *l = &pt->lay;
	int ok = 1;
	uint64_t ts = word(pt->threads_head, &ok);

	for (int i = 0; ts && ok && i < 64; i++) {
		uint64_t tid = word(ts + l->ts_thread_id, &ok);
		uint64_t interp = word(ts + l->ts_interp, &ok);
		uint64_t f = leaf_frame(l, ts, &ok), code = 0, type = 0;
		char name[256] = "-";

		if (f && ok)
			code = word(f + l->fr_code, &ok);
		if (code && ok)
			type = word(code + l->ob_type, &ok);
		if (code && ok && type == pt->code_type)
			ascii(l, word(code + l->co_name, &ok), name, sizeof(name));
		printf("thread 0x%llx tstate 0x%llx interp_ok %d leaf %s\n",
		       (unsigned long long)tid, (unsigned long long)ts,
		       interp == pt->threads_head - l->is_threads_head, name);
		ts = word(ts + l->ts_next, &ok);
	}
	if (!ok)
		printf("threads_read_error 1\n");
}

int main(int argc, char **argv)
{
	struct py_target pt;
	char err[256], name[64] = "?";
	uint64_t holder, tp_name;
	int ret, ok = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: pyfind_probe PID\n");
		return 2;
	}
	log_verbose = getenv("HEAPATTACH_DEBUG") != NULL;
	t = target_new(atoi(argv[1]), 0);
	if (!t) {
		perror("target_new");
		return 1;
	}
	ret = py_target_find(t, &pt, err, sizeof(err));
	printf("result %d %s\n", ret, ret ? strerrorname_np(-ret) : "0");
	if (ret) {
		printf("error %s\n", err);
		target_free(t);
		return 1;
	}
	printf("version %s\nminor %d\nobject %s\n", pt.version, pt.minor, pt.object);
	printf("runtime 0x%llx\ncode_type 0x%llx\n", (unsigned long long)pt.runtime,
	       (unsigned long long)pt.code_type);
	printf("eval 0x%llx 0x%llx\ninterp 0x%llx 0x%llx\n", (unsigned long long)pt.eval_lo,
	       (unsigned long long)pt.eval_hi, (unsigned long long)pt.interp_lo,
	       (unsigned long long)pt.interp_hi);
	printf("holder 0x%llx\nthreads_head 0x%llx\n", (unsigned long long)pt.holder,
	       (unsigned long long)pt.threads_head);
	holder = word(pt.holder, &ok);
	printf("holder_word %s 0x%llx\n", ok ? "ok" : "unreadable", (unsigned long long)holder);
	/* PyTypeObject.tp_name follows PyObject_VAR_HEAD (24 bytes) */
	ok = 1;
	tp_name = word(pt.code_type + 24, &ok);
	if (ok && target_read(t, tp_name, name, sizeof(name) - 1))
		snprintf(name, sizeof(name), "?");
	name[sizeof(name) - 1] = 0;
	printf("code_type_name %s\n", name);
	threads(&pt);
	target_free(t);
	return 0;
}
