/* Unit tests for the frame-rule table, validated by walking the test's own live stack. */
/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <elf.h>
#include <libunwind.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "model/elfobj.h"
#include "stacks/frametab.h"
#include "harness.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/unwind.h"
#include "testtarget.h"

/*
 * The test process is its own target. Rules are learnt from the return
 * addresses the tool's unwinder (unwind.h) reports, then the live stack is
 * walked with nothing but the table, exactly as the agent will: CFA = rsp or
 * rbp + K, the return address at CFA - 8, rbp reloaded from CFA + off, rsp =
 * CFA. The chain must match the unwinder's and libunwind's local one.
 * This file is built without frame pointers (-O2) unless a function asks.
 */

#define NOIPA __attribute__((noinline, noipa))
#define WITH_FP __attribute__((optimize("no-omit-frame-pointer")))
#define NO_FP __attribute__((optimize("omit-frame-pointer")))
#define NO_TAIL() __asm__ volatile("" ::: "memory")
#define RA() ((uint64_t)__builtin_return_address(0))

/* State right after ft_capture() returned to its caller. */
struct cap {
	uint64_t ip, sp, bp;
};

void ft_capture(struct cap *c);
extern const char ft_odd_cfa_ra[], ft_expr_cfa_ra[], ft_ra_elsewhere_ra[],
	ft_rbp_val_ra[], ft_outermost_ra[], ft_rbp_neg_ra[];

/*
 * ft_capture: ip = its return address, sp = the caller's rsp once it returns,
 * bp = rbp (untouched). The other functions are never run: their return
 * addresses only feed the rule compiler CFI it must refuse or map to END.
 */
__asm__(
	".text\n"
	".globl ft_capture\n.type ft_capture,@function\n"
	"ft_capture:\n.cfi_startproc\n"
	"	mov (%rsp), %rax\n	mov %rax, 0(%rdi)\n"
	"	lea 8(%rsp), %rax\n	mov %rax, 8(%rdi)\n"
	"	mov %rbp, 16(%rdi)\n	ret\n"
	".cfi_endproc\n.size ft_capture, .-ft_capture\n"

	/* CFA from rbx */
	"ft_odd_cfa:\n.cfi_startproc\n"
	"	push %rbx\n.cfi_adjust_cfa_offset 8\n.cfi_rel_offset %rbx, 0\n"
	"	mov %rsp, %rbx\n.cfi_def_cfa_register %rbx\n"
	"	call ft_capture\n"
	".globl ft_odd_cfa_ra\nft_odd_cfa_ra:\n"
	"	mov %rbx, %rsp\n.cfi_def_cfa_register %rsp\n"
	"	pop %rbx\n.cfi_adjust_cfa_offset -8\n.cfi_restore %rbx\n	ret\n"
	".cfi_endproc\n"

	/* CFA = [rsp + 8] (DW_CFA_def_cfa_expression: breg7 8; deref) */
	"ft_expr_cfa:\n.cfi_startproc\n"
	"	sub $8, %rsp\n.cfi_escape 0x0f, 3, 0x77, 8, 0x06\n"
	"	call ft_capture\n"
	".globl ft_expr_cfa_ra\nft_expr_cfa_ra:\n"
	"	add $8, %rsp\n.cfi_def_cfa %rsp, 8\n	ret\n"
	".cfi_endproc\n"

	/* return address saved at CFA - 16 */
	"ft_ra_elsewhere:\n.cfi_startproc\n"
	"	sub $8, %rsp\n.cfi_def_cfa_offset 16\n.cfi_offset %rip, -16\n"
	"	call ft_capture\n"
	".globl ft_ra_elsewhere_ra\nft_ra_elsewhere_ra:\n"
	"	add $8, %rsp\n.cfi_def_cfa_offset 8\n	ret\n"
	".cfi_endproc\n"

	/* rbp as val_offset(-16): a value, not a save slot */
	"ft_rbp_val:\n.cfi_startproc\n"
	"	sub $8, %rsp\n.cfi_def_cfa_offset 16\n.cfi_val_offset %rbp, -16\n"
	"	call ft_capture\n"
	".globl ft_rbp_val_ra\nft_rbp_val_ra:\n"
	"	add $8, %rsp\n.cfi_def_cfa_offset 8\n	ret\n"
	".cfi_endproc\n"

	/* rbp saved at CFA - 24 after two pushes, CFA = rsp + 32 */
	"ft_rbp_neg:\n.cfi_startproc\n"
	"	push %rbx\n.cfi_def_cfa_offset 16\n"
	"	push %rbp\n.cfi_def_cfa_offset 24\n.cfi_offset %rbp, -24\n"
	"	sub $8, %rsp\n.cfi_def_cfa_offset 32\n"
	"	call ft_capture\n"
	".globl ft_rbp_neg_ra\nft_rbp_neg_ra:\n"
	"	add $8, %rsp\n.cfi_def_cfa_offset 24\n"
	"	pop %rbp\n.cfi_def_cfa_offset 16\n.cfi_restore %rbp\n"
	"	pop %rbx\n.cfi_def_cfa_offset 8\n	ret\n"
	".cfi_endproc\n"

	/* like _start: the return address is undefined */
	"ft_outermost:\n.cfi_startproc\n.cfi_undefined %rip\n"
	"	xor %ebp, %ebp\n	call ft_capture\n"
	".globl ft_outermost_ra\nft_outermost_ra:\n"
	"	hlt\n"
	".cfi_endproc\n");

