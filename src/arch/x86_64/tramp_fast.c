/* Emit the trap-free trampolines described in tramp_fast.h; install the agent blob (x86-64). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "agent_syms.h"		/* generated: AGENT_OFF_ALLOC, AGENT_OFF_FREE */
#include "model/hooks.h"
#include "shm.h"
#include "tramp_fast.h"

_Static_assert(sizeof(struct shm_counter) == SHM_COUNTER_STRIDE, "one line per counter");
_Static_assert(SHM_NCOUNTERS == 64 && SHM_COUNTER_STRIDE == 64,
	       "the ALLOC sequence hard-codes shr $15 / and $0xfc0");
_Static_assert(SHM_BLOOM_BITS == 16, "the FREE check hard-codes and $0x7ff (dwords of the bitmap)");
_Static_assert(sizeof(struct agent_frame) == 12 * 8, "SLOW pushes 11 words");
_Static_assert(HOOK_NKINDS <= 32 && HOOK_NKINDS <= 256, "hook->calls, AGENT_INFO_HOOK");

/* The blob, from the generated agent_blob.S. */
extern const uint8_t agent_blob[], agent_blob_end[];

struct emitter {
	uint8_t *p;
	size_t n;
	uint64_t at;		/* target address of p[0] */
	int err;
	struct tramp_layout *lay;	/* its frame map (tramp.h), or NULL */
	int words;		/* pushed since the trampoline's entry, here */
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

/* The frame map from here on (tramp.h): kind, with e->words pushed. */
static void mark(struct emitter *e, enum tramp_frame_kind kind)
{
	struct tramp_layout *lay = e->lay;
	struct tramp_frame f = { (uint16_t)e->n, (uint8_t)kind, (uint8_t)e->words };

	if (!lay)
		return;
	if (lay->nframes && lay->frames[lay->nframes - 1].off == e->n)
		lay->nframes--;		/* what held for no byte */
	if (lay->nframes == TRAMP_FRAMES_MAX || e->words < 0 || e->words > 255) {
		e->err = -E2BIG;
		return;
	}
	lay->frames[lay->nframes++] = f;
}

/* A segment the trampoline jumps to with nothing pushed: SLOW, CALLTHRU. */
static void segment(struct emitter *e)
{
	e->words = 0;
	mark(e, TRAMP_FR_STACK);
}

/* n words pushed (popped, if negative) by the instruction just emitted. */
static void pushed(struct emitter *e, int n)
{
	e->words += n;
	mark(e, TRAMP_FR_STACK);
}

/* ---- registers (their encoding numbers) ---- */

enum {
	RAX = 0, RCX = 1, RDX = 2, RSI = 6, RDI = 7, R10 = 10, R11 = 11,
	NONE = -1
};

#define NEST_ALWAYS	1	/* every unsampled call goes through CALLTHRU */
#define NEST_IF_NULL	2	/* calls whose old pointer is NULL do */

/* What the trampoline of one hook does, from its kind, arguments and calls. */
struct plan {
	int sz;			/* AGENT_SZ_* */
	int size_a, size_b;	/* size register, or the two factors of a product */
	int old;		/* register of the pointer freed at entry, or NONE */
	int nest;		/* 0, NEST_ALWAYS, NEST_IF_NULL (tests old) */
	int scratch;		/* rcx, or r10 when rcx holds an argument */
	int wide;		/* 4 and more arguments: rcx, r8, r9 kept */
	int slow_only;		/* no checks: every call goes to SLOW */
	int free_deref;		/* SLOW only: agent_free(*rdi) first */
};

#define CALLS_ALLOC	(~(1u << HOOK_FREE))
#define CALLS_REALLOC	(1u << HOOK_REALLOC | 1u << HOOK_REALLOCARRAY | 1u << HOOK_HEAP_REALLOC | \
			 1u << HOOK_HEAP_REALLOCN | 1u << HOOK_REALLOCARR)

/*
 * The plan of hook h in class cls; -EINVAL if cls does not fit its kind.
 * The glibc kinds keep their nesting (memalign family: always; realloc:
 * for NULL); a hook whose code calls another allocating entry point
 * nests always (a realloc only if it calls another realloc).
 */
