/* Emit the trap-free trampolines described in tramp_fast.h; install the agent blob (x86-64). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "agent_syms.h"		/* generated: AGENT_OFF_ALLOC, AGENT_OFF_FREE */
#include "hooks.h"
#include "shm.h"
#include "tramp_fast.h"

_Static_assert(sizeof(struct shm_counter) == SHM_COUNTER_STRIDE, "one line per counter");
_Static_assert(SHM_NCOUNTERS == 64 && SHM_COUNTER_STRIDE == 64,
	       "the ALLOC sequence hard-codes shr $15 / and $0xfc0");
_Static_assert(SHM_BLOOM_BITS == 16, "the FREE check hard-codes and $0x7ff (dwords of the bitmap)");
_Static_assert(sizeof(struct agent_frame) == 12 * 8, "SLOW pushes 11 words");

/* The blob, from the generated agent_blob.S. */
extern const uint8_t agent_blob[], agent_blob_end[];

struct emitter {
	uint8_t *p;
	size_t n;
	uint64_t at;		/* target address of p[0] */
	int err;
};

static void put(struct emitter *e, const void *bytes, size_t len)
{
	memcpy(e->p + e->n, bytes, len);
	e->n += len;
}

#define PUT(e, ...) do { static const uint8_t b_[] = { __VA_ARGS__ }; \
	put(e, b_, sizeof(b_)); } while (0)

/* A rel32 field ending the instruction now being emitted, pointing to target. */
static void put_rel32(struct emitter *e, uint64_t target)
{
	int64_t d = (int64_t)(target - (e->at + e->n + 4));
	int32_t v = (int32_t)d;

	if (d != v)
		e->err = -ERANGE;
	put(e, &v, 4);
}

static void put8(struct emitter *e, uint8_t v)
{
	e->p[e->n++] = v;
}

static void put_imm32(struct emitter *e, uint32_t v)
{
	put(e, &v, 4);
}

/* ---- sequences ---- */

#define NEST_ALWAYS	1	/* may_nest(): every call goes through CALLTHRU */
#define NEST_IF_NULL	2	/* calls with rdi == NULL do */

static void emit_free_check(struct emitter *e, const struct tramp_fast_env *env)
{
	size_t skip = e->n + TRAMP_FAST_FREE_LEN;	/* past the check */

	PUT(e, 0x48, 0x89, 0xf8);			/* mov %rdi,%rax */
	PUT(e, 0x48, 0xc1, 0xe8, SHM_BLOOM_SHIFT + 5);	/* shr $17,%rax */
	PUT(e, 0x25, 0xff, 0x07, 0x00, 0x00);		/* and $0x7ff,%eax */
	PUT(e, 0x4c, 0x8d, 0x1d);			/* lea BITS(%rip),%r11 */
	put_rel32(e, env->data + SHM_OFF_BITS);
	PUT(e, 0x41, 0x8b, 0x04, 0x83);			/* mov (%r11,%rax,4),%eax */
	PUT(e, 0x89, 0xf9);				/* mov %edi,%ecx */
	PUT(e, 0xc1, 0xe9, SHM_BLOOM_SHIFT);		/* shr $12,%ecx */
	PUT(e, 0x0f, 0xa3, 0xc8);			/* bt %ecx,%eax (ecx mod 32) */
	PUT(e, 0x73);					/* jnc skip */
	put8(e, (uint8_t)(skip - (e->n + 1)));
	PUT(e, 0x57, 0x56, 0x52);			/* push %rdi, %rsi, %rdx */
	PUT(e, 0x48, 0x8d, 0x35);			/* lea DATA(%rip),%rsi */
	put_rel32(e, env->data);
	PUT(e, 0xe8);					/* call agent_free */
	put_rel32(e, env->agent_free);
	PUT(e, 0x5a, 0x5e, 0x5f);			/* pop %rdx, %rsi, %rdi */
}

/*
 * The ALLOC sequence: subtract the requested size from the counter this
 * stack maps to; SLOW when it runs out. Hooks that may call another hook
 * then take CALLTHRU (realloc only when its pointer is NULL), others fall
 * into RELOC. No padding: its length depends on sz, env->plain_sub and
 * may_nest (tramp_fast_reloc_offset).
 */
