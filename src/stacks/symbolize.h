/* Address to function (+offset) and file:line, through the target's own ELF files. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SYMBOLIZE_H
#define HEAPATTACH_SYMBOLIZE_H

#include <stdint.h>
#include <sys/types.h>
#include "model/proc.h"

struct symbolizer;
struct perfmap;

struct sym_info {
	const char *function;   /* demangled-if-possible name, or NULL if unknown */
	const char *system_name;/* raw (mangled) symbol name, or NULL */
	uint64_t offset;        /* addr - symbol start */
	const char *file;       /* source file from DWARF, or NULL */
	int line;               /* 0 if unknown */
	const struct proc_map *map; /* mapping holding addr, or NULL */
	uint64_t addr;          /* addr as it was in the target (a stand-in's own) */
};

/*
 * A symbolizer over target t (which must outlive it): addresses are looked
 * up in t's current maps (never read here: the caller reads them, e.g.
 * target_maps_reload before a dump) and named from t's objects. NULL on
 * failure.
 */
struct target;
struct symbolizer *symbolizer_new(struct target *t);
void symbolizer_free(struct symbolizer *s);
/* Look up addr (an address *inside* an instruction: callers pass ret-1).
 * Strings stay valid until symbolizer_free. 0 when a symbol or a source line
 * was found (missing parts are NULL/0), else -ENOENT. */
int symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct sym_info *out);
/*
 * Open the files that naming addr's object takes (the object, its separate
 * debug file, that file's dwz alt file), and no more: to open them takes
 * the target (its root, its access), to read them does not, so the
 * lookups of that object work after the target is gone. Their DWARF and
 * the sorted table of functions are read by the first lookup (tens of
 * milliseconds for a big object, many times that on a loaded machine);
 * this costs the opening (with the files' symbols, as target_object and
 * debugfile_open read them, and what debuginfod adds while
 * symbolizer_allow_fetch allows it). 0; 1 when a fetch for the object was
 * put off (debugfetch_set_deadline: a lookup now would read the object
 * without it, for good); -ENOENT when no object is mapped at addr.
 */
int symbolizer_hold(struct symbolizer *s, uint64_t addr);
/*
 * Whether an object's DWARF (or dwz alt file) missing on disk may be
 * fetched from debuginfod (src/model/debugfetch.h) now: by symbolizer_hold
 * and by the first lookup of an object, each at most once per object and
 * never after its names were read. Off at first: the caller allows it
 * only where a wait of seconds stalls nothing (not while the target's
 * records need draining).
 */
void symbolizer_allow_fetch(struct symbolizer *s, int on);
/* Name code that is in no ELF object from pm (may be NULL: none), which
 * must outlive s; its names are valid until its next refresh. */
void symbolizer_set_perfmap(struct symbolizer *s, const struct perfmap *pm);
/*
 * Addresses from SYMBOLIZE_NAMED_BASE up to SYMBOLIZE_RETIRED_BASE are no
 * user addresses: pseudo-PCs that a layer above names (Python frames,
 * python/pyframes.h) through namer(arg, addr, out), 0 or -ENOENT. namer
 * NULL: none, they stay unnamed; arg must outlive s.
 */
/* The demangled form of a C++ ("_Z") name, malloc'd, or NULL (not one, or
 * no demangler: libstdc++'s __cxa_demangle, loaded on first use). */
char *symbolize_demangle(const char *name);

#define SYMBOLIZE_NAMED_BASE 0xffe0000000000000ULL
/* The part of that range a snapshot's names take (snapshot/names.h), above
 * the Python frames' (python/pyframes.h), so one profile may hold both. */
#define SYMBOLIZE_SNAPSHOT_BASE (SYMBOLIZE_NAMED_BASE + (1ULL << 40))
struct sym_info;
typedef int (*symbolize_namer_fn)(const void *arg, uint64_t addr, struct sym_info *out);
void symbolizer_set_namer(struct symbolizer *s, symbolize_namer_fn namer, const void *arg);
/*
 * Code that is gone: name return address pc as the maps old (read before
 * the change being made: call from a target_on_change listener called
 * before the symbolizer's own, TARGET_ON_NAMES) had it, and return a stand-in for pc that
 * symbolizer_lookup(stand-in - 1) names so from now on (with the address
 * pc - 1 in sym_info.addr). pc itself when old held no file there or
 * SYMBOLIZE_MAX_RETIRED stand-ins are made; one stand-in per pc and change.
 * Stand-ins are SYMBOLIZE_RETIRED_BASE and above: no user address.
 */
#define SYMBOLIZE_RETIRED_BASE 0xfff0000000000000ULL
#define SYMBOLIZE_MAX_RETIRED (1u << 20)
uint64_t symbolizer_retire(struct symbolizer *s, const struct proc_maps *old, uint64_t pc);

/* Build id (lowercase hex) of the object behind map (a mapping of the
 * target's current maps), or NULL. */
const char *symbolizer_build_id(struct symbolizer *s, const struct proc_map *map);

#endif