static int make_plan(enum tramp_class cls, const struct hook *h, struct plan *p)
{
	enum tramp_class want = TRAMP_ALLOC;
	uint32_t nest_mask = CALLS_ALLOC;

	memset(p, 0, sizeof(*p));
	p->size_a = p->size_b = p->old = NONE;
	p->wide = h->nargs > 3 || h->kind == HOOK_HEAP_REALLOCN;	/* (heap, p, n, size) */
	p->scratch = p->wide ? R10 : RCX;
	switch (h->kind) {
	case HOOK_ALLOC:
		p->sz = AGENT_SZ_RDI;
		p->size_a = RDI;
		break;
	case HOOK_CALLOC:
		p->sz = AGENT_SZ_MUL;
		p->size_a = RDI;
		p->size_b = RSI;
		break;
	case HOOK_POSIX_MEMALIGN:
		p->sz = AGENT_SZ_PM;
		p->size_a = RDX;
		p->nest = NEST_ALWAYS;
		break;
	case HOOK_ALIGNED:
		p->nest = NEST_ALWAYS;
		/* fall through */
	case HOOK_HEAP_ALLOC:
		p->sz = AGENT_SZ_RSI;
		p->size_a = RSI;
		break;
	case HOOK_HEAP_CALLOC:
		p->sz = AGENT_SZ_MUL12;
		p->size_a = RSI;
		p->size_b = RDX;
		break;
	case HOOK_REALLOC:
		p->sz = AGENT_SZ_RSI;
		p->size_a = RSI;
		p->old = RDI;
		break;
	case HOOK_REALLOCARRAY:
		p->sz = AGENT_SZ_MUL12;
		p->size_a = RSI;
		p->size_b = RDX;
		p->old = RDI;
		break;
	case HOOK_HEAP_REALLOC:
		p->sz = AGENT_SZ_RDX;
		p->size_a = RDX;
		p->old = RSI;
		break;
	case HOOK_HEAP_REALLOCN:
		p->sz = AGENT_SZ_PUSHED;
		p->size_a = RDX;
		p->size_b = RCX;
		p->old = RSI;
		break;
	case HOOK_FREE:
		p->old = RDI;
		want = TRAMP_FREE;
		break;
	case HOOK_REALLOCARR:
		p->free_deref = 1;
		p->sz = AGENT_SZ_ARR;
		want = TRAMP_REALLOC;
		break;
	case HOOK_XALLOCX:
		p->sz = AGENT_SZ_XALLOCX;
		break;
	case HOOK_EXPAND:
		p->sz = AGENT_SZ_EXPAND;
		break;
	case HOOK_STRDUP:
	case HOOK_DUPENV:
		p->sz = h->kind == HOOK_STRDUP ? AGENT_SZ_STR : AGENT_SZ_ENV;
		break;
	case HOOK_WCSDUP:
		p->sz = AGENT_SZ_WSTR;
		break;
	case HOOK_REALPATH:
	case HOOK_HEAP_REALPATH:
		p->sz = h->kind == HOOK_REALPATH ? AGENT_SZ_PATH1 : AGENT_SZ_PATH2;
		break;
	default:
		return -EINVAL;
	}
	p->slow_only = p->sz >= AGENT_SZ_POST;
	if (p->old != NONE && want != TRAMP_FREE) {
		want = TRAMP_REALLOC;
		p->nest = NEST_IF_NULL;
		nest_mask = CALLS_REALLOC;
	}
	if (want != TRAMP_FREE && (h->calls & nest_mask))
		p->nest = NEST_ALWAYS;
	/* SLOW saves three arguments: a product needing rcx is pushed */
	if (p->size_b == RCX && p->sz != AGENT_SZ_PUSHED)
		return -EINVAL;
	return cls == want ? 0 : -EINVAL;
}

/* REX.W prefix for a 64-bit operation with reg (ModRM.reg) and rm registers. */
static uint8_t rex_w(int reg, int rm)
{
	return (uint8_t)(0x48 | (reg >= 8 ? 4 : 0) | (rm >= 8 ? 1 : 0));
}

/* mov %src,%dst (64-bit) */
static void put_mov(struct emitter *e, int src, int dst)
{
	put8(e, rex_w(src, dst));
	put8(e, 0x89);
	put8(e, (uint8_t)(0xc0 | (src & 7) << 3 | (dst & 7)));
}

/* push %r / pop %r */
static void put_push(struct emitter *e, int r)
{
	if (r >= 8)
		put8(e, 0x41);
	put8(e, (uint8_t)(0x50 | (r & 7)));
	pushed(e, 1);
}

