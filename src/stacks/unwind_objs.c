/* Remote unwinder: the target's code mappings and the .eh_frame_hdr table of the object behind each. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libunwind.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/unwind.h"
#include "stacks/unwind_priv.h"

/* Backed by a regular, stable file: not anonymous, [stack]/[vdso], deleted,
 * a memfd (e.g. our trampoline page, which changes behind its read-only
 * mapping) or a device. */
int unwind_stable_file(const struct proc_map *m)
{
	return m->path && m->path[0] == '/' && !m->deleted &&
	       strncmp(m->path, "/memfd:", 7) && strncmp(m->path, "/dev/", 5);
}

/*
 * The mapping containing addr, reading maps first if needed, and again if
 * addr is not in the cached copy (a new mapping), at most once per unwind;
 * and, once such a read found nothing (a garbage address: a stack's junk
 * taken for a return address, or the target's), at most once every
 * TARGET_MAPS_GAP_NS until one finds its address again, so that garbage
 * does not cost a maps parse per unwind. NULL if none.
 */
const struct proc_map *unwind_maps_lookup(struct unwinder *u, uint64_t addr)
{
	const struct proc_maps *maps = target_maps(u->t);
	const struct proc_map *m;
	struct target_stats st;

	if (!maps)
		return NULL;
	m = proc_maps_find(maps, addr);
	if (!m && u->maps_gen != u->gen &&
	    (!u->reload_vain || clock_ns(CLOCK_MONOTONIC) - u->reload_ns >= TARGET_MAPS_GAP_NS)) {
		u->maps_gen = u->gen;
		u->reload_ns = clock_ns(CLOCK_MONOTONIC);
		if (target_maps_reload(u->t) >= 0)
			m = proc_maps_find(target_maps(u->t), addr);
		u->reload_vain = !m;
	}
	target_get_stats(u->t, &st);
	u->st.maps_reads = st.maps_reads;
	return m;
}

/* Byte size of a DW_EH_PE_* encoded value (low nibble: format), or -1 for
 * variable-length or unknown formats. */
static int enc_size(uint8_t enc)
{
	if (enc == 0xff)	/* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00:		/* absptr */
	case 0x04:		/* udata8 */
	case 0x0c:		/* sdata8 */
		return 8;
	case 0x02:		/* udata2 */
	case 0x0a:		/* sdata2 */
		return 2;
	case 0x03:		/* udata4 */
	case 0x0b:		/* sdata4 */
		return 4;
	default:
		return -1;
	}
}

int unwind_parse_eh_frame_hdr(const void *buf, size_t len, uint64_t seg_size,
			      uint64_t *table_off, uint64_t *fde_count)
{
	const uint8_t *b = buf;
	int psz, csz;
	uint64_t off, n = 0;

	if (len < 4 || seg_size < 4 || b[0] != 1)
		return -EINVAL;
	psz = enc_size(b[1]);
	csz = enc_size(b[2]);
	/* a count stored as an absolute, fixed-size number; the table as
	 * DW_EH_PE_datarel | DW_EH_PE_sdata4 pairs, the one layout libunwind reads */
	if (psz < 0 || csz <= 0 || (b[2] & 0xf0) || b[3] != 0x3b)
		return -EINVAL;
	off = 4 + (uint64_t)psz + (uint64_t)csz;
	if (off > len || off > seg_size)
		return -EINVAL;
	memcpy(&n, b + 4 + psz, csz);	/* little-endian */
	if (csz == 2 && (b[2] & 0x08))
		n = (uint64_t)(int64_t)(int16_t)n;
	else if (csz == 4 && (b[2] & 0x08))
		n = (uint64_t)(int64_t)(int32_t)n;
	if ((int64_t)n < 0 || n > (seg_size - off) / 8)
		return -EINVAL;
	*table_off = off;
	*fde_count = n;
	return 0;
}

static int same_file(const struct proc_map *a, const struct proc_map *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->path && b->path && !strcmp(a->path, b->path);
}

/* 1 if link-time [vaddr, vaddr + size) of e is mapped from e's file at
 * bias + vaddr, by mappings that put it there with that bias. */
static int mapped_at(struct unwinder *u, const struct proc_map *of, struct elfobj *e,
		     uint64_t bias, uint64_t vaddr, uint64_t size)
{
	const struct proc_maps *maps = target_maps(u->t);
	uint64_t a = bias + vaddr, b;

	while (size) {
		const struct proc_map *m = proc_maps_find(maps, a);
		uint64_t k;

		if (!m || !same_file(m, of) || elfobj_load_bias(e, m, &b) || b != bias)
			return 0;
		k = m->end - a < size ? m->end - a : size;
		a += k;
		size -= k;
	}
	return 1;
}

