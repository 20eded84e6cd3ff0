/* A shared memory page injected into the target near a library, writable by the tool. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sys_compat.h"
#include "base/xmalloc.h"
#include "model/proc.h"
#include "ptrace/inject.h"

#define MAX_CANDIDATES 16
#define GAP_GUARD 4096ULL		/* keep one page free on each side */
#define STACK_GUARD (64ULL << 20)	/* room for [stack] to grow down */
#define USER_TOP 0x7ffffffff000ULL	/* top of a 47-bit address space */
#define USER_BOTTOM 0x10000ULL		/* default vm.mmap_min_addr */

/* ---- choosing an address (pure, see inject_candidates) ---- */

struct cand {
	uint64_t addr, dist;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Add the point of gap [gs, ge) nearest to near that fits size bytes. */
static void add_gap(struct cand **v, size_t *n, size_t *cap, uint64_t gs,
		    uint64_t ge, uint64_t near, uint64_t size)
{
	uint64_t lo = near > INJECT_REACH ? near - INJECT_REACH : 0;
	uint64_t hi = near + INJECT_REACH;
	uint64_t a;

	gs = (gs + GAP_GUARD + 4095) & ~4095ULL;
	ge = ge > GAP_GUARD ? (ge - GAP_GUARD) & ~4095ULL : 0;
	if (gs < lo)
		gs = (lo + 4095) & ~4095ULL;
	if (ge > hi)
		ge = hi & ~4095ULL;
	if (ge <= gs || ge - gs < size)
		return;
	a = near & ~4095ULL;
	if (a < gs)
		a = gs;
	if (a > ge - size)
		a = ge - size;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 32;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[*n].addr = a;
	(*v)[*n].dist = a > near ? a + size - near : near - a;
	(*n)++;
}

/* Page addresses where size bytes fit in a free gap of maps into
 * out[0..max), nearest to near first; how many. */
static int candidates_in(const struct proc_maps *maps, uint64_t near, size_t size,
			 uint64_t *out, int max)
{
	struct cand *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t prev_end = USER_BOTTOM;
	int k;

	size = (size + 4095) & ~(size_t)4095;
	for (size_t i = 0; i < maps->n; i++) {
		uint64_t s = maps->v[i].start, e = maps->v[i].end;

		if (s >= USER_TOP)
			continue;
		if (maps->v[i].path && !strcmp(maps->v[i].path, "[stack]"))
			s = s > STACK_GUARD ? s - STACK_GUARD : 0;
		if (s > prev_end)
			add_gap(&v, &n, &cap, prev_end, s, near, size);
		if (e > prev_end)
			prev_end = e;
	}
	if (prev_end < USER_TOP)
		add_gap(&v, &n, &cap, prev_end, USER_TOP, near, size);
	if (n)
		qsort(v, n, sizeof(*v), cand_cmp);
	for (k = 0; k < max && (size_t)k < n; k++)
		out[k] = v[k].addr;
	free(v);
	return k;
}

/*
 * Fill out[0..max) with page addresses where size bytes fit in a free gap
 * of the maps text buf, every byte within INJECT_REACH of near, nearest
 * first. Returns how many were found (0..max; 0 for malformed maps).
 */
int inject_candidates(const char *buf, size_t len, uint64_t near, size_t size,
		      uint64_t *out, int max)
{
	struct proc_maps maps = { 0 };
	int k = 0;

	if (!proc_maps_parse(buf, len, &maps))
		k = candidates_in(&maps, near, size, out, max);
	proc_maps_free(&maps);
	return k;
}

int inject_candidates_for(pid_t pid, uint64_t near, size_t size, uint64_t *out, int max)
{
	struct proc_maps maps = { 0 };
	int ret = proc_maps_read(pid, &maps);

	if (!ret)
		ret = candidates_in(&maps, near, size, out, max);
	if (!ret)
		ret = -ENOMEM;
	proc_maps_free(&maps);
	return ret;
}

/* ---- mapping ---- */

/*
 * Map size bytes at the first candidate that is free. fd < 0: shared
 * anonymous memory. The address in *addr. 0 or -errno.
 */
static int map_at_candidate(struct remote_ctx *ctx, const uint64_t *cand,
			    int ncand, size_t size, int prot, int flags, int fd,
			    const struct inject_prefill *pf, uint64_t *addr)
{
	int err = -ENOMEM;

	for (int i = 0; i < ncand; i++) {
		uint64_t got;

		if (pf && pf->fn && (err = pf->fn(pf->arg, pf->fd, cand[i], size)))
			return err;
		err = remote_mmap(ctx, cand[i], size, prot,
				  flags | MAP_FIXED_NOREPLACE, fd, 0, &got);
		if (err == -EEXIST)
			continue;
		if (err)
			return err;
		if (got == cand[i]) {
			*addr = got;
			return 0;
		}
		/* A kernel without MAP_FIXED_NOREPLACE took it as a hint. */
		remote_munmap(ctx, got, size);
		err = -EEXIST;
	}
	return err;
}

/* Create a memfd in the target, trying MFD_EXEC first; sealable (see
 * map_memfd). Fd in *rfd. */
static int target_memfd(struct remote_ctx *ctx, int *rfd)
{
	int err;

	err = remote_memfd_create(ctx, "heapattach", MFD_CLOEXEC | MFD_EXEC |
				  MFD_ALLOW_SEALING, rfd);
	if (err == -EINVAL || err == -EACCES)
		err = remote_memfd_create(ctx, "heapattach", MFD_CLOEXEC | MFD_ALLOW_SEALING,
					  rfd);
	return err;
}

/*
 * Seal the memfd's size before anything maps it: a target allowed to
 * reach the file (/proc/self/map_files) could otherwise shrink it and
 * kill us with SIGBUS at our next access, its jumps still in place.
 * F_SEAL_SEAL: nor can it add a write seal later. Then check that the
 * size is still ours (it could have changed before the seal). 0 or -errno;
 * a kernel that refuses the seal leaves it to the SIGBUS guard (mapguard.h).
 */
static int seal_size(int fd, size_t size)
{
	struct stat st;

	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		pr_debug("inject: cannot seal the memfd (%s)", strerror(errno));
	if (fstat(fd, &st) < 0)
		return -errno;
	return st.st_size == (off_t)size ? 0 : -EBUSY;
}

/* The memfd way: the tool's fd of the object in *lfd, mapped at *addr. */
static int map_memfd(struct remote_ctx *ctx, const uint64_t *cand, int ncand,
		     size_t size, struct inject_prefill pf, int *lfd, uint64_t *addr)
{
	char path[64];
	int rfd = -1, err, err2;

	err = target_memfd(ctx, &rfd);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)ctx->tid, rfd);
	*lfd = open(path, O_RDWR | O_CLOEXEC);
	if (*lfd < 0) {
		err = -errno;
		pr_debug("inject: open %s: %s", path, strerror(-err));
		goto out;
	}
	if (ftruncate(*lfd, (off_t)size) < 0) {
		err = -errno;
		goto out;
	}
	err = seal_size(*lfd, size);
	if (err)
		goto out;
	pf.fd = *lfd;
	err = map_at_candidate(ctx, cand, ncand, size, PROT_READ | PROT_EXEC,
			       MAP_SHARED, rfd, &pf, addr);
