/* libFuzzer target: the perf map reader (perfmap.c) on arbitrary text, read whole or in two pieces. */
/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "model/perfmap.h"
#include "model/tfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz-perfmap.XXXXXX";
static char file[128];
static int root = -1;

/* Append len bytes to the map (truncating it first if trunc). */
static void put(const uint8_t *p, size_t len, int trunc)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | (trunc ? O_TRUNC : 0), 0600);

	if (fd < 0)
		abort();
	if (len && write(fd, p, len) != (ssize_t)len)
		abort();
	close(fd);
}

/* A name found must be a C string of printable bytes (what a line can hold). */
static void probe(const struct perfmap *pm, uint64_t a)
{
	uint64_t off = 0;
	const char *name = perfmap_lookup(pm, a, &off);

	if (!name)
		return;
	if (!*name || strlen(name) > PERFMAP_MAX_LINE || off > a)
		abort();
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			abort();
}

/* The directory made for the map, removed at exit. */
static void cleanup(void)
{
	char sub[160];

	unlink(file);
	snprintf(sub, sizeof(sub), "%s/tmp", dir);
	rmdir(sub);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap_stats st;
	struct perfmap *pm;
	size_t split;
	char *text;

	if (root < 0) {
		char sub[160];

		if (!mkdtemp(dir))
			abort();
		snprintf(sub, sizeof(sub), "%s/tmp", dir);
		mkdir(sub, 0700);
		snprintf(file, sizeof(file), "%s/tmp/perf-1.map", dir);
		root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			abort();
		atexit(cleanup);
	}
	if (!size)
		return 0;
	split = 1 + (size - 1) * data[0] / 256;
	put(data + 1, split - 1, 1);
	pm = perfmap_new(root, "/tmp/perf-1.map", TFILE_SELF);
	perfmap_refresh(pm);
	put(data + split, size - split, 0);
	perfmap_refresh(pm);
	perfmap_get_stats(pm, &st);
	if (st.entries > PERFMAP_MAX_ENTRIES || st.entries + st.garbage > size)
		abort();
	/* every number at a line's start, and its neighbours */
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *p = text; p && p < text + size; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		uint64_t a = strtoull(p, NULL, 16);

		probe(pm, a);
		probe(pm, a - 1);
		probe(pm, a + 1);
	}
	free(text);
	perfmap_free(pm);
	unlink(file);
	return 0;
}
