/* Children forked while attached: their original text back, our mappings gone. */
/* SPDX-License-Identifier: MIT */
/*
 * A forked child is a copy of the target: our jumps in its private text and
 * both views of the memfd in its address space, for its whole life (an
 * nginx worker, a postgres backend). Before it first runs, it gets the
 * original bytes back; then, once nothing in it can reach a region (every
 * patch address reads back original, and its one thread neither runs in a
 * region nor will return into one), the views are unmapped, so it keeps
 * none of our memory and a later attach to it finds no leftover.
 *
 * A child that shares the target's memory (clone(CLONE_VM) without
 * CLONE_VFORK is reported as a fork) is left alone: its text and mappings
 * are the target's, which still runs through them. With heapattach dead a
 * child inherits the patched text and needs the mappings: only this live
 * path, which restores the child's bytes first, ever unmaps them.
 */
#include <errno.h>
#include <linux/kcmp.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "inject.h"
#include "log.h"
#include "remote.h"
#include "session.h"

int forkchild_separate_memory(pid_t a, pid_t b)
{
	long rc = syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);

	if (rc < 0)
		return -errno;
	return rc != 0;
}

/*
 * Put the original bytes back wherever the child holds our jmp. 1 if every
 * patch address now reads back original, 0 if some does not (unreadable, or
 * bytes that are neither ours nor original).
 */
static int restore_child(struct session *s, pid_t child)
{
	int clean = 1;

	for (size_t i = 0; i < s->npatches; i++) {
		const struct patch *p = &s->patches[i];
		uint8_t cur[RELOC_JMP_LEN];
		uint64_t at = p->reloc.patch_addr, to;

		if (remote_mem_read(child, at, cur, sizeof(cur))) {
			clean = 0;
			continue;
		}
		if (!memcmp(cur, p->orig, sizeof(cur)))
			continue;
		if (reloc_decode_jmp(cur, at, &to) || to != p->tramp ||
		    remote_mem_write(child, at, p->orig, RELOC_JMP_LEN) ||
		    remote_mem_read(child, at, cur, sizeof(cur)) || memcmp(cur, p->orig, sizeof(cur))) {
			pr_warn("could not restore %s in forked child %d", p->hook->names[0], child);
			clean = 0;
		}
	}
	return clean;
}

/* Unmap one view of ours in the child. */
static int unmap_view(struct remote_ctx *ctx, const struct inject_region *v)
{
	if (!v || !v->size)
		return 0;
	return remote_munmap(ctx, v->remote, v->size);
}

/* Unmap every view of every region in the stopped child. 0 or -errno. */
static int unmap_child(struct session *s, pid_t child)
{
	struct remote_ctx ctx;
	int rc = 0, err;

	remote_ctx_init(&ctx, child, child);
	for (size_t i = 0; i < s->nregions; i++) {
		err = unmap_view(&ctx, s->regions[i].alias);
		if (!err)
			err = unmap_view(&ctx, s->regions[i].inj);
		if (err && !rc)
			rc = err;
	}
	return rc;
}

void forkchild_clean(struct session *s, pid_t child)
{
	int sep = forkchild_separate_memory(s->pid, child), rc;

	if (sep == 0) {
		pr_debug("child %d shares the memory of %d: left as it is", child, s->pid);
		return;
	}
	/* Unknown (no kcmp): restore as for any fork, but never unmap. */
	if (!restore_child(s, child) || sep < 0 || !s->nregions)
		return;
	if (patch_in_flight(s, child)) {
		pr_debug("forked child %d is inside a hooked call: our mappings stay", child);
		return;
	}
	rc = unmap_child(s, child);
	if (rc)
		pr_warn("could not unmap heapattach's memory in forked child %d: %s", child,
			strerror(-rc));
}
