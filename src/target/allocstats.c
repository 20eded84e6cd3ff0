/* The allocator's own statistics, asked of the agent inside the target (glibc, jemalloc, tcmalloc). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "allocstats.h"
#include "elfobj.h"
#include "proc.h"

/*
 * The agent calls the function at a sampled call that returned to code
 * outside the allocator (agent.c answer_stats), so the calling thread
 * holds no allocator lock; the functions below take the allocator's own
 * locks the way any malloc call does and make no system call of their own
 * (jemalloc's epoch refresh, gperftools' properties and mallinfo2 read
 * counters). A target that allocates nothing answers nothing.
 */

static const char *const jemalloc_names[] = {
	"stats.allocated", "stats.active", "stats.metadata", "stats.resident",
	"stats.mapped", "stats.retained",
};

static const char *const tcmalloc_names[] = {
	"generic.current_allocated_bytes", "generic.heap_size",
	"tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
};

/* Symbols tried in order: the first one the object defines is used. */
static const struct {
	const char *sym;
	const char *allocator;
	uint32_t kind;
} candidates[] = {
	{ "MallocExtension_GetNumericProperty", "tcmalloc", SHM_STATS_PROPERTY },
	{ "mallctl", "jemalloc", SHM_STATS_MALLCTL },
	{ "je_mallctl", "jemalloc", SHM_STATS_MALLCTL },
	{ "_rjem_mallctl", "jemalloc", SHM_STATS_MALLCTL },
	{ "mallinfo2", "glibc", SHM_STATS_MALLINFO2 },
};

static const struct hook *malloc_hook(const struct hook_set *hooks)
{
	for (size_t i = 0; i < hooks->n; i++) {
		const struct hook *h = &hooks->v[i];

		for (size_t j = 0; j < h->nnames; j++)
			if (!strcmp(h->names[j], "malloc") && h->map)
				return h;
	}
	return NULL;
}

static void set_names(struct allocstats_fn *fn)
{
	const char *const *v = fn->kind == SHM_STATS_MALLCTL ? jemalloc_names : tcmalloc_names;
	size_t n = fn->kind == SHM_STATS_MALLCTL ?
		   sizeof(jemalloc_names) / sizeof(jemalloc_names[0]) :
		   fn->kind == SHM_STATS_PROPERTY ?
		   sizeof(tcmalloc_names) / sizeof(tcmalloc_names[0]) : 0;

	fn->n = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		fn->names[i] = v[i];
}

int allocstats_find(pid_t pid, const struct hook_set *hooks, struct allocstats_fn *fn)
{
	const struct hook *h = malloc_hook(hooks);
	struct elfobj *e;
	uint64_t bias;
	int ret = -ENOENT;

	memset(fn, 0, sizeof(*fn));
	if (!h)
		return -ENOENT;
	e = elfobj_open_fd_named(proc_open_mapped(pid, h->map), 0, h->map->path);
	if (!e)
		return -ENOENT;
	if (elfobj_load_bias(e, h->map, &bias))
		goto out;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		const struct elfobj_sym *s = elfobj_lookup(e, candidates[i].sym, 0);

		if (!s || !s->value)
			continue;
		fn->allocator = candidates[i].allocator;
		fn->kind = candidates[i].kind;
		fn->addr = bias + s->value;
		set_names(fn);
		ret = 0;
		break;
	}
out:
	elfobj_free(e);
	return ret;
}

void allocstats_arm(struct shm_hdr *h, struct shm_hdr *want, const struct allocstats_fn *fn)
{
	struct shm_hdr *v[2] = { want, h };

	for (int k = 0; k < 2; k++) {
		if (!v[k])
			continue;
		v[k]->stats_kind = fn->kind;
		v[k]->stats_fn = fn->addr;
		v[k]->stats_n = fn->n;
		memset(v[k]->stats_names, 0, sizeof(v[k]->stats_names));
		for (uint32_t i = 0; i < fn->n && i < SHM_STATS_MAX; i++)
			strncpy(v[k]->stats_names[i], fn->names[i], SHM_STATS_NAME - 1);
	}
}

/* a - b, or 0 when b is larger; UINT64_MAX when either is unknown. */
static uint64_t diff(uint64_t a, uint64_t b)
{
	if (a == UINT64_MAX || b == UINT64_MAX)
		return UINT64_MAX;
	return a > b ? a - b : 0;
}

int allocstats_decode(const struct allocstats_fn *fn, const uint64_t *val, size_t n,
		      struct allocstats *out)
{
	size_t need = fn->kind == SHM_STATS_MALLINFO2 ? 10 : fn->n;

	memset(out, 0xff, sizeof(*out));
	out->allocator = fn->allocator;
	if (n < need)
		return -EINVAL;
	for (size_t i = 0; i < need; i++)
		if (val[i] != UINT64_MAX && val[i] >= SHM_ADDR_LIMIT)
			return -EINVAL;
	switch (fn->kind) {
	case SHM_STATS_MALLINFO2:
		/* arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks,
		 * uordblks, fordblks, keepcost */
		out->system = val[0];
		out->mmapped = val[4];
		out->in_use = val[7] + val[4];
		out->free = val[8];
		out->metadata = diff(val[0], val[7] + val[8]);
		break;
	case SHM_STATS_MALLCTL:
		/* allocated, active, metadata, resident, mapped, retained */
		out->in_use = val[0];
		out->metadata = val[2];
		out->resident = val[3];
		out->free = diff(diff(val[3], val[0]), val[2]);
		break;
	case SHM_STATS_PROPERTY:
		/* current_allocated, heap_size, pageheap_free, pageheap_unmapped */
		out->in_use = val[0];
		out->resident = diff(val[1], val[3]);
		out->free = diff(out->resident, val[0]);
		break;
	default:
		return -EINVAL;
	}
	if (out->in_use == UINT64_MAX)
		return -EINVAL;
	return 0;
}