static void put_pop(struct emitter *e, int r)
{
	if (r >= 8)
		put8(e, 0x41);
	put8(e, (uint8_t)(0x58 | (r & 7)));
	pushed(e, -1);
}

/* The argument registers a FREE check saves around agent_free: rdi, rsi,
 * rdx; with rcx, r8, r9 (and r10 for the stack's alignment) if wide. */
static const int saved_args[] = { RDI, RSI, RDX, RCX, 8, 9, R10 };

static void put_save_args(struct emitter *e, int wide)
{
	for (int i = 0; i < (wide ? 7 : 3); i++)
		put_push(e, saved_args[i]);
}

static void put_restore_args(struct emitter *e, int wide)
{
	for (int i = (wide ? 7 : 3) - 1; i >= 0; i--)
		put_pop(e, saved_args[i]);
}

/*
 * The FREE check on the pointer in register p->old: call agent_free when
 * its page's bit is set. On rdi, up to 3 arguments, this is the sequence
 * of tramp_fast.h, byte for byte.
 */
static void emit_free_check(struct emitter *e, const struct plan *p,
			    const struct tramp_fast_env *env)
{
	int src = p->old, c = p->scratch;
	size_t jnc;

	put_mov(e, src, RAX);				/* mov SRC,%rax */
	PUT(e, 0x48, 0xc1, 0xe8, SHM_BLOOM_SHIFT + 5);	/* shr $17,%rax */
	PUT(e, 0x25, 0xff, 0x07, 0x00, 0x00);		/* and $0x7ff,%eax */
	PUT(e, 0x4c, 0x8d, 0x1d);			/* lea BITS(%rip),%r11 */
	put_rel32(e, env->data + SHM_OFF_BITS);
	PUT(e, 0x41, 0x8b, 0x04, 0x83);			/* mov (%r11,%rax,4),%eax */
	if (c >= 8)
		put8(e, 0x41);
	put8(e, 0x89);					/* mov SRC32,C32 */
	put8(e, (uint8_t)(0xc0 | (src & 7) << 3 | (c & 7)));
	if (c >= 8)
		put8(e, 0x41);
	PUT(e, 0xc1);					/* shr $12,C32 */
	put8(e, (uint8_t)(0xe8 | (c & 7)));
	put8(e, SHM_BLOOM_SHIFT);
	if (c >= 8)
		put8(e, 0x44);
	PUT(e, 0x0f, 0xa3);				/* bt C32,%eax (C mod 32) */
	put8(e, (uint8_t)(0xc0 | (c & 7) << 3));
	PUT(e, 0x73, 0x00);				/* jnc past the call */
	jnc = e->n;
	put_save_args(e, p->wide);
	if (src != RDI)
		put_mov(e, src, RDI);
	PUT(e, 0x48, 0x8d, 0x35);			/* lea DATA(%rip),%rsi */
	put_rel32(e, env->data);
	PUT(e, 0xe8);					/* call agent_free */
	put_rel32(e, env->agent_free);
	put_restore_args(e, p->wide);
	e->p[jnc - 1] = (uint8_t)(e->n - jnc);
}

/* SLOW only, reallocarr: agent_free(*rdi) unless rdi is NULL. */
static void emit_free_deref(struct emitter *e, const struct plan *p,
			    const struct tramp_fast_env *env)
{
	size_t je;

	PUT(e, 0x48, 0x85, 0xff);			/* test %rdi,%rdi */
	PUT(e, 0x74, 0x00);				/* je past the call */
	je = e->n;
	put_save_args(e, p->wide);
	PUT(e, 0x48, 0x8b, 0x3f);			/* mov (%rdi),%rdi */
	PUT(e, 0x48, 0x8d, 0x35);			/* lea DATA(%rip),%rsi */
	put_rel32(e, env->data);
	PUT(e, 0xe8);					/* call agent_free */
	put_rel32(e, env->agent_free);
	put_restore_args(e, p->wide);
	e->p[je - 1] = (uint8_t)(e->n - je);
}

/*
 * The ALLOC sequence: subtract the requested size from the counter this
 * stack maps to; SLOW when it runs out. Hooks that may call another hook
 * then take CALLTHRU (a realloc only when its pointer is NULL), others fall
 * into RELOC. No padding: its length depends on the plan and
 * env->plain_sub (tramp_fast_reloc_offset).
 */
