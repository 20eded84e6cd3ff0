/* Large blocks' resident pages in the target, from pagemap: glibc's mmapped blocks (found by their headers) and the large blocks the profile holds live. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xmalloc.h"
#include "model/mmchunks.h"
#include "model/proc.h"

/*
 * A block glibc mmaps for itself (sysmalloc, x86-64) starts at the start
 * of its mapping with the chunk header { prev_size = 0, size = length |
 * IS_MMAPPED }, length a multiple of the page. The header is written by
 * malloc, so the block's first page is resident. pagemap gives each
 * page's state in 8 bytes (bit 63 present, bit 62 swapped), readable by
 * the tracer; no page of the target's is touched.
 */

#define PAGE            4096ULL
#define PM_PRESENT      (1ULL << 63)
#define PM_SWAPPED      (1ULL << 62)
#define IS_MMAPPED      2ULL
#define PM_BATCH        4096            /* pagemap entries read at a time */
#define WINDOW          1024            /* pages whose headers are read in one call */
#define ARENA_ALIGN     (64ULL << 20)   /* glibc's HEAP_MAX_SIZE on 64-bit */
#define MAX_PAGES       (1ULL << 21)    /* larger mappings (8 GiB) are not searched
					 * (their states would take 16 MiB): "cut" */

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* One mapping's pages' states, into ent[0 .. npages). 0 or -errno. */
static int pagemap_read(int fd, uint64_t start, uint64_t npages, uint64_t *ent)
{
	uint64_t done = 0;

	while (done < npages) {
		size_t want = (npages - done) * 8;
		ssize_t got;

		if (want > PM_BATCH * 8)
			want = PM_BATCH * 8;
		got = pread(fd, ent + done, want, (off_t)((start / PAGE + done) * 8));
		if (got <= 0 || got % 8)
			return got < 0 ? -errno : -EIO;
		done += (uint64_t)got / 8;
	}
	return 0;
}

/*
 * The first 16 bytes of each resident page of window w (WINDOW pages from
 * start), in one system call; a page not resident or not read reads as
 * zeros (no header).
 */
static void read_window(pid_t pid, uint64_t start, uint64_t npages, const uint64_t *ent,
			uint64_t w, uint64_t (*hdr)[2])
{
	static struct iovec loc[WINDOW], rem[WINDOW];
	uint64_t first = w * WINDOW, n = npages - first < WINDOW ? npages - first : WINDOW;
	size_t k = 0;

	memset(hdr, 0, WINDOW * sizeof(*hdr));
	for (uint64_t i = 0; i < n; i++) {
		if (!(ent[first + i] & PM_PRESENT))
			continue;
		loc[k] = (struct iovec){ hdr[i], sizeof(hdr[i]) };
		rem[k] = (struct iovec){ (void *)(uintptr_t)(start + (first + i) * PAGE),
					 sizeof(hdr[i]) };
		k++;
	}
	if (k)
		(void)process_vm_readv(pid, loc, k, rem, k, 0);
}

/* Who hears of each block found (mmchunks_list), or none. */
struct visitor {
	void (*fn)(void *arg, uint64_t addr, uint64_t len);
	void *arg;
};

/* The blocks in one mapping [start, end), given its pages' states (its
 * buffers are static: one scan at a time). */
static void scan_map(pid_t pid, uint64_t start, uint64_t end, const uint64_t *ent,
		     uint64_t deadline, const struct visitor *v, struct mmchunks *out)
{
	static uint64_t hdr[WINDOW][2];
	uint64_t npages = (end - start) / PAGE, i = 0, w = UINT64_MAX;

	while (i < npages) {
		uint64_t len, *h;

		if (i / WINDOW != w) {
			if (now_ns() >= deadline) {
				out->cut = 1;
				return;
			}
			w = i / WINDOW;
			read_window(pid, start, npages, ent, w, hdr);
		}
		h = hdr[i % WINDOW];
		len = h[1] & ~(PAGE - 1);
		if (h[0] != 0 || (h[1] & (PAGE - 1)) != IS_MMAPPED || !len ||
		    len / PAGE > npages - i) {
			i++;
			continue;
		}
		out->count++;
		out->mapped += len;
		if (v->fn)
			v->fn(v->arg, start + i * PAGE, len);
		for (uint64_t k = i; k < i + len / PAGE; k++) {
			if (ent[k] & PM_PRESENT)
				out->resident += PAGE;
			else if (ent[k] & PM_SWAPPED)
				out->swapped += PAGE;
		}
		i += len / PAGE;
	}
}

