/* Test tool: print the allocator entry points of a running process (what --list-hooks prints). */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/hooks.h"
#include "base/log.h"

int main(int argc, char **argv)
{
	struct proc_maps maps;
	struct hook_set set;
	pid_t pid;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: listhooks PID\n");
		return 2;
	}
	pid = atoi(argv[1]);
	log_verbose = getenv("HEAPATTACH_DEBUG") != NULL;
	/* test the /proc/PID/root fallback on its own */
	proc_no_map_files = getenv("LISTHOOKS_NO_MAP_FILES") != NULL;
	/* test the fallback lookup order on its own */
	hooks_no_r_debug = getenv("LISTHOOKS_NO_R_DEBUG") != NULL;
	ret = proc_maps_read(pid, &maps);
	if (ret) {
		pr_err("cannot read maps of %d: %s", (int)pid, strerror(-ret));
		return 1;
	}
	ret = hooks_resolve(pid, &maps, &set);
	if (ret) {
		pr_err("no allocator entry points in %d: %s", (int)pid, strerror(-ret));
		proc_maps_free(&maps);
		return 1;
	}
	ret = hooks_print(stdout, &set);
	hooks_free(&set);
	proc_maps_free(&maps);
	return ret ? 1 : 0;
}
