/* The allocator's own statistics: which allocator the target's malloc is, and how its figures are had without running the target's code where that is unsafe. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "disasm.h"
#include "model/allocstats.h"
#include "model/elfobj.h"
#include "model/glibcfind.h"
#include "model/proc.h"
#include "model/target.h"

/*
 * Nothing of the target's runs for its figures unless it is provably
 * safe. glibc's are read from its memory by the tool (glibcfind.c,
 * glibcwalk.c): no lock, no call. jemalloc and tcmalloc publish theirs
 * only through a function (mallctl, MallocExtension), which the tool
 * calls itself (remote_call) at a safe point (safecall.h: every thread
 * stopped, none inside the allocator, a signal handler or fork), and
 * only when the function is the allocator's own: the name binds to the
 * allocator's object (no definition of the executable's or a preloaded
 * object's in front of it), that object is a shared object of its own
 * (an allocator linked into the executable cannot be told apart from the
 * program's code), and for tcmalloc the extension object its function
 * dispatches through is TCMallocImplementation (a program may register
 * its own). Otherwise there are no figures, and fn->why says why.
 */

static const char *const jemalloc_names[] = {
	"stats.allocated", "stats.active", "stats.metadata", "stats.resident",
	"stats.mapped", "stats.retained",
};

static const char *const tcmalloc_names[] = {
	"generic.current_allocated_bytes", "generic.heap_size",
	"tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
};

/* Functions tried in order: the first one the malloc's object defines. */
static const struct {
	const char *sym;
	const char *allocator;
	uint32_t kind;
} candidates[] = {
	{ "MallocExtension_GetNumericProperty", "tcmalloc", ALLOCSTATS_PROPERTY },
	{ "mallctl", "jemalloc", ALLOCSTATS_MALLCTL },
	{ "je_mallctl", "jemalloc", ALLOCSTATS_MALLCTL },
	{ "_rjem_mallctl", "jemalloc", ALLOCSTATS_MALLCTL },
};

/* fork's entry points: between its prefork and postfork handlers the
 * allocators' locks are all held. */
static const char *const fork_names[] = { "fork", "__fork", "__libc_fork", "_Fork", NULL };

/* The condition-variable waits an allocator's parked thread sits in
 * (jemalloc's background threads). */
static const char *const wait_names[] = {
	"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", NULL,
};

#define INSTANCE_CODE 64        /* bytes of MallocExtension::instance() decoded */

static void say(struct allocstats_fn *fn, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fn->why, sizeof(fn->why), fmt, ap);
	va_end(ap);
}

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

static int same_file(const struct proc_map *a, const struct proc_map *b)
{
	return a && b && a->path && b->path && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       !strcmp(a->path, b->path);
}

/* The executable mappings of m's file into fn->text. */
static void text_of(const struct proc_maps *maps, const struct proc_map *m,
		    struct allocstats_fn *fn)
{
	fn->ntext = 0;
	for (size_t i = 0; i < maps->n && fn->ntext < ALLOCSTATS_MAX_TEXT; i++)
		if ((maps->v[i].prot & PROC_MAP_X) && same_file(&maps->v[i], m))
			fn->text[fn->ntext++] = (struct allocstats_range){ maps->v[i].start,
									   maps->v[i].end };
}

/* 1 if m maps the target's executable (the file that holds AT_ENTRY). */
static int is_executable(pid_t pid, const struct proc_maps *maps, const struct proc_map *m)
{
	uint64_t entry = proc_auxv_get(pid, AT_ENTRY);

	return entry && same_file(proc_maps_find(maps, entry), m);
}

/* The functions of names (NULL-ended) in every mapped object that defines
 * them (libc), into v[0..max); their count. */
static size_t funcs_of(struct target *t, const struct proc_maps *maps, const char *const *names,
		       struct allocstats_range *v, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		struct elfobj *e;
		uint64_t bias;

		if (!(m->prot & PROC_MAP_X) || !m->path || m->path[0] != '/')
			continue;
		e = target_object(t, m, TARGET_OBJ_SYMS, NULL);
		if (!e || target_map_bias(t, m, e, &bias))
			continue;
		for (size_t k = 0; names[k]; k++) {
			const struct elfobj_sym *s = elfobj_lookup(e, names[k], 0);
			struct allocstats_range r;
			size_t j;

			if (!s || s->type != STT_FUNC || !s->value || !s->size)
				continue;
			r = (struct allocstats_range){ bias + s->value, bias + s->value + s->size };
			for (j = 0; j < n && v[j].lo != r.lo; j++)
				;
			if (j == n && n < max)
				v[n++] = r;
		}
	}
	return n;
}