static void emit_alloc_check(struct emitter *e, const struct plan *p, uint64_t slow,
			     uint64_t callthru, const struct tramp_fast_env *env)
{
	int sz = p->size_a, c = p->scratch;

	if (p->size_b != NONE) {
		put_mov(e, p->size_a, R11);		/* mov A,%r11 */
		PUT(e, 0x4c, 0x0f, 0xaf);		/* imul B,%r11 */
		put8(e, (uint8_t)(0xd8 | (p->size_b & 7)));
		sz = R11;
	}
	PUT(e, 0x48, 0x89, 0xe0);			/* mov %rsp,%rax */
	PUT(e, 0x48, 0xc1, 0xe8, 0x0f);			/* shr $15,%rax */
	PUT(e, 0x25, 0xc0, 0x0f, 0x00, 0x00);		/* and $0xfc0,%eax */
	put8(e, rex_w(c, 0));				/* lea COUNTERS(%rip),C */
	put8(e, 0x8d);
	put8(e, (uint8_t)(0x05 | (c & 7) << 3));
	put_rel32(e, env->data + SHM_OFF_COUNTERS);
	if (!env->plain_sub)
		PUT(e, 0xf0);				/* lock */
	put8(e, rex_w(sz, c));				/* sub SZ,(C,%rax,1) */
	PUT(e, 0x29);
	put8(e, (uint8_t)(0x04 | (sz & 7) << 3));
	put8(e, (uint8_t)(c & 7));
	PUT(e, 0x0f, 0x8e);				/* jle SLOW */
	put_rel32(e, slow);
	if (p->nest == NEST_IF_NULL) {
		put8(e, rex_w(p->old, p->old));		/* test OLD,OLD */
		put8(e, 0x85);
		put8(e, (uint8_t)(0xc0 | (p->old & 7) << 3 | (p->old & 7)));
		PUT(e, 0x0f, 0x84);			/* je CALLTHRU */
		put_rel32(e, callthru);
	} else if (p->nest == NEST_ALWAYS) {
		PUT(e, 0xe9);				/* jmp CALLTHRU */
		put_rel32(e, callthru);
	}
}

/* SLOW's length for plan p. */
static size_t slow_len(const struct plan *p)
{
	return TRAMP_FAST_SLOW_LEN + (p->sz == AGENT_SZ_PUSHED);
}

static void emit_slow(struct emitter *e, const struct plan *p, uint64_t reloc, uint32_t info,
		      const struct tramp_fast_env *env)
{
	static const int saved[] = { RAX, 3 /* rbx */, 5 /* rbp */, 12, 13, 14, 15 };

	segment(e);
	put_push(e, RDI);
	put_push(e, RSI);
	put_push(e, p->sz == AGENT_SZ_PUSHED ? R11 : RDX); /* push %rdx (or the size) */
	PUT(e, 0xe8);					/* call RELOC */
	put_rel32(e, reloc);
	for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++)
		put_push(e, saved[i]);			/* push %rax, %rbx, %rbp, %r12..%r15 */
	PUT(e, 0x68);					/* push $info */
	put_imm32(e, info);
	pushed(e, 1);
	PUT(e, 0x48, 0x89, 0xe7);			/* mov %rsp,%rdi */
	PUT(e, 0x48, 0x8d, 0x35);			/* lea DATA(%rip),%rsi */
	put_rel32(e, env->data);
	PUT(e, 0xe8);					/* call agent_alloc */
	put_rel32(e, env->agent_alloc);
	PUT(e, 0x48, 0x8b, 0x44, 0x24, 0x38);		/* mov 0x38(%rsp),%rax */
	PUT(e, 0x48, 0x83, 0xc4, 0x58);			/* add $0x58,%rsp */
	pushed(e, -11);
	PUT(e, 0xc3);					/* ret */
}

/*
 * CALLTHRU, for an unsampled call of a hook that may call another one:
 * the counter (C + rax) is set out of reach for the duration of the
 * call, so that the inner call is not counted a second time, then given
 * back the value the outer call left.
 */
