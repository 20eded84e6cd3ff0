/* Unit tests for the fast trampolines and the agent, executed in this process around libc. */
/* SPDX-License-Identifier: MIT */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "near_page.h"
#include "agent.h"
#include "model/hooks.h"
#include "fast/ring.h"
#include "shm.h"
#include "fast/stackids.h"
#include "tramp_fast.h"

/*
 * One memfd as the tool will build it: DATA_SIZE bytes of shm layout, then
 * CODE_SIZE bytes of code (agent blob, trampolines). It is mapped twice
 * near libc: rw (DATA view, also used to write code) and r-x (CODE view).
 */
#define RING_SIZE	(64u << 10)	/* each of SHM_NRINGS */
#define XSLOTS		4096u		/* the xlive table's slots (in-target accounting) */
#define DATA_SIZE	(SHM_OFF_XLIVE(RING_SIZE) + XSLOTS * sizeof(struct shm_xlive))
#define CODE_SIZE	(64u << 10)
#define TOTAL_SIZE	(DATA_SIZE + CODE_SIZE)
#define HCALL_RBX	0x1122334455667788ull
#define CHAIN_R12	0x0badc0ffee0ddf00ull

static uint8_t *data_view, *code_view;
static struct shm_hdr *hdr;
static struct tramp_fast_env env;
static size_t code_used;
static void *(*lmalloc)(size_t);
static void (*lfree)(void *);

/* A hook of this kind (and nargs, calls 0) for the emitter. */
#define HK(k) (&(const struct hook){ .kind = (k) })

/* Trampolines under test (CODE view addresses). */
struct hook_t {
	const char *name;
	int kind;
	enum tramp_class cls;
	void *fn;
};
static struct hook_t hooks[] = {
	{ "malloc", HOOK_ALLOC, TRAMP_ALLOC, NULL },
	{ "free", HOOK_FREE, TRAMP_FREE, NULL },
	{ "calloc", HOOK_CALLOC, TRAMP_ALLOC, NULL },
	{ "realloc", HOOK_REALLOC, TRAMP_REALLOC, NULL },
	{ "posix_memalign", HOOK_POSIX_MEMALIGN, TRAMP_ALLOC, NULL },
	{ "memalign", HOOK_ALIGNED, TRAMP_ALLOC, NULL },
};
enum { H_MALLOC, H_FREE, H_CALLOC, H_REALLOC, H_PM, H_MEMALIGN, H_N };
/* The same hooks with a plain (unplain) sub on the counter, for the benchmark. */
static void *plain_malloc, *plain_free;
static uint8_t *nested_stub;

/* ---- calling code with a known return address ---- */

/*
 * hcall(fn, a0, a1, a2, a3): fn(a0, a1, a2, a3) with rbx = HCALL_RBX and
 * rsp == 8 (mod 16) at fn's entry; fn returns to hcall_ret.
 */
uint64_t hcall(const void *fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);
extern const char hcall_ret[];
/*
 * chain_f0(fn, a0, a1, a2) -> chain_f1 -> chain_f2 -> fn(a0, a1, a2).
 * f0 and f2 keep frame pointers (CFA = rbp + 16, rbp saved at CFA - 16),
 * f1 does not (CFA = rsp + 16). chain_sp is rsp just before f2 calls fn
 * (the event's sp), chain_bp f2's rbp.
 */
extern const char chain_f0[], chain_r0[], chain_r1[], chain_r2[];
/* chain_rec(depth, fn, a0): recurses depth times (frame pointers), then fn(a0). */
extern const char chain_rec[], chain_rec_ret[], chain_rec_leaf[];
/*
 * memo_call(fn, a0, bp, b): chain_f0(fn, a0) with rbp = bp (which f0
 * saves: the last word a walk through chain_r0 reads), called from
 * memo_ret_b if b, else from memo_ret_a, at the same rsp.
 */
uint64_t memo_call(const void *fn, uint64_t a0, uint64_t bp, uint64_t b);
extern const char memo_ret_a[], memo_ret_b[];
uint64_t chain_sp, chain_bp;
__asm__(".text\n"
	".globl hcall\n"
	".type hcall, @function\n"
	"hcall:\n"
	"	push %rbx\n"
	"	movabs $0x1122334455667788, %rbx\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %rcx\n"
	"	call *%rax\n"
	".globl hcall_ret\n"
	"hcall_ret:\n"
	"	pop %rbx\n"
	"	ret\n"
	".size hcall, .-hcall\n"
	".globl chain_f0, chain_r0, chain_r1, chain_r2\n"
	"chain_f0:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	movabs $0x0badc0ffee0ddf00, %r12\n"
	"	call chain_f1\n"
	"chain_r0:\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	"	ret\n"
	"chain_f1:\n"
	"	sub $8, %rsp\n"
	"	call chain_f2\n"
	"chain_r1:\n"
	"	add $8, %rsp\n"
	"	ret\n"
	"chain_f2:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	mov %rbp, chain_bp(%rip)\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %rsp, chain_sp(%rip)\n"
	"	call *%rax\n"
	"chain_r2:\n"
	"	pop %rbp\n"
	"	ret\n"
	".globl chain_rec, chain_rec_ret, chain_rec_leaf\n"
	"chain_rec:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	test %rdi, %rdi\n"
	"	jz 1f\n"
	"	dec %rdi\n"
	"	call chain_rec\n"
	"chain_rec_ret:\n"
	"	pop %rbp\n"
	"	ret\n"
	"1:	mov %rdx, %rdi\n"
	"	call *%rsi\n"
	"chain_rec_leaf:\n"
	"	pop %rbp\n"
	"	ret\n"
	".globl memo_call, memo_ret_a, memo_ret_b\n"
	"memo_call:\n"
	"	push %rbp\n"
	"	push %rbx\n"
	"	sub $8, %rsp\n"
	"	mov %rdx, %rbp\n"
	"	test %rcx, %rcx\n"
	"	jnz 1f\n"
	"	call chain_f0\n"
	"memo_ret_a:\n"
	"	jmp 2f\n"
	"1:	call chain_f0\n"
	"memo_ret_b:\n"
	"2:	add $8, %rsp\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	"	ret\n");

#define CALL1(h, a)		hcall(hooks[h].fn, (uint64_t)(a), 0, 0, 0)
#define CALL2(h, a, b)		hcall(hooks[h].fn, (uint64_t)(a), (uint64_t)(b), 0, 0)
#define CALL3(h, a, b, c)	hcall(hooks[h].fn, (uint64_t)(a), (uint64_t)(b), (uint64_t)(c), 0)

/* ---- the tool's side: settings, frame table, ring ---- */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t *counter(int i)
{
	return (int64_t *)(data_view + SHM_OFF_COUNTERS + i * SHM_COUNTER_STRIDE);
}

enum { STAT_WALKS, STAT_MISSES, STAT_NESTED, STAT_MEMO };

/* Agent statistics summed over the counter lines. */
static uint64_t stat_sum(int which)
{
	uint64_t n = 0;

	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		const struct shm_counter *c = (const struct shm_counter *)counter(i);

		n += which == STAT_NESTED ? c->nested : which == STAT_MISSES ? c->walk_misses :
		     which == STAT_MEMO ? c->memo_hits : c->walks;
	}
	return n;
}

/* Bit s of the trampolines' bitmap. */
static int bit(uint32_t s)
{
	return data_view[SHM_OFF_BITS + (s >> 3)] >> (s & 7) & 1;
}

static struct shm_frame *frames_tab(void)
{
	return (struct shm_frame *)(data_view + SHM_OFF_FRAMES);
}

static struct ring_reader rd;

/* Bytes reserved so far in all rings. */
static uint64_t heads_total(void)
{
	uint64_t n = 0;

	for (int i = 0; i < SHM_NRINGS; i++)
		n += *(uint64_t *)(data_view + SHM_OFF_HEADS + i * 64);
	return n;
}

static void frame_put(const void *ip, int base, int cfa_off, int rbp_saved, int rbp_off)
{
	struct shm_frame *t = frames_tab();
	uint32_t slot = shm_frame_slot((uintptr_t)ip);

	for (int i = 0; i < SHM_FRAME_PROBES; i++) {
		struct shm_frame *f = &t[(slot + i) & (SHM_NFRAMES - 1)];

		if (f->ip && f->ip != (uintptr_t)ip)
			continue;
		f->cfa_off = cfa_off;
		f->base = base;
		f->rbp_saved = rbp_saved;
		f->rbp_off = rbp_off;
		atomic_thread_fence(memory_order_release);
		f->ip = (uintptr_t)ip;
		hdr->walk_gen++;	/* as the tool does (frametab.c) */
		return;
	}
}

/* No frame rule at all (the walks the agent kept are stale). */
static void frames_clear(void)
{
	memset(frames_tab(), 0, SHM_NFRAMES * sizeof(struct shm_frame));
	hdr->walk_gen++;
}

static struct shm_stack *stacks_tab(void)
{
	return (struct shm_stack *)(data_view + SHM_OFF_STACKS);
}

/* No frame rule but hcall_ret's END, no stack id. */
static void frames_reset(void)
{
	memset(stacks_tab(), 0, SHM_NSTACKS * sizeof(struct shm_stack));
	frames_clear();
	frame_put(hcall_ret, SHM_BASE_END, 0, 0, 0);
}

static void ring_reset(uint64_t size)
{
	memset(data_view + SHM_OFF_RING, 0, SHM_NRINGS * RING_SIZE);
	memset(data_view + SHM_OFF_TAILS, 0, SHM_NRINGS * 8);
	hdr->ring_size = size;
	hdr->drops = 0;
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		((struct shm_counter *)counter(i))->walks = 0;
		((struct shm_counter *)counter(i))->walk_misses = 0;
		((struct shm_counter *)counter(i))->nested = 0;
		((struct shm_counter *)counter(i))->memo_hits = 0;
	}
	memset(data_view + SHM_OFF_HEADS, 0, SHM_NRINGS * 64);
	ring_reader_init(&rd, hdr, size, hdr->max_depth, SHM_PY_MAX_FRAMES);
}

/* Exact mode: every call sampled (counters <= 0, no re-arm), every free reported. */
static void mode_exact(void)
{
	hdr->flags = SHM_F_EXACT;
	for (int i = 0; i < SHM_NCOUNTERS; i++)
		*counter(i) = 0;
	memset(data_view + SHM_OFF_BITS, 0xff, SHM_BLOOM_SIZE / 8);
	ring_reset(RING_SIZE);
}

/* Sampling mode with exponential gaps of mean rate (0: every call sampled). */
static void mode_sampled(uint64_t rate, int64_t first)
{
	hdr->flags = 0;
	hdr->rate = rate;
	hdr->gap_mul = (uint64_t)((double)rate * M_LN2 * 65536.0);
	for (int i = 0; i < SHM_NCOUNTERS; i++)
		*counter(i) = first;
	memset(data_view + SHM_OFF_LIVE, 0, SHM_BLOOM_SIZE * SHM_LIVE_WAYS * 8);
	memset(data_view + SHM_OFF_BITS, 0, SHM_BLOOM_SIZE / 8);
	ring_reset(RING_SIZE);
}

/* A copy of one event, as a consumer sees it. */
struct ev {
	int kind, nframes;
	uint32_t flags, stack_len, stack_id;
	uint64_t size, ptr, ip, sp, bp, bx, r12;
	uint64_t frames[8];
	uint64_t stack[4];
	int npy;                /* Python words, after the frames */
	uint64_t py[8];
};

/* Copy a record as the consumer sees it; 1 if it is malformed. */
static int to_ev(const uint8_t *rec, uint32_t len, struct ev *out)
{
	uint16_t kind;

	memcpy(&kind, rec + 4, 2);
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	if (kind == SHM_EV_FREE) {
		const struct shm_ev_free *f = (const void *)rec;

		out->ptr = f->ptr;
		return len != sizeof(*f) || !f->tsc;
	}
	if (kind == SHM_EV_ALLOC) {
		const struct shm_ev_alloc *a = (const void *)rec;
		int npy = SHM_EVF_PY(a->flags);
		uint64_t want = sizeof(*a) + (a->nframes + npy) * 8;

		out->npy = npy;
		for (int i = 0; i < npy && i < 8; i++)
			out->py[i] = a->frames[a->nframes + i];
		out->nframes = a->nframes;
		out->flags = a->flags;
		out->size = a->size;
		out->ptr = a->ptr;
		if (a->flags & SHM_EVF_STACKID) {
			out->stack_id = a->stack_id;
			return a->nframes || (a->flags & SHM_EVF_MISS) || len != want || !a->tsc;
		}
		out->stack_len = a->stack_len;
		for (int i = 0; i < a->nframes && i < 8; i++)
			out->frames[i] = a->frames[i];
		if (a->flags & SHM_EVF_MISS) {
			const struct frame_regs *r = (const void *)&a->frames[a->nframes + npy];

			out->ip = r->ip;
			out->sp = r->sp;
			out->bp = r->bp;
			out->bx = r->bx;
			out->r12 = r->r12;
			want += sizeof(*r);
			if (a->stack_len)
				memcpy(out->stack, r + 1, a->stack_len < sizeof(out->stack) ?
				       a->stack_len : sizeof(out->stack));
		} else if (a->stack_len) {
			return 1;
		}
		return a->nframes > SHM_MAX_DEPTH || a->stack_len > SHM_STACK_COPY ||
		       (len != want && len != want + SHM_STACK_COPY) || (len & 7) || !a->tsc;
	}
	return 1;
}

struct collect {
	struct ev *ev;
	int max, n, bad;
};

static int collect_one(void *arg, const void *rec, uint32_t len)
{
	struct collect *c = arg;
	struct ev e;

	c->bad += to_ev(rec, len, &e);
	if (c->n < c->max)
		c->ev[c->n] = e;
	c->n++;
	return 0;
}

/* Read all committed events (through ring.c) into ev[0..max); returns the count. */
static int drain(struct ev *ev, int max)
{
	struct collect c = { ev, max, 0, 0 };

	while (ring_drain(&rd, 1u << 20, collect_one, &c))
		;
	expect_int_eq(c.bad, 0);
	return c.n;
}

/* ---- setup ---- */

/* Emit one trampoline at the next free spot of the CODE area; its address or NULL. */
static void *build(const char *name, int kind, enum tramp_class cls, const struct tramp_fast_env *e)
{
	uint8_t buf[TRAMP_FAST_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;
	const uint8_t *f;
	size_t size, off = (code_used + 63) & ~(size_t)63;
	uint64_t at = (uintptr_t)code_view + DATA_SIZE + off;
	int rc;

	if (libc_func(name, &f, &size))
		return NULL;
	if (reloc_prologue(f, size, (uintptr_t)f, at + tramp_fast_reloc_offset(cls, HK(kind), e), &r)) {
		fprintf(stderr, "%s: %s\n", name, r.why);
		return NULL;
	}
	rc = tramp_fast_emit(cls, HK(kind), at, &r, e, buf, sizeof(buf), &lay);
	if (rc) {
		fprintf(stderr, "%s: tramp_fast_emit %d\n", name, rc);
		return NULL;
	}
	memcpy(data_view + DATA_SIZE + off, buf, lay.size);
	code_used = off + lay.size;
	return (void *)(uintptr_t)at;
}

static int ready;

/*
 * shm_exp_gap against the exact draw floor(-ln(U) * rate) + 1 from the
 * same bits: each within 2^-14 of rate (plus rounding), and their means
 * and tail agree with the exponential law.
 */
static void test_exp_gap(void)
{
	const uint64_t rates[] = { 2, 4096, 512 << 10, 1ull << 30, 1ull << 40 };
	const int n = 200000;

	for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		uint64_t rate = rates[k], mul = (uint64_t)((double)rate * M_LN2 * 65536.0 + 0.5);
		uint64_t x = 0x2545f4914f6cdd1dULL + k;
		double sum = 0, tail = 0, worst = 0;

		for (int i = 0; i < n; i++) {
			double u, exact, g;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			u = (double)((x >> 11) | 1) * 0x1p-53;
			exact = floor(-log(u) * (double)rate) + 1;
			g = (double)shm_exp_gap(x, mul);
			if (fabs(g - exact) > worst)
				worst = fabs(g - exact);
			sum += g;
			tail += g > (double)rate;
		}
		expect_true(worst <= (double)rate / 16384 + 2);
		expect_true(fabs(sum / n * -expm1(-1.0 / (double)rate) - 1) < 0.01);
		expect_true(fabs(tail / n - exp(-1.0)) < 0.005);
	}
}