static void set_names(struct allocstats_fn *fn)
{
	const char *const *v = fn->kind == ALLOCSTATS_MALLCTL ? jemalloc_names : tcmalloc_names;
	size_t n = fn->kind == ALLOCSTATS_MALLCTL ?
		   sizeof(jemalloc_names) / sizeof(jemalloc_names[0]) :
		   sizeof(tcmalloc_names) / sizeof(tcmalloc_names[0]);

	fn->n = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		fn->names[i] = v[i];
}

/*
 * tcmalloc: where MallocExtension::instance() loads its instance from (the
 * first word it loads, rip-relative), and TCMallocImplementation's vtable
 * (its address point, 16 bytes in). 0 or -ENOENT.
 */
static int tcmalloc_instance(const struct elfobj *e, uint64_t bias, struct allocstats_fn *fn)
{
	const struct elfobj_sym *in = elfobj_lookup(e, "_ZN15MallocExtension8instanceEv", 0);
	const struct elfobj_sym *vt = elfobj_lookup(e, "_ZTV22TCMallocImplementation", 0);
	struct disasm_ref refs[8];
	uint8_t code[INSTANCE_CODE];
	size_t len, n;

	if (!in || !vt || !in->size || vt->size < 24)
		return -ENOENT;
	len = in->size < sizeof(code) ? in->size : sizeof(code);
	if (elfobj_read(e, in->value, code, len))
		return -ENOENT;
	n = disasm_data_refs(code, len, in->value, refs, 8);
	for (size_t i = 0; i < n; i++)
		if (refs[i].size == 8) {
			fn->instance_at = bias + refs[i].to;
			fn->vtable = bias + vt->value + 16;
			return 0;
		}
	return -ENOENT;
}

/*
 * jemalloc or tcmalloc in e (the object malloc binds to, mapped at m): 1
 * if e is one (fn filled, fn->kind 0 with why when its figures cannot be
 * had safely), 0 if not.
 */
static int find_call(struct target *t, pid_t pid, const struct proc_maps *maps,
		     const struct proc_map *m, const struct elfobj *e, uint64_t bias,
		     struct allocstats_fn *fn)
{
	const struct proc_map *bound;
	const struct elfobj_sym *s = NULL;
	uint64_t addr;
	size_t i;

	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		s = elfobj_lookup(e, candidates[i].sym, 0);
		if (s && s->value && s->type == STT_FUNC)
			break;
	}
	if (i == sizeof(candidates) / sizeof(candidates[0]))
		return 0;
	fn->allocator = candidates[i].allocator;
	if (is_executable(pid, maps, m)) {
		say(fn, "%s is linked into the executable: its code cannot be told apart from "
		    "the program's, so no point is provably safe to call it", fn->allocator);
		return 1;
	}
	if (hooks_binding(t, pid, maps, candidates[i].sym, &addr, &bound) ||
	    !same_file(bound, m) || addr != bias + s->value) {
		say(fn, "%s's %s is not the one the program calls (%s defines it first): "
		    "not called", fn->allocator, candidates[i].sym,
		    bound && bound->path ? bound->path : "another object");
		return 1;
	}
	if (candidates[i].kind == ALLOCSTATS_PROPERTY && tcmalloc_instance(e, bias, fn)) {
		say(fn, "tcmalloc: which MallocExtension its function calls cannot be checked: "
		    "not called");
		return 1;
	}
	fn->addr = addr;
	text_of(maps, m, fn);
	fn->nfork = funcs_of(t, maps, fork_names, fn->fork, ALLOCSTATS_MAX_FORK);
	fn->nwait = funcs_of(t, maps, wait_names, fn->wait, ALLOCSTATS_MAX_WAIT);
	fn->kind = candidates[i].kind;
	set_names(fn);
	return 1;
}

/* glibc's libc among the mapped objects (for a wrapper in front of it):
 * its text mapping, or NULL. */