static struct shm_frame *table;
static struct frametab *ft;

static void setup(void)
{
	if (ft)
		return;
	table = calloc(SHM_NFRAMES, sizeof(*table));
	ft = testtarget_frametab(getpid(), table);
	if (!table || !ft) {
		fprintf(stderr, "setup failed\n");
		exit(99);
	}
}

/* ---- (1) rules for known code ---- */

/*
 * What the table says about our caller, read while the frames are live:
 * learn c->ip, then the return address and saved rbp its rule points to.
 */
struct probe {
	struct cap c;
	uint64_t my_ra;		/* the probed function's own return address */
	int learn_ret;
	struct shm_frame rule;
	uint64_t seen_ra;	/* [CFA - 8] */
	uint64_t seen_bp;	/* [CFA + rbp_off], if saved */
};

static NOIPA void probe_caller(struct probe *p)
{
	const struct shm_frame *f;
	uint64_t cfa;

	p->learn_ret = frametab_learn(ft, p->c.ip);
	f = frametab_lookup(table, p->c.ip);
	if (!f)
		return;
	p->rule = *f;
	cfa = (f->base == SHM_BASE_RBP ? p->c.bp : p->c.sp) + f->cfa_off;
	p->seen_ra = *(uint64_t *)(cfa - 8);
	if (f->rbp_saved)
		p->seen_bp = *(uint64_t *)(cfa + f->rbp_off);
	NO_TAIL();
}

static NOIPA WITH_FP void fp_fn(struct probe *p)
{
	p->my_ra = RA();
	ft_capture(&p->c);
	probe_caller(p);
	NO_TAIL();
}

static NOIPA NO_FP void nofp_fn(struct probe *p)
{
	p->my_ra = RA();
	ft_capture(&p->c);
	probe_caller(p);
	NO_TAIL();
}

/* With a frame pointer of its own, so that its rbp is known: the caller's
 * rbp the rule restores. */
static WITH_FP void test_rule_frame_pointer(void)
{
	uint64_t bp = (uint64_t)__builtin_frame_address(0);
	struct probe p = { 0 };

	setup();
	fp_fn(&p);
	expect_int_eq(p.learn_ret, 1);
	expect_int_eq(p.rule.base, SHM_BASE_RBP);
	expect_int_eq(p.rule.cfa_off, 16);
	expect_int_eq(p.rule.rbp_saved, 1);
	expect_int_eq(p.rule.rbp_off, -16);
	expect_u64_eq(p.seen_ra, p.my_ra);
	expect_u64_eq(p.seen_bp, bp);
	expect_int_eq(frametab_learn(ft, p.c.ip), 0);
}