static void test_setup(void)
{
	static const uint8_t stub[] = {
		0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xd6, 0x48, 0x89, 0xca,
		0x48, 0x83, 0xec, 0x08, 0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
	struct tramp_fast_env plain;
	int fd;

	lmalloc = libc_sym("malloc");
	lfree = libc_sym("free");
	fd = memfd_create("heapattach-test", MFD_CLOEXEC);
	expect_true(fd >= 0);
	if (fd < 0 || ftruncate(fd, TOTAL_SIZE))
		return;
	data_view = near_map(TOTAL_SIZE, PROT_READ | PROT_WRITE, fd);
	code_view = near_map(TOTAL_SIZE, PROT_READ | PROT_EXEC, fd);
	close(fd);
	if (!data_view || !code_view) {
		printf("note: no room near libc, execution tests skipped\n");
		return;
	}
	hdr = (struct shm_hdr *)data_view;
	hdr->magic = SHM_MAGIC;
	hdr->version = SHM_VERSION;
	hdr->total_size = TOTAL_SIZE;
	hdr->data_remote = (uintptr_t)data_view;
	hdr->code_remote = (uintptr_t)code_view;
	hdr->code_size = TOTAL_SIZE;
	hdr->tool_pid = getpid();
	hdr->target_pid = getpid();
	hdr->heartbeat = mono_ns();
	hdr->tool_alive = (uint32_t)syscall(SYS_gettid);	/* the tool is here: walks go on */

	env.data = (uintptr_t)data_view;
	expect_int_eq(tramp_fast_agent_install(data_view + DATA_SIZE + 1, CODE_SIZE,
					       (uintptr_t)code_view + DATA_SIZE + 1, &env), -EINVAL);
	expect_int_eq(tramp_fast_agent_install(data_view + DATA_SIZE, 16,
					       (uintptr_t)code_view + DATA_SIZE, &env), -ENOSPC);
	expect_int_eq(tramp_fast_agent_install(data_view + DATA_SIZE, CODE_SIZE,
					       (uintptr_t)code_view + DATA_SIZE, &env), 0);
	code_used = tramp_fast_agent_size();
	memcpy(data_view + DATA_SIZE + code_used, stub, sizeof(stub));
	nested_stub = code_view + DATA_SIZE + code_used;
	code_used += sizeof(stub);
	for (int i = 0; i < H_N; i++) {
		hooks[i].fn = build(hooks[i].name, hooks[i].kind, hooks[i].cls, &env);
		expect_true(hooks[i].fn != NULL);
		if (!hooks[i].fn)
			return;
	}
	plain = env;
	plain.plain_sub = 1;
	plain_malloc = build("malloc", HOOK_ALLOC, TRAMP_ALLOC, &plain);
	plain_free = build("free", HOOK_FREE, TRAMP_FREE, &plain);
	frames_reset();
	ready = lmalloc && lfree && plain_malloc && plain_free;
}

/* ---- emitter ---- */

static void test_layouts(void)
{
	static const uint8_t body[] = { 0x41, 0x54, 0x55, 0x53, 0x48, 0x89, 0xfb };
	static const uint8_t alloc_head[] = {
		0x48, 0x89, 0xe0, 0x48, 0xc1, 0xe8, 0x0f, 0x25, 0xc0, 0x0f, 0, 0,
		0x48, 0x8d, 0x0d };
	static const uint8_t free_head[] = { 0x48, 0x89, 0xf8, 0x48, 0xc1, 0xe8, 0x11,
		0x25, 0xff, 0x07, 0, 0, 0x4c, 0x8d, 0x1d };	/* dword (ptr >> 17) & 0x7ff */
	static const uint8_t free_bit[] = { 0x41, 0x8b, 0x04, 0x83, 0x89, 0xf9,
		0xc1, 0xe9, 0x0c, 0x0f, 0xa3, 0xc8 };		/* bit (ptr >> 12) & 31 */
	const uint64_t from = 0x7f0000400000ull, at = from + 0x100000;
	struct tramp_fast_env e = { .data = at + 0x10000, .agent_alloc = at - 0x1000,
				    .agent_free = at - 0x800 };
#define EMIT(cls, kind, at) tramp_fast_emit(cls, HK(kind), at, &r, &e, buf, sizeof(buf), &lay)
	uint8_t buf[TRAMP_FAST_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;
	int32_t rel;

	/* malloc: counter, lock sub %rdi, jle SLOW; calloc adds the mov and
	 * imul into r11; memalign (may nest) a jmp CALLTHRU; plain_sub drops
	 * the lock */
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_ALLOC, HK(HOOK_ALLOC), &e), 30);
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_ALLOC, HK(HOOK_CALLOC), &e), 37);
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_ALLOC, HK(HOOK_ALIGNED), &e), 35);
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_FREE, HK(HOOK_FREE), &e), 51);
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_REALLOC, HK(HOOK_REALLOC), &e), 51 + 39);
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_FREE, HK(HOOK_ALLOC), &e), -EINVAL);
	expect_int_eq(tramp_fast_reloc_offset((enum tramp_class)9, HK(HOOK_ALLOC), &e), -EINVAL);
	e.plain_sub = 1;
	expect_int_eq(tramp_fast_reloc_offset(TRAMP_ALLOC, HK(HOOK_ALLOC), &e), 29);
	e.plain_sub = 0;

	expect_int_eq(reloc_prologue(body, sizeof(body), from, at + 30, &r), 0);
	expect_int_eq(EMIT(TRAMP_ALLOC, HOOK_ALLOC, at), 0);
	expect_true(!memcmp(buf, alloc_head, sizeof(alloc_head)));
	memcpy(&rel, buf + 15, 4);
	expect_u64_eq(at + 19 + rel, e.data + SHM_OFF_COUNTERS);
	expect_int_eq(buf[19], 0xf0);		/* lock */
	expect_int_eq(buf[20], 0x48);		/* sub %rdi,(%rcx,%rax,1) */
	expect_int_eq(buf[21], 0x29);
	expect_int_eq(buf[22], 0x3c);
	expect_int_eq(buf[23], 0x01);
	memcpy(&rel, buf + 26, 4);
	expect_u64_eq(at + 30 + rel, at + 30 + r.code_len);	/* jle SLOW */
	expect_true(!memcmp(buf + 30, r.code, r.code_len));	/* falls into RELOC */
	expect_int_eq(lay.size, 30 + r.code_len + TRAMP_FAST_SLOW_LEN);
	expect_int_eq(lay.reloc_off, 30);
	expect_int_eq(lay.entry_trap, -1);
	expect_int_eq(lay.exit_trap, -1);
	expect_int_eq(buf[lay.size - 1], 0xc3);
	/* slow: call RELOC, push $info, call agent_alloc */
	memcpy(&rel, buf + 30 + r.code_len + 4, 4);
	expect_u64_eq(at + 30 + r.code_len + 8 + rel, at + 30);
	expect_int_eq(buf[30 + r.code_len + 19], 0x68);
	memcpy(&rel, buf + 30 + r.code_len + 20, 4);
	expect_int_eq(rel, AGENT_INFO(AGENT_SZ_RDI, HOOK_ALLOC));
	memcpy(&rel, buf + 30 + r.code_len + 35, 4);
	expect_u64_eq(at + 30 + r.code_len + 39 + rel, e.agent_alloc);

	/* calloc: mov %rdi,%r11; imul %rsi,%r11; ... sub %r11 */
	expect_int_eq(reloc_prologue(body, sizeof(body), from, at + 37, &r), 0);
	expect_int_eq(EMIT(TRAMP_ALLOC, HOOK_CALLOC, at), 0);
	expect_int_eq(buf[0], 0x49);
	expect_int_eq(buf[3], 0x4c);
	expect_true(!memcmp(buf + 7, alloc_head, sizeof(alloc_head)));
	expect_int_eq(buf[27], 0x4c);
	expect_int_eq(buf[29], 0x1c);

	/* memalign may call malloc: its fast path goes through CALLTHRU */
	expect_int_eq(reloc_prologue(body, sizeof(body), from, at + 35, &r), 0);
	expect_int_eq(EMIT(TRAMP_ALLOC, HOOK_ALIGNED, at), 0);
	expect_int_eq(buf[22], 0x34);		/* sub %rsi,... */
	expect_int_eq(buf[30], 0xe9);		/* jmp CALLTHRU */
	memcpy(&rel, buf + 31, 4);
	expect_u64_eq(at + 35 + rel, at + 35 + r.code_len + TRAMP_FAST_SLOW_LEN);
	expect_int_eq(lay.size, 35 + r.code_len + TRAMP_FAST_SLOW_LEN + TRAMP_FAST_CALLTHRU_LEN);
	memcpy(&rel, buf + 35 + r.code_len + TRAMP_FAST_SLOW_LEN + 19, 4);	/* call RELOC */
	expect_u64_eq(at + 35 + r.code_len + TRAMP_FAST_SLOW_LEN + 23 + rel, at + 35);
	expect_int_eq(buf[lay.size - 1], 0xc3);

	/* wrong class for the kind; reallocarray refused; r for another address */
	expect_int_eq(reloc_prologue(body, sizeof(body), from, at + 30, &r), 0);
	expect_int_eq(EMIT(TRAMP_FREE, HOOK_ALLOC, at), -EINVAL);
	expect_int_eq(EMIT(TRAMP_ALLOC, HOOK_REALLOCARRAY, at), -EINVAL);
	expect_int_eq(EMIT(TRAMP_ALLOC, HOOK_ALLOC, at + 1), -EINVAL);
	expect_int_eq(tramp_fast_emit(TRAMP_ALLOC, HK(HOOK_ALLOC), at, &r, &e, buf, 40, &lay), -ENOSPC);
	e.data = at + (3ull << 30);
	expect_int_eq(EMIT(TRAMP_ALLOC, HOOK_ALLOC, at), -ERANGE);
	e.data = at + 0x10000;

	expect_int_eq(reloc_prologue(body, sizeof(body), from, at + 51, &r), 0);
	expect_int_eq(EMIT(TRAMP_FREE, HOOK_FREE, at), 0);
	expect_true(!memcmp(buf, free_head, sizeof(free_head)));
	expect_true(!memcmp(buf + 19, free_bit, sizeof(free_bit)));
	expect_int_eq(buf[31], 0x73);			/* jnc RELOC */
	expect_int_eq(buf[32], 51 - 33);
	expect_int_eq(lay.size, 51 + r.code_len);
	memcpy(&rel, buf + 15, 4);
	expect_u64_eq(at + 19 + rel, e.data + SHM_OFF_BITS);
	memcpy(&rel, buf + 44, 4);
	expect_u64_eq(at + 48 + rel, e.agent_free);

	expect_int_eq(reloc_prologue(body, sizeof(body), from, at + 90, &r), 0);
	expect_int_eq(EMIT(TRAMP_REALLOC, HOOK_REALLOC, at), 0);
	expect_true(!memcmp(buf, free_head, sizeof(free_head)));
	expect_true(!memcmp(buf + 51, alloc_head, sizeof(alloc_head)));
	expect_int_eq(buf[51 + 22], 0x34);	/* sub %rsi,... */
	expect_int_eq(buf[51 + 30], 0x48);	/* test %rdi,%rdi; je CALLTHRU */
	expect_int_eq(buf[51 + 33], 0x0f);
	expect_int_eq(buf[51 + 34], 0x84);
	memcpy(&rel, buf + 51 + 35, 4);
	expect_u64_eq(at + 90 + rel, at + 90 + r.code_len + TRAMP_FAST_SLOW_LEN);
	expect_int_eq(lay.size, 90 + r.code_len + TRAMP_FAST_SLOW_LEN + TRAMP_FAST_CALLTHRU_LEN);
	expect_true(tramp_fast_agent_size() > 64);
#undef EMIT
}

/* ---- (a) a large rate: no events, allocations work ---- */

static void test_rate_large(void)
{
	void *p, *q, *r, *m, *pm = NULL;

	if (!ready)
		return;
	mode_sampled(1ull << 40, 1ll << 40);
	for (int i = 0; i < 1000; i++) {
		p = (void *)CALL1(H_MALLOC, 100 + i);
		q = (void *)CALL2(H_CALLOC, 3, 50);
		expect_true(p && q);
		memset(p, 0x5a, 100 + i);
		for (int k = 0; k < 150; k++)
			if (((char *)q)[k])
				expect_true(0);
		r = (void *)CALL2(H_REALLOC, p, 4000);
		expect_true(r && ((char *)r)[99] == 0x5a);
		expect_int_eq(CALL3(H_PM, &pm, 64, 300), 0);
		expect_true(pm && (uintptr_t)pm % 64 == 0);
		m = (void *)CALL2(H_MEMALIGN, 256, 77);
		expect_true(m && (uintptr_t)m % 256 == 0);
		CALL1(H_FREE, r);
		CALL1(H_FREE, q);
		CALL1(H_FREE, pm);
		CALL1(H_FREE, m);
		CALL1(H_FREE, NULL);
	}
	expect_u64_eq(heads_total(), 0);
	expect_u64_eq(hdr->drops, 0);
	expect_u64_eq(stat_sum(STAT_WALKS), 0);
}

/* ---- (b) exact mode: one correct event per call; frame walks ---- */

static void expect_alloc(const struct ev *e, int hook, uint64_t size, uint64_t ptr)
{
	expect_int_eq(e->kind, SHM_EV_ALLOC);
	expect_int_eq(SHM_EVF_HOOK(e->flags), hook);
	expect_u64_eq(e->size, size);
	expect_u64_eq(e->ptr, ptr);
	expect_int_eq(e->nframes, 1);
	expect_u64_eq(e->frames[0], (uintptr_t)hcall_ret);
	expect_int_eq(e->flags & (SHM_EVF_STACK | SHM_EVF_MISS | SHM_EVF_TRUNC), 0);
}

static void expect_free(const struct ev *e, uint64_t ptr)
{
	expect_int_eq(e->kind, SHM_EV_FREE);
	expect_u64_eq(e->ptr, ptr);
}

