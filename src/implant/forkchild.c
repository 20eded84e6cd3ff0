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
#include "base/log.h"
#include "implant/forkchild.h"
#include "implant/implant.h"
#include "model/tmem.h"
#include "ptrace/remote.h"

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
static int restore_child(const struct implant *im, pid_t child)
{
	size_t np;
	const struct patch *patches = implant_patches(im, &np);
	int clean = 1;

	for (size_t i = 0; i < np; i++) {
		const struct patch *p = &patches[i];
		uint8_t cur[RELOC_JMP_LEN];
		uint64_t at = p->reloc.patch_addr, to;

		if (tmem_read(child, at, cur, sizeof(cur))) {
			clean = 0;
			continue;
		}
		if (!memcmp(cur, p->orig, sizeof(cur)))
			continue;
		if (reloc_decode_jmp(cur, at, &to) || to != p->tramp ||
		    tmem_write(child, at, p->orig, RELOC_JMP_LEN) ||
		    tmem_read(child, at, cur, sizeof(cur)) || memcmp(cur, p->orig, sizeof(cur))) {
			pr_warn("could not restore %s in forked child %d", p->hook->names[0], child);
			clean = 0;
		}
	}
	return clean;
}

/* Unmap the views of our regions in the stopped child, in the order given
 * (a region's data view before its code view); stops at the first that
 * fails. 0 or -errno. */
static int unmap_child(const struct implant_view *v, size_t n, pid_t child)
{
	struct remote_ctx ctx;
	int rc = 0;

	remote_ctx_init(&ctx, child, child);
	for (size_t i = 0; i < n && !rc; i++)
		rc = remote_munmap(&ctx, v[i].remote, v[i].size);
	return rc;
}

void forkchild_clean(struct implant *im, pid_t pid, pid_t child)
{
	struct implant_view v[2 * IMPLANT_MAX_REGIONS];
	int sep = forkchild_separate_memory(pid, child), rc;
	size_t nv;

	if (sep == 0) {
		pr_debug("child %d shares the memory of %d: left as it is", child, pid);
		return;
	}
	/* Unknown (no kcmp): restore as for any fork, but never unmap. */
	nv = implant_views(im, v, sizeof(v) / sizeof(v[0]));
	if (!restore_child(im, child) || sep < 0 || !nv)
		return;
	if (implant_in_flight(im, child)) {
		pr_debug("forked child %d is inside a hooked call: our mappings stay", child);
		return;
	}
	rc = unmap_child(v, nv, child);
	if (rc)
		pr_warn("could not unmap heapattach's memory in forked child %d: %s", child,
			strerror(-rc));
}