static void test_rule_no_frame_pointer(void)
{
	struct probe p = { 0 };

	setup();
	nofp_fn(&p);
	expect_int_eq(p.learn_ret, 1);
	expect_int_eq(p.rule.base, SHM_BASE_RSP);
	expect_true(p.rule.cfa_off >= 8 && p.rule.cfa_off % 8 == 0);
	expect_int_eq(p.rule.rbp_saved, 0);
	expect_u64_eq(p.seen_ra, p.my_ra);
}

static void test_rule_asm_cfi(void)
{
	struct shm_frame r;

	setup();
	expect_int_eq(frametab_learn(ft, (uint64_t)ft_odd_cfa_ra), -ENOENT);
	expect_int_eq(frametab_learn(ft, (uint64_t)ft_expr_cfa_ra), -ENOENT);
	expect_int_eq(frametab_learn(ft, (uint64_t)ft_ra_elsewhere_ra), -ENOENT);
	expect_int_eq(frametab_learn(ft, (uint64_t)ft_rbp_val_ra), -ENOENT);
	/* the negative cache answers the same */
	expect_int_eq(frametab_learn(ft, (uint64_t)ft_odd_cfa_ra), -ENOENT);
	expect_true(frametab_lookup(table, (uint64_t)ft_odd_cfa_ra) == NULL);

	expect_int_eq(frametab_rule(ft, (uint64_t)ft_rbp_neg_ra, 0, &r), 0);
	expect_int_eq(r.base, SHM_BASE_RSP);
	expect_int_eq(r.cfa_off, 32);
	expect_int_eq(r.rbp_saved, 1);
	expect_int_eq(r.rbp_off, -24);

	expect_int_eq(frametab_learn(ft, (uint64_t)ft_outermost_ra), 1);
	expect_int_eq(frametab_lookup(table, (uint64_t)ft_outermost_ra)->base, SHM_BASE_END);

	/* exact: at ft_capture's entry CFA = rsp + 8, rbp untouched */
	expect_int_eq(frametab_rule(ft, (uint64_t)ft_capture, FRAMETAB_IP_EXACT, &r), 0);
	expect_int_eq(r.base, SHM_BASE_RSP);
	expect_int_eq(r.cfa_off, 8);
	expect_int_eq(r.rbp_saved, 0);
}

static void test_rule_no_code(void)
{
	static uint64_t data_word = 1;
	void *heap = malloc(64);
	uint64_t t0;
	int rc;

	setup();
	expect_int_eq(frametab_learn(ft, 0), -ENOENT);
	expect_int_eq(frametab_learn(ft, (uint64_t)heap + 8), -ENOENT);
	expect_int_eq(frametab_learn(ft, (uint64_t)&data_word + 1), -ENOENT);
	/* in no mapping: the first look reads the maps (a reset forgets when
	 * they were read; ft's target may have read them long before, in an
	 * earlier test), the next, a moment later, does not read them again
	 * (unless the moment was longer than TARGET_MAPS_GAP_NS: a loaded
	 * machine under ASan took that long once) */
	frametab_reset(ft);
	t0 = clock_ns(CLOCK_MONOTONIC);
	expect_int_eq(frametab_learn(ft, 8), -ENOENT);
	rc = frametab_learn(ft, 16);
	if (clock_ns(CLOCK_MONOTONIC) - t0 < TARGET_MAPS_GAP_NS)
		expect_int_eq(rc, -EAGAIN);
	else
		expect_true(rc == -EAGAIN || rc == -ENOENT);
	frametab_reset(ft);
	expect_int_eq(frametab_learn(ft, 8), -ENOENT);
	free(heap);
}

/*
 * A frame neither CFI nor a frame chain leads past: code of no object
 * becomes an end, remembered as such until a reset; code with CFI is left
 * alone. A walk's return addresses count as code up to the first in no
 * executable mapping.
 */