static void test_exact_events(void)
{
	struct ev ev[16];
	uint64_t p, q, r, m, n0;
	void *pm = NULL;

	if (!ready)
		return;
	mode_exact();
	p = CALL1(H_MALLOC, 100);
	expect_int_eq(drain(ev, 16), 1);
	expect_alloc(&ev[0], HOOK_ALLOC, 100, p);

	q = CALL2(H_CALLOC, 10, 20);
	expect_int_eq(drain(ev, 16), 1);
	expect_alloc(&ev[0], HOOK_CALLOC, 200, q);

	r = CALL2(H_REALLOC, p, 3000);
	expect_int_eq(drain(ev, 16), 2);
	expect_free(&ev[0], p);
	expect_alloc(&ev[1], HOOK_REALLOC, 3000, r);

	n0 = CALL2(H_REALLOC, 0, 40);		/* realloc(NULL, n): no free */
	expect_int_eq(drain(ev, 16), 1);
	expect_alloc(&ev[0], HOOK_REALLOC, 40, n0);

	expect_int_eq(CALL3(H_PM, &pm, 64, 500), 0);
	expect_int_eq(drain(ev, 16), 1);
	expect_alloc(&ev[0], HOOK_POSIX_MEMALIGN, 500, (uintptr_t)pm);

	m = CALL2(H_MEMALIGN, 128, 700);
	expect_true(m % 128 == 0);
	expect_int_eq(drain(ev, 16), 1);
	expect_alloc(&ev[0], HOOK_ALIGNED, 700, m);

	CALL1(H_FREE, r);
	CALL1(H_FREE, q);
	CALL1(H_FREE, pm);
	CALL1(H_FREE, m);
	CALL1(H_FREE, n0);
	CALL1(H_FREE, NULL);			/* no event */
	expect_int_eq(drain(ev, 16), 5);
	expect_free(&ev[0], r);
	expect_free(&ev[1], q);
	expect_free(&ev[2], (uintptr_t)pm);
	expect_free(&ev[3], m);
	expect_free(&ev[4], n0);

	/* failures produce nothing */
	expect_u64_eq(CALL1(H_MALLOC, -64ll), 0);
	expect_u64_eq(CALL2(H_CALLOC, 1ull << 62, 16), 0);
	expect_int_eq(CALL3(H_PM, &pm, 3, 16), EINVAL);
	CALL1(H_FREE, NULL);			/* reaches the agent (every bit set) */
	expect_int_eq(drain(ev, 16), 0);
	expect_u64_eq(hdr->drops, 0);
	expect_u64_eq(stat_sum(STAT_MISSES), 0);
}

/*
 * The agent as a guest: with the tool gone (its tracer thread's robust
 * word marked dead) a call is not walked nor sent; with every scratch
 * held (threads or signal handlers inside the agent), a call is sent
 * without a walk: no frames, cut at 0, nothing taken of the stack.
 */
static void test_guest(void)
{
	uint32_t alive = hdr->tool_alive;
	struct ev ev[4];
	uint64_t p;

	if (!ready)
		return;
	mode_exact();
	hdr->tool_alive = alive | SHM_TOOL_DIED;
	p = CALL1(H_MALLOC, 100);
	expect_int_eq(drain(ev, 4), 0);
	hdr->tool_alive = 0;
	CALL1(H_FREE, p);		/* frees need no walk: still sent */
	expect_int_eq(drain(ev, 4), 1);
	hdr->tool_alive = alive;

	for (int i = 0; i < SHM_NCOUNTERS; i++)
		*(volatile uint32_t *)(data_view + SHM_OFF_SCRATCH + i * SHM_SCRATCH_SIZE) = 1;
	p = CALL1(H_MALLOC, 200);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].kind, SHM_EV_ALLOC);
	expect_u64_eq(ev[0].ptr, p);
	expect_int_eq(ev[0].nframes, 0);
	expect_true(ev[0].flags & SHM_EVF_TRUNC);
	expect_int_eq(ev[0].flags & SHM_EVF_MISS, 0);
	for (int i = 0; i < SHM_NCOUNTERS; i++)
		*(volatile uint32_t *)(data_view + SHM_OFF_SCRATCH + i * SHM_SCRATCH_SIZE) = 0;
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	p = CALL1(H_MALLOC, 300);	/* a scratch again: walked */
	expect_int_eq(drain(ev, 4), 1);
	expect_alloc(&ev[0], HOOK_ALLOC, 300, p);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	expect_u64_eq(hdr->drops, 0);
}

/* A seccomp filter on the calling thread only: system call nr fails with
 * err. 0, or -1 if it could not be installed. */
static int thread_refuses(int nr, int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}

/* In a thread of its own, a seccomp filter (per thread) makes
 * process_vm_readv fail with ESRCH, as the kernel does for a copy through a
 * pid that is gone: there one malloc(17) is made through chain_rec. */
static void *refused_copy_thread(void *arg)
{
	if (thread_refuses(SYS_process_vm_readv, ESRCH))
		return NULL;
	*(uint64_t *)arg = hcall(chain_rec, 1, (uintptr_t)hooks[H_MALLOC].fn, 17, 0);
	return arg;
}

static uint64_t refused_copy_call(void)
{
	uint64_t p = 0;
	pthread_t th;

	if (pthread_create(&th, NULL, refused_copy_thread, &p))
		return 0;
	pthread_join(th, NULL);
	return p;
}

static void test_exact_walk(void)
{
	struct ev ev[4];
	uint64_t p, head;

	if (!ready)
		return;
	mode_exact();
	frame_put(chain_r2, SHM_BASE_RBP, 16, 1, -16);
	frame_put(chain_r1, SHM_BASE_RSP, 16, 0, 0);
	frame_put(chain_r0, SHM_BASE_RBP, 16, 1, -16);

	/* known frames all the way to hcall_ret (an END rule) */
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].kind, SHM_EV_ALLOC);
	expect_u64_eq(ev[0].ptr, p);
	expect_int_eq(ev[0].nframes, 4);
	expect_u64_eq(ev[0].frames[0], (uintptr_t)chain_r2);
	expect_u64_eq(ev[0].frames[1], (uintptr_t)chain_r1);
	expect_u64_eq(ev[0].frames[2], (uintptr_t)chain_r0);
	expect_u64_eq(ev[0].frames[3], (uintptr_t)hcall_ret);
	expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS | SHM_EVF_TRUNC), 0);
	expect_int_eq(ev[0].stack_len, 0);	/* complete: no registers, no copy */
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);

	/* that stack numbered by the tool: its id instead of its frames */
	{
		const uint64_t chain[4] = { (uintptr_t)chain_r2, (uintptr_t)chain_r1,
					    (uintptr_t)chain_r0, (uintptr_t)hcall_ret };
		uint64_t head = heads_total();

		expect_int_eq(stackids_publish(stacks_tab(), chain, 3, 0, 7), 1);	/* not it */
		expect_int_eq(stackids_publish(stacks_tab(), chain, 4, 0, 41), 1);
		expect_int_eq(stackids_publish(stacks_tab(), chain, 4, 0, 42), 0);	/* there */
		p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
		expect_u64_eq(heads_total() - head, sizeof(struct shm_ev_alloc));
		expect_int_eq(drain(ev, 4), 1);
		expect_u64_eq(ev[0].ptr, p);
		expect_int_eq(ev[0].nframes, 0);
		expect_int_eq(ev[0].flags & (SHM_EVF_STACKID | SHM_EVF_MISS), SHM_EVF_STACKID);
		expect_int_eq(ev[0].stack_id, 41);
		CALL1(H_FREE, p);
		expect_int_eq(drain(ev, 4), 1);
		/* another stack (one frame) still comes with its frames */
		p = CALL1(H_MALLOC, 5);
		expect_int_eq(drain(ev, 4), 1);
		expect_int_eq(ev[0].nframes, 1);
		expect_int_eq(ev[0].flags & SHM_EVF_STACKID, 0);
		CALL1(H_FREE, p);
		drain(ev, 4);
		/* cut at 3 frames: the same 3 frames as id 7, which ended
		 * there, are not that stack; its own id (trunc) is taken */
		hdr->max_depth = 3;
		p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
		expect_int_eq(drain(ev, 4), 1);
		expect_int_eq(ev[0].nframes, 3);
		expect_int_eq(ev[0].flags & (SHM_EVF_STACKID | SHM_EVF_TRUNC), SHM_EVF_TRUNC);
		CALL1(H_FREE, p);
		drain(ev, 4);
		expect_int_eq(stackids_publish(stacks_tab(), chain, 3, 1, 43), 1);
		expect_int_eq(stackids_publish(stacks_tab(), chain, 3, 1, 44), 0);	/* there */
		p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
		expect_int_eq(drain(ev, 4), 1);
		expect_int_eq(ev[0].nframes, 0);
		expect_int_eq(ev[0].flags & (SHM_EVF_STACKID | SHM_EVF_TRUNC),
			      SHM_EVF_STACKID | SHM_EVF_TRUNC);
		expect_int_eq(ev[0].stack_id, 43);
		CALL1(H_FREE, p);
		drain(ev, 4);
		hdr->max_depth = 0;
		memset(stacks_tab(), 0, SHM_NSTACKS * sizeof(struct shm_stack));
	}

	/* chain_r1 unknown: a miss after two frames, with a stack copy from sp */
	frames_clear();
	frame_put(chain_r2, SHM_BASE_RBP, 16, 1, -16);
	p = hcall(chain_f0, (uintptr_t)hooks[H_CALLOC].fn, 3, 11, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].nframes, 2);
	expect_u64_eq(ev[0].frames[0], (uintptr_t)chain_r2);
	expect_u64_eq(ev[0].frames[1], (uintptr_t)chain_r1);
	expect_u64_eq(ev[0].size, 33);
	expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS), SHM_EVF_STACK | SHM_EVF_MISS);
	expect_true(ev[0].stack_len >= 64 && ev[0].stack_len <= SHM_STACK_COPY);
	expect_u64_eq(ev[0].ip, (uintptr_t)chain_r2);		/* registers at the caller */
	expect_u64_eq(ev[0].sp, chain_sp);
	expect_u64_eq(ev[0].bp, chain_bp);
	expect_u64_eq(ev[0].bx, HCALL_RBX);
	expect_u64_eq(ev[0].r12, CHAIN_R12);
	expect_u64_eq(chain_bp, chain_sp);
	expect_u64_eq(ev[0].stack[0], chain_sp + 48);		/* f2's saved rbp: f0's */
	expect_u64_eq(ev[0].stack[1], (uintptr_t)chain_r1);	/* f2's return address */
	expect_u64_eq(stat_sum(STAT_MISSES), 1);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);

	/* an unknown first frame: one frame, copy */
	frames_clear();
	p = CALL1(H_MALLOC, 5);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].nframes, 1);
	expect_u64_eq(ev[0].frames[0], (uintptr_t)hcall_ret);
	expect_true(ev[0].flags & SHM_EVF_STACK);
	expect_true(ev[0].stack_len > 0);
	CALL1(H_FREE, p);
	drain(ev, 4);

	/* deep stacks: complete up to SHM_MAX_DEPTH, then truncated */
	frames_reset();
	frame_put(chain_rec_ret, SHM_BASE_RBP, 16, 1, -16);
	frame_put(chain_rec_leaf, SHM_BASE_RBP, 16, 1, -16);
	p = hcall(chain_rec, 10, (uintptr_t)hooks[H_MALLOC].fn, 17, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].nframes, 12);
	expect_u64_eq(ev[0].frames[0], (uintptr_t)chain_rec_leaf);
	expect_u64_eq(ev[0].frames[1], (uintptr_t)chain_rec_ret);
	expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS | SHM_EVF_TRUNC), 0);
	CALL1(H_FREE, p);
	drain(ev, 4);
	/* a header left zero walks SHM_DEFAULT_DEPTH frames; max_depth is
	 * followed; one claiming more than SHM_MAX_DEPTH (the target can
	 * write it) walks SHM_MAX_DEPTH: the frames fit the agent's bound */
	{
		static const struct {
			uint32_t hdr_depth;
			unsigned want;
		} depths[] = {
			{ 0, SHM_DEFAULT_DEPTH }, { 5, 5 }, { 300, 300 }, { 1024, 1024 },
			{ 1025, SHM_MAX_DEPTH }, { 5000, SHM_MAX_DEPTH }, { UINT32_MAX, SHM_MAX_DEPTH },
		};

		for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
			unsigned want = depths[i].want;

			hdr->max_depth = depths[i].hdr_depth;
			ring_reset(RING_SIZE);
			/* cut one frame short of the end: truncated at want */
			p = hcall(chain_rec, want + 5, (uintptr_t)hooks[H_MALLOC].fn, 17, 0);
			expect_int_eq(drain(ev, 4), 1);
			expect_int_eq(ev[0].nframes, want);
			expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS | SHM_EVF_TRUNC),
				      SHM_EVF_TRUNC);
			CALL1(H_FREE, p);
			drain(ev, 4);
			/* exactly want frames to the END rule: complete, not cut */
			p = hcall(chain_rec, want - 2, (uintptr_t)hooks[H_MALLOC].fn, 17, 0);
			expect_int_eq(drain(ev, 4), 1);
			expect_int_eq(ev[0].nframes, want);
			expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS | SHM_EVF_TRUNC), 0);
			CALL1(H_FREE, p);
			drain(ev, 4);
		}
		hdr->max_depth = 0;
		ring_reset(RING_SIZE);
	}

	/* a refused copy: the miss is flagged, no copy (record keeps its room) */
	frames_clear();
	frame_put(chain_rec_ret, SHM_BASE_RBP, 16, 1, -16);
	frame_put(chain_rec_leaf, SHM_BASE_RBP, 16, 1, -16);
	p = refused_copy_call();
	expect_true(p != 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].nframes, 3);	/* leaf, rec_ret, hcall_ret: no END rule */
	expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS), SHM_EVF_MISS);
	expect_int_eq(ev[0].stack_len, 0);
	expect_int_eq(hdr->no_stack_copy, 0);	/* ESRCH does not latch */
	CALL1(H_FREE, p);
	drain(ev, 4);
	hdr->no_stack_copy = 1;			/* as after EPERM: no room reserved */
	head = heads_total();
	p = hcall(chain_rec, 1, (uintptr_t)hooks[H_MALLOC].fn, 17, 0);
	expect_u64_eq(heads_total() - head, sizeof(struct shm_ev_alloc) + 3 * 8 +
		      sizeof(struct frame_regs));
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].flags & (SHM_EVF_STACK | SHM_EVF_MISS), SHM_EVF_MISS);
	CALL1(H_FREE, p);
	drain(ev, 4);
	hdr->no_stack_copy = 0;

	/* a rule making the CFA shrink is a miss, not a crash */
	frame_put(chain_r2, SHM_BASE_RSP, -64, 0, 0);
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 8, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].nframes, 1);
	expect_true(ev[0].flags & SHM_EVF_MISS);
	CALL1(H_FREE, p);
	drain(ev, 4);
	frames_reset();
}

/* ---- (b2) the walk memo (exact mode) ---- */

#define MEMO_REACH	(8ULL << 20)	/* the agent's window above the entry sp (STACK_REACH) */
#define MEMO_BP1	0x1111111111111110ull
#define MEMO_BP2	0x2222222222222220ull

/* The memo entry holding a walk from sp whose first return address is ip, or NULL. */
static struct shm_memo *memo_find(uint64_t sp, uint64_t ip)
{
	struct shm_memo *m = (struct shm_memo *)(data_view + SHM_OFF_MEMO);

	for (int i = 0; i < SHM_NCOUNTERS * SHM_MEMO_WAYS; i++)
		if (m[i].sp == sp && m[i].ip == ip)
			return &m[i];
	return NULL;
}

/* Rules for memo_call's chain: chain_r2, chain_r1, chain_r0, then an end at
 * either root; no stack ids, nothing in the memo. */
static void memo_setup(void)
{
	mode_exact();
	frames_reset();
	memset(data_view + SHM_OFF_MEMO, 0, SHM_NCOUNTERS * SHM_MEMO_WAYS * sizeof(struct shm_memo));
	frame_put(chain_r2, SHM_BASE_RBP, 16, 1, -16);
	frame_put(chain_r1, SHM_BASE_RSP, 16, 0, 0);
	frame_put(chain_r0, SHM_BASE_RBP, 16, 1, -16);
	frame_put(memo_ret_a, SHM_BASE_END, 0, 0, 0);
	frame_put(memo_ret_b, SHM_BASE_END, 0, 0, 0);
}

