/* Python frames: packed frame words from the agent to pseudo-PCs named by function, file and line. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYFRAMES_H
#define HEAPATTACH_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "stacks/symbolize.h"

struct target;
struct py_target;
struct sym_info;

/*
 * Each distinct (function, file, line) of a Python frame gets one
 * pseudo-PC, PYFRAMES_PC_BASE + index + 1, below the symbolizer's
 * stand-ins (SYMBOLIZE_RETIRED_BASE): no user address. At most
 * PYFRAMES_MAX_PCS; past that, new places share one pseudo-PC named
 * "[python]".
 */
#define PYFRAMES_PC_BASE SYMBOLIZE_NAMED_BASE
#define PYFRAMES_MAX_PCS (1u << 20)

/* The packed frame word (agent -> tool) is shm.h's SHM_PY_WORD_*. */

/* Bounds on what is read of the target. */
#define PYFRAMES_NAME_MAX 256			/* bytes of UTF-8 in a name */
#define PYFRAMES_TABLE_MAX (1u << 20)		/* bytes of a line table */
#define PYFRAMES_RECHECK_NS 100000000ULL	/* 100 ms */

struct pyframes;

/* Code objects of Python target pt (copied), read through t, which must
 * outlive the result. NULL on failure (errno set). */
struct pyframes *pyframes_new(struct target *t, const struct py_target *pt);
void pyframes_free(struct pyframes *pf);

/*
 * Decode n packed words (leaf first) into pcs[i] (pseudo-PCs) and ends[i]
 * (bit 63). A word whose code object cannot be read gets a pseudo-PC named
 * "[python]" with no file. Returns n.
 */
size_t pyframes_decode(struct pyframes *pf, const uint64_t *words, size_t n,
		       uint64_t *pcs, uint8_t *ends);

/*
 * Name a pseudo-PC's address (pc - 1, as symbolizer_lookup gets it):
 * function = co_qualname (3.11+) or co_name, file = co_filename (NULL for
 * "[python]"), line from the line table; map NULL. 0 or -ENOENT (not one of
 * pf's). Strings live as long as pf.
 */
int pyframes_lookup(const struct pyframes *pf, uint64_t addr, struct sym_info *out);
/* The same as the symbolizer's namer (symbolizer_set_namer), pf as arg. */
int pyframes_namer(const void *pf, uint64_t addr, struct sym_info *out);

/*
 * The line of the instruction at index idx (in 2-byte code units) from a
 * line table t[0..n) of a code object whose first line is firstlineno:
 * co_lnotab (<= 3.9), 3.10's co_linetable, 3.11+'s location table.
 * -1 when the table gives the instruction no line (3.10+) or ends before
 * it (3.10+). Pure functions of their arguments: any bytes are safe.
 */
int pylines_lnotab(const uint8_t *t, size_t n, int firstlineno, uint32_t idx);
int pylines_310(const uint8_t *t, size_t n, int firstlineno, uint32_t idx);
int pylines_311(const uint8_t *t, size_t n, int firstlineno, uint32_t idx);

#endif