static void test_unwalkable(void)
{
	uint8_t *jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t ip = (uint64_t)jit + 16, cfi = (uint64_t)ft_rbp_neg_ra;
	static uint64_t data_word = 1;
	uint64_t pcs[] = { 8, cfi, ip, (uint64_t)&data_word + 1, cfi };

	expect_true(jit != MAP_FAILED);
	setup();
	frametab_reset(ft);	/* the maps are read again: the new mapping is there */
	expect_int_eq(frametab_code_prefix(ft, pcs, 5), 3);
	expect_int_eq(frametab_code_prefix(ft, pcs, 3), 3);
	pcs[3] = 0x1234;	/* in no mapping, the maps read a moment ago */
	expect_int_eq(frametab_code_prefix(ft, pcs, 5), 3);
	expect_int_eq(frametab_unwalkable(ft, ip), 0);
	expect_int_eq(frametab_set_unwalkable(ft, ip), 1);
	expect_int_eq(frametab_lookup(table, ip)->base, SHM_BASE_END);
	expect_int_eq(frametab_unwalkable(ft, ip), 1);
	expect_int_eq(frametab_set_unwalkable(ft, ip), 1);
	expect_int_eq(frametab_set_unwalkable(ft, cfi), 0);
	expect_int_eq(frametab_unwalkable(ft, cfi), 0);
	expect_true(frametab_lookup(table, cfi) == NULL);
	/* an end already (a root): left as it is */
	expect_int_eq(frametab_set_end(ft, ip + 1), 1);
	expect_int_eq(frametab_set_unwalkable(ft, ip + 1), 0);
	expect_int_eq(frametab_unwalkable(ft, ip + 1), 0);
	frametab_reset(ft);
	expect_int_eq(frametab_unwalkable(ft, ip), 0);
	expect_true(frametab_lookup(table, ip) == NULL);
	munmap(jit, 4096);
}

/* The vDSO has no file: its image is read from memory. */
static void test_rule_vdso(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	const struct elfobj_sym *s;
	const struct proc_map *m;
	struct proc_maps maps;
	struct elfobj *e;
	struct shm_frame r;
	uint64_t bias;

	setup();
	if (!base || proc_maps_read(getpid(), &maps))
		return;
	m = proc_maps_find(&maps, base);
	expect_true(m != NULL);
	if (!m)
		goto out;
	e = elfobj_open_mem((void *)(uintptr_t)m->start, m->end - m->start);
	expect_true(e != NULL);
	if (!e)
		goto out;
	s = elfobj_lookup(e, "__vdso_clock_gettime", 1);
	expect_true(s != NULL);
	if (s && !elfobj_load_bias(e, m, &bias)) {
		expect_int_eq(frametab_rule(ft, bias + s->value, FRAMETAB_IP_EXACT, &r), 0);
		expect_int_eq(r.base, SHM_BASE_RSP);
		expect_int_eq(r.cfa_off, 8);
	}
	elfobj_free(e);
out:
	proc_maps_free(&maps);
}

/*
 * Another process, whose own code has CFI in .debug_frame only (the fixture
 * is built without unwind tables): the rule comes from the fallback.
 * Skipped when the fixture is not built.
 */