/* malloc(48) through memo_call(bp, b), then its free: the allocation's
 * event in *e; returns the memo hits it added. */
static uint64_t memo_alloc(uint64_t bp, int b, struct ev *e)
{
	uint64_t hits = stat_sum(STAT_MEMO), p;
	struct ev ev[4];

	p = memo_call(hooks[H_MALLOC].fn, 48, bp, (uint64_t)b);
	expect_int_eq(drain(ev, 4), 1);
	*e = ev[0];
	expect_u64_eq(e->ptr, p);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	return stat_sum(STAT_MEMO) - hits;
}

/* The event of memo_alloc: the whole chain up to root, nf frames of it. */
static void expect_chain(const struct ev *e, const char *root, int nf)
{
	const uint64_t want[4] = { (uintptr_t)chain_r2, (uintptr_t)chain_r1, (uintptr_t)chain_r0,
				   (uintptr_t)root };

	expect_int_eq(e->kind, SHM_EV_ALLOC);
	expect_int_eq(e->nframes, nf);
	for (int i = 0; i < nf && i < 4; i++)
		expect_u64_eq(e->frames[i], want[i]);
	expect_int_eq(e->flags & (SHM_EVF_STACK | SHM_EVF_MISS | SHM_EVF_TRUNC), 0);
}

static void test_exact_memo(void)
{
	struct shm_memo *m;
	struct ev e;
	uint32_t gen;

	if (!ready)
		return;
	memo_setup();

	/* the first walk is kept (an empty way), the second served from it */
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_chain(&e, memo_ret_a, 4);
	m = memo_find(chain_sp, (uintptr_t)chain_r2);
	expect_true(m != NULL);
	if (!m)
		return;
	expect_int_eq(m->nframes, 4);
	expect_int_eq(m->nread, 5);	/* r1, f0's rbp, r0, root, the bp f0 saved */
	expect_int_eq(m->flags, SHM_MEMO_USEDBP);	/* chain_r2's CFA is rbp + 16 */
	expect_int_eq(m->seq & 1, 0);
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);
	expect_chain(&e, memo_ret_a, 4);

	/* a word it read changed (the root's return address): walked again */
	expect_int_eq(memo_alloc(MEMO_BP1, 1, &e), 0);
	expect_chain(&e, memo_ret_b, 4);
	/* the same frames, a word read changed (the rbp f0 saved): walked again,
	 * and kept (the second miss in a row) */
	expect_int_eq(memo_alloc(MEMO_BP2, 0, &e), 0);
	expect_chain(&e, memo_ret_a, 4);
	expect_int_eq(memo_alloc(MEMO_BP2, 0, &e), 1);
	expect_chain(&e, memo_ret_a, 4);

	/* two stacks on one way: the one held stays, the other never
	 * replaces it while it keeps coming (every other call) */
	expect_int_eq(memo_alloc(MEMO_BP1, 1, &e), 0);
	expect_int_eq(memo_alloc(MEMO_BP1, 1, &e), 0);		/* refilled */
	expect_int_eq(memo_alloc(MEMO_BP1, 1, &e), 1);
	for (int i = 0; i < 8; i++) {
		expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
		expect_chain(&e, memo_ret_a, 4);
		expect_int_eq(memo_alloc(MEMO_BP1, 1, &e), 1);
		expect_chain(&e, memo_ret_b, 4);
	}

	/* a new stack at every call: the way is written over at the 2nd,
	 * 4th, 8th and 16th miss in a row, then every 16th (m: the one way) */
	for (uint64_t j = 1; j <= 48; j++) {
		int want = j == 2 || j == 4 || j == 8 || j == 16 || j == 32 || j == 48;

		expect_int_eq(memo_alloc(j << 8, 1, &e), 0);
		expect_chain(&e, memo_ret_b, 4);
		expect_int_eq(m->nread == 5 && m->val[4] == j << 8, want);
	}
	expect_int_eq(memo_alloc(48 << 8, 1, &e), 1);

	/* the table changed: the memo is stale until the generation moves */
	gen = hdr->walk_gen;
	frame_put(chain_r1, SHM_BASE_END, 0, 0, 0);
	hdr->walk_gen = gen;
	expect_int_eq(memo_alloc(48 << 8, 1, &e), 1);
	expect_chain(&e, memo_ret_b, 4);
	hdr->walk_gen = gen + 1;
	expect_int_eq(memo_alloc(48 << 8, 1, &e), 0);
	expect_chain(&e, memo_ret_b, 2);
	frame_put(chain_r1, SHM_BASE_RSP, 16, 0, 0);
	expect_int_eq(memo_alloc(48 << 8, 1, &e), 0);
	expect_chain(&e, memo_ret_b, 4);

	/* another depth: walked again */
	expect_int_eq(memo_alloc(48 << 8, 1, &e), 1);		/* refilled */
	hdr->max_depth = 3;
	expect_int_eq(memo_alloc(48 << 8, 1, &e), 0);
	expect_int_eq(e.nframes, 3);
	expect_int_eq(e.flags & SHM_EVF_TRUNC, SHM_EVF_TRUNC);
	hdr->max_depth = 0;

	/* the start rbp is compared when the walk used it */
	memo_setup();
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);	/* no miss in a row now */
	m = memo_find(chain_sp, (uintptr_t)chain_r2);
	expect_true(m && m->bp == chain_bp);
	if (!m)
		return;
	m->bp ^= 8;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_chain(&e, memo_ret_a, 4);
	m->bp ^= 8;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);

	/* an entry being written (odd seq) is neither read nor claimed */
	m->seq++;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_chain(&e, memo_ret_a, 4);
	expect_int_eq(m->seq & 1, 1);
	m->seq++;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);

	/* counts out of bounds: walked again */
	m->nread = 255;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_chain(&e, memo_ret_a, 4);
	m->nread = 5;
	m->nframes = SHM_MEMO_FRAMES + 1;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_chain(&e, memo_ret_a, 4);
	m->nframes = 4;
	m->flags |= SHM_MEMO_TRUNC;	/* TRUNC below the depth */
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	m->flags &= (uint8_t)~SHM_MEMO_TRUNC;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);

	/* sampled mode does not use it */
	mode_sampled(0, 0);
	memo_call(hooks[H_MALLOC].fn, 48, MEMO_BP1, 0);
	expect_int_eq(stat_sum(STAT_WALKS), 1);
	expect_int_eq(stat_sum(STAT_MEMO), 0);
	mode_exact();
	frames_reset();
}

/*
 * On a stack of its own at the bottom of a larger mapping, so that words
 * just past the agent's window are mapped and known: an entry naming them
 * is never served, however well they match; garbage words anywhere (most
 * of them far out of any mapping) never fault.
 */
static void *memo_window_thread(void *arg)
{
	struct shm_memo *m, keep;
	uint64_t entry_sp, rng = 0x9e3779b97f4a7c15ULL;
	struct ev e;

	(void)arg;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);
	m = memo_find(chain_sp, (uintptr_t)chain_r2);
	expect_true(m && m->nread == 5);
	if (!m || m->nread != 5)
		return NULL;
	keep = *m;
	entry_sp = chain_sp - 8;

	/* the window's last word, as read now: served */
	m->off[5] = (uint32_t)(MEMO_REACH - 8);
	m->val[5] = *(volatile uint64_t *)(entry_sp + MEMO_REACH - 8);
	m->nread = 6;
	expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 1);
	expect_chain(&e, memo_ret_a, 4);
	/* the word after it: walked, whatever it holds */
	for (uint64_t d = 1; d <= 8; d++) {
		*(volatile uint64_t *)(entry_sp + MEMO_REACH - 8 + d) = 0x5eed5eed5eed5eedull;
		m->off[5] = (uint32_t)(MEMO_REACH - 8 + d);
		m->val[5] = 0x5eed5eed5eed5eedull;
		m->misses = 0;	/* not refilled over our entry */
		expect_int_eq(memo_alloc(MEMO_BP1, 0, &e), 0);
		expect_chain(&e, memo_ret_a, 4);
	}
	/* garbage offsets and values (most far out of any mapping): the
	 * frames kept or walked, nothing read out of the window; never
	 * served with a word out of it */
	for (int i = 0; i < 300; i++) {
		uint64_t hits;
		unsigned out = 0;

		*m = keep;
		m->nread = (uint8_t)(1 + rng % SHM_MEMO_READS);
		for (int k = 0; k < SHM_MEMO_READS; k++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			m->off[k] = k < 5 && (rng & 1) ? keep.off[k] : (uint32_t)(rng >> 8);
			m->val[k] = k < 5 && (rng & 2) ? keep.val[k] : rng;
			if (k < m->nread && m->off[k] > MEMO_REACH - 8)
				out = 1;
		}
		m->misses = 0;
		hits = memo_alloc(MEMO_BP1, 0, &e);
		if (out)
			expect_int_eq(hits, 0);
		expect_chain(&e, memo_ret_a, 4);
	}
	return m;
}

static void test_exact_memo_window(void)
{
	size_t len = 16u << 20, stack = 1u << 20;
	pthread_attr_t attr;
	pthread_t th;
	void *area, *ret = NULL;

	if (!ready)
		return;
	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	expect_true(area != MAP_FAILED);
	if (area == MAP_FAILED)
		return;
	memo_setup();
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, area, stack);
	if (!pthread_create(&th, &attr, memo_window_thread, NULL))
		pthread_join(th, &ret);
	expect_true(ret != NULL);
	pthread_attr_destroy(&attr);
	munmap(area, len);
	frames_reset();
}

/* ---- (c) sampled mode: live table, re-arm, frees ---- */

static uint64_t *bucket(uint64_t ptr)
{
	return (uint64_t *)(data_view + SHM_OFF_LIVE) + (size_t)shm_bloom_slot(ptr) * SHM_LIVE_WAYS;
}

/*
 * Sampled mode sends a stack copy only while its ring is at most half full
 * (SHM_COPY_FILL); past it a miss comes without one (NOCOPY) rather than
 * a burst of copies filling the ring and dropping samples. Exact mode
 * always copies.
 */
static void test_sampled_nocopy(void)
{
	struct ev ev[8];
	uint64_t p[8];
	int n, last_copy = -1, first_cut = 8;

	if (!ready)
		return;
	frames_clear();			/* every walk misses at its first frame */
	mode_sampled(0, 0);		/* every call sampled */
	for (int i = 0; i < 8; i++)
		p[i] = CALL1(H_MALLOC, 5);
	n = drain(ev, 8);
	expect_int_eq(n, 8);
	expect_u64_eq(hdr->drops, 0);
	for (int i = 0; i < n && i < 8; i++) {
		expect_true(ev[i].flags & SHM_EVF_MISS);
		if (ev[i].flags & SHM_EVF_STACK) {
			expect_int_eq(ev[i].flags & SHM_EVF_NOCOPY, 0);
			last_copy = i;
		} else {
			expect_int_eq(ev[i].flags & SHM_EVF_NOCOPY, SHM_EVF_NOCOPY);
			expect_int_eq(ev[i].stack_len, 0);
			if (first_cut == 8)
				first_cut = i;
		}
	}
	/* 64 KiB rings, copies of 8 KiB: four with one, then none */
	expect_int_eq(last_copy, 3);
	expect_int_eq(first_cut, 4);
	for (int i = 0; i < 8; i++)
		CALL1(H_FREE, p[i]);
	drain(ev, 8);
	/* copies refused (seccomp): never a copy, nor a cut, the ring past half */
	for (int i = 0; i < 6; i++) {
		if (i == 4)
			hdr->no_stack_copy = 1;
		p[i] = CALL1(H_MALLOC, 5);
	}
	expect_int_eq(drain(ev, 8), 6);
	for (int i = 4; i < 6; i++)
		expect_int_eq(ev[i].flags & (SHM_EVF_MISS | SHM_EVF_STACK | SHM_EVF_NOCOPY),
			      SHM_EVF_MISS);
	for (int i = 0; i < 6; i++)
		CALL1(H_FREE, p[i]);
	drain(ev, 8);
	hdr->no_stack_copy = 0;

	mode_exact();
	for (int i = 0; i < 5; i++)
		p[i] = CALL1(H_MALLOC, 5);
	expect_int_eq(drain(ev, 8), 5);
	for (int i = 0; i < 5; i++) {
		expect_int_eq(ev[i].flags & (SHM_EVF_STACK | SHM_EVF_NOCOPY), SHM_EVF_STACK);
		CALL1(H_FREE, p[i]);
	}
	drain(ev, 8);
	frames_reset();
}

static void test_sampled_free(void)
{
	struct ev ev[4];
	uint64_t p, q;

	if (!ready)
		return;
	mode_sampled(1ull << 40, 0);		/* the next allocation is sampled */
	p = CALL1(H_MALLOC, 48);
	expect_int_eq(drain(ev, 4), 1);
	expect_alloc(&ev[0], HOOK_ALLOC, 48, p);
	expect_int_eq(bit(shm_bloom_slot(p)), 1);
	expect_u64_eq(bucket(p)[0], p);
	for (int i = 0; i < SHM_NCOUNTERS; i++)	/* exactly one counter re-armed: set to */
		if (*counter(i) > 0) {		/* the gap its generator chose */
			uint64_t x = ((struct shm_counter *)counter(i))->rng;

			expect_true(x != 0);
			expect_int_eq(*counter(i), (int64_t)shm_exp_gap(x, hdr->gap_mul));
		}
	q = CALL1(H_MALLOC, 48);		/* not sampled */
	expect_int_eq(drain(ev, 4), 0);
	CALL1(H_FREE, q);
	expect_int_eq(drain(ev, 4), 0);
	CALL1(H_FREE, p);			/* out of the table, no event: */
	expect_int_eq(drain(ev, 4), 0);		/* the tool reads the table */
	expect_int_eq(bit(shm_bloom_slot(p)), 0);
	expect_u64_eq(bucket(p)[0], 0);

	/* the address comes back unsampled: its free is not reported */
	q = CALL1(H_MALLOC, 48);
	CALL1(H_FREE, q);
	expect_int_eq(drain(ev, 4), 0);

	/* realloc of a sampled pointer takes it out of the table first */
	mode_sampled(1ull << 40, 0);
	p = CALL1(H_MALLOC, 24);
	expect_u64_eq(bucket(p)[0], p);
	q = CALL2(H_REALLOC, p, 200);
	expect_int_eq(drain(ev, 4), 1);
	expect_alloc(&ev[0], HOOK_ALLOC, 24, p);
	expect_true(bucket(p)[0] != p);
	CALL1(H_FREE, q);
	expect_int_eq(drain(ev, 4), 0);

	/* false hits (slot taken by others) report nothing; a full bucket
	 * overflows (sticky): the pointer that found no room is not entered
	 * and says so, and a free in the slot not found in the bucket is
	 * reported; entered pointers are never dropped, their frees not reported */
	mode_sampled(1ull << 40, 1ll << 40);
	for (uint32_t s = 0; s < SHM_BLOOM_SIZE * SHM_LIVE_WAYS; s++)
		((uint64_t *)(data_view + SHM_OFF_LIVE))[s] = 8;
	memset(data_view + SHM_OFF_BITS, 0xff, SHM_BLOOM_SIZE / 8);
	q = CALL1(H_MALLOC, 40);
	CALL1(H_FREE, q);
	expect_int_eq(drain(ev, 4), 0);
	for (int i = 0; i < SHM_NCOUNTERS; i++)
		*counter(i) = 0;
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].flags & SHM_EVF_UNTABLED, SHM_EVF_UNTABLED);
	expect_u64_eq(bucket(p)[0], 8);
	expect_u64_eq(bucket(p)[SHM_LIVE_WAYS - 1], 8 | SHM_LIVE_OVERFLOW);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	expect_free(&ev[0], p);
	expect_u64_eq(bucket(p)[SHM_LIVE_WAYS - 1], 8 | SHM_LIVE_OVERFLOW);
	expect_int_eq(bit(shm_bloom_slot(p)), 1);
	for (uint32_t s = 0; s < SHM_BLOOM_SIZE; s++) {	/* overflowed, one way free */
		((uint64_t *)(data_view + SHM_OFF_LIVE))[s * SHM_LIVE_WAYS] = 0;
		((uint64_t *)(data_view + SHM_OFF_LIVE))[s * SHM_LIVE_WAYS + SHM_LIVE_WAYS - 1] = 8 | 1;
	}
	for (int i = 0; i < SHM_NCOUNTERS; i++)
		*counter(i) = 0;
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].flags & SHM_EVF_UNTABLED, 0);
	expect_u64_eq(bucket(p)[0], p);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(bucket(p)[0], 0);
	expect_u64_eq(bucket(p)[SHM_LIVE_WAYS - 1], 8 | SHM_LIVE_OVERFLOW);

	/* two in one bucket: the bit stays until the last one goes */
	mode_sampled(1ull << 40, 0);
	memset(data_view + SHM_OFF_BITS, 0, SHM_BLOOM_SIZE / 8);
	p = CALL1(H_MALLOC, 40);
	q = p + 16;				/* the same page: same slot */
	bucket(p)[1] = q;
	expect_int_eq(drain(ev, 4), 1);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(bucket(p)[0], 0);
	expect_int_eq(bit(shm_bloom_slot(p)), 1);
	bucket(p)[1] = 0;
	memset(data_view + SHM_OFF_LIVE, 0, SHM_BLOOM_SIZE * SHM_LIVE_WAYS * 8);
	mode_sampled(1ull << 40, 1ll << 40);
}