static const struct proc_map *glibc_object(struct target *t, const struct proc_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];

		if ((m->prot & PROC_MAP_X) && m->path && m->path[0] == '/' &&
		    glibc_is_malloc(target_object(t, m, TARGET_OBJ_SYMS, NULL)))
			return m;
	}
	return NULL;
}

int allocstats_find(struct target *t, pid_t pid, const struct hook_set *hooks,
		    struct allocstats_fn *fn)
{
	const struct hook *h = malloc_hook(hooks);
	const struct proc_maps *tm = target_maps(t);
	const struct proc_map *m, *g;
	struct elfobj *e;
	uint64_t bias;

	memset(fn, 0, sizeof(*fn));
	if (!h || !tm) {
		say(fn, "no malloc found");
		return -ENOENT;
	}
	m = target_map_at(t, h->map->start);
	e = m ? target_object(t, m, TARGET_OBJ_SYMS, NULL) : NULL;
	if (!e || target_map_bias(t, m, e, &bias)) {
		say(fn, "cannot read %s", h->path);
		return -ENOENT;
	}
	if (find_call(t, pid, target_maps(t), m, e, bias, fn))
		return 0;
	if (glibc_is_malloc(e)) {
		g = m;
	} else if (elfobj_lookup(e, "mi_malloc", 0)) {
		fn->allocator = "mimalloc";
		say(fn, "mimalloc: heapattach knows no safe way to its figures");
		return 0;
	} else if (!(g = glibc_object(t, target_maps(t)))) {
		say(fn, "malloc binds to %s, no allocator heapattach knows", h->path);
		return -ENOENT;
	}
	fn->allocator = "glibc";
	fn->kind = ALLOCSTATS_GLIBC;
	fn->glibc_map = g->start;
	return 0;
}

/*
 * glibcwalk's reader: a deadline (-ECANCELED past it), and a cache of
 * blocks of the target's memory. Free lists mostly run along the heap,
 * and a read of 64 KiB costs a system call about twice what one of a
 * chunk's 24 bytes does, so a list walked block by block takes far fewer
 * calls (and sees each block as it was at one moment). A walk whose
 * blocks serve fewer than 4 reads each stops using them.
 */
#define BLOCK_SHIFT     16
#define BLOCK           (1u << BLOCK_SHIFT)
#define NBLOCKS         16

struct timed_read {
	struct target *t;
	uint64_t deadline;
	unsigned n;                     /* reads asked for */
	unsigned calls;                 /* reads made of the target */
	unsigned fetches, n_at;         /* blocks read; n when the 64th last was */
	uint8_t (*buf)[BLOCK];          /* NBLOCKS blocks */
	uint64_t tag[NBLOCKS];          /* block address + 1; 0: empty */
	uint32_t valid[NBLOCKS];        /* bytes read of it */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int timed_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct timed_read *r = arg;
	uint64_t base = addr & ~(uint64_t)(BLOCK - 1), off = addr - base;
	unsigned k = (unsigned)(base >> BLOCK_SHIFT) % NBLOCKS;
	ssize_t got;

	if (++r->n % 256 == 0 && mono_ns() >= r->deadline)
		return -ECANCELED;
	if (!r->buf || off + len > BLOCK) {
		r->calls++;
		return target_read(r->t, addr, buf, len);
	}
	if (r->tag[k] != base + 1 || off + len > r->valid[k]) {
		/* lists that jump about make blocks a loss: from then on, read
		 * what is asked (judged every 64 blocks) */
		if (++r->fetches % 64 == 0 && r->n - r->n_at < 64 * 4) {
			free(r->buf);
			r->buf = NULL;
			r->calls++;
			return target_read(r->t, addr, buf, len);
		}
		if (r->fetches % 64 == 0)
			r->n_at = r->n;
		r->calls++;
		got = target_read_some(r->t, base, r->buf[k], BLOCK);
		r->tag[k] = got > 0 ? base + 1 : 0;
		r->valid[k] = got > 0 ? (uint32_t)got : 0;
		if (off + len > r->valid[k]) {
			/* the block starts unreadable: the bytes asked may not */
			r->calls++;
			return target_read(r->t, addr, buf, len);
		}
	}
	memcpy(buf, r->buf[k] + off, len);
	return 0;
}