out:
	err2 = remote_close(ctx, rfd);
	if (err2) {
		pr_debug("inject: cannot close fd %d in %d: %s", rfd,
			 (int)ctx->pid, strerror(-err2));
		if (!err) {
			remote_munmap(ctx, *addr, size);
			err = err2;
		}
	}
	if (err && *lfd >= 0) {
		close(*lfd);
		*lfd = -1;
	}
	return err;
}

/* The fallback: shared anonymous memory, opened via map_files. */
static int map_anon(struct remote_ctx *ctx, const uint64_t *cand, int ncand,
		    size_t size, int *lfd, uint64_t *addr)
{
	char path[96];
	int err;

	err = map_at_candidate(ctx, cand, ncand, size, PROT_READ | PROT_EXEC,
			       MAP_SHARED | MAP_ANONYMOUS, -1, NULL, addr);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 (int)ctx->tid, *addr, *addr + size);
	*lfd = open(path, O_RDWR | O_CLOEXEC);
	if (*lfd < 0) {
		err = -errno;
		pr_debug("inject: open %s: %s", path, strerror(-err));
		remote_munmap(ctx, *addr, size);
	}
	return err;
}

int inject_region_near_flags(struct remote_ctx *ctx, uint64_t near_addr,
			     size_t size, unsigned flags,
			     struct inject_region *out)
{
	return inject_region_near_prefill(ctx, near_addr, size, flags, NULL, NULL, out);
}