/* ---- (c2) exact mode's in-target accounting ---- */

static struct shm_xlane *xlane(unsigned i)
{
	return (struct shm_xlane *)(data_view + SHM_OFF_XLANES(RING_SIZE)) + i;
}

static struct shm_xcount *xcounts(unsigned lane)
{
	return (struct shm_xcount *)(data_view + SHM_OFF_XCOUNTS(RING_SIZE)) +
	       (size_t)lane * SHM_XCOUNTS;
}

static struct shm_xlive *xlive_tab(void)
{
	return (struct shm_xlive *)(data_view + SHM_OFF_XLIVE(RING_SIZE));
}

static void mode_xacct(uint64_t idflag)
{
	mode_exact();
	hdr->flags |= idflag;	/* 0 (rdfsbase) or SHM_F_XTP (%fs:0) */
	memset(data_view + SHM_OFF_XLANES(RING_SIZE), 0,
	       SHM_OFF_XLIVE(RING_SIZE) - SHM_OFF_XLANES(RING_SIZE) + XSLOTS * sizeof(struct shm_xlive));
	hdr->flags |= SHM_F_XACCT;
	hdr->xlive_slots = XSLOTS;
	hdr->xforeign_count = hdr->xforeign_bytes = 0;
}

/* The xlive slot holding ptr, or NULL. */
static struct shm_xlive *xlive_find(uint64_t ptr)
{
	for (unsigned i = 0; i < XSLOTS; i++)
		if (xlive_tab()[i].ptr == ptr)
			return &xlive_tab()[i];
	return NULL;
}

/* This thread's lane (the one its fs base owns), or -1. */
static int my_lane(void)
{
	unsigned long fs = 0;

	syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs);
	for (int i = 0; i < SHM_NRINGS; i++)
		if (fs && xlane(i)->owner == fs)
			return i;
	return -1;
}

/* Lane `lane`'s count page directory. */
static uint64_t *xpage_dir(int lane)
{
	return (uint64_t *)((uint8_t *)xcounts(lane) + SHM_XPAGES_OFF);
}

/* key's count in lane `lane`'s count pages. */
static uint64_t xpage_of(int lane, uint64_t key)
{
	uint64_t size = shm_xkey_size(key);

	for (unsigned p = 0; p < SHM_XPAGES; p++)
		if (size < SHM_XPAGE_SIZES && xpage_dir(lane)[p] == (key & 0xffffff))
			return ((uint64_t *)((uint8_t *)xpage_dir(lane) + SHM_XPAGE_AT(p)))[size];
	return 0;
}

/* key's count in lane `lane`'s hashed entries. */
static uint64_t xhashed_of(int lane, uint64_t key)
{
	for (unsigned i = 0; i < SHM_XHASHED; i++)
		if (xcounts(lane)[i].key == key)
			return xcounts(lane)[i].count;
	return 0;
}

/* key's count in lane `lane`: its page's and its hashed entry's. */
static uint64_t xcount_of(int lane, uint64_t key)
{
	return xpage_of(lane, key) + xhashed_of(lane, key);
}

/* test_xacct with thread ids from rdfsbase (idflag 0) or %fs:0 (SHM_F_XTP). */
static void xacct_case(uint64_t idflag)
{
	const uint64_t chain[4] = { (uintptr_t)chain_r2, (uintptr_t)chain_r1,
				    (uintptr_t)chain_r0, (uintptr_t)hcall_ret };
	uint64_t key = shm_xkey(41, 33), p, q, na, nf;
	struct shm_xlive *e;
	struct ev ev[4];
	int lane;

	mode_xacct(idflag);
	frames_reset();
	frame_put(chain_r2, SHM_BASE_RBP, 16, 1, -16);
	frame_put(chain_r1, SHM_BASE_RSP, 16, 0, 0);
	frame_put(chain_r0, SHM_BASE_RBP, 16, 1, -16);
	expect_int_eq(stackids_publish(stacks_tab(), chain, 4, 0, 41), 1);

	/* a known stack: entered, counted in our lane, no event; its free
	 * takes it out and counts it, no event */
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	e = xlive_find(p);
	expect_true(e != NULL);
	expect_u64_eq(e ? e->key : 0, key);
	lane = my_lane();
	expect_true(lane >= 0);
	if (lane < 0 || !e)
		return;
	expect_u64_eq(xlane(lane)->alloc_count, 1);
	expect_u64_eq(xlane(lane)->alloc_bytes, 33);
	expect_u64_eq(xcount_of(lane, key), 1);
	expect_u64_eq(xpage_of(lane, key), 1);		/* in the stack's count page */
	expect_u64_eq(xpage_dir(lane)[0], 42);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(e->ptr, 1);
	expect_u64_eq(xlane(lane)->free_count, 1);
	expect_u64_eq(xlane(lane)->free_bytes, 33);

	/* the same again: the count grows, the freed slot is reused */
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	q = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(xcount_of(lane, key), 3);
	expect_true(xlive_find(p) && xlive_find(q));
	CALL1(H_FREE, q);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_true(!xlive_find(p) && !xlive_find(q));

	/* a size beyond the pages: the hashed entries; so too a small one
	 * when every page is another stack's */
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, SHM_XPAGE_SIZES, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(xhashed_of(lane, shm_xkey(41, SHM_XPAGE_SIZES)), 1);
	CALL1(H_FREE, p);
	for (unsigned i = 1; i < SHM_XPAGES; i++)
		xpage_dir(lane)[i] = 100 + i;
	xpage_dir(lane)[0] = 99;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(xhashed_of(lane, key), 1);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	xpage_dir(lane)[0] = 42;			/* its page back: both count */
	for (unsigned i = 1; i < SHM_XPAGES; i++)
		xpage_dir(lane)[i] = 0;
	expect_u64_eq(xcount_of(lane, key), 4);

	/* a stack without an id, and its free: events as before */
	p = CALL1(H_MALLOC, 5);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].flags & SHM_EVF_STACKID, 0);
	expect_true(xlive_find(p) == NULL);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	expect_free(&ev[0], p);

	/* our lane taken by another thread: counted in the shared lane (no
	 * owner, locked adds), no event; its free, by a thread that owns no
	 * lane, counts foreign */
	xlane(lane)->owner = 0x1234;
	na = xlane(lane)->alloc_count;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	expect_true(xlive_find(p) != NULL);
	expect_u64_eq(xlane(lane)->alloc_count, na);
	expect_u64_eq(xlane(SHM_XLANE_SHARED)->owner, 0);
	expect_u64_eq(xlane(SHM_XLANE_SHARED)->alloc_count, 1);
	expect_u64_eq(xlane(SHM_XLANE_SHARED)->alloc_bytes, 33);
	expect_u64_eq(xcount_of(SHM_XLANE_SHARED, key), 1);
	expect_u64_eq(xpage_dir(SHM_XLANE_SHARED)[0], 42);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_true(xlive_find(p) == NULL);
	expect_u64_eq(hdr->xforeign_count, 1);
	expect_u64_eq(hdr->xforeign_bytes, 33);
	hdr->xforeign_count = hdr->xforeign_bytes = 0;
	/* ... and a free of an accounted block by a thread that owns no lane */
	xlane(lane)->owner = 0;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	lane = my_lane();
	expect_true(lane >= 0);
	if (lane < 0)
		return;
	xlane(lane)->owner = 0x1234;
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(hdr->xforeign_count, 1);
	expect_u64_eq(hdr->xforeign_bytes, 33);
	xlane(lane)->owner = 0;

	/* the table full (every slot some other live block): the event path */
	for (unsigned i = 0; i < XSLOTS; i++)
		xlive_tab()[i].ptr = 8;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].flags & SHM_EVF_STACKID, SHM_EVF_STACKID);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	memset(xlive_tab(), 0, XSLOTS * sizeof(struct shm_xlive));

	/* the lane's counts full (every page some other stack's, every
	 * hashed entry some other key's): the slot is given back, the event
	 * path */
	for (unsigned i = 0; i < SHM_XHASHED; i++)
		xcounts(lane)[i].key = shm_xkey(1, 1000 + i);
	for (unsigned i = 0; i < SHM_XPAGES; i++)
		xpage_dir(lane)[i] = 100 + i;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_true(xlive_find(p) == NULL);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	memset(xcounts(lane), 0, SHM_XCOUNTS * sizeof(struct shm_xcount));

	/* a header the target spoiled (a table beyond the memfd): the event path */
	hdr->xlive_slots = SHM_XLIVE_MAX;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
	hdr->xlive_slots = 3;	/* not a power of two */
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);

	/* lanes closed (SHM_F_XSHARED, threads sharing an id): a known stack
	 * takes the event path with its id, a block accounted before is
	 * taken out and counted foreign, not in the lane */
	hdr->xlive_slots = XSLOTS;
	p = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	lane = my_lane();
	expect_true(lane >= 0 && xlive_find(p) != NULL);
	if (lane < 0)
		return;
	hdr->flags |= SHM_F_XSHARED;
	na = xlane(lane)->alloc_count;
	nf = xlane(lane)->free_count;
	q = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 33, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_int_eq(ev[0].flags & SHM_EVF_STACKID, SHM_EVF_STACKID);
	expect_true(xlive_find(q) == NULL);
	expect_u64_eq(xlane(lane)->alloc_count, na);
	hdr->xforeign_count = 0;
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 0);
	expect_true(xlive_find(p) == NULL);
	expect_u64_eq(hdr->xforeign_count, 1);
	expect_u64_eq(xlane(lane)->free_count, nf);
	CALL1(H_FREE, q);
	expect_int_eq(drain(ev, 4), 1);
	expect_free(&ev[0], q);
	hdr->flags &= ~SHM_F_XSHARED;

	/* SHM_F_XACCT without exact mode means nothing */
	memset(stacks_tab(), 0, SHM_NSTACKS * sizeof(struct shm_stack));
	frames_reset();
	mode_exact();
	hdr->flags = SHM_F_EXACT;
}

static void test_xacct(void)
{
	if (!ready)
		return;
	if (getauxval(AT_HWCAP2) & 2)
		xacct_case(0);
	else
		printf("note: no FSGSBASE here, rdfsbase's thread ids not tested\n");
	xacct_case(SHM_F_XTP);
}

/* ---- (d) ring full ---- */

struct waiter {
	int64_t delay_ns;
	int done;
	uint32_t asleep;	/* writers asleep for room when the drain began */
	uint32_t seq;		/* wake_seq then */
};

static void *late_consumer(void *arg)
{
	struct waiter *w = arg;
	struct ev ev[64];
	int64_t t0 = mono_ns();

	while (mono_ns() - t0 < w->delay_ns)
		usleep(1000);
	hdr->heartbeat = mono_ns();
	/* the writer sleeps 10 ms at a time: catch it asleep (a second at most) */
	for (int i = 0; i < 100000 && !hdr->waiters; i++)
		usleep(10);
	w->asleep = hdr->waiters;
	w->seq = hdr->wake_seq;
	w->done = drain(ev, 64);
	return NULL;
}

/*
 * ---- a ring's first pass, mapped in ahead (SHM_RING_CHUNK) ----
 * The calls run in a thread whose stack lies in ring 0's 8 MiB (sp >> 23
 * is 0 mod 16), so that ring 0 may be larger than RING_SIZE. What is
 * mapped in is read back as the memfd's resident pages (mincore).
 */
#define POP_RING	(256u << 10)

/* Pages of ring 0 from byte a to byte b (page-rounded inwards) resident. */
static int ring0_resident(uint64_t a, uint64_t b)
{
	uintptr_t lo = ((uintptr_t)data_view + SHM_OFF_RING + a + 4095) & ~4095ul;
	uintptr_t hi = ((uintptr_t)data_view + SHM_OFF_RING + b) & ~4095ul;
	unsigned char v[POP_RING / 4096 + 1];
	int n = 0;

	if (hi <= lo || mincore((void *)lo, hi - lo, v))
		return -1;
	for (size_t i = 0; i < (hi - lo) / 4096; i++)
		n += v[i] & 1;
	return n;
}

/* Ring 0 emptied (its pages given back) and reset at POP_RING bytes. */
static void ring0_fresh(void)
{
	uintptr_t lo = ((uintptr_t)data_view + SHM_OFF_RING + 4095) & ~4095ul;

	mode_sampled(0, 0);	/* every call sampled */
	ring_reset(POP_RING);
	madvise((void *)lo, POP_RING, MADV_REMOVE);
}

static void *populate_thread(void *arg)
{
	uint64_t *head = (uint64_t *)(data_view + SHM_OFF_HEADS), p;
	const uint64_t c = SHM_RING_CHUNK;
	int *ok = arg;

	/* the first record maps in chunks 0 and 1, nothing beyond */
	ring0_fresh();
	expect_int_eq(ring0_resident(0, 2 * c), 0);
	p = CALL1(H_MALLOC, 64);
	expect_true(*head > 0);
	expect_int_eq(ring0_resident(0, 2 * c), (int)(2 * c / 4096) - 1);
	expect_int_eq(ring0_resident(2 * c + 4096, POP_RING), 0);
	CALL1(H_FREE, p);
	/* the writer entering chunk 1 maps in chunk 2; chunk 3 stays out */
	while (*head < c + 4096) {
		p = CALL1(H_MALLOC, 64);
		CALL1(H_FREE, p);
	}
	expect_int_eq(ring0_resident(2 * c, 3 * c), (int)(c / 4096) - 1);
	expect_int_eq(ring0_resident(3 * c + 4096, POP_RING), 0);
	expect_int_eq(hdr->no_populate, 0);
	expect_u64_eq(hdr->drops, 0);

	/* the seccomp verdict of the tool (SHM_F_NO_POPULATE): faults only */
	ring0_fresh();
	hdr->flags |= SHM_F_NO_POPULATE;
	p = CALL1(H_MALLOC, 64);
	CALL1(H_FREE, p);
	expect_true(ring0_resident(0, 2 * c) <= 2);	/* the record's own page(s) */
	hdr->flags &= ~SHM_F_NO_POPULATE;

	/* madvise refused: latched, no second try */
	ring0_fresh();
	if (thread_refuses(SYS_madvise, EPERM))
		return NULL;
	p = CALL1(H_MALLOC, 64);
	CALL1(H_FREE, p);
	expect_int_eq(hdr->no_populate, 1);
	expect_true(ring0_resident(0, 2 * c) <= 2);
	*ok = 1;
	return NULL;
}