static void test_rule_debug_frame_other_process(void)
{
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	struct shm_frame *tab = calloc(SHM_NFRAMES, sizeof(*tab));
	struct frametab *f = NULL;
	struct shm_frame r;
	unsigned long ra = 0;
	int in[2], out[2];
	char path[256], line[128];
	FILE *fp;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/fixtures/debugframe", b);
	if (access(path, X_OK)) {
		printf("skipped: no %s (run make fixtures)\n", path);
		free(tab);
		return;
	}
	if (pipe(in) || pipe(out))
		goto out_free;
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fp = fdopen(out[0], "r");
	while (fp && fgets(line, sizeof(line), fp)) {
		sscanf(line, "retaddr %lx", &ra);
		if (!strncmp(line, "ready", 5))
			break;
	}
	expect_true(ra != 0);
	f = testtarget_frametab(pid, tab);
	expect_int_eq(frametab_rule(f, ra, 0, &r), 0);
	expect_int_eq(r.base, SHM_BASE_RBP);
	expect_int_eq(r.cfa_off, 16);
	expect_int_eq(r.rbp_saved, 1);
	expect_int_eq(r.rbp_off, -16);
	expect_int_eq(frametab_learn(f, ra), 1);
	testtarget_frametab_free(f);
	close(in[1]);		/* the fixture exits */
	if (fp)
		fclose(fp);
	waitpid(pid, NULL, 0);
out_free:
	free(tab);
}

/* ---- (2)(3) walking the live stack with the table ---- */

#define MAXF 128

struct walk {
	struct cap cap;
	uint64_t pcs[MAXF];		/* the tool's unwinder */
	int npcs;
	uint64_t chain[MAXF];		/* the table walk */
	int nchain, ended, missed;	/* ended: stopped at SHM_BASE_END */
	void *bt[MAXF];			/* libunwind local */
	int nbt;
	int learned;
};

/* Walk from w->cap with the table only, as the agent does. */
static void table_walk(struct walk *w)
{
	uint64_t ip = w->cap.ip, sp = w->cap.sp, bp = w->cap.bp;

	w->nchain = w->ended = w->missed = 0;
	while (w->nchain < MAXF) {
		const struct shm_frame *f = frametab_lookup(table, ip);
		uint64_t cfa;

		w->chain[w->nchain++] = ip;
		if (!f) {
			w->missed = 1;
			return;
		}
		if (f->base == SHM_BASE_END) {
			w->ended = 1;
			return;
		}
		cfa = (f->base == SHM_BASE_RSP ? sp : bp) + f->cfa_off;
		if (f->rbp_saved)
			bp = *(uint64_t *)(cfa + f->rbp_off);
		ip = *(uint64_t *)(cfa - 8);
		sp = cfa;
	}
}

static struct unwinder *uw;

/* Called right after ft_capture() in the innermost frame: its own frame is
 * below the captured one, so the captured frames stay intact. */
static NOIPA void check_here(struct walk *w)
{
	struct unwind_regs r = { .ip = w->cap.ip, .sp = w->cap.sp, .bp = w->cap.bp };

	w->npcs = unwind_stack(uw, getpid(), &r, w->pcs, MAXF, 0, 0);
	if (w->npcs > 0)
		w->learned = frametab_learn_many(ft, w->pcs, (size_t)w->npcs);
	table_walk(w);
	w->nbt = unw_backtrace(w->bt, MAXF);
	NO_TAIL();
}

static uint64_t ra_a, ra_b, ra_c, ra_d, ra_cmp;
static struct walk *cur;
static int use_qsort;

static NOIPA NO_FP void fn_d(int x)
{
	ra_d = RA();
	ft_capture(&cur->cap);
	check_here(cur);
	NO_TAIL();
	(void)x;
}

static NOIPA WITH_FP void fn_c(int x)
{
	ra_c = RA();
	fn_d(x + 1);
	NO_TAIL();
}

static NOIPA NO_FP void fn_b(int x)
{
	ra_b = RA();
	fn_c(x + 1);
	NO_TAIL();
}

static int cmp_done;

static NOIPA WITH_FP int cmp_int(const void *p, const void *q)
{
	int a = *(const int *)p, b = *(const int *)q;

	if (!cmp_done) {
		cmp_done = 1;
		ra_cmp = RA();
		fn_b(a);
	}
	NO_TAIL();
	return (a > b) - (a < b);
}

static NOIPA WITH_FP void fn_a(void)
{
	int v[] = { 3, 1, 2, 5, 4 };

	ra_a = RA();
	cmp_done = 0;
	if (use_qsort)
		qsort(v, 5, sizeof(v[0]), cmp_int);
	else
		fn_b(0);
	NO_TAIL();
}