static void emit_callthru(struct emitter *e, const struct plan *p, uint64_t reloc)
{
	segment(e);
	if (p->scratch == R10)
		PUT(e, 0x4d, 0x8d, 0x1c, 0x02);		/* lea (%r10,%rax,1),%r11 */
	else
		PUT(e, 0x4c, 0x8d, 0x1c, 0x01);		/* lea (%rcx,%rax,1),%r11 */
	put_push(e, R11);
	PUT(e, 0x41, 0xff, 0x33);			/* push (%r11) */
	pushed(e, 1);
	PUT(e, 0x49, 0xc7, 0x03, 0xff, 0xff, 0xff, 0x7f); /* movq $0x7fffffff,(%r11) */
	put_push(e, R11);				/* (alignment) */
	PUT(e, 0xe8);					/* call RELOC */
	put_rel32(e, reloc);
	put_pop(e, RCX);
	put_pop(e, RCX);
	put_pop(e, R11);
	PUT(e, 0x49, 0x89, 0x0b);			/* mov %rcx,(%r11) */
	PUT(e, 0xc3);					/* ret */
}

/* ---- API ---- */

/*
 * Emit what comes before RELOC. slow: where SLOW is (unused for a SLOW-only
 * plan, whose SLOW comes here, calling RELOC right after it).
 */
static void emit_head(struct emitter *e, const struct plan *p, uint64_t slow,
		      const struct tramp_fast_env *env)
{
	if (p->slow_only) {
		if (p->free_deref)
			emit_free_deref(e, p, env);
		return;
	}
	if (p->old != NONE)
		emit_free_check(e, p, env);
	if (p->size_a != NONE)
		emit_alloc_check(e, p, slow, slow + slow_len(p), env);
}

/* Offset of RELOC for plan p (emitted without a buffer's worth of care:
 * into scratch, rel32 fields aimed at DATA so that they fit). */
static int reloc_offset(const struct plan *p, const struct tramp_fast_env *env)
{
	uint8_t scratch[TRAMP_FAST_CHECKS_MAX];
	struct emitter e = { .p = scratch, .at = env->data };

	emit_head(&e, p, env->data, env);
	return (int)(e.n + (p->slow_only ? slow_len(p) : 0));
}

int tramp_fast_reloc_offset(enum tramp_class cls, const struct hook *h,
			    const struct tramp_fast_env *env)
{
	struct plan p;

	if (make_plan(cls, h, &p))
		return -EINVAL;
	return reloc_offset(&p, env);
}

int tramp_fast_emit(enum tramp_class cls, const struct hook *h, uint64_t at,
		    const struct reloc_result *r, const struct tramp_fast_env *env,
		    uint8_t *buf, size_t bufsz, struct tramp_layout *lay)
{
	struct emitter e = { .p = buf, .at = at, .lay = lay };
	struct plan p;
	uint64_t slow;
	size_t total;
	int reloc;

	if (make_plan(cls, h, &p))
		return -EINVAL;
	reloc = reloc_offset(&p, env);
	if (r->to != at + (uint64_t)reloc || !r->code_len)
		return -EINVAL;
	total = reloc + r->code_len;
	if (cls != TRAMP_FREE)
		total += p.slow_only ? 0 : slow_len(&p) + (p.nest ? TRAMP_FAST_CALLTHRU_LEN : 0);
	if (total > bufsz)
		return -ENOSPC;

	lay->nframes = 0;
	segment(&e);
	if (p.slow_only) {
		emit_head(&e, &p, 0, env);
		emit_slow(&e, &p, at + reloc, AGENT_INFO(p.sz, h->kind), env);
		mark(&e, TRAMP_FR_RELOC);
		put(&e, r->code, r->code_len);
	} else {
		slow = at + reloc + r->code_len;
		emit_head(&e, &p, slow, env);
		mark(&e, TRAMP_FR_RELOC);
		put(&e, r->code, r->code_len);
		if (cls != TRAMP_FREE) {
			emit_slow(&e, &p, at + reloc, AGENT_INFO(p.sz, h->kind), env);
			if (p.nest)
				emit_callthru(&e, &p, at + reloc);
		}
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
	env->fault_at[0] = at + AGENT_OFF_GUEST_LD_AT;
	env->fault_fix[0] = at + AGENT_OFF_GUEST_LD_FIX;
	env->fault_at[1] = at + AGENT_OFF_GUEST_FS0_AT;
	env->fault_fix[1] = at + AGENT_OFF_GUEST_FS0_FIX;
	return 0;
}

uint64_t tramp_fast_fault_fix(const struct tramp_fast_env *env, uint64_t ip)
{
	for (int i = 0; i < 2; i++)
		if (env->fault_at[i] && ip == env->fault_at[i])
			return env->fault_fix[i];
	return 0;
}