static void test_ring_populate(void)
{
	const size_t span = 1ul << 28, stack = 1ul << 20;
	uint8_t *res, *base;
	pthread_attr_t a;
	pthread_t th;
	int ok = 0;

	if (!ready)
		return;
	/* a 128 MiB aligned base: sp >> 23 is 0 mod 16 for its first 8 MiB */
	res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	expect_true(res != MAP_FAILED);
	if (res == MAP_FAILED)
		return;
	base = (uint8_t *)(((uintptr_t)res + (span / 2 - 1)) & ~(span / 2 - 1));
	expect_int_eq(mprotect(base + stack, stack, PROT_READ | PROT_WRITE), 0);
	pthread_attr_init(&a);
	pthread_attr_setstack(&a, base + stack, stack);
	expect_int_eq(pthread_create(&th, &a, populate_thread, &ok), 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&a);
	expect_int_eq(ok, 1);
	hdr->no_populate = 0;
	frames_reset();
	mode_sampled(0, 0);
	munmap(res, span);
}

static void test_ring_full(void)
{
	struct ev ev[64];
	struct waiter w = { .delay_ns = 50000000 };
	pthread_t th;
	uint64_t p[200], t0, t1, busy;
	int n;

	if (!ready)
		return;
	/* the doorbell: rung once per nap, by the first record past a
	 * quarter of the ring, and only while the tool naps */
	mode_sampled(0, 0);
	ring_reset(4096);
	hdr->doorbell = 0;
	hdr->tool_asleep = 0;
	for (int i = 0; i < 30; i++)
		p[i] = CALL1(H_MALLOC, 64);
	expect_int_eq(hdr->doorbell, 0);		/* past the mark, tool awake */
	drain(ev, 64);
	hdr->tool_asleep = 1;
	for (int i = 30; i < 60; i++)
		p[i] = CALL1(H_MALLOC, 64);
	expect_true(heads_total() - 30 * (sizeof(struct shm_ev_alloc) + 8) >=
		    SHM_DOORBELL_FILL(4096));
	expect_int_eq(hdr->doorbell, 1);
	expect_int_eq(hdr->tool_asleep, 0);	/* taken by the one who rang */
	drain(ev, 64);
	for (int i = 0; i < 60; i++)
		CALL1(H_FREE, p[i]);

	mode_sampled(0, 0);
	ring_reset(4096);
	hdr->drop_why = 0;
	for (int i = 0; i < 100; i++)
		p[i] = CALL1(H_MALLOC, 64);
	n = 4096 / (sizeof(struct shm_ev_alloc) + 8);
	expect_int_eq(hdr->drops, 100 - n);
	expect_int_eq(hdr->drop_why, SHM_DROP_FULL);
	expect_true(heads_total() <= 4096);
	expect_int_eq(drain(ev, 64), n);
	for (int i = 0; i < 100; i++)
		CALL1(H_FREE, p[i]);
	drain(ev, 64);

	/* wrap-around: pads keep records whole (64- and 24-byte records; frees
	 * are events in exact mode) */
	mode_exact();
	ring_reset(4096);
	frame_put(chain_r2, SHM_BASE_RBP, 16, 1, -16);
	frame_put(chain_r1, SHM_BASE_RSP, 16, 0, 0);
	frame_put(chain_r0, SHM_BASE_RBP, 16, 1, -16);
	for (int i = 0; i < 300; i++) {
		p[0] = hcall(chain_f0, (uintptr_t)hooks[H_MALLOC].fn, 64, 0, 0);
		expect_int_eq(drain(ev, 64), 1);
		expect_int_eq(ev[0].nframes, 4);
		expect_u64_eq(ev[0].ptr, p[0]);
		CALL1(H_FREE, p[0]);
		expect_int_eq(drain(ev, 64), 1);
		expect_int_eq(ev[0].kind, SHM_EV_FREE);
		expect_u64_eq(ev[0].ptr, p[0]);
	}
	expect_int_eq(hdr->drops, 0);
	expect_true(heads_total() > 3 * 4096);
	frames_reset();

	/* exact mode, heartbeat stale (2 s): watched for a beat for about
	 * 100 ms, then given up on; the next writer drops at once */
	mode_exact();
	ring_reset(4096);
	for (int i = 0; i < n; i++)
		p[i] = CALL1(H_MALLOC, 64);
	hdr->heartbeat = mono_ns() - 2000000000LL;
	hdr->drop_why = 0;
	t0 = mono_ns();
	p[n] = CALL1(H_MALLOC, 64);
	t1 = mono_ns();
	expect_true(t1 - t0 >= 90000000LL);
	expect_true(t1 - t0 < 1000000000LL);
	expect_int_eq(hdr->drops, 1);
	expect_int_eq(hdr->drop_why, SHM_DROP_STALE);
	t0 = mono_ns();
	p[n + 1] = CALL1(H_MALLOC, 64);
	expect_true(mono_ns() - t0 < 50000000LL);
	expect_int_eq(hdr->drops, 2);
	expect_int_eq(hdr->drop_why, SHM_DROP_STALE | SHM_DROP_LATCH);
	hdr->wait_giveup = 0;

	/* stale (1 s) because the whole machine was paused: the tool beats
	 * 40 ms after the writer's first look, then makes room: no drop */
	hdr->heartbeat = mono_ns() - 1000000000LL;
	hdr->drops = 0;
	w = (struct waiter){ .delay_ns = 40000000 };
	pthread_create(&th, NULL, late_consumer, &w);
	busy = CALL1(H_MALLOC, 64);
	pthread_join(th, NULL);
	expect_int_eq(hdr->drops, 0);
	expect_int_eq(w.done + drain(ev, 64), n + 1);
	CALL1(H_FREE, busy);
	for (int i = 0; i < n + 2; i++)
		CALL1(H_FREE, p[i]);
	while (drain(ev, 64))
		;

	/* exact mode, a heartbeat long gone (5 s and more): drop at once */
	mode_exact();
	ring_reset(4096);
	for (int i = 0; i < n; i++)
		p[i] = CALL1(H_MALLOC, 64);
	expect_int_eq(hdr->drops, 0);
	hdr->heartbeat = mono_ns() - 6000000000LL;
	hdr->drop_why = 0;
	t0 = mono_ns();
	p[n] = CALL1(H_MALLOC, 64);
	expect_true(mono_ns() - t0 < 50000000LL);
	expect_int_eq(hdr->drops, 1);
	expect_int_eq(hdr->drop_why, SHM_DROP_NO_TOOL);
	hdr->heartbeat = 0;			/* no tool yet: same */
	p[n + 1] = CALL1(H_MALLOC, 64);
	expect_int_eq(hdr->drops, 2);
	expect_int_eq(hdr->drop_why, SHM_DROP_NO_TOOL);

	expect_int_eq(hdr->wait_giveup, 0);	/* neither waited */

	/* exact mode, fresh heartbeat: wait until the consumer makes room */
	hdr->heartbeat = mono_ns();
	hdr->drops = 0;
	w = (struct waiter){ .delay_ns = 50000000 };
	pthread_create(&th, NULL, late_consumer, &w);
	t0 = mono_ns();
	p[n + 2] = CALL1(H_MALLOC, 64);
	t1 = mono_ns();
	expect_true(t1 - t0 >= 40000000LL);
	pthread_join(th, NULL);
	/* it slept (futex), and the drain woke it */
	expect_int_eq(w.asleep, 1);
	expect_true(hdr->wake_seq != w.seq);
	expect_int_eq(hdr->waiters, 0);
	expect_int_eq(w.done + drain(ev, 64), n + 1);	/* the waiter's may be in either */
	expect_int_eq(hdr->drops, 0);

	/* exact mode, a tool busy for 1.5 s (its heartbeat fresh, no drain
	 * finished meanwhile): wait past the second, until it makes room */
	hdr->heartbeat = mono_ns() + 10000000000LL;	/* fresh for 10 s */
	hdr->drained = 0;
	for (int i = 0; i < n; i++)
		p[n + 3 + i] = CALL1(H_MALLOC, 64);
	w = (struct waiter){ .delay_ns = 1500000000 };
	pthread_create(&th, NULL, late_consumer, &w);
	t0 = mono_ns();
	busy = CALL1(H_MALLOC, 64);
	t1 = mono_ns();
	pthread_join(th, NULL);
	expect_true(t1 - t0 >= 1400000000LL);
	expect_int_eq(hdr->drops, 0);
	expect_int_eq(w.done + drain(ev, 64), n + 1);
	CALL1(H_FREE, busy);
	for (int i = 0; i < n; i++)
		CALL1(H_FREE, p[n + 3 + i]);
	drain(ev, 64);

	/* exact mode, fresh heartbeat but a consumer that drains and never
	 * frees room (a record held: drained later than the wait's start):
	 * give up after about a second, and let the next writers drop at once */
	for (int i = 0; i < n; i++)
		p[n + 3 + i] = CALL1(H_MALLOC, 64);
	expect_int_eq(hdr->drops, 0);
	hdr->heartbeat = mono_ns() + 10000000000LL;	/* fresh for 10 s */
	hdr->drained = mono_ns() + 10000000000LL;	/* drains all along */
	hdr->drop_why = 0;
	t0 = mono_ns();
	p[2 * n + 3] = CALL1(H_MALLOC, 64);
	expect_true(mono_ns() - t0 >= 900000000LL);
	expect_true(mono_ns() - t0 < 3000000000LL);
	expect_int_eq(hdr->drops, 1);
	expect_int_eq(hdr->drop_why, SHM_DROP_STUCK);
	expect_true(hdr->wait_max_ns >= 900000000LL);	/* the longest wait, as it saw it */
	t0 = mono_ns();
	p[2 * n + 4] = CALL1(H_MALLOC, 64);
	expect_true(mono_ns() - t0 < 100000000LL);
	expect_int_eq(hdr->drops, 2);
	hdr->wait_giveup = 0;
	hdr->heartbeat = mono_ns();
	hdr->drained = 0;
	drain(ev, 64);
	for (int i = n + 3; i < 2 * n + 5; i++)
		CALL1(H_FREE, p[i]);
	drain(ev, 64);
	for (int i = 0; i < n + 3; i++)
		CALL1(H_FREE, p[i]);
	expect_int_eq(drain(ev, 64), n + 3);
	mode_exact();
}

/* ---- (e) nested calls ---- */

static void test_nested(void)
{
	struct ev ev[4];
	uint64_t p;

	if (!ready)
		return;
	mode_exact();
	p = hcall(nested_stub, (uintptr_t)hooks[H_MALLOC].fn, 64, 0, 0);
	expect_true(p != 0);
	expect_int_eq(stat_sum(STAT_NESTED), 1);
	expect_int_eq(drain(ev, 4), 0);
	CALL1(H_FREE, p);
	expect_int_eq(drain(ev, 4), 1);
}

/* ---- the allocator's statistics: never the agent's ---- */

static int fake_calls;

static int fake_property(const char *name, uint64_t *v)
{
	(void)name;
	fake_calls++;
	*v = 4242;
	return 1;
}

/* Header words that once asked the agent to call a statistics function
 * (now reserved) make it call nothing and write nothing there, sampled
 * or exact. */
static void test_stats_never(void)
{
	struct ev ev[16];
	uint64_t p;

	if (!ready)
		return;
	for (int exact = 0; exact < 2; exact++) {
		if (exact)
			mode_exact();
		else
			mode_sampled(0, 0);	/* every call sampled */
		fake_calls = 0;
		hdr->stats_kind = 3;	/* the old SHM_STATS_PROPERTY */
		hdr->stats_fn = (uintptr_t)fake_property;
		hdr->stats_n = 1;
		strcpy(hdr->stats_names[0], "generic.heap_size");
		hdr->stats_req = 1;
		hdr->stats_done = 0;
		for (int i = 0; i < 4; i++) {
			p = CALL1(H_MALLOC, 64);
			CALL1(H_FREE, p);
		}
		expect_int_eq(fake_calls, 0);
		expect_int_eq(hdr->stats_done, 0);
		expect_int_eq(hdr->stats_busy, 0);
		expect_u64_eq(hdr->stats_val[0], 0);
		drain(ev, 16);
		hdr->stats_fn = 0;
		hdr->stats_kind = 0;
		hdr->stats_n = 0;
		hdr->stats_req = 0;
		memset(hdr->stats_names[0], 0, sizeof(hdr->stats_names[0]));
	}
}

/* The writable alias of an address in the CODE view (same memfd offset). */
static uint8_t *code_rw(uint64_t addr)
{
	return data_view + (addr - (uintptr_t)code_view);
}

/* Where the next fake allocator goes in the CODE area (64-byte aligned). */
static uint64_t fake_next(void)
{
	return (uintptr_t)code_view + DATA_SIZE + ((code_used + 63) & ~(size_t)63);
}

/*
 * Copy a fake allocator's body to fake (from fake_next()) and build its
 * fast trampoline (hook h, class cls) 64 bytes after it. Returns the
 * trampoline's address.
 */
static uint64_t fake_build_hook(uint64_t fake, const uint8_t *body, size_t len,
				enum tramp_class cls, const struct hook *h)
{
	uint8_t *fake_rw = code_rw(fake);
	uint64_t at = fake + 64;
	uint8_t buf[TRAMP_FAST_MAX_SIZE];
	struct reloc_result r;
	struct tramp_layout lay;

	memcpy(fake_rw, body, len);
	expect_int_eq(reloc_prologue(body, len, fake,
				     at + tramp_fast_reloc_offset(cls, h, &env), &r), 0);
	expect_int_eq(tramp_fast_emit(cls, h, at, &r, &env, buf, sizeof(buf), &lay), 0);
	memcpy(fake_rw + 64, buf, lay.size);
	code_used = fake + 64 + lay.size - ((uintptr_t)code_view + DATA_SIZE);
	return at;
}

/* fake_build_hook for a hook of kind `kind` (3 arguments at most), class ALLOC. */
static uint64_t fake_build(uint64_t fake, const uint8_t *body, size_t len, int kind)
{
	return fake_build_hook(fake, body, len, TRAMP_ALLOC, HK(kind));
}

/*
 * CALLTHRU: a fake aligned_alloc in the CODE area whose body tail-jumps
 * into the malloc trampoline, as glibc's does for small alignments. An
 * unsampled call takes its size off the counter once, not twice, and its
 * inner malloc is not sampled even where the counter would have run out;
 * a sampled one is recorded once, its inner call counted as nested.
 */
static void test_callthru(void)
{
	uint8_t body[10] = { 0x48, 0x89, 0xf7, 0x90, 0x90, 0xe9 };	/* mov %rsi,%rdi; nop; nop; jmp */
	uint64_t fake, at, p;
	int32_t rel;
	struct ev ev[4];
	int at50 = 0, at150 = 0;

	if (!ready)
		return;
	fake = fake_next();
	rel = (int32_t)((uintptr_t)hooks[H_MALLOC].fn - (fake + 10));
	memcpy(body + 6, &rel, 4);
	at = fake_build(fake, body, sizeof(body), HOOK_ALIGNED);

	mode_sampled(1ull << 40, 150);
	p = hcall((void *)(uintptr_t)at, 16, 100, 0, 0);
	expect_true(p != 0);
	expect_int_eq(drain(ev, 4), 0);
	expect_u64_eq(stat_sum(STAT_NESTED), 0);
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		at50 += *counter(i) == 50;
		at150 += *counter(i) == 150;
	}
	expect_int_eq(at50, 1);
	expect_int_eq(at150, SHM_NCOUNTERS - 1);
	lfree((void *)p);

	mode_sampled(1ull << 40, 50);
	p = hcall((void *)(uintptr_t)at, 16, 100, 0, 0);
	expect_true(p != 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_alloc(&ev[0], HOOK_ALIGNED, 100, p);
	expect_u64_eq(stat_sum(STAT_NESTED), 1);
	lfree((void *)p);
	mode_exact();
}

