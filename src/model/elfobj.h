/* One ELF file read with libelf: symbols, PT_LOAD segments, build id, load bias, debug links. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_ELFOBJ_H
#define HEAPATTACH_ELFOBJ_H

#include <stddef.h>
#include <stdint.h>
#include "model/proc.h"

#define ELFOBJ_SYM_DYNAMIC 1    /* came from .dynsym (visible to the dynamic linker) */
#define ELFOBJ_SYM_HIDDEN_VER 2 /* non-default version: "name@VER" or versym hidden bit */

struct elfobj_sym {
	const char *name;       /* version suffix ("@VER", "@@VER") stripped */
	uint64_t value;         /* st_value: link-time address */
	uint64_t size;
	unsigned char type;     /* STT_* */
	unsigned char bind;     /* STB_* */
	uint16_t shndx;         /* SHN_UNDEF for undefined references */
	unsigned flags;         /* ELFOBJ_SYM_* */
};

struct elfobj_segment {
	uint64_t vaddr, memsz, offset, filesz, align;
	unsigned flags;         /* PF_R/PF_W/PF_X */
};

struct elfobj;

/* Bounds on what a file may claim: build ids of 2 to 64 bytes (20 in
 * practice), debug link names and paths no longer than the kernel takes. */
#define ELFOBJ_BUILD_ID_MIN 2
#define ELFOBJ_BUILD_ID_MAX 64
#define ELFOBJ_NAME_MAX 255
#define ELFOBJ_PATH_MAX 4095

/* Read the ELF behind fd; takes ownership of fd (closed here: the object
 * keeps a mapping of the file, not the descriptor). NULL if fd is not a readable ELF file (or not a regular
 * file: a FIFO's or a device's data need not end). */
struct elfobj *elfobj_open_fd(int fd);
/* elfobj_open_fd() flags */
#define ELFOBJ_OPEN_NO_SYMS 1   /* skip .symtab/.dynsym: elfobj_syms() is empty (large files open fast) */
struct elfobj *elfobj_open_fd_flags(int fd, unsigned flags);
/* The same, with the file's name for messages (may be NULL). */
struct elfobj *elfobj_open_fd_named(int fd, unsigned flags, const char *name);
/* Read an ELF image from memory (copied). NULL if it is not a valid ELF. */
struct elfobj *elfobj_open_mem(const void *buf, size_t len);
void elfobj_free(struct elfobj *e);
/* From now on an ELF file already read is not read again (elfobj.c's
 * cache, for a run over several processes, whose sessions are forked
 * after the run read their common objects). */
void elfobj_cache_start(void);
/* 1 if e is in that cache: never freed, so its address names it for the
 * rest of the process's life (and of its forks'). */
int elfobj_shared(const struct elfobj *e);

/* e_type: ET_EXEC, ET_DYN, ... */
int elfobj_type(const struct elfobj *e);
/* 1 if the file has a PT_INTERP (needs the dynamic linker), else 0. */
int elfobj_has_interp(const struct elfobj *e);
/* 1 if the file has a PT_DYNAMIC, else 0. */
int elfobj_has_dynamic(const struct elfobj *e);

/* All symbols of .symtab then .dynsym, in file order; owned by e. */
const struct elfobj_sym *elfobj_syms(const struct elfobj *e, size_t *n);
/*
 * The defined symbol called name (without version). dynamic_only: consider
 * .dynsym only, as the dynamic linker does. Among several matches a default
 * version beats a hidden one, and .dynsym beats .symtab. NULL if none.
 */
/* Make e's index of symbols by name, which the first elfobj_lookup makes
 * otherwise (a run over several processes makes it before forking). */
void elfobj_index_names(const struct elfobj *e);
const struct elfobj_sym *elfobj_lookup(const struct elfobj *e, const char *name,
				       int dynamic_only);

const struct elfobj_segment *elfobj_segments(const struct elfobj *e, size_t *n);
/* Lowercase hex GNU build id, or NULL when the file has none. */
const char *elfobj_build_id(const struct elfobj *e);
/* .gnu_debuglink file name (and its CRC in *crc), or NULL; never a path,
 * "." or "..". */
const char *elfobj_debuglink(const struct elfobj *e, uint32_t *crc);
/* .gnu_debugaltlink's dwz file name (any path; *build_id, may be NULL, gets
 * its build id in hex), or NULL. */
const char *elfobj_altlink(const struct elfobj *e, const char **build_id);
/* 1 if the file itself carries .debug_info (or GNU-compressed .zdebug_info). */
int elfobj_has_debug_info(const struct elfobj *e);
/* The libelf handle; owned by e. Not for dwarf_begin_elf: see below. */
void *elfobj_elf(const struct elfobj *e);
/*
 * libdw over e (dwarf_begin_elf), its compressed DWARF sections inflated
 * by zsection first, within its bounds of bytes and time, or emptied: so
 * libdw inflates none itself. (Compressed string tables are handled when
 * e is opened.) NULL if e has no DWARF; dwarf_end it before freeing e.
 */
struct Dwarf;
struct Dwarf *elfobj_dwarf_begin(struct elfobj *e);

/*
 * Load bias of the object mapped at m: m->start minus the link-time address
 * of m's first byte, taken from the PT_LOAD segment holding m->offset.
 * 0 or -ENOENT when no PT_LOAD covers that offset.
 */
int elfobj_load_bias(const struct elfobj *e, const struct proc_map *m, uint64_t *bias);

/* Link-time address of the DT_DEBUG entry's value word in the dynamic
 * section (add the bias for its runtime address). 0 or -ENOENT. */
int elfobj_dt_debug_vaddr(const struct elfobj *e, uint64_t *vaddr);

/* Link-time address and size of .eh_frame_hdr (PT_GNU_EH_FRAME). 0 or -ENOENT. */
int elfobj_eh_frame_hdr(const struct elfobj *e, uint64_t *vaddr, uint64_t *size);

/* Copy len file bytes that are mapped at link-time address vaddr (inside one
 * PT_LOAD's file part). 0 or -ENOENT. */
int elfobj_read(const struct elfobj *e, uint64_t vaddr, void *buf, size_t len);
/* Name of the dynamic symbol whose JUMP_SLOT or GLOB_DAT relocation fills the
 * GOT slot at link-time address got_vaddr, or NULL. Owned by e. */
const char *elfobj_got_symbol(const struct elfobj *e, uint64_t got_vaddr);

#endif