/* Whether maps->v[j] is the usable part of a glibc arena (64 MiB-aligned,
 * its reservation right after it): no block of its own there. */
static int arena_part(const struct proc_maps *maps, size_t j)
{
	const struct proc_map *m = &maps->v[j];

	return m->start % ARENA_ALIGN == 0 && j + 1 < maps->n &&
	       maps->v[j + 1].start == m->end && !maps->v[j + 1].path &&
	       !(maps->v[j + 1].prot & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_X));
}

int mmchunks_measure(pid_t pid, uint64_t budget_ns, struct mmchunks *out)
{
	return mmchunks_list(pid, budget_ns, NULL, NULL, out);
}

int mmchunks_list(pid_t pid, uint64_t budget_ns, void (*visit)(void *arg, uint64_t addr,
							      uint64_t len),
		  void *arg, struct mmchunks *out)
{
	const struct visitor v = { visit, arg };
	uint64_t deadline = now_ns() + budget_ns;
	struct proc_maps maps = { 0 };
	uint64_t *ent = NULL, cap = 0;
	char path[64];
	int fd = -1, ret;

	memset(out, 0, sizeof(*out));
	ret = proc_maps_read(pid, &maps);
	if (ret)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	for (size_t j = 0; j < maps.n; j++) {
		const struct proc_map *m = &maps.v[j];
		uint64_t npages = (m->end - m->start) / PAGE;

		if (now_ns() >= deadline) {
			out->cut = 1;
			break;
		}
		if (m->path || (m->prot & PROC_MAP_SHARED) || arena_part(&maps, j) ||
		    (m->prot & (PROC_MAP_R | PROC_MAP_W)) != (PROC_MAP_R | PROC_MAP_W))
			continue;
		if (npages > MAX_PAGES) {
			out->cut = 1;
			continue;
		}
		if (npages > cap) {
			cap = npages;
			free(ent);
			ent = xmalloc(cap * sizeof(*ent));
		}
		if (pagemap_read(fd, m->start, npages, ent))
			continue;	/* unmapped since: its blocks are gone too */
		scan_map(pid, m->start, m->end, ent, deadline, &v, out);
	}
out:
	if (fd >= 0)
		close(fd);
	free(ent);
	proc_maps_free(&maps);
	return ret;
}

int mmchunks_pages(pid_t pid, const struct mmchunks_range *r, size_t n, uint64_t budget_ns,
		   struct mmchunks *out)
{
	uint64_t deadline = now_ns() + budget_ns;
	uint64_t *ent = xmalloc(PM_BATCH * sizeof(*ent));
	char path[64];
	int fd, ret = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	for (size_t j = 0; j < n && !out->cut; j++) {
		uint64_t lo = (r[j].lo + PAGE - 1) & ~(PAGE - 1), hi = r[j].hi & ~(PAGE - 1);

		if (hi <= lo)
			continue;
		out->count++;
		for (uint64_t at = lo; at < hi; at += PM_BATCH * PAGE) {
			uint64_t np = (hi - at) / PAGE < PM_BATCH ? (hi - at) / PAGE : PM_BATCH;

			if (now_ns() >= deadline) {
				out->cut = 1;
				break;
			}
			if (pagemap_read(fd, at, np, ent))
				break;	/* freed and unmapped since */
			out->mapped += np * PAGE;
			for (uint64_t k = 0; k < np; k++) {
				if (ent[k] & PM_PRESENT)
					out->resident += PAGE;
				else if (ent[k] & PM_SWAPPED)
					out->swapped += PAGE;
			}
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(ent);
	return ret;
}