/*
 * End to end with a real patch: a fake allocator "mov %rdi,%rax; nop; nop;
 * ret" in the CODE area gets a jmp to its fast trampoline over its first
 * 5 bytes; calling it through hcall yields its result and one event.
 */
static void test_patched_fake(void)
{
	static const uint8_t body[] = { 0x48, 0x89, 0xf8, 0x90, 0x90, 0xc3 };
	uint64_t fake, at;
	struct ev ev[4];

	if (!ready)
		return;
	fake = fake_next();
	at = fake_build(fake, body, sizeof(body), HOOK_ALLOC);
	expect_int_eq(reloc_encode_jmp(code_rw(fake), fake, at), 0);

	mode_exact();
	expect_u64_eq(hcall((void *)(uintptr_t)fake, 1234, 0, 0, 0), 1234);
	expect_int_eq(drain(ev, 4), 1);
	expect_alloc(&ev[0], HOOK_ALLOC, 1234, 1234);
	mode_sampled(1ull << 40, 1ll << 40);
	expect_u64_eq(hcall((void *)(uintptr_t)fake, 99, 0, 0, 0), 99);
	expect_int_eq(drain(ev, 4), 0);
	mode_exact();
}

/* ---- (f) the other kinds, on fake allocators ---- */

/* A fake allocator for hook h (class cls) at the next free spot: its trampoline. */
static uint64_t fake_kind(const uint8_t *body, size_t len, enum tramp_class cls, int kind,
			  int nargs)
{
	return fake_build_hook(fake_next(), body, len, cls,
			       &(const struct hook){ .kind = kind, .nargs = nargs });
}

/* Bodies: return an argument (then nop, nop, ret), or store rcx at *rdi and return 0. */
static const uint8_t ret_rdi[] = { 0x48, 0x89, 0xf8, 0x90, 0x90, 0xc3 };
static const uint8_t ret_rsi[] = { 0x48, 0x89, 0xf0, 0x90, 0x90, 0xc3 };
static const uint8_t ret_rdx[] = { 0x48, 0x89, 0xd0, 0x90, 0x90, 0xc3 };
static const uint8_t ret_rcx[] = { 0x48, 0x89, 0xc8, 0x90, 0x90, 0xc3 };
static const uint8_t set_rdi[] = { 0x48, 0x89, 0x0f, 0x31, 0xc0, 0xc3 };

#define FAKE(body, cls, kind, nargs) fake_kind(body, sizeof(body), cls, kind, nargs)

/*
 * Exact mode: the heap kinds find size and old pointer in other arguments
 * and keep rcx for functions of 4 and more (the fake returns it); a
 * mi_heap_reallocn's size rdx * rcx reaches the agent pushed.
 */
static void test_kinds_args(void)
{
	struct ev ev[8];
	uint64_t at;

	if (!ready)
		return;
	mode_exact();
	at = FAKE(ret_rcx, TRAMP_ALLOC, HOOK_HEAP_ALLOC, 4);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x1000, 300, 64, 0x5550), 0x5550);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_HEAP_ALLOC, 300, 0x5550);

	at = FAKE(ret_rcx, TRAMP_ALLOC, HOOK_HEAP_CALLOC, 4);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x1000, 30, 7, 0x6660), 0x6660);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_HEAP_CALLOC, 210, 0x6660);

	/* the FREE check on rsi calls agent_free: rcx survives it */
	at = FAKE(ret_rcx, TRAMP_REALLOC, HOOK_HEAP_REALLOC, 5);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x1000, 0x7770, 500, 0x8880), 0x8880);
	expect_int_eq(drain(ev, 8), 2);
	expect_free(&ev[0], 0x7770);
	expect_alloc(&ev[1], HOOK_HEAP_REALLOC, 500, 0x8880);

	at = FAKE(ret_rdi, TRAMP_REALLOC, HOOK_HEAP_REALLOCN, 4);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x9990, 0x7770, 3, 200), 0x9990);
	expect_int_eq(drain(ev, 8), 2);
	expect_free(&ev[0], 0x7770);
	expect_alloc(&ev[1], HOOK_HEAP_REALLOCN, 600, 0x9990);

	at = FAKE(ret_rdi, TRAMP_REALLOC, HOOK_REALLOCARRAY, 3);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x4440, 5, 9, 0), 0x4440);
	expect_int_eq(drain(ev, 8), 2);
	expect_free(&ev[0], 0x4440);
	expect_alloc(&ev[1], HOOK_REALLOCARRAY, 45, 0x4440);

	/* a realloc class with a NULL old pointer frees nothing */
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0, 5, 9, 0), 0);
	expect_int_eq(drain(ev, 8), 0);
	expect_u64_eq(hdr->drops, 0);
}

/*
 * Exact mode, kinds whose size is known after the call (every call goes
 * to the agent): in-place resizes free the block's record and record it
 * again, or record nothing when they failed; string copies count their
 * length + 1; reallocarr frees *p first.
 */
static void test_kinds_after(void)
{
	static const uint16_t wide[] = { 'a', 'b', 'c', 0 };
	static const char *str = "hello";
	uint64_t at, slot = 0xaaa0;
	char buf[8];
	struct ev ev[8];

	if (!ready)
		return;
	mode_exact();
	/* xallocx(ptr, size, extra, flags): the fake says its usable size is extra */
	at = FAKE(ret_rdx, TRAMP_ALLOC, HOOK_XALLOCX, 4);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x9990, 100, 120, 0), 120);
	expect_int_eq(drain(ev, 8), 2);
	expect_free(&ev[0], 0x9990);
	expect_alloc(&ev[1], HOOK_XALLOCX, 120, 0x9990);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x9990, 100, 80, 0), 80);	/* not reached */
	expect_int_eq(drain(ev, 8), 0);

	/* mi_expand(ptr, size): the fake returns rdx, ptr or NULL */
	at = FAKE(ret_rdx, TRAMP_ALLOC, HOOK_EXPAND, 2);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x3330, 64, 0x3330, 0), 0x3330);
	expect_int_eq(drain(ev, 8), 2);
	expect_free(&ev[0], 0x3330);
	expect_alloc(&ev[1], HOOK_EXPAND, 64, 0x3330);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x3330, 64, 0, 0), 0);
	expect_int_eq(drain(ev, 8), 0);

	at = FAKE(ret_rdi, TRAMP_ALLOC, HOOK_STRDUP, 1);
	expect_u64_eq(hcall((void *)(uintptr_t)at, (uintptr_t)str, 0, 0, 0), (uintptr_t)str);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_STRDUP, 6, (uintptr_t)str);

	at = FAKE(ret_rdi, TRAMP_ALLOC, HOOK_WCSDUP, 1);
	hcall((void *)(uintptr_t)at, (uintptr_t)wide, 0, 0, 0);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_WCSDUP, 8, (uintptr_t)wide);

	/* realpath(fname, resolved): a new block only without a buffer */
	at = FAKE(ret_rdi, TRAMP_ALLOC, HOOK_REALPATH, 2);
	hcall((void *)(uintptr_t)at, (uintptr_t)str, 0, 0, 0);
	hcall((void *)(uintptr_t)at, (uintptr_t)str, (uintptr_t)buf, 0, 0);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_REALPATH, 6, (uintptr_t)str);
	at = FAKE(ret_rsi, TRAMP_ALLOC, HOOK_HEAP_REALPATH, 3);
	hcall((void *)(uintptr_t)at, 0x1000, (uintptr_t)str + 3, (uintptr_t)buf, 0);
	hcall((void *)(uintptr_t)at, 0x1000, (uintptr_t)str + 3, 0, 0);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_HEAP_REALPATH, 3, (uintptr_t)str + 3);

	/* dupenv_s(&buf, &size, name): the fake stores rcx at *rdi */
	at = FAKE(set_rdi, TRAMP_ALLOC, HOOK_DUPENV, 3);
	expect_u64_eq(hcall((void *)(uintptr_t)at, (uintptr_t)&slot, 0, 0, (uintptr_t)str), 0);
	expect_int_eq(drain(ev, 8), 1);
	expect_alloc(&ev[0], HOOK_DUPENV, 6, (uintptr_t)str);

	/* reallocarr(&p, n, size): *p freed first (rcx kept for the fake) */
	slot = 0xaaa0;
	at = FAKE(set_rdi, TRAMP_REALLOC, HOOK_REALLOCARR, 4);
	expect_u64_eq(hcall((void *)(uintptr_t)at, (uintptr_t)&slot, 3, 10, 0xbbb0), 0);
	expect_u64_eq(slot, 0xbbb0);
	expect_int_eq(drain(ev, 8), 2);
	expect_free(&ev[0], 0xaaa0);
	expect_alloc(&ev[1], HOOK_REALLOCARR, 30, 0xbbb0);
	expect_u64_eq(hdr->drops, 0);
}

/*
 * Sampled: the agent takes the size of a SLOW-only call off its counter
 * (6 bytes a copy of "hello" from 100: the 17th is sampled, then the
 * counter is re-armed); an in-place resize of an unsampled block reports
 * nothing. A hook whose code calls another entry point takes CALLTHRU:
 * its inner call does not count.
 */
static void test_kinds_sampled(void)
{
	uint8_t body[10] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0xe9 };	/* nop x5; jmp malloc */
	static const char *str = "hello";
	uint64_t at, fake, p;
	struct ev ev[4];
	int at0 = 0, at100 = 0;
	int32_t rel;

	if (!ready)
		return;
	at = FAKE(ret_rdi, TRAMP_ALLOC, HOOK_STRDUP, 1);
	mode_sampled(1ull << 40, 100);
	for (int i = 0; i < 16; i++)
		hcall((void *)(uintptr_t)at, (uintptr_t)str, 0, 0, 0);
	expect_int_eq(drain(ev, 4), 0);
	hcall((void *)(uintptr_t)at, (uintptr_t)str, 0, 0, 0);
	expect_int_eq(drain(ev, 4), 1);
	expect_alloc(&ev[0], HOOK_STRDUP, 6, (uintptr_t)str);
	for (int i = 0; i < SHM_NCOUNTERS; i++)
		at100 += *counter(i) > 100;
	expect_int_eq(at100, 1);

	at = FAKE(ret_rdx, TRAMP_ALLOC, HOOK_EXPAND, 2);
	mode_sampled(1ull << 40, 1ll << 40);
	expect_u64_eq(hcall((void *)(uintptr_t)at, 0x3330, 64, 0x3330, 0), 0x3330);
	expect_int_eq(drain(ev, 4), 0);

	fake = fake_next();
	rel = (int32_t)((uintptr_t)hooks[H_MALLOC].fn - (fake + 10));
	memcpy(body + 6, &rel, 4);
	at = fake_build_hook(fake, body, sizeof(body), TRAMP_ALLOC,
			     &(const struct hook){ .kind = HOOK_ALLOC, .nargs = 1,
						   .calls = 1u << HOOK_ALLOC });
	mode_sampled(1ull << 40, 100);
	p = hcall((void *)(uintptr_t)at, 40, 0, 0, 0);
	expect_true(p != 0);
	expect_int_eq(drain(ev, 4), 0);
	at100 = 0;
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		at0 += *counter(i) == 60;
		at100 += *counter(i) == 100;
	}
	expect_int_eq(at0, 1);
	expect_int_eq(at100, SHM_NCOUNTERS - 1);
	lfree((void *)p);
	mode_exact();
}

/* ---- (g) threads in exact mode, one consumer ---- */

#define NTHREADS	4
#define ITERS		20000
#define PSET_BITS	20

/* Live pointers as the consumer sees them: linear probing, backward-shift delete. */
static uint64_t pset[1u << PSET_BITS];

static uint32_t pset_slot(uint64_t p)
{
	return (uint32_t)((p * SHM_HASH_MUL) >> (64 - PSET_BITS));
}

static int pset_add(uint64_t p)
{
	uint32_t i = pset_slot(p), mask = (1u << PSET_BITS) - 1;

	for (; pset[i]; i = (i + 1) & mask)
		if (pset[i] == p)
			return -1;
	pset[i] = p;
	return 0;
}

static int pset_del(uint64_t p)
{
	uint32_t i = pset_slot(p), mask = (1u << PSET_BITS) - 1, j;

	for (; pset[i] != p; i = (i + 1) & mask)
		if (!pset[i])
			return -1;
	pset[i] = 0;
	for (j = (i + 1) & mask; pset[j]; j = (j + 1) & mask) {
		uint32_t h = pset_slot(pset[j]);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			pset[i] = pset[j];
			pset[j] = 0;
			i = j;
		}
	}
	return 0;
}

struct tally {
	uint64_t n[8], bytes[8];
};

static struct tally want[NTHREADS], got;
static atomic_int workers_left;
static int consumer_errors, consumer_bad;
static int consumer_lax;	/* benchmark: sampled mode, no checks */
static int consumer_memo;	/* allocations come through memo_call's chain (4 frames) */
static volatile int consumer_stop;

static int consume_one(void *arg, const void *rec, uint32_t len)
{
	struct ev e;

	(void)arg;
	consumer_bad += to_ev(rec, len, &e);
	if (e.kind == SHM_EV_ALLOC) {
		int h = SHM_EVF_HOOK(e.flags);

		got.n[h]++;
		got.bytes[h] += e.size;
		if (!consumer_lax &&	/* sampled mode reports no frees */
		    (pset_add(e.ptr) || e.nframes != (consumer_memo ? 4 : 1) ||
		     e.frames[e.nframes - 1] != (uintptr_t)(consumer_memo ? memo_ret_a : hcall_ret)))
			consumer_errors++;
	} else if (e.kind == SHM_EV_FREE) {
		got.n[HOOK_FREE]++;
		if (pset_del(e.ptr))
			consumer_errors++;
	}
	return 0;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		size_t any;

		hdr->heartbeat = mono_ns();
		any = ring_drain(&rd, 1u << 20, consume_one, NULL);
		if (!any && consumer_stop && !ring_pending_max(&rd))
			break;
		if (!any) {
			if (consumer_lax)
				usleep(1000);
			else
				sched_yield();
		}
	}
	return NULL;
}

/* Start the consumer on empty tallies (memo: allocations come through
 * memo_call's chain). */
static void consumer_start(pthread_t *c, int memo)
{
	memset(pset, 0, sizeof(pset));
	memset(&got, 0, sizeof(got));
	consumer_stop = 0;
	consumer_memo = memo;
	pthread_create(c, NULL, consumer, NULL);
}

/* Each worker hands some blocks to the next one to free: glibc gives them
 * back to the allocating thread's arena (once the freeing thread's tcache
 * is full), so a block freed in one ring comes back in another, and the
 * consumer sees a wrong merge as a block allocated while live. */
#define MBOX 64
static _Atomic uint64_t mbox[NTHREADS][MBOX];

