/* Undoing what a heapattach that died left behind: jumps into memfd:heapattach regions. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include "log.h"
#include "remote.h"
#include "session.h"

static int is_ours(const struct proc_map *m)
{
	return m->path && strstr(m->path, "memfd:heapattach");
}

/* Restore the patch records of one leftover header; returns how many. */
static int restore_patches(struct session *s, const struct shm_hdr *h)
{
	int restored = 0;

	for (uint32_t i = 0; i < h->npatches && i < SHM_MAX_PATCHES; i++) {
		const struct shm_patch *p = &h->patches[i];
		uint8_t cur[8];

		if (p->len == 0 || p->len > sizeof(p->orig) ||
		    remote_mem_read(s->proc_tid, p->addr, cur, p->len))
			continue;
		if (!memcmp(cur, p->orig, p->len))
			continue;	/* already original */
		if (cur[0] != 0xe9) {
			pr_warn("bytes at %#lx are neither ours nor original: left alone",
				(unsigned long)p->addr);
			continue;
		}
		if (remote_mem_write(s->proc_tid, p->addr, p->orig, p->len) == 0)
			restored++;
	}
	return restored;
}

int recover_leftovers(struct session *s)
{
	struct shm_hdr h;
	int restored = 0, busy = 0, rc;
	pid_t old_tool = 0;

	s->nleftovers = 0;
	for (size_t i = 0; i < s->maps.n && s->nleftovers < SESSION_MAX_REGIONS; i++) {
		const struct proc_map *m = &s->maps.v[i];

		if (!is_ours(m))
			continue;
		s->leftover_lo[s->nleftovers] = m->start;
		s->leftover_hi[s->nleftovers] = m->end;
		s->nleftovers++;
		if (m->offset != 0 || m->end - m->start < REGION_CODE + sizeof(h))
			continue;
		if (remote_mem_read(s->proc_tid, m->start + REGION_CODE, &h, sizeof(h)) ||
		    h.magic != SHM_MAGIC)
			continue;
		old_tool = h.tool_pid;
		restored += restore_patches(s, &h);
	}
	if (!s->nleftovers)
		return 0;
	pr_warn("%d was left patched by heapattach %d, which is gone: restored %d entry "
		"point(s), removing its %zu mapping(s)", s->pid, old_tool, restored, s->nleftovers);
	rc = patch_wait_quiet(s, &busy);
	if (rc) {
		pr_err("%d thread(s) still run in the old trampolines; try again later", busy);
		return rc;
	}
	for (size_t i = 0; i < s->nleftovers; i++) {
		rc = patch_unmap_remote(s, s->leftover_lo[i], s->leftover_hi[i] - s->leftover_lo[i]);
		if (rc)
			pr_warn("could not unmap the old mapping at %#lx: %s",
				(unsigned long)s->leftover_lo[i], strerror(-rc));
	}
	s->nleftovers = 0;
	s->maps_changed = 1;
	proc_maps_free(&s->maps);
	rc = proc_maps_read(s->proc_tid, &s->maps);
	if (rc)
		return rc;
	/* Hook addresses point into the old maps array: resolve again. */
	hooks_free(&s->hooks);
	return hooks_resolve(s->proc_tid, &s->maps, &s->hooks);
}
