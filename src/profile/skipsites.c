/* Allocator wrappers: the frames skipped to name an allocation's site (a built-in list and --skip). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include "base/xmalloc.h"
#include "profile/skipsites.h"

/*
 * Functions that return what the allocator returned (or abort), matched
 * against the whole name. Only pure wrappers: a function that allocates
 * for its own purpose (a hash table's resize, a string's append) is a site.
 * A C++ name may carry its template arguments and parameters.
 */
static const char builtin[] =
	"^("
	/* the xmalloc family (gnulib, git, binutils, ...) and glib */
	"x(m|c|re|z)alloc|xmemdup|xstrdup|xstrndup|g_(malloc|malloc0|realloc|try_malloc|"
	"try_malloc0|try_realloc|malloc_n|malloc0_n|realloc_n|strdup|strndup|memdup2?)|"
	/* redis (zmalloc.c) */
	"z(try)?(malloc|calloc|realloc)(_usable)?(_internal)?|zmalloc_no_tcache|"
	"zcalloc_num|zstrdup|extend_to_usable|"
	/* nginx */
	"ngx_(alloc|calloc|memalign|palloc|pnalloc|pcalloc|palloc_small|palloc_large|"
	"palloc_block|pmemalign|array_push|array_push_n|list_push)|"
	/* PostgreSQL's memory contexts */
	"palloc0?|palloc_extended|repalloc|MemoryContextAlloc(Zero|ZeroAligned|Extended|"
	"Huge)?|AllocSet(Alloc|Realloc|AllocLarge|AllocFromNewBlock)|Generation(Alloc|"
	"Realloc)|Slab(Alloc|Realloc)|BumpAlloc|pstrdup|pnstrdup|"
	/* CPython's allocators and the resizes that only call them */
	"_?Py(Mem|Object)_(Raw)?(Malloc|Calloc|Realloc)|_PyMem_(Raw)?(Malloc|Calloc|"
	"Realloc)|_PyMem_DebugRaw(Malloc|Calloc|Realloc|Alloc)|_PyMem_Debug(Malloc|Calloc|"
	"Realloc)|_PyObject_(Malloc|Calloc|Realloc|New|NewVar|GC_New|GC_NewVar|GC_Malloc|"
	"GC_Resize|MallocWithType)|PyObject_(GC_Malloc|GC_New|GC_NewVar|New|NewVar|Init)|"
	"_PyObject_GC_Link|gc_alloc|_PyType_AllocNoTrack|PyType_GenericAlloc|"
	"pymalloc_(alloc|realloc)|_PyBytes_Resize|PyByteArray_Resize|_PyUnicode_New|"
	"PyUnicode_New|resize_compact|_PyLong_New|new_keys_object|PyMem_(Raw)?Malloc|"
	/* the C++ runtime */
	"operator new(\\[\\])?(\\(.*\\))?|std::(__new_allocator|allocator|"
	"allocator_traits)<.*>::allocate(\\(.*\\))?|__gnu_cxx::new_allocator<.*>::"
	"allocate(\\(.*\\))?"
	")$";

struct skipsites {
	regex_t builtin;
	regex_t *user;
	size_t nuser;
};

struct skipsites *skipsites_new(void)
{
	struct skipsites *ss = xcalloc(1, sizeof(*ss));

	if (regcomp(&ss->builtin, builtin, REG_EXTENDED | REG_NOSUB)) {
		free(ss);
		return NULL;
	}
	return ss;
}

int skipsites_add(struct skipsites *ss, const char *regex)
{
	regex_t re;

	if (regcomp(&re, regex, REG_EXTENDED | REG_NOSUB))
		return -EINVAL;
	ss->user = xrealloc(ss->user, (ss->nuser + 1) * sizeof(*ss->user));
	ss->user[ss->nuser++] = re;
	return 0;
}

int skipsites_match(const struct skipsites *ss, const char *function)
{
	if (!ss || !function || !*function)
		return 0;
	if (!regexec(&ss->builtin, function, 0, NULL, 0))
		return 1;
	for (size_t i = 0; i < ss->nuser; i++)
		if (!regexec(&ss->user[i], function, 0, NULL, 0))
			return 1;
	return 0;
}

size_t skipsites_pass(size_t n, unsigned (*kind)(void *arg, size_t i, int reached), void *arg)
{
	size_t k = 0;

	for (size_t i = 0; i < n && (i < SKIPSITES_REACH || i == k); i++) {
		unsigned w = kind(arg, i, i == k);

		if ((i == k && (w & SKIPSITES_WRAPPER)) || (w & SKIPSITES_NAMED))
			k = i + 1;
	}
	return k;
}

struct named {
	const struct skipsites *ss;
	const char *const *names;
};

static unsigned named_kind(void *arg, size_t i, int reached)
{
	const struct named *nm = arg;

	(void)reached;
	return skipsites_match(nm->ss, nm->names[i]) ? SKIPSITES_WRAPPER | SKIPSITES_NAMED : 0;
}

size_t skipsites_count(const struct skipsites *ss, const char *const *names, size_t n)
{
	struct named nm = { ss, names };
	size_t k = skipsites_pass(n, named_kind, &nm);

	return k < n ? k : 0;
}

void skipsites_free(struct skipsites *ss)
{
	if (!ss)
		return;
	regfree(&ss->builtin);
	for (size_t i = 0; i < ss->nuser; i++)
		regfree(&ss->user[i]);
	free(ss->user);
	free(ss);
}
