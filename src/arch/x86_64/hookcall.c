/* Arguments and results of hooked calls in the x86-64 System V registers, for trap mode. */
/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "hookcall.h"
#include "model/tmem.h"

#define PAGE 4096u

/* The word at addr in tid, 0 if unreadable. */
static uint64_t word_at(pid_t tid, uint64_t addr)
{
	uint64_t v = 0;

	if (!addr || tmem_read(tid, addr, &v, sizeof(v)))
		return 0;
	return v;
}

/*
 * Bytes of the string at s in tid with its terminator, in units of unit
 * bytes (1 or 2), read a page at a time up to HOOK_CALL_STR_MAX (also what
 * an unreadable or endless string counts as).
 */
static uint64_t str_bytes(pid_t tid, uint64_t s, unsigned unit)
{
	uint8_t buf[PAGE];
	uint64_t n = 0;

	while (n < HOOK_CALL_STR_MAX) {
		uint64_t at = s + n;
		size_t len = PAGE - (at & (PAGE - 1));

		if (tmem_read(tid, at, buf, len))
			break;
		/* s is the result of an allocator: aligned for its unit */
		for (size_t i = 0; i + unit <= len; i += unit)
			if (buf[i] == 0 && (unit == 1 || buf[i + 1] == 0))
				return n + i + unit;
		n += len;
	}
	return HOOK_CALL_STR_MAX;
}

uint64_t hook_call_freed(pid_t tid, enum hook_kind kind, const struct user_regs_struct *r)
{
	switch (kind) {
	case HOOK_FREE:
	case HOOK_REALLOC:
	case HOOK_REALLOCARRAY:
		return r->rdi;
	case HOOK_HEAP_REALLOC:
	case HOOK_HEAP_REALLOCN:
		return r->rsi;
	case HOOK_REALLOCARR:
		return word_at(tid, r->rdi);
	default:
		return 0;
	}
}

void hook_call_made(pid_t tid, enum hook_kind kind, const struct user_regs_struct *r,
		    struct hook_call *c)
{
	unsigned str = 0;

	memset(c, 0, sizeof(*c));
	c->ptr = r->rax;
	switch (kind) {
	case HOOK_ALLOC:
		c->size = r->rdi;
		break;
	case HOOK_CALLOC:
		c->size = r->rdi * r->rsi;
		break;
	case HOOK_REALLOC:
	case HOOK_ALIGNED:
	case HOOK_HEAP_ALLOC:
		c->size = r->rsi;
		break;
	case HOOK_REALLOCARRAY:
	case HOOK_HEAP_CALLOC:
		c->size = r->rsi * r->rdx;
		break;
	case HOOK_HEAP_REALLOC:
		c->size = r->rdx;
		break;
	case HOOK_HEAP_REALLOCN:
		c->size = r->rdx * r->rcx;
		break;
	case HOOK_POSIX_MEMALIGN:
	case HOOK_REALLOCARR:
		c->size = kind == HOOK_POSIX_MEMALIGN ? r->rdx : r->rsi * r->rdx;
		c->ptr = r->rax ? 0 : word_at(tid, r->rdi);
		break;
	case HOOK_XALLOCX:
		c->size = r->rax;
		c->ptr = r->rax >= r->rsi ? r->rdi : 0;
		c->inplace = 1;
		break;
	case HOOK_EXPAND:
		c->size = r->rsi;
		c->ptr = r->rax ? r->rdi : 0;
		c->inplace = 1;
		break;
	case HOOK_STRDUP:
	case HOOK_WCSDUP:
		str = kind == HOOK_WCSDUP ? 2 : 1;
		break;
	case HOOK_REALPATH:
	case HOOK_HEAP_REALPATH:
		str = 1;
		if (kind == HOOK_REALPATH ? r->rsi : r->rdx)
			c->ptr = 0;	/* the caller's buffer */
		break;
	case HOOK_DUPENV:
		str = 1;
		c->ptr = r->rax ? 0 : word_at(tid, r->rdi);
		break;
	case HOOK_FREE:
	case HOOK_NKINDS:
		c->ptr = 0;
		break;
	}
	if (str && c->ptr)
		c->size = str_bytes(tid, c->ptr, str);
}
