/* Go's cgo calls in one object: where runtime.asmcgocall and runtime.cgocall lie, and the hop rule. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_GOCGO_H
#define HEAPATTACH_GOCGO_H

#include <stddef.h>
#include <stdint.h>

#include "shm.h"

struct elfobj;

#define GOCGO_RETURNS_MAX 8	/* calls of asmcgocall looked at (Go's has 3) */

/* Link-time ranges [lo, hi) of runtime.asmcgocall and runtime.cgocall. */
struct gocgo {
	uint64_t asm_lo, asm_hi;
	uint64_t call_lo, call_hi;
};

/* 1 if e is a Go program or library (a .note.go.buildid or .go.buildinfo
 * section), else 0. Cheap: section headers only, no symbols. */
int gocgo_is_go(const struct elfobj *e);

/*
 * Both functions in e's symbols (e opened with them): runtime.asmcgocall.abi0
 * (Go 1.17 on) or runtime.asmcgocall, and runtime.cgocall, each of a size
 * the rule can carry. 0 with *g, or -ENOENT (no such symbols: a stripped
 * binary, go build -ldflags=-s).
 */
int gocgo_find(const struct elfobj *e, struct gocgo *g);

/* The return addresses (link-time) of runtime.asmcgocall's calls, read
 * from e's file: at most max into out. Returns how many (0 if unreadable). */
size_t gocgo_returns(const struct elfobj *e, const struct gocgo *g, uint64_t *out, size_t max);

/*
 * The SHM_BASE_CGO rule (shm.h) for return address ip in the object
 * loaded at bias, if ip lies in runtime.asmcgocall: 0 with *out's rule
 * (ip left to the caller), or -ENOENT (elsewhere, or runtime.cgocall too
 * far from ip for the rule).
 */
int gocgo_rule(const struct gocgo *g, uint64_t ip, uint64_t bias, struct shm_frame *out);

#endif