static void *worker(void *arg)
{
	struct tally *t = arg;
	int id = (int)(t - want);

	for (uint64_t i = 0; i < ITERS; i++) {
		uint64_t sz = 1 + (i * 7 + id) % 1500;
		uint64_t p, q, r, m, x;
		void *pm;

		p = CALL1(H_MALLOC, sz);
		q = CALL2(H_CALLOC, 2, sz);
		r = CALL2(H_REALLOC, p, sz * 2);
		CALL3(H_PM, &pm, 32, sz + 1);
		m = CALL2(H_MEMALIGN, 64, sz + 2);
		CALL1(H_FREE, r);
		x = atomic_exchange(&mbox[id][i % MBOX], q);	/* not taken yet: free it */
		if (x) {
			CALL1(H_FREE, x);
			t->n[HOOK_FREE]++;
		}
		x = atomic_exchange(&mbox[(id + NTHREADS - 1) % NTHREADS][i % MBOX], 0);
		if (x) {
			CALL1(H_FREE, x);
			t->n[HOOK_FREE]++;
		}
		CALL1(H_FREE, pm);
		CALL1(H_FREE, m);
		t->n[HOOK_ALLOC]++;
		t->bytes[HOOK_ALLOC] += sz;
		t->n[HOOK_CALLOC]++;
		t->bytes[HOOK_CALLOC] += 2 * sz;
		t->n[HOOK_REALLOC]++;
		t->bytes[HOOK_REALLOC] += 2 * sz;
		t->n[HOOK_POSIX_MEMALIGN]++;
		t->bytes[HOOK_POSIX_MEMALIGN] += sz + 1;
		t->n[HOOK_ALIGNED]++;
		t->bytes[HOOK_ALIGNED] += sz + 2;
		t->n[HOOK_FREE] += 4;		/* realloc's old pointer too */
	}
	atomic_fetch_sub(&workers_left, 1);
	return NULL;
}

static void test_threads_exact(void)
{
	pthread_t w[NTHREADS], c;
	struct tally total;

	if (!ready)
		return;
	mode_exact();
	memset(pset, 0, sizeof(pset));
	memset(&got, 0, sizeof(got));
	memset(want, 0, sizeof(want));
	consumer_stop = 0;
	consumer_lax = 0;
	atomic_store(&workers_left, NTHREADS);
	pthread_create(&c, NULL, consumer, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&w[i], NULL, worker, &want[i]);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < NTHREADS; i++)
		for (int k = 0; k < MBOX; k++) {
			uint64_t x = atomic_exchange(&mbox[i][k], 0);

			if (x) {
				CALL1(H_FREE, x);
				want[0].n[HOOK_FREE]++;
			}
		}
	consumer_stop = 1;
	pthread_join(c, NULL);

	memset(&total, 0, sizeof(total));
	for (int i = 0; i < NTHREADS; i++)
		for (int k = 0; k < 8; k++) {
			total.n[k] += want[i].n[k];
			total.bytes[k] += want[i].bytes[k];
		}
	for (int k = 0; k < 8; k++) {
		expect_u64_eq(got.n[k], total.n[k]);
		expect_u64_eq(got.bytes[k], total.bytes[k]);
	}
	expect_int_eq(consumer_errors, 0);
	expect_int_eq(consumer_bad, 0);
	expect_u64_eq(hdr->drops, 0);
	for (uint32_t i = 0; i < (1u << PSET_BITS); i++)
		if (pset[i])
			expect_true(!"pointer left live");
	printf("threads: %d x %d iterations, %" PRIu64 " frees, rings wrapped %" PRIu64 " times\n",
	       NTHREADS, ITERS, got.n[HOOK_FREE], heads_total() / RING_SIZE);
}

/* ---- (h) benchmark ---- */

/* ns per malloc(64)+free pair through m and f, both called by hcall. */
static double bench_pairs(void *m, void *f, long n)
{
	int64_t t0 = mono_ns();

	for (long i = 0; i < n; i++)
		hcall(f, hcall(m, 64, 0, 0, 0), 0, 0, 0);
	return (double)(mono_ns() - t0) / n;
}

/* Exact mode through memo_call's chain (4 frames): ns per malloc+free
 * pair, the same stack at every call, or a word the walk reads changed at
 * every call (no walk found in the walk memo). */
static double bench_memo(long n, int vary)
{
	int64_t t0 = mono_ns();

	for (long i = 0; i < n; i++)
		hcall(hooks[H_FREE].fn, memo_call(hooks[H_MALLOC].fn, 64,
						  vary ? (uint64_t)i << 4 : MEMO_BP1, 0), 0, 0, 0);
	return (double)(mono_ns() - t0) / n;
}

/* Best of rounds of bench_memo: *same the same stack, *fresh a new one. */
static void bench_memo_best(long n, int rounds, double *same, double *fresh)
{
	*same = *fresh = 1e9;
	for (int r = 0; r < rounds; r++) {
		double a = bench_memo(n, 0), b = bench_memo(n, 1);

		*same = a < *same ? a : *same;
		*fresh = b < *fresh ? b : *fresh;
	}
}

/* Best of rounds: direct libc, fast trampolines, fast with a plain sub. */
static void bench_three(long n, int rounds, double out[3])
{
	out[0] = out[1] = out[2] = 1e9;
	for (int r = 0; r < rounds; r++) {
		double d = bench_pairs(lmalloc, lfree, n);
		double t = bench_pairs(hooks[H_MALLOC].fn, hooks[H_FREE].fn, n);
		double l = bench_pairs(plain_malloc, plain_free, n);

		out[0] = d < out[0] ? d : out[0];
		out[1] = t < out[1] ? t : out[1];
		out[2] = l < out[2] ? l : out[2];
	}
}

static void test_bench(void)
{
	const long n = 1000000;
	double never[3], rate[3], exact, same, fresh;
	pthread_t c;

	if (!ready)
		return;
	/* the trampolines alone: nothing is ever sampled */
	mode_sampled(1ull << 40, 1ll << 40);
	bench_three(n, 7, never);

	/* rate 512K, warm frame table (hcall_ret has a rule), tool draining */
	mode_sampled(512 << 10, 512 << 10);
	memset(pset, 0, sizeof(pset));
	memset(&got, 0, sizeof(got));
	consumer_errors = 0;
	consumer_stop = 0;
	consumer_lax = 1;
	pthread_create(&c, NULL, consumer, NULL);
	bench_three(n, 7, rate);
	consumer_stop = 1;
	pthread_join(c, NULL);
	printf("bench: ns per malloc(64)+free pair (best of 7 x %ld, calls through an asm thunk):\n"
	       "  never sampled: direct %.2f, fast %.2f (+%.2f ns), fast+plain sub %.2f (+%.2f ns)\n"
	       "  rate 512K:     direct %.2f, fast %.2f (+%.2f ns, +%.1f%%), fast+plain sub %.2f\n"
	       "  rate 512K: %" PRIu64 " samples, %" PRIu64 " frees reported (none: table), %" PRIu64 " drops\n",
	       n, never[0], never[1], never[1] - never[0], never[2], never[2] - never[0],
	       rate[0], rate[1], rate[1] - rate[0], 100.0 * (rate[1] - rate[0]) / rate[0], rate[2],
	       stat_sum(STAT_WALKS), got.n[HOOK_FREE], hdr->drops);
	expect_int_eq(consumer_errors, 0);

	/* exact mode, warm frame table: every call is an event */
	mode_exact();
	consumer_lax = 0;
	consumer_start(&c, 0);
	exact = bench_pairs(hooks[H_MALLOC].fn, hooks[H_FREE].fn, n);
	consumer_stop = 1;
	pthread_join(c, NULL);
	printf("  exact mode:    %.1f ns per pair (2 events), %" PRIu64 " drops\n", exact, hdr->drops);
	expect_int_eq(consumer_errors, 0);
	expect_u64_eq(got.n[HOOK_FREE], n);
	expect_u64_eq(got.n[HOOK_ALLOC], n);

	/* exact mode, 4 frames: stacks the walk memo holds, and new ones */
	memo_setup();
	consumer_start(&c, 1);
	bench_memo_best(n / 5, 5, &same, &fresh);
	consumer_stop = 1;
	pthread_join(c, NULL);
	consumer_memo = 0;
	printf("  exact, 4 frames: %.1f ns per pair, the same stack (%" PRIu64 " from the memo); "
	       "%.1f ns, a new stack every call\n", same, stat_sum(STAT_MEMO), fresh);
	expect_int_eq(consumer_errors, 0);
	expect_u64_eq(got.n[HOOK_ALLOC], 10 * (n / 5));

	/* the same without the ring: rings too small for any record (each
	 * event dropped at once), so the agent's own cost remains */
	ring_reset(RING_SIZE);
	hdr->ring_size = 8;
	bench_memo_best(n / 5, 7, &same, &fresh);
	printf("  the same, every event dropped: %.1f ns per pair, the same stack; "
	       "%.1f ns, a new stack every call\n", same, fresh);
	expect_u64_eq(hdr->drops, 2 * 14 * (n / 5));
	mode_exact();
	frames_reset();
}

/*
 * Python frames (agent_py.h) over fake interpreter data of our own
 * thread: a 3.10-like chain of frame objects, then a 3.12-like chain of
 * interpreter frames with a shim and an incomplete frame.
 */
struct fake_ts {
	uint64_t next, pad, thread_id, frame;
};
struct fake_fr {
	uint64_t back, code, lasti, owner;      /* lasti: int (3.10) or a pointer */
};
struct fake_code {
	uint64_t pad[2];
	int32_t firsttraceable, pad2;
	uint16_t units[64];
};

static void py_block(uint32_t kind, uint64_t *holder, struct fake_ts *ts)
{
	memset(&hdr->py, 0, sizeof(hdr->py));
	hdr->py.max_frames = 16;
	hdr->py.holder = (uintptr_t)holder;
	hdr->py.threads_head = (uintptr_t)holder;
	hdr->py.ts_next = offsetof(struct fake_ts, next);
	hdr->py.ts_thread_id = offsetof(struct fake_ts, thread_id);
	hdr->py.ts_frame = offsetof(struct fake_ts, frame);
	hdr->py.fr_back = offsetof(struct fake_fr, back);
	hdr->py.fr_code = offsetof(struct fake_fr, code);
	hdr->py.fr_lasti = offsetof(struct fake_fr, lasti);
	hdr->py.fr_owner = offsetof(struct fake_fr, owner);
	hdr->py.co_code_adaptive = offsetof(struct fake_code, units);
	hdr->py.co_firsttraceable = offsetof(struct fake_code, firsttraceable);
	ts->thread_id = (uint64_t)pthread_self();
	shm_barrier();
	hdr->py.kind = kind;
}

static void test_python(void)
{
	static struct fake_code code[3];
	struct fake_fr fr[5];
	struct fake_ts ts = { 0 }, other = { 0 };
	uint64_t holder, p;
	struct ev ev[2];

	if (!ready)
		return;
	mode_exact();
	/* 3.10: f_lasti in code units, every frame ends its eval call */
	memset(fr, 0, sizeof(fr));
	fr[0] = (struct fake_fr){ (uintptr_t)&fr[1], (uintptr_t)&code[0], 7, 0 };
	fr[1] = (struct fake_fr){ 0, (uintptr_t)&code[1], (uint64_t)-1, 0 };
	ts.frame = (uintptr_t)&fr[0];
	holder = (uintptr_t)&ts;
	py_block(SHM_PY_310, &holder, &ts);
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 2);
	expect_u64_eq(ev[0].py[0], (uintptr_t)&code[0] | 7ULL << 48 | SHM_PY_WORD_END);
	expect_u64_eq(ev[0].py[1], (uintptr_t)&code[1] | (uint64_t)SHM_PY_INSTR_UNKNOWN << 48 |
		      SHM_PY_WORD_END);
	CALL1(H_FREE, p);
	drain(ev, 2);
	expect_u64_eq(hdr->py.found, 1);

	/* not the GIL's holder: found on the list, after another thread's state */
	other.thread_id = 1;
	other.next = (uintptr_t)&ts;
	holder = (uintptr_t)&other;
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 2);
	CALL1(H_FREE, p);
	drain(ev, 2);
	/* not on it either: no Python frames, counted */
	other.next = 0;
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 0);
	expect_u64_eq(hdr->py.not_found, 1);
	CALL1(H_FREE, p);
	drain(ev, 2);
	/* and not looked for on the list again for a while, even once it is
	 * there; but found at once once it holds the GIL */
	other.next = (uintptr_t)&ts;
	for (int i = 0; i < 63; i++) {
		p = CALL1(H_MALLOC, 40);
		expect_int_eq(drain(ev, 2), 1);
		expect_int_eq(ev[0].npy, 0);
		CALL1(H_FREE, p);
		drain(ev, 2);
	}
	expect_u64_eq(hdr->py.not_found, 64);
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 2);	/* the 64th: the list again */
	CALL1(H_FREE, p);
	drain(ev, 2);
	other.next = 0;
	p = CALL1(H_MALLOC, 40);	/* gone from the list: skipping again */
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 0);
	CALL1(H_FREE, p);
	drain(ev, 2);
	holder = (uintptr_t)&ts;	/* it holds the GIL */
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 2);
	CALL1(H_FREE, p);
	drain(ev, 2);

	/* 3.12: leaf, an incomplete frame, a caller, a shim, the root */
	holder = (uintptr_t)&ts;
	code[0].firsttraceable = 2;
	fr[0] = (struct fake_fr){ (uintptr_t)&fr[1], (uintptr_t)&code[0],
				  (uintptr_t)&code[0].units[5], 0 };
	fr[1] = (struct fake_fr){ (uintptr_t)&fr[2], (uintptr_t)&code[0],
				  (uintptr_t)&code[0].units[1], 0 };	/* before firsttraceable */
	fr[2] = (struct fake_fr){ (uintptr_t)&fr[3], (uintptr_t)&code[1],
				  (uintptr_t)&code[1].units[3], SHM_PY_OWNED_BY_GENERATOR };
	fr[3] = (struct fake_fr){ (uintptr_t)&fr[4], 0, 0, SHM_PY_OWNED_BY_CSTACK };
	fr[4] = (struct fake_fr){ 0, (uintptr_t)&code[2], (uintptr_t)&code[2].units[0], 0 };
	ts.frame = (uintptr_t)&fr[0];
	py_block(SHM_PY_313, &holder, &ts);
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 3);
	expect_u64_eq(ev[0].py[0], (uintptr_t)&code[0] | 5ULL << 48);
	expect_u64_eq(ev[0].py[1], (uintptr_t)&code[1] | 3ULL << 48 | SHM_PY_WORD_END);
	expect_u64_eq(ev[0].py[2], (uintptr_t)&code[2] | SHM_PY_WORD_END);
	CALL1(H_FREE, p);
	drain(ev, 2);

	/* a loop in the chain ends at max_frames */
	fr[0].back = (uintptr_t)&fr[0];
	p = CALL1(H_MALLOC, 40);
	expect_int_eq(drain(ev, 2), 1);
	expect_int_eq(ev[0].npy, 16);
	CALL1(H_FREE, p);
	drain(ev, 2);
	memset(&hdr->py, 0, sizeof(hdr->py));
}

static void test_teardown(void)
{
	if (data_view)
		munmap(data_view, TOTAL_SIZE);
	if (code_view)
		munmap(code_view, TOTAL_SIZE);
}

HARNESS_MAIN("agent",
	T(test_exp_gap), T(test_setup), T(test_layouts), T(test_rate_large), T(test_exact_events),
	T(test_guest),
	T(test_exact_walk), T(test_exact_memo), T(test_exact_memo_window), T(test_xacct),
	T(test_sampled_free), T(test_sampled_nocopy), T(test_ring_full), T(test_ring_populate), T(test_nested), T(test_stats_never),
	T(test_callthru),
	T(test_patched_fake), T(test_kinds_args), T(test_kinds_after), T(test_kinds_sampled),
	T(test_threads_exact), T(test_python), T(test_bench), T(test_teardown))
