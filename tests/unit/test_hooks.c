/* Unit tests for hook resolution: kinds, the printed format, and resolving this very process. */
/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include "harness.h"
#include "model/hooks.h"

static void test_kinds(void)
{
	expect_int_eq(hook_kind_of("malloc"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("valloc"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("pvalloc"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("calloc"), HOOK_CALLOC);
	expect_int_eq(hook_kind_of("realloc"), HOOK_REALLOC);
	expect_int_eq(hook_kind_of("reallocarray"), HOOK_REALLOCARRAY);
	expect_int_eq(hook_kind_of("posix_memalign"), HOOK_POSIX_MEMALIGN);
	expect_int_eq(hook_kind_of("aligned_alloc"), HOOK_ALIGNED);
	expect_int_eq(hook_kind_of("memalign"), HOOK_ALIGNED);
	expect_int_eq(hook_kind_of("free"), HOOK_FREE);
	expect_int_eq(hook_kind_of("cfree"), HOOK_FREE);
	expect_int_eq(hook_kind_of("_Znwm"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("_ZnamSt11align_val_tRKSt9nothrow_t"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("_ZdlPvm"), HOOK_FREE);
	expect_int_eq(hook_kind_of("_ZdaPvSt11align_val_tRKSt9nothrow_t"), HOOK_FREE);
	expect_int_eq(hook_kind_of("strdup"), -ENOENT);
	/* the other allocators: kinds by argument layout; queries are not listed */
	expect_int_eq(hook_kind_of("mallocx"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("rallocx"), HOOK_REALLOC);
	expect_int_eq(hook_kind_of("xallocx"), HOOK_XALLOCX);
	expect_int_eq(hook_kind_of("sdallocx"), HOOK_FREE);
	expect_int_eq(hook_kind_of("_rjem_dallocx"), HOOK_FREE);
	expect_int_eq(hook_kind_of("je_mallocx"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("je_posix_memalign"), HOOK_POSIX_MEMALIGN);
	expect_int_eq(hook_kind_of("nallocx"), -ENOENT);
	expect_int_eq(hook_kind_of("sallocx"), -ENOENT);
	expect_int_eq(hook_kind_of("malloc_usable_size"), -ENOENT);
	expect_int_eq(hook_kind_of("tc_malloc_skip_new_handler"), HOOK_ALLOC);
	expect_int_eq(hook_kind_of("tc_deletearray_sized_aligned"), HOOK_FREE);
	expect_int_eq(hook_kind_of("tc_memalign"), HOOK_ALIGNED);
	expect_int_eq(hook_kind_of("__libc_realloc"), HOOK_REALLOC);
	expect_int_eq(hook_kind_of("free_aligned_sized"), HOOK_FREE);
	expect_int_eq(hook_kind_of("mi_heap_malloc"), HOOK_HEAP_ALLOC);
	expect_int_eq(hook_kind_of("mi_heap_recalloc_aligned_at"), HOOK_HEAP_REALLOCN);
	expect_int_eq(hook_kind_of("mi_reallocn"), HOOK_REALLOCARRAY);
	expect_int_eq(hook_kind_of("mi__expand"), HOOK_EXPAND);
	expect_int_eq(hook_kind_of("mi_heap_strndup"), HOOK_STRDUP);
	expect_int_eq(hook_kind_of("mi_reallocarr"), HOOK_REALLOCARR);
	expect_int_eq(hook_kind_of("mi_usable_size"), -ENOENT);
	expect_str_eq(hook_kind_name(HOOK_POSIX_MEMALIGN), "posix_memalign");
	expect_str_eq(hook_kind_name(HOOK_XALLOCX), "xallocx");
	for (int k = 0; k < HOOK_NKINDS; k++)
		expect_true(strcmp(hook_kind_name((enum hook_kind)k), "?") != 0);
	expect_str_eq(hook_kind_name((enum hook_kind)99), "?");
}

/*
 * Not exported, so only this executable's own calls reach it: an
 * allocator linked in statically keeps its entry points so.
 */
__attribute__((noinline, used)) static void *tc_malloc_skip_new_handler(size_t n)
{
	return malloc(n);
}

static void test_print(void)
{
	struct hook v[2] = {
		{ .kind = HOOK_ALIGNED, .addr = 0x7f12a4c9e3a0, .names = { "aligned_alloc", "memalign" },
		  .nnames = 2, .path = "/usr/lib/x86_64-linux-gnu/libc.so.6" },
		{ .kind = HOOK_ALLOC, .addr = 0x1000, .names = { "pvalloc" }, .nnames = 1,
		  .path = "/srv/a b", .unsupported = 1 },
	};
	struct hook_set set = { v, 2 };
	char buf[512] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	expect_int_eq(hooks_print(f, &set), 0);
	fclose(f);
	expect_str_eq(buf, "0x7f12a4c9e3a0 aligned_alloc=memalign /usr/lib/x86_64-linux-gnu/libc.so.6\n"
			   "# unsupported ifunc 0x1000 pvalloc /srv/a b\n");
}

/* Our own process: what our calls bind to is what dlsym(RTLD_NEXT) finds. */
static void test_self(void)
{
	struct proc_maps m;
	struct hook_set set;
	int found = 0;

	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int private = 0;

	expect_true(len > 0);
	self[len > 0 ? len : 0] = '\0';
	expect_int_eq(proc_maps_read(getpid(), &m), 0);
	expect_int_eq(hooks_resolve(getpid(), &m, &set), 0);
	for (size_t i = 0; i < set.n; i++) {
		struct hook *h = &set.v[i];

		if (!strcmp(h->path, self)) {
			/* our own, from .symtab: no dlsym finds it */
			expect_int_eq(h->nnames, 1);
			expect_str_eq(h->names[0], "tc_malloc_skip_new_handler");
			expect_u64_eq(h->addr, (uint64_t)(uintptr_t)tc_malloc_skip_new_handler);
			expect_int_eq(h->nargs, 1);
			expect_true(h->calls == 1u << HOOK_ALLOC);	/* it calls malloc */
			private++;
			continue;
		}

		expect_true(h->map != NULL && h->size > 0 && !h->unsupported);
		expect_true(h->map && h->addr >= h->map->start && h->addr < h->map->end);
		expect_true(h->map && (h->map->prot & PROC_MAP_X));
		for (size_t j = 0; j < h->nnames; j++) {
			void *p = dlsym(RTLD_NEXT, h->names[j]);

			/* cfree is a compat-only version that dlsym does not return */
			if (p || strcmp(h->names[j], "cfree"))
				expect_u64_eq(h->addr, (uint64_t)(uintptr_t)p);
			expect_int_eq(h->kind, hook_kind_of(h->names[j]));
			found += !strcmp(h->names[j], "malloc") || !strcmp(h->names[j], "free");
		}
	}
	expect_int_eq(found, 2);
	expect_int_eq(private, 1);
	hooks_free(&set);
	expect_int_eq(set.n, 0);
	/* no such process */
	expect_true(hooks_resolve(0x7ffffff0, &m, &set) < 0);
	proc_maps_free(&m);
}

HARNESS_MAIN("hooks", T(test_kinds), T(test_print), T(test_self))