static void emit_alloc_check(struct emitter *e, int sz, int nest, uint64_t slow,
			     uint64_t callthru, const struct tramp_fast_env *env)
{
	uint8_t modrm;

	switch (sz) {
	case AGENT_SZ_MUL:
		PUT(e, 0x49, 0x89, 0xfb);		/* mov %rdi,%r11 */
		PUT(e, 0x4c, 0x0f, 0xaf, 0xde);		/* imul %rsi,%r11 */
		modrm = 0x1c;				/* r11 */
		break;
	case AGENT_SZ_RSI:
		modrm = 0x34;				/* rsi */
		break;
	case AGENT_SZ_PM:
		modrm = 0x14;				/* rdx */
		break;
	default:
		modrm = 0x3c;				/* rdi */
		break;
	}
	PUT(e, 0x48, 0x89, 0xe0);			/* mov %rsp,%rax */
	PUT(e, 0x48, 0xc1, 0xe8, 0x0f);			/* shr $15,%rax */
	PUT(e, 0x25, 0xc0, 0x0f, 0x00, 0x00);		/* and $0xfc0,%eax */
	PUT(e, 0x48, 0x8d, 0x0d);			/* lea COUNTERS(%rip),%rcx */
	put_rel32(e, env->data + SHM_OFF_COUNTERS);
	if (!env->plain_sub)
		PUT(e, 0xf0);				/* lock */
	put8(e, sz == AGENT_SZ_MUL ? 0x4c : 0x48);	/* REX.W (+R for r11) */
	PUT(e, 0x29);					/* sub SZ,(%rcx,%rax,1) */
	put8(e, modrm);
	PUT(e, 0x01);
	PUT(e, 0x0f, 0x8e);				/* jle SLOW */
	put_rel32(e, slow);
	if (nest == NEST_IF_NULL) {
		PUT(e, 0x48, 0x85, 0xff);		/* test %rdi,%rdi */
		PUT(e, 0x0f, 0x84);			/* je CALLTHRU */
		put_rel32(e, callthru);
	} else if (nest == NEST_ALWAYS) {
		PUT(e, 0xe9);				/* jmp CALLTHRU */
		put_rel32(e, callthru);
	}
}

static void emit_slow(struct emitter *e, uint64_t reloc, uint32_t info,
		      const struct tramp_fast_env *env)
{
	PUT(e, 0x57, 0x56, 0x52);			/* push %rdi, %rsi, %rdx */
	PUT(e, 0xe8);					/* call RELOC */
	put_rel32(e, reloc);
	PUT(e, 0x50, 0x53, 0x55);			/* push %rax, %rbx, %rbp */
	PUT(e, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57); /* push %r12..%r15 */
	PUT(e, 0x68);					/* push $info */
	put_imm32(e, info);
	PUT(e, 0x48, 0x89, 0xe7);			/* mov %rsp,%rdi */
	PUT(e, 0x48, 0x8d, 0x35);			/* lea DATA(%rip),%rsi */
	put_rel32(e, env->data);
	PUT(e, 0xe8);					/* call agent_alloc */
	put_rel32(e, env->agent_alloc);
	PUT(e, 0x48, 0x8b, 0x44, 0x24, 0x38);		/* mov 0x38(%rsp),%rax */
	PUT(e, 0x48, 0x83, 0xc4, 0x58);			/* add $0x58,%rsp */
	PUT(e, 0xc3);					/* ret */
}

/*
 * CALLTHRU, for an unsampled call of a hook that may call another one:
 * the counter (rcx + rax) is set out of reach for the duration of the
 * call, so that the inner call is not counted a second time, then given
 * back the value the outer call left.
 */
static void emit_callthru(struct emitter *e, uint64_t reloc)
{
	PUT(e, 0x4c, 0x8d, 0x1c, 0x01);			/* lea (%rcx,%rax,1),%r11 */
	PUT(e, 0x41, 0x53);				/* push %r11 */
	PUT(e, 0x41, 0xff, 0x33);			/* push (%r11) */
	PUT(e, 0x49, 0xc7, 0x03, 0xff, 0xff, 0xff, 0x7f); /* movq $0x7fffffff,(%r11) */
	PUT(e, 0x41, 0x53);				/* push %r11 (alignment) */
	PUT(e, 0xe8);					/* call RELOC */
	put_rel32(e, reloc);
	PUT(e, 0x59, 0x59);				/* pop %rcx (twice) */
	PUT(e, 0x41, 0x5b);				/* pop %r11 */
	PUT(e, 0x49, 0x89, 0x0b);			/* mov %rcx,(%r11) */
	PUT(e, 0xc3);					/* ret */
}

/*
 * Whether a hook may call another hook from inside: glibc's memalign
 * family calls malloc, and realloc(NULL, n) is malloc(n). realloc of a
 * block calls malloc only in rare fallbacks (an mmapped block mremap
 * cannot move, an arena out of memory); there the inner call is counted
 * too, and if it is the one sampled the agent sees it nested and leaves
 * the sample to the next call.
 */