void allocstats_from_glibc(const struct glibc_figures *f, struct allocstats *out)
{
	memset(out, 0xff, offsetof(struct allocstats, how));
	out->allocator = "glibc";
	out->system = f->arena;
	out->free = f->fordblks;
	out->mmapped = f->hblkhd;
	out->in_use = f->arena > f->fordblks ? f->arena - f->fordblks : 0;
	if (f->hblkhd != UINT64_MAX)
		out->in_use += f->hblkhd;
	out->metadata = 0;	/* mallinfo2 counts none: chunk headers are in use */
	out->how[0] = 0;
}

int allocstats_glibc_find(struct target *t, struct allocstats_fn *fn)
{
	const struct proc_map *m = target_map_at(t, fn->glibc_map);
	int ret;

	if (!m) {
		say(fn, "glibc's libc is no longer mapped");
		return -ENOENT;
	}
	if (fn->glibc_ready)
		return 0;
	ret = glibc_find(t, m, &fn->glibc, &fn->glibc_how, fn->why, sizeof(fn->why));
	if (ret == -ENODATA)
		say(fn, "glibc's malloc has not set up its arenas yet");
	fn->glibc_ready = !ret;
	return ret;
}

int allocstats_glibc(struct target *t, struct allocstats_fn *fn, uint64_t budget_ns,
		     struct allocstats *out)
{
	struct timed_read tr = { .t = t };
	struct glibc_figures f;
	int ret;

	ret = allocstats_glibc_find(t, fn);
	if (ret)
		return ret;
	tr.deadline = mono_ns() + budget_ns;
	tr.buf = xmalloc(NBLOCKS * sizeof(*tr.buf));
	ret = glibc_walk(&fn->glibc, timed_read, &tr, GLIBC_WALK_CHUNKS, &f);
	free(tr.buf);	/* NULL once the blocks were given up */
	pr_debug("glibc's arenas: %u walked, %llu free chunks, %u reads (%u of the target's) "
		 "in %.1f ms%s%s", f.arenas, (unsigned long long)f.chunks, tr.n, tr.calls,
		 (mono_ns() - (tr.deadline - budget_ns)) / 1e6, f.cut ? ", cut" : "",
		 f.torn ? ", torn" : "");
	if (ret) {
		say(fn, "glibc's main arena (from its %s) no longer reads as one: %s",
		    fn->glibc_how, strerror(-ret));
		return ret;
	}
	allocstats_from_glibc(&f, out);
	snprintf(out->how, sizeof(out->how), "read from glibc's memory (%u arenas, found by its "
		 "%.20s) while it ran: an estimate%s%s%s", f.arenas, fn->glibc_how,
		 f.hblkhd == UINT64_MAX ? "; mmapped blocks unknown" : "",
		 f.cut ? "; walk cut short: free is a lower bound" : "",
		 f.torn ? "; lists changed while read" : "");
	return 0;
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
	memset(out, 0xff, offsetof(struct allocstats, how));
	out->allocator = fn->allocator;
	snprintf(out->how, sizeof(out->how), "%s's %s, called by heapattach while every thread "
		 "was stopped outside it", fn->allocator ? fn->allocator : "the allocator",
		 fn->kind == ALLOCSTATS_MALLCTL ? "mallctl" : "MallocExtension");
	if (n < fn->n || (fn->kind != ALLOCSTATS_MALLCTL && fn->kind != ALLOCSTATS_PROPERTY))
		return -EINVAL;
	for (size_t i = 0; i < fn->n; i++)
		if (val[i] != UINT64_MAX && val[i] >= (1ULL << 57))
			return -EINVAL;
	if (fn->kind == ALLOCSTATS_MALLCTL) {
		/* allocated, active, metadata, resident, mapped, retained */
		out->in_use = val[0];
		out->metadata = val[2];
		out->resident = val[3];
		out->free = diff(diff(val[3], val[0]), val[2]);
	} else {
		/* current_allocated, heap_size, pageheap_free, pageheap_unmapped */
		out->in_use = val[0];
		out->resident = diff(val[1], val[3]);
		out->free = diff(out->resident, val[0]);
	}
	return out->in_use == UINT64_MAX ? -EINVAL : 0;
}