static int find_u64(const uint64_t *v, int n, uint64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return i;
	return -1;
}

/* Compare the table walk with the unwinder and libunwind (expect_* on any difference). */
static void check_walk(const struct walk *w)
{
	int j, k, ia, ib, ic, id;

	expect_true(w->npcs >= 6);
	expect_true(!w->missed);
	expect_true(w->ended);
	/* the tool's unwinder: same chain, frame by frame */
	expect_int_eq(w->nchain, w->npcs);
	for (k = 0; k < w->nchain && k < w->npcs; k++)
		if (w->chain[k] != w->pcs[k]) {
			fprintf(stderr, "frame %d: table 0x%" PRIx64 " unwinder 0x%" PRIx64 "\n",
				k, w->chain[k], w->pcs[k]);
			expect_u64_eq(w->chain[k], w->pcs[k]);
			break;
		}
	/* our frames, in order */
	id = find_u64(w->chain, w->nchain, ra_d);
	ic = find_u64(w->chain, w->nchain, ra_c);
	ib = find_u64(w->chain, w->nchain, ra_b);
	ia = find_u64(w->chain, w->nchain, ra_a);
	expect_int_eq(id, 1);
	expect_int_eq(ic, 2);
	expect_int_eq(ib, 3);
	expect_true(ia > ib);
	if (use_qsort) {
		int icmp = find_u64(w->chain, w->nchain, ra_cmp);

		expect_int_eq(icmp, 4);
		expect_true(ia > icmp + 1);	/* qsort's own frames in between */
	}
	/* libunwind local: from the return into fn_c on, the same addresses */
	for (j = 0; j < w->nbt && (uint64_t)w->bt[j] != ra_d; j++)
		;
	expect_true(j < w->nbt);
	for (k = 1; j < w->nbt && k < w->nchain; j++, k++)
		if ((uint64_t)w->bt[j] != w->chain[k]) {
			expect_u64_eq((uint64_t)w->bt[j], w->chain[k]);
			break;
		}
	/* libunwind may stop before or at the outermost frame, never later */
	expect_true(k >= w->nchain - 1);
}

static int ip_in_object(uint64_t ip, const char *needle)
{
	Dl_info di;

	return dladdr((void *)(uintptr_t)ip, &di) && di.dli_fname && strstr(di.dli_fname, needle);
}

/* The last frame of main's stack is _start in the test binary. */
static int ip_in_start(uint64_t ip)
{
	const struct elfobj_sym *s;
	const struct proc_map *m;
	struct proc_maps maps;
	struct elfobj *e = NULL;
	uint64_t bias;
	int ok = 0;

	if (proc_maps_read(getpid(), &maps))
		return 0;
	m = proc_maps_find(&maps, ip);
	if (m)
		e = elfobj_open_fd(proc_open_mapped(getpid(), m));
	if (e && !elfobj_load_bias(e, m, &bias) && (s = elfobj_lookup(e, "_start", 0)))
		ok = ip - 1 >= bias + s->value && ip - 1 < bias + s->value + s->size;
	elfobj_free(e);
	proc_maps_free(&maps);
	return ok;
}

static void test_walk_main(void)
{
	struct walk *w = calloc(1, sizeof(*w));

	setup();
	uw = testtarget_unwinder(getpid());
	expect_true(uw != NULL);
	cur = w;
	use_qsort = 0;
	/* volatile: one call site, not an unrolled pair */
	for (volatile int i = 0; i < 2; i++) {
		fn_a();
		check_walk(w);
		/* a second identical walk learns nothing new */
		if (i == 0)
			expect_true(w->learned > 0);
		else
			expect_int_eq(w->learned, 0);
	}
	/* the end: _start's return address rule is SHM_BASE_END */
	if (w->nchain >= 2) {
		uint64_t last = w->chain[w->nchain - 1];

		expect_true(ip_in_start(last));
		expect_true(ip_in_object(w->chain[w->nchain - 2], "libc"));
	}
	testtarget_unwinder_free(uw);
	free(w);
}