int inject_region_near_prefill(struct remote_ctx *ctx, uint64_t near_addr, size_t size,
			       unsigned flags, inject_prefill_fn fn, void *arg,
			       struct inject_region *out)
{
	struct inject_prefill pf = { .fn = fn, .arg = arg };
	uint64_t cand[MAX_CANDIDATES], addr = 0;
	int ncand, lfd = -1, anon = 0, err;
	void *local;

	memset(out, 0, sizeof(*out));
	size = (size + 4095) & ~(size_t)4095;
	if (size < INJECT_STUB_SIZE)
		return -EINVAL;
	ncand = inject_candidates_for(ctx->tid, near_addr, size, cand, MAX_CANDIDATES);
	if (ncand < 0)
		return ncand;

	err = -ENOSYS;
	if (!(flags & INJECT_F_ANON)) {
		err = map_memfd(ctx, cand, ncand, size, pf, &lfd, &addr);
		if (err == -ESRCH)
			return err;
		if (err)
			pr_debug("inject: memfd in %d failed (%s), trying shared anonymous memory",
				 (int)ctx->pid, strerror(-err));
	}
	if (err && (flags & INJECT_F_NO_ANON))
		return err;
	if (err) {
		anon = 1;
		err = map_anon(ctx, cand, ncand, size, &lfd, &addr);
		if (err)
			return err;
	}

	local = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0);
	if (local == MAP_FAILED) {
		err = -errno;
		pr_debug("inject: mmap of the injected object: %s", strerror(-err));
		remote_munmap(ctx, addr, size);
		goto out;
	}
	*out = (struct inject_region) {
		.local = local,
		.remote = addr,
		.size = size,
		.prot = PROT_READ | PROT_EXEC,
		.anon = anon,
	};
	pr_debug("inject: %zu bytes at 0x%" PRIx64 " in %d (%s)", size, addr,
		 (int)ctx->pid, anon ? "anonymous" : "memfd");
out:
	close(lfd);
	return err;
}

int inject_region_near(struct remote_ctx *ctx, uint64_t near_addr, size_t size,
		       struct inject_region *out)
{
	return inject_region_near_flags(ctx, near_addr, size, 0, out);
}

int inject_region_alias(struct remote_ctx *ctx, const struct inject_region *base,
			uint64_t near_addr, int prot, struct inject_region *out)
{
	uint64_t cand[MAX_CANDIDATES], resv = 0, addr = 0;
	int ncand, err;

	memset(out, 0, sizeof(*out));
	ncand = inject_candidates_for(ctx->tid, near_addr, base->size, cand,
			       MAX_CANDIDATES);
	if (ncand < 0)
		return ncand;
	/* Reserve the spot first: MREMAP_FIXED would replace anything there. */
	err = map_at_candidate(ctx, cand, ncand, base->size, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, NULL, &resv);
	if (err)
		return err;
	err = remote_mremap(ctx, base->remote, 0, base->size,
			    MREMAP_MAYMOVE | MREMAP_FIXED, resv, &addr);
	if (err)
		goto err_resv;
	if (prot != base->prot) {
		err = remote_mprotect(ctx, addr, base->size, prot);
		if (err) {
			remote_munmap(ctx, addr, base->size);
			return err;
		}
	}
	*out = *base;
	out->remote = addr;
	out->prot = prot;
	out->alias = 1;
	return 0;

err_resv:
	remote_munmap(ctx, resv, base->size);
	return err;
}

int inject_region_remove(struct remote_ctx *ctx, struct inject_region *region)
{
	int err = 0;

	if (!region->size)
		return 0;
	err = remote_munmap(ctx, region->remote, region->size);
	if (!region->alias && region->local)
		munmap(region->local, region->size);
	region->local = NULL;
	if (!err)
		memset(region, 0, sizeof(*region));
	return err;
}
