/* A fake target for the snapshot's fuzzers: fixed mappings, zeros but for the patches an input lays on them, reads that fail outside them. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FUZZ_FAKEMEM_H
#define HEAPATTACH_FUZZ_FAKEMEM_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model/proc.h"
#include "snapshot/heapgraph.h"

/*
 * The input is a list of patches, each
 *
 *   u8 mapping (mod the count), u32 offset (mod its size), u16 len, len bytes
 *
 * (little-endian; a patch cut short by the input's end lays what it has),
 * so that a mutation of a patch's bytes stays a change of the same
 * structure; or, the mapping's byte with its top bit set, a fill
 *
 *   u8 0x80 | mapping, u32 offset, u16 count, u64 value, u64 step
 *
 * of 4 * count words value, value + step, ... (as far as the mapping
 * goes): tables of many entries (a leaf of 2^18) from a few bytes. Each mapping is a zeroed buffer of its size; a read of a
 * span outside every mapping, or across a mapping's end, fails.
 */

#define FAKE_MAX_MAPS 8
#define FAKE_MAX_PATCHES 4096

struct fakemem {
	struct proc_map m[FAKE_MAX_MAPS];       /* sorted by start, apart */
	uint8_t *mem[FAKE_MAX_MAPS];
	struct proc_maps maps;
	/* what the last input laid, zeroed again by the next */
	struct { uint8_t map; uint32_t off, len; } dirty[FAKE_MAX_PATCHES];
	size_t ndirty;
};

/* Mapping i: [start, start + size), prot, path (NULL: anonymous). Call in
 * ascending order of start. */
static void fake_map(struct fakemem *f, uint64_t start, uint64_t size, int prot, const char *path)
{
	size_t i = f->maps.n;

	f->m[i] = (struct proc_map){ .start = start, .end = start + size, .prot = prot,
				     .path = (char *)path };
	f->mem[i] = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->mem[i] == MAP_FAILED)
		abort();
	f->maps.v = f->m;
	f->maps.n = i + 1;
}

/* The mappings zeroed, then the patches of data[0..size) laid on them. */
static void fake_load(struct fakemem *f, const uint8_t *data, size_t size)
{
	size_t at = 0;

	for (size_t i = 0; i < f->ndirty; i++)
		memset(f->mem[f->dirty[i].map] + f->dirty[i].off, 0, f->dirty[i].len);
	f->ndirty = 0;
	while (at + 7 <= size && f->ndirty < FAKE_MAX_PATCHES) {
		uint8_t map = (data[at] & 0x7f) % f->maps.n, fill = data[at] & 0x80;
		uint32_t off, len = (uint32_t)data[at + 5] | (uint32_t)data[at + 6] << 8;
		uint64_t msize = f->m[map].end - f->m[map].start, v[2];

		memcpy(&off, data + at + 1, 4);
		off = (uint32_t)(off % msize);
		at += 7;
		if (fill) {
			if (size - at < 16)
				break;
			memcpy(v, data + at, 16);
			at += 16;
			len = 4 * len < (msize - off) / 8 ? 4 * len : (uint32_t)((msize - off) / 8);
			for (uint32_t k = 0; k < len; k++, v[0] += v[1])
				memcpy(f->mem[map] + off + 8 * k, &v[0], 8);
			len *= 8;
		} else {
			if (len > size - at)
				len = (uint32_t)(size - at);
			if (len > msize - off)
				len = (uint32_t)(msize - off);
			memcpy(f->mem[map] + off, data + at, len);
			at += len;
		}
		f->dirty[f->ndirty].map = map;
		f->dirty[f->ndirty].off = off;
		f->dirty[f->ndirty++].len = len;
	}
}

/* hg_read_fn over a struct fakemem. */
static int fake_read(void *arg, const struct hg_span *s, size_t n, uint8_t *buf)
{
	const struct fakemem *f = arg;

	for (size_t i = 0; i < n; buf += s[i].len, i++) {
		size_t k = 0;

		while (k < f->maps.n && !(s[i].addr >= f->m[k].start && s[i].addr < f->m[k].end))
			k++;
		if (k == f->maps.n || s[i].len > f->m[k].end - s[i].addr)
			return -EFAULT;
		memcpy(buf, f->mem[k] + (s[i].addr - f->m[k].start), s[i].len);
	}
	return 0;
}

#endif
