/* Compressed ELF sections, inflated by heapattach itself within a budget of bytes and of time, before libelf or libdw would. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ZSECTION_H
#define HEAPATTACH_ZSECTION_H

#include <libelf.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A compressed section (SHF_COMPRESSED with an Elf*_Chdr, or a GNU
 * .zdebug_* one: "ZLIB" and an 8-byte big-endian size) says how large it
 * inflates; libelf believes it up to 1032 times the section's own size
 * and inflates it whole, in one uninterruptible call, when libdw begins
 * (every DWARF section) or elf_strptr reads a string table: a 2 MiB
 * section cost 2 GiB and 13 s. So before either can, heapattach inflates
 * such sections itself, or empties them (SHT_NOBITS: libdw skips them,
 * elf_strptr refuses them): a section declaring more than
 * zsection_section_max, or more than what is left of zsection_total_max
 * (bytes inflated in all, for the whole run, failures included), or not
 * zlib, is skipped (zsection_take_note says so); the inflation stops (and
 * the section is skipped) once the time gate closes (zsection_set_deadline,
 * zsection_watch_stop). A stream must end exactly at its declared size.
 */
extern uint64_t zsection_section_max;   /* 256 MiB; test seam */
extern uint64_t zsection_total_max;     /* 1 GiB; test seam */
#define ZSECTION_GRACE_NS (1000 * 1000000ULL)   /* inflating after a stop is seen, and for the
						 * final profile's names */
#define ZSECTION_MIN_NS (2000 * 1000000ULL)     /* the least a --duration leaves inflating:
						 * libc's debug file took more than 300 ms on
						 * a loaded machine (fork-unmap.test) */

/* zsection_prepare()'s which */
#define ZSECTION_STRTABS 1u     /* SHT_STRTAB sections (elf_strptr inflates them): always */
#define ZSECTION_DWARF   2u     /* the others libdw would read (.debug_*, .zdebug_*, ...) */

/* Buffers handed to libelf, freed after its elf_end. */
struct zsection_held {
	void **bufs;
	size_t n;
};

/*
 * Inflate, or empty, every compressed section of elf of the kinds which
 * says (file names it in messages; may be NULL), so that no call of libelf
 * or libdw inflates one afterwards. The inflated bytes become the
 * section's data (its Elf_Data, its header without SHF_COMPRESSED) and are
 * added to held. 0, or -errno if elf's sections cannot be read.
 */
int zsection_prepare(Elf *elf, unsigned which, const char *file, struct zsection_held *held);
/* Free what zsection_prepare handed over (after elf_end). */
void zsection_release(struct zsection_held *held);

/*
 * The time gate. Inflating stops at deadline (CLOCK_MONOTONIC ns; 0: no
 * deadline), and ZSECTION_GRACE_NS after *stop is first seen nonzero
 * (NULL: not watched; a new watch forgets what the last one saw).
 * Inflation in progress is cut within a mebibyte.
 */
void zsection_set_deadline(uint64_t deadline_ns);
void zsection_watch_stop(const volatile sig_atomic_t *stop);

/* Bytes inflated so far, in all. */
uint64_t zsection_inflated(void);

/*
 * One line (into buf) saying what is new since the last call: the first
 * section skipped for its size, for the budget, or because inflating had
 * to stop (every one is said with -v). 1 if buf was written, else 0.
 */
int zsection_take_note(char *buf, size_t len);

#endif
