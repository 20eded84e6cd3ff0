/* libFuzzer target: the snapshot's walkers (glibc's heap chains and thread caches, glibcblocks.c; the conservative scan, heapgraph.c) over an arbitrary heap image. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "model/glibcwalk.h"
#include "snapshot/glibcblocks.h"
#include "snapshot/heapgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x10000000ULL

/* The image: the input at BASE, nothing else readable. */
struct image {
	const uint8_t *p;
	size_t n;
};

static int read_img(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = arg;

	if (addr < BASE || addr - BASE > im->n || len > im->n - (addr - BASE))
		return -EFAULT;
	memcpy(buf, im->p + (addr - BASE), len);
	return 0;
}

static int readv_img(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	for (size_t i = 0; i < n; i++) {
		if (read_img(arg, s[i].addr, buf, s[i].len))
			return -EFAULT;
		buf += s[i].len;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { data, size & ~(size_t)15 };
	struct proc_map m = { .start = BASE, .end = BASE + im.n, .prot = PROC_MAP_R | PROC_MAP_W,
			      .path = (char *)"[heap]" };
	struct proc_maps maps = { &m, 1 };
	struct glibc_state gs = { .main_arena = BASE, .lay = &glibc_layout_fast };
	struct glibcblocks_stats st;
	struct heapgraph g;
	uint64_t end = 0;

	if (im.n < 64)
		return 0;
	/* the image as its own arena too: the fast bins walked from it */
	if (glibcblocks_list(-1, &maps, read_img, &im, size & 16 ? &gs : NULL, &g, readv_img, &im,
			     &st) == 0) {
		for (size_t i = 0; i < g.n; i++) {
			if (g.addr[i] < end || !heapgraph_size(&g, i) || g.addr[i] < BASE)
				abort();	/* sealed: sorted, apart, inside */
			end = g.addr[i] + heapgraph_size(&g, i);
		}
		/* the first page as a root, then every block's owner is sane */
		heapgraph_root_range(&g, 1, BASE, BASE + (im.n < 4096 ? im.n : 4096));
		for (size_t i = 0; i < g.n; i++)
			if (g.owner[i] != 1 && g.owner[i] != HG_NONE)
				abort();
	}
	heapgraph_free(&g);
	return 0;
}