static void test_walk_through_libc(void)
{
	struct walk *w = calloc(1, sizeof(*w));

	setup();
	uw = testtarget_unwinder(getpid());
	cur = w;
	use_qsort = 1;
	fn_a();
	use_qsort = 0;
	check_walk(w);
	testtarget_unwinder_free(uw);
	free(w);
}

static void *thread_main(void *arg)
{
	fn_a();
	NO_TAIL();
	return arg;
}

static void test_walk_thread(void)
{
	struct walk *w = calloc(1, sizeof(*w));
	pthread_t t;

	setup();
	uw = testtarget_unwinder(getpid());
	cur = w;
	use_qsort = 1;
	expect_int_eq(pthread_create(&t, NULL, thread_main, NULL), 0);
	pthread_join(t, NULL);
	use_qsort = 0;
	check_walk(w);
	/* thread_main's caller is start_thread, then clone3's child path: END */
	if (w->nchain >= 3) {
		uint64_t last = w->chain[w->nchain - 1];

		expect_true(ip_in_object(last, "libc"));
		expect_true(ip_in_object(w->chain[w->nchain - 2], "libc"));
		expect_int_eq(frametab_lookup(table, last)->base, SHM_BASE_END);
	}
	testtarget_unwinder_free(uw);
	free(w);
}

/* ---- (4) table behaviour ---- */

/* An ip in libc's code (exact lookup has a rule) whose home slot is >= min_slot; 0 if none. */
static uint64_t ip_with_slot(struct frametab *f, uint32_t min_slot)
{
	const struct proc_map *m;
	struct proc_maps maps;
	struct shm_frame r;
	uint64_t found = 0;

	if (proc_maps_read(getpid(), &maps))
		return 0;
	m = proc_maps_find(&maps, (uint64_t)(uintptr_t)&qsort);
	for (uint64_t ip = m ? m->start : 0; m && ip < m->end && !found; ip++)
		if (shm_frame_slot(ip) >= min_slot && !frametab_rule(f, ip, FRAMETAB_IP_EXACT, &r))
			found = ip;
	proc_maps_free(&maps);
	return found;
}

static void test_table_probing(void)
{
	struct shm_frame *tab = calloc(SHM_NFRAMES, sizeof(*tab));
	struct frametab *f = testtarget_frametab(getpid(), tab);
	struct frametab_stats st;
	struct probe p = { 0 };
	volatile uint32_t gen = 7;
	uint64_t ip;
	uint32_t h;
	size_t nz = 0;

	setup();
	fp_fn(&p);
	ip = p.c.ip;
	h = shm_frame_slot(ip);
	frametab_set_gen(f, &gen);
	/* home slot taken: the next one; each change bumps the generation */
	tab[h].ip = 0x1111;
	expect_int_eq(frametab_learn(f, ip), 1);
	expect_int_eq(gen, 8);
	expect_true(frametab_lookup(tab, ip) == &tab[(h + 1) & (SHM_NFRAMES - 1)]);
	expect_int_eq(frametab_learn(f, ip), 0);
	expect_int_eq(gen, 8);
	expect_int_eq(frametab_set_end(f, ip), 1);
	expect_int_eq(gen, 9);
	frametab_reset(f);
	expect_int_eq(gen, 10);
	frametab_set_gen(f, NULL);
	expect_true(frametab_lookup(tab, ip) == NULL);
	for (size_t i = 0; i < SHM_NFRAMES; i++)
		nz += tab[i].ip || tab[i].cfa_off || tab[i].base;
	expect_int_eq(nz, 0);

	/* a full window: skipped; one free slot at the end of it: used */
	for (unsigned i = 0; i < SHM_FRAME_PROBES; i++)
		tab[(h + i) & (SHM_NFRAMES - 1)].ip = 0x2000 + i;
	expect_int_eq(frametab_learn(f, ip), -ENOSPC);
	tab[(h + SHM_FRAME_PROBES - 1) & (SHM_NFRAMES - 1)].ip = 0;
	expect_int_eq(frametab_learn(f, ip), 1);
	expect_true(frametab_lookup(tab, ip) == &tab[(h + SHM_FRAME_PROBES - 1) & (SHM_NFRAMES - 1)]);
	frametab_reset(f);
	expect_int_eq(frametab_learn(f, ip), 1);
	expect_true(frametab_lookup(tab, ip) == &tab[h]);

	/* wrap-around at the end of the table */
	frametab_reset(f);
	ip = ip_with_slot(f, SHM_NFRAMES - 2);
	expect_true(ip != 0);
	if (ip) {
		h = shm_frame_slot(ip);
		for (uint32_t s = h; s < SHM_NFRAMES; s++)
			tab[s].ip = 0x3000 + s;
		expect_int_eq(frametab_learn_flags(f, ip, FRAMETAB_IP_EXACT), 1);
		expect_true(frametab_lookup(tab, ip) == &tab[0]);
	}
	frametab_get_stats(f, &st);
	expect_int_eq(st.full, 1);
	expect_true(st.objects >= 1);
	testtarget_frametab_free(f);
	free(tab);
}

