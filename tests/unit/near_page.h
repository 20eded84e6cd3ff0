/* Test helpers: libc entry points with their sizes, mappings near libc. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_TEST_NEAR_PAGE_H
#define HEAPATTACH_TEST_NEAR_PAGE_H

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/*
 * Address and symbol size of libc's own definition of name (not a PLT
 * stub of this executable).  Returns 0 or -1.
 */
static inline int libc_func(const char *name, const uint8_t **addr, size_t *size)
{
	static void *libc;
	const ElfW(Sym) *sym = NULL;
	Dl_info info;
	void *p;

	if (!libc)
		libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (!libc)
		return -1;
	p = dlsym(libc, name);
	if (!p || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return -1;
	*addr = p;
	*size = sym->st_size;
	return 0;
}

/* libc's own definition of name, bypassing interposers such as ASan's. */
static inline void *libc_sym(const char *name)
{
	const uint8_t *f;
	size_t size;

	return libc_func(name, &f, &size) ? NULL : (void *)f;
}

/*
 * mmap len bytes of fd (anonymous if fd < 0) with prot within 1 GB of
 * libc's malloc (MAP_FIXED_NOREPLACE in the first free slot below or above
 * it).  Returns the mapping or NULL.
 */
static inline uint8_t *near_map(size_t len, int prot, int fd)
{
	int flags = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED;
	const uint8_t *m;
	size_t sz;
	uintptr_t base;

	if (libc_func("malloc", &m, &sz))
		return NULL;
	base = (uintptr_t)m & ~(uintptr_t)0xfffff;
	for (long k = 1; k < 512; k++) {
		for (int dir = -1; dir <= 1; dir += 2) {
			uintptr_t hint = base + dir * k * (uintptr_t)(2 << 20);
			void *p = mmap((void *)hint, len, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);

			if (p == MAP_FAILED)
				continue;
			if ((uintptr_t)p == hint)
				return p;
			munmap(p, len);	/* old kernel ignored the flag */
		}
	}
	return NULL;
}

/* len bytes RWX near libc's malloc, or NULL. */
static inline uint8_t *near_page(size_t len)
{
	return near_map(len, PROT_READ | PROT_WRITE | PROT_EXEC, -1);
}

#endif
