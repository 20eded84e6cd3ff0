/* Remote unwinder: the page cache of the target's memory that libunwind reads through (beyond the stack window). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "model/proc.h"
#include "model/target.h"
#include "stacks/unwind_priv.h"

/* Whether memory of mapping m (NULL: none, even in maps read again as
 * unwind_maps_lookup does) is worth a read: not when no mapping holds it (the
 * target's garbage, or the junk of a stack taken for a pointer: a failed
 * read costs two syscalls). */
static int readable(const struct proc_map *m)
{
	return m && (m->prot & PROC_MAP_R);
}

/*
 * Read the 8 bytes at addr (aligned or not) through the page cache: a miss
 * reads the whole page, which stays valid for this unwind, or until the next
 * flush for a page of a read-only file mapping. 0 or -EFAULT.
 */
int unwind_pcache_read_word(struct unwinder *u, uint64_t addr, uint64_t *val)
{
	uint8_t *out = (uint8_t *)val;
	size_t done = 0;

	while (done < sizeof(*val)) {
		uint64_t a = addr + done, page = a & ~(PAGE_SZ - 1);
		struct pslot *s = &u->pcache[(page / PAGE_SZ) & (PCACHE_SLOTS - 1)];
		size_t off = a - page, k = PAGE_SZ - off;

		if (k > sizeof(*val) - done)
			k = sizeof(*val) - done;
		if (use_peek(u)) {
			/* a page would cost 512 PEEKDATAs: read just the bytes */
			if (mem_read(u, a, out + done, k) != (ssize_t)k)
				return -EFAULT;
			done += k;
			continue;
		}
		if (!page || s->page != page || (s->persistent == PAGE_KEEP_UNWIND && s->gen != u->gen) ||
		    (s->persistent == PAGE_KEEP_MAPS && s->ver != target_maps_version(u->t))) {
			const struct proc_map *m = unwind_maps_lookup(u, a);

			if (!readable(m))
				return -EFAULT;
			if (mem_read(u, page, s->data, PAGE_SZ) != (ssize_t)PAGE_SZ) {
				/* page partly unreadable: read just the bytes */
				s->page = 0;
				if (mem_read(u, a, out + done, k) != (ssize_t)k)
					return -EFAULT;
				done += k;
				continue;
			}
			s->page = page;
			u->pcache_filled = 1;
			s->gen = u->gen;
			s->ver = target_maps_version(u->t);
			s->persistent = page + PAGE_SZ > m->end ? PAGE_KEEP_UNWIND :
					unwind_stable_file(m) && !(m->prot & PROC_MAP_W) ? PAGE_KEEP_FLUSH :
					(m->prot & PROC_MAP_X) ? PAGE_KEEP_MAPS : PAGE_KEEP_UNWIND;
		}
		memcpy(out + done, s->data + off, k);
		done += k;
	}
	return 0;
}

/* Empty every slot, persistent ones included. */
void unwind_pcache_clear(struct unwinder *u)
{
	if (!u->pcache_filled)
		return;	/* untouched: its pages not faulted in for nothing */
	for (size_t i = 0; i < PCACHE_SLOTS; i++)
		u->pcache[i].page = 0;
	u->pcache_filled = 0;
}