static int may_nest(int hook_kind)
{
	if (hook_kind == HOOK_REALLOC)
		return NEST_IF_NULL;
	return hook_kind == HOOK_ALIGNED || hook_kind == HOOK_POSIX_MEMALIGN ? NEST_ALWAYS : 0;
}

/* ---- API ---- */

/* The size class of an allocating hook kind, or -EINVAL if cls does not fit it. */
static int size_class(enum tramp_class cls, int hook_kind)
{
	switch (hook_kind) {
	case HOOK_ALLOC:
		return cls == TRAMP_ALLOC ? AGENT_SZ_RDI : -EINVAL;
	case HOOK_CALLOC:
		return cls == TRAMP_ALLOC ? AGENT_SZ_MUL : -EINVAL;
	case HOOK_POSIX_MEMALIGN:
		return cls == TRAMP_ALLOC ? AGENT_SZ_PM : -EINVAL;
	case HOOK_ALIGNED:
		return cls == TRAMP_ALLOC ? AGENT_SZ_RSI : -EINVAL;
	case HOOK_REALLOC:
		return cls == TRAMP_REALLOC ? AGENT_SZ_RSI : -EINVAL;
	case HOOK_FREE:
		return cls == TRAMP_FREE ? 0 : -EINVAL;
	}
	return -EINVAL;		/* HOOK_REALLOCARRAY: forwards to realloc */
}

/* Emit the checks before RELOC (emitter without a buffer: only count). */
static void emit_checks(struct emitter *e, enum tramp_class cls, int hook_kind, int sz,
			uint64_t slow, const struct tramp_fast_env *env)
{
	if (cls != TRAMP_ALLOC)
		emit_free_check(e, env);
	if (cls != TRAMP_FREE)
		emit_alloc_check(e, sz, may_nest(hook_kind), slow, slow + TRAMP_FAST_SLOW_LEN,
				 env);
}

int tramp_fast_reloc_offset(enum tramp_class cls, int hook_kind,
			    const struct tramp_fast_env *env)
{
	uint8_t scratch[TRAMP_FAST_FREE_LEN + TRAMP_FAST_ALLOC_MAX];
	struct emitter e = { .p = scratch, .at = env->data };
	int sz = size_class(cls, hook_kind);

	if (sz < 0)
		return -EINVAL;
	emit_checks(&e, cls, hook_kind, sz, env->data, env);
	return (int)e.n;
}

int tramp_fast_emit(enum tramp_class cls, int hook_kind, uint64_t at,
		    const struct reloc_result *r, const struct tramp_fast_env *env,
		    uint8_t *buf, size_t bufsz, struct tramp_layout *lay)
{
	int reloc = tramp_fast_reloc_offset(cls, hook_kind, env);
	int sz = size_class(cls, hook_kind);
	struct emitter e = { .p = buf, .at = at };
	uint64_t slow;
	size_t total;

	if (reloc < 0 || sz < 0 || r->to != at + (uint64_t)reloc || !r->code_len)
		return -EINVAL;
	slow = at + reloc + r->code_len;
	total = reloc + r->code_len;
	if (cls != TRAMP_FREE)
		total += TRAMP_FAST_SLOW_LEN + (may_nest(hook_kind) ? TRAMP_FAST_CALLTHRU_LEN : 0);
	if (total > bufsz)
		return -ENOSPC;

	emit_checks(&e, cls, hook_kind, sz, slow, env);
	put(&e, r->code, r->code_len);
	if (cls != TRAMP_FREE) {
		emit_slow(&e, at + reloc, AGENT_INFO(sz, hook_kind), env);
		if (may_nest(hook_kind))
			emit_callthru(&e, at + reloc);
	}
	if (e.err)
		return e.err;
	if (e.n != total)
		return -EINVAL;		/* cannot happen: length constants out of date */

	lay->size = e.n;
	lay->reloc_off = reloc;
	lay->entry_trap = -1;
	lay->exit_trap = -1;
	return 0;
}

size_t tramp_fast_agent_size(void)
{
	return (size_t)(agent_blob_end - agent_blob);
}

int tramp_fast_agent_install(uint8_t *buf, size_t bufsz, uint64_t at,
			     struct tramp_fast_env *env)
{
	size_t n = tramp_fast_agent_size();

	if (at & 63)
		return -EINVAL;
	if (n > bufsz)
		return -ENOSPC;
	memcpy(buf, agent_blob, n);
	env->agent_alloc = at + AGENT_OFF_ALLOC;
	env->agent_free = at + AGENT_OFF_FREE;
	return 0;
}
