/* Frame-rule table: the state its files share (frametab.c, frametab_objs.c, frametab_cfi.c, frametab_ends.c). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_FRAMETAB_PRIV_H
#define HEAPATTACH_FRAMETAB_PRIV_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

#include "model/elfobj.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/frametab.h"
#include "stacks/gocgo.h"

#define FT_NEG_SIZE 4096	/* direct-mapped cache of ips without a rule */
#define FT_UNWALK_SIZE 1024	/* ips made ends for want of a way on (power of two) */
#define FT_RULES_PER_SEC 20000	/* CFI searches a second, and the most at once */

/* ---- objects and mappings ---- */

/* The CFI of one object of the target (the ELF is the target's). */
struct ft_obj {
	struct elfobj *elf;	/* owned by the target */
	Dwarf_CFI *eh;		/* .eh_frame, or NULL */
	Dwarf *dw;		/* for .debug_frame, opened on first need */
	Dwarf_CFI *dbg;		/* .debug_frame, or NULL */
	int dbg_tried;
	int go;			/* 1: a Go object with cgo (go_cgo), -1: not, 0: not yet known */
	int go_primed;		/* its hop rules are in the table (frametab_prime_go) */
	struct gocgo go_cgo;
};

struct ft_bind {
	struct ft_obj *obj;	/* NULL until resolved */
	uint64_t bias;
	int err;		/* nonzero: the mapping has no usable object */
};

struct frametab {
	struct target *t;
	struct shm_frame *table;
	struct ft_bind *binds;	/* parallel to the target's maps of version binds_ver */
	size_t nbinds;
	uint64_t binds_ver;
	struct ft_obj **objs;
	size_t nobjs, cap;
	uint64_t neg[FT_NEG_SIZE];	/* key: ip * 2 + exact; 0 = empty */
	uint64_t unwalk[FT_UNWALK_SIZE];	/* frametab_set_unwalkable's ips; 0 = empty */
	size_t nunwalk;
	uint64_t junk_ns;	/* when frametab_code_prefix last read the maps */
	uint64_t tokens, tokens_ns;	/* CFI searches left, and when counted */
	volatile uint32_t *gen;	/* bumped after every change of the table, or NULL */
	int prime;		/* frametab_prime_go was called: again after a reset */
	struct frametab_stats st;
};

_Static_assert(sizeof(struct shm_frame) == 16, "shm_frame layout");
_Static_assert(offsetof(struct shm_frame, cfa_off) == 8, "shm_frame rule word");

typedef uint64_t __attribute__((may_alias)) ft_u64_alias;

/* Shared between the files; each is described where it is defined. */

/* frametab_objs.c */
int ft_resolve(struct frametab *ft, uint64_t pc, struct ft_obj **obj, uint64_t *bias);
void ft_drop_binds(struct frametab *ft);
void ft_drop_objects(struct frametab *ft);

/* frametab_cfi.c */
int ft_find_frame(struct ft_obj *o, uint64_t addr, Dwarf_Frame **frame);
int ft_go_hop(struct frametab *ft, uint64_t ip, struct shm_frame *out);

/* frametab.c: the shared table */
void ft_publish(struct frametab *ft, struct shm_frame *s, uint64_t ip, const struct shm_frame *r);
int ft_probe(struct frametab *ft, uint64_t ip, struct shm_frame **slot);
int ft_take_token(struct frametab *ft);

#endif