/*
 * The bias under which the target holds the .eh_frame_hdr ([vaddr, +size))
 * of the object e mapped at m: m's own, or, for code mapped a second time
 * from the same file without the rest (node's builtins), that of another
 * mapping of the file that has it. 0 or -ENOENT.
 */
static int table_bias(struct unwinder *u, const struct proc_map *m, struct elfobj *e,
		      uint64_t bias, uint64_t vaddr, uint64_t size, uint64_t *out)
{
	const struct proc_maps *maps = target_maps(u->t);

	if (mapped_at(u, m, e, bias, vaddr, size)) {
		*out = bias;
		return 0;
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *h = &maps->v[i];
		uint64_t b;

		if (h != m && same_file(h, m) && !elfobj_load_bias(e, h, &b) && b != bias &&
		    mapped_at(u, m, e, b, vaddr, size)) {
			*out = b;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Fill o->di from the ELF behind m (an executable file mapping): the
 * .eh_frame_hdr binary-search table, located by PT_GNU_EH_FRAME, read from
 * the target's memory where the target holds it (o->delta: how far m's
 * code sits from the code that table describes). 0, or -ENOENT when the
 * object has no usable table.
 */
static int load_table(struct unwinder *u, const struct proc_map *m, struct uobj *o)
{
	const struct elfobj_segment *seg;
	uint64_t vaddr, size, bias, tbias, toff, nfde, lo = UINT64_MAX, hi = 0;
	uint8_t hdr[20];
	struct elfobj *e;
	size_t nseg;

	e = target_object(u->t, m, 0, NULL);
	if (!e || elfobj_eh_frame_hdr(e, &vaddr, &size) || target_map_bias(u->t, m, e, &bias) ||
	    table_bias(u, m, e, bias, vaddr, size, &tbias))
		return -ENOENT;
	if (elfobj_read(e, vaddr, hdr, size < sizeof(hdr) ? size : sizeof(hdr)) ||
	    unwind_parse_eh_frame_hdr(hdr, size < sizeof(hdr) ? size : sizeof(hdr), size,
				      &toff, &nfde))
		return -ENOENT;
	seg = elfobj_segments(e, &nseg);
	for (size_t i = 0; i < nseg; i++) {
		if (seg[i].vaddr < lo)
			lo = seg[i].vaddr;
		if (seg[i].vaddr + seg[i].memsz > hi)
			hi = seg[i].vaddr + seg[i].memsz;
	}
	if (lo >= hi)
		return -ENOENT;
	o->delta = bias - tbias;
	memset(&o->di, 0, sizeof(o->di));
	o->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	/* the object's extent where the table is, and never less than the
	 * mapping (moved there) */
	o->di.start_ip = lo + tbias < m->start - o->delta ? lo + tbias : m->start - o->delta;
	o->di.end_ip = hi + tbias > m->end - o->delta ? hi + tbias : m->end - o->delta;
	/* datarel FDE pointers (never emitted on x86-64) would need DT_PLTGOT */
	o->di.gp = 0;
	/* table entries are relative to the start of .eh_frame_hdr */
	o->di.u.rti.segbase = tbias + vaddr;
	o->di.u.rti.table_data = tbias + vaddr + toff;
	/* in words; each entry is two int32 */
	o->di.u.rti.table_len = nfde * 8 / sizeof(unw_word_t);
	return 0;
}

/* The object record for the executable mapping that contains ip, created on
 * first use; NULL if ip is in no executable file mapping. */
struct uobj *unwind_obj_for_ip(struct unwinder *u, uint64_t ip)
{
	const struct proc_map *m;
	struct uobj *o;

	for (size_t i = 0; i < u->nobjs; i++)
		if (ip >= u->objs[i].start && ip < u->objs[i].end)
			return &u->objs[i];
	m = unwind_maps_lookup(u, ip);
	if (!m || !(m->prot & PROC_MAP_X) || !unwind_stable_file(m))
		return NULL;
	if (u->nobjs == u->cap_objs) {
		u->cap_objs = u->cap_objs ? 2 * u->cap_objs : 16;
		u->objs = xrealloc(u->objs, u->cap_objs * sizeof(*u->objs));
	}
	o = &u->objs[u->nobjs++];
	o->start = m->start;
	o->end = m->end;
	o->have_table = !load_table(u, m, o);
	if (o->have_table)
		u->st.objects++;
	else
		pr_debug("unwind: no unwind info for %s", m->path);
	return o;
}

/* Forget the per-object tables. */
void unwind_objs_drop(struct unwinder *u)
{
	u->nobjs = 0;
}