/* ---- timing ---- */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* learn() cost for new ips: the middle of every function libc exports. */
static void test_learn_cost(void)
{
	struct shm_frame *tab = calloc(SHM_NFRAMES, sizeof(*tab));
	struct frametab *f = testtarget_frametab(getpid(), tab);
	const struct elfobj_sym *syms;
	const struct proc_map *m;
	struct proc_maps maps = { 0 };
	struct elfobj *e = NULL;
	uint64_t bias, *ips = NULL;
	size_t nsyms, n = 0, ok = 0;
	double t0, t1, t2, t3;

	if (proc_maps_read(getpid(), &maps))
		goto out;
	m = proc_maps_find(&maps, (uint64_t)(uintptr_t)&qsort);
	if (m)
		e = elfobj_open_fd(proc_open_mapped(getpid(), m));
	expect_true(e != NULL);
	if (!e || elfobj_load_bias(e, m, &bias))
		goto out;
	syms = elfobj_syms(e, &nsyms);
	ips = calloc(nsyms + 1, sizeof(*ips));
	for (size_t i = 0; i < nsyms; i++)
		if (syms[i].type == STT_FUNC && syms[i].shndx != SHN_UNDEF && syms[i].size >= 16)
			ips[n++] = bias + syms[i].value + syms[i].size / 2;
	if (n < 2)
		goto out;
	t0 = now_us();
	frametab_learn(f, ips[0]);		/* opens libc */
	t1 = now_us();
	for (size_t i = 1; i < n; i++)
		ok += frametab_learn(f, ips[i]) >= 0;
	t2 = now_us();
	for (size_t i = 1; i < n; i++)
		frametab_learn(f, ips[i]);
	t3 = now_us();
	printf("learn: first ip in libc %.0f us (opens the object); %zu new ips: %.2f us each "
	       "(%zu with a rule); known ip: %.3f us\n",
	       t1 - t0, n - 1, (t2 - t1) / (double)(n - 1), ok, (t3 - t2) / (double)(n - 1));
	expect_true(ok > (n - 1) * 9 / 10);
out:
	free(ips);
	elfobj_free(e);
	proc_maps_free(&maps);
	testtarget_frametab_free(f);
	free(tab);
}

HARNESS_MAIN("frametab",
	T(test_rule_frame_pointer),
	T(test_rule_no_frame_pointer),
	T(test_rule_asm_cfi),
	T(test_rule_no_code),
	T(test_unwalkable),
	T(test_rule_vdso),
	T(test_rule_debug_frame_other_process),
	T(test_walk_main),
	T(test_walk_through_libc),
	T(test_walk_thread),
	T(test_table_probing),
	T(test_learn_cost))
