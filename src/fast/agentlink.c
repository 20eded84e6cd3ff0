/* The tool's side of the in-target agent: shared data setup, draining the rings, teaching frame rules. */
/* SPDX-License-Identifier: MIT */
/*
 * The shared area is input from the target: it can write every byte of
 * it, through its own view, at any moment. So the geometry and settings
 * are the tool's own (the header as written, l->want, and l->rings), never
 * read back; a record is parsed from a private copy (ring.c) and checked
 * against what the agent writes (alloc_ok); the header is compared with
 * our copy after every drain, and the counters are believed only as far
 * as they could have grown since the area was set up. The first thing the
 * agent could not have written makes the link hostile (shm_hostile):
 * nothing in the area is read any more, and session.c detaches. What
 * well-formed events can cost is capped too: the profile's tables
 * (profile.h), the frame rules learnt a second (frametab.c) and the time
 * a drain may take.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#include <time.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/satmath.h"
#include "base/sys_compat.h"
#include "base/xmalloc.h"
#include "fast/adapt.h"
#include "fast/agentlink.h"
#include "fast/ring.h"
#include "fast/stackids.h"
#include "fast/toolguard.h"
#include "framewalk.h"
#include "model/mapguard.h"
#include "model/proc.h"
#include "model/target.h"
#include "profile/profile.h"
#include "profile/sampler.h"
#include "ptrace/seccomp_plan.h"
#include "ptrace/tracee.h"
#include "python/pyframes.h"
#include "stacks/copywalk.h"
#include "stacks/frametab.h"
#include "stacks/ownframes.h"
#include "stacks/unwind.h"
#include "timestamp.h"
#include "tramp_fast.h"
#include "xacct_arch.h"

#define DRAIN_BATCH 65536
#define NAP_MIN_NS 1000000ULL		/* 1 ms */
#define NAP_MAX_NS 20000000ULL		/* 20 ms */
#define DRAIN_NS 100000000ULL		/* a drain hands over events for at most 100 ms */
#define DRAIN_CLOCK_EVERY 64		/* events between two looks at the clock */
#define QUIESCE_DRAIN_MAX 65536		/* records drained per round of implant_wait_quiet:
					 * room for writers waiting, not the whole backlog */
/* Counters no agent can raise faster: 16 a nanosecond since the area was set up. */
#define COUNT_PER_NS 16
#define COUNT_SLACK (1ULL << 20)
#define OP_BATCH 64
#define FP_REFRESH_NS 50000000ULL	/* maps read for new JIT code at most this often */
#define BEAT_NS 50000000L		/* the heartbeat thread's period: 50 ms */
#define SHIFT_HIST 256			/* interval changes kept for events still in the rings */

struct agent_link {
	struct agent_link_params p;
	struct shm_hdr *shm;            /* our view of the shared data (the first region's) */
	const struct shm_hdr *want;     /* its header as we wrote it (the implant's copy) */
	uint8_t *map;                   /* that view's mapping, once the implant handed it
					 * over (the target's are gone), and its size */
	size_t map_size;
	struct frametab *ftab;          /* frame rules the agent walks with */
	struct ownframes *own;          /* rules of our own code there (trampolines, agent) */
	struct copywalk_stats cwst;     /* walks of copies through it */
	int watching;                   /* on_code_change is the target's listener */
	struct tramp_fast_env fenv;     /* where trampolines find the data and the agent */
	struct toolguard guard;         /* tool_alive and the agent's faults (toolguard.h) */
	uint64_t faults;                /* the agent's loads that faulted, taken back */
	struct ring_reader rings;       /* our side of the event rings */
	struct profile_op ops[OP_BATCH]; /* events not yet recorded */
	size_t nops;
	uint64_t drops_seen;
	uint64_t nap_head, nap_ns;      /* ring_heads_total and time at the last nap_ns */
	uint64_t since;                 /* CLOCK_MONOTONIC ns when the area was set up */
	uint64_t drain_deadline;        /* a drain hands over no event after this */
	unsigned drain_left;            /* events until the drain looks at the clock */
	unsigned depth;                 /* frames the agent walks: our copy, never read back */
	int exact;                      /* every call recorded (rate 1) */
	int hostile;                    /* it held what no agent writes: trusted no more */
	int learn_noted;                /* the learning cap was said */
	int final;                      /* no writer will come back (agent_link_final) */
	int beating;                    /* beat_thread runs (agent_link_beat_start) */
	int beat_stop;                  /* under beat_lock: it is to end */
	pthread_t beat_thread;
	pthread_mutex_t beat_lock;
	pthread_cond_t beat_cond;
	int fp_stale;                   /* a walk missed in code of no known range */
	uint32_t fp_ranges;             /* frame-pointer ranges published */
	uint64_t fp_read_ns;            /* when the maps were last read for them */
	unsigned py_max;                /* Python words an event may carry (0: none) */

	/* Sampled mode: the interval in force is p.rate << ad.shift (adapt.h). */
	struct adapt_state ad;
	struct shift_change {
		uint64_t tsc;           /* our time stamp just before the agent could see it */
		uint8_t shift, before;
	} shifts[SHIFT_HIST];           /* the last SHIFT_HIST changes, by nshifts % SHIFT_HIST */
	uint64_t nshifts;
	uint64_t napped_ns;             /* time spent in agent_link_nap, in all */
	uint64_t raised_from_ns;        /* the current raised period's start */
	uint64_t nallocs, nfrees;       /* events handled, in all */

	/* Exact mode's in-target accounting (SHM_F_XACCT; xacct_*, below). */
	uint64_t xslots;                /* slots of the xlive table; 0: no accounting */
	int xtp;                        /* thread ids from %fs:0, not rdfsbase (SHM_F_XTP) */
	int xshared;                    /* lanes closed (SHM_F_XSHARED): threads share an id */
	uint64_t xbytes_seen;           /* the lanes' alloc_bytes at the last look (--interval) */
	struct xpages {                 /* the pages of a region the agent has touched */
		uint64_t off, n;        /* entries (16 bytes) from offset off of the area */
		uint8_t *seen;          /* by page of our view from the region's first */
	} xcount_pages, xlive_pages;
	uint64_t xbad_keys, xbad_counts, xbad_ptrs, xtorn;	/* entries not believed */
	int xbad_noted;                 /* said once (debug) */
	uint64_t xsyncs, xsync_max_ns;  /* readings, and the longest (debug) */
	int xfinal_read;                /* read after agent_link_final: nothing changes now */
	struct { uint64_t ptr, size; } *xbig;   /* accounted blocks of AGENT_LINK_BIG bytes
						 * or more at the last reading */
	size_t nxbig, xbig_cap;
};

uint64_t agent_link_ring_size(uint64_t rate)
{
	/*
	 * Bytes of each of the SHM_NRINGS rings (in practice one per thread;
	 * only the pages a ring uses are ever touched). At 256 KiB and more per
	 * sample even 20 GB/s of allocation sends ~8 MB/s: 2 MiB holds a
	 * quarter of a second. Higher rates send up to hundreds of MB/s per
	 * thread, and until the frame table is learnt each event carries an
	 * 8 KiB stack copy: they need room for the tool's first, slow moments.
	 */
	return rate >= 256 * 1024 ? 2u << 20 : 8u << 20;
}

uint64_t agent_link_data_size(uint64_t ring_size, uint64_t xlive_slots)
{
	return SHM_OFF_RING + SHM_NRINGS * ring_size + SHM_XACCT_SIZE(xlive_slots);
}

uint64_t agent_link_xacct_slots(uint64_t budget)
{
	if (!budget)
		return 0;
	if (getenv("HEAPATTACH_NO_XACCT")) {
		pr_debug("in-target accounting off (HEAPATTACH_NO_XACCT)");
		return 0;
	}
	return budget;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Thread tid's id for the agent's lanes (its fs base, into *id; with
 * SHM_F_XTP the word there, which must be the same): NULL, or why the
 * agent could not use it; *gone when that is because the thread exited. */
static const char *thread_id(const struct agent_link *l, pid_t pid, pid_t tid, uint64_t *id,
			     int *gone)
{
	int rc = arch_xacct_tp_check(pid, tid, id);

	*gone = rc < 0 && !tracee_thread_alive(pid, tid);
	if (rc < 0)
		return "registers cannot be read";
	if (!rc && l->xtp)
		return "first TLS word is not its thread pointer";
	return NULL;
}

int agent_link_xacct_threads(struct agent_link *l, struct tracee *tr)
{
	uint64_t *tps;
	size_t n = 0;
	const char *why = NULL, *whose = "a thread's ";
	int gone;

	if (!l->xslots)
		return 0;
	tps = xcalloc(tr->n + 1, sizeof(*tps));
	for (size_t i = 0; i < tr->n && !why; i++) {
		struct thread *th = &tr->t[i];

		if (th->vfork_child)	/* runs on its parent's thread pointer, the parent waiting */
			continue;
		why = thread_id(l, tr->pid, th->tid, &th->tp, &gone);
		if (gone) {
			why = NULL;	/* gone meanwhile */
			th->tp = 0;
			continue;
		}
		if (!why && th->tp)
			tps[n++] = th->tp;	/* none (rdfsbase, fs base 0): no lane */
	}
	qsort(tps, n, sizeof(*tps), cmp_u64);
	for (size_t i = 1; i < n && !why; i++)
		if (tps[i] == tps[i - 1]) {
			why = "two threads share a thread pointer";
			whose = "";
		}
	if (!why && !n) {
		why = "no thread's thread pointer could be read";
		whose = "";
	}
	free(tps);
	if (why) {
		pr_debug("in-target accounting off: %s%s", whose, why);
		l->xslots = 0;
		return 0;
	}
	if (l->xtp)
		pr_debug("in-target accounting: threads told apart by %%fs:0 (no rdfsbase here)");
	return 1;
}

struct agent_link *agent_link_new(const struct agent_link_params *p)
{
	struct agent_link *l = xcalloc(1, sizeof(*l));
	uint64_t x = p->xlive_slots;

	l->p = *p;
	l->own = ownframes_new();
	l->exact = p->rate == 1;
	l->depth = shm_depth(p->max_depth);
	if (l->exact && x && !(x & (x - 1)) && x <= SHM_XLIVE_MAX)
		l->xslots = x;
	/* the agent tells its threads apart by their fs base: rdfsbase, or %fs:0 */
	l->xtp = l->xslots && !arch_xacct_allowed(proc_auxv_get(p->pid, ARCH_XACCT_AUXV));
	return l;
}

static uint8_t *data_of(struct agent_link *l)
{
	return (uint8_t *)l->shm;
}

/* The shared layout is mapped and set up (not yet, or no longer, released):
 * after detach too, until agent_link_free(), so that what the rings hold
 * is read once the target runs again. */
static int ready(const struct agent_link *l)
{
	return l && l->shm && l->ftab;
}

void agent_link_heartbeat(struct agent_link *l)
{
	if (ready(l))
		__atomic_store_n(&l->shm->heartbeat, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
}

/*
 * The beating thread: refreshes the heartbeat every BEAT_NS until told to
 * stop. It only stores the time into our view of the area, so the heartbeat
 * says "heapattach runs" whatever its main thread is busy with (a table
 * doubling, a dump, a write or a page fault that sleeps in the kernel), and
 * goes stale only when heapattach is gone, stopped or gets no CPU at all.
 * It blocks every signal (they stay the main thread's) but SIGBUS, which
 * its store raises if the target shrank shared memory it could not seal
 * (mapguard.c maps a zero page there, and the next drain finds the area
 * cut short), and SIGSEGV.
 */
static void *beat_main(void *arg)
{
	struct agent_link *l = arg;
	struct timespec until;

	pthread_mutex_lock(&l->beat_lock);
	while (!l->beat_stop) {
		agent_link_heartbeat(l);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += BEAT_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&l->beat_cond, &l->beat_lock, &until);
	}
	pthread_mutex_unlock(&l->beat_lock);
	return NULL;
}

void agent_link_beat_start(struct agent_link *l)
{
	pthread_condattr_t ca;
	sigset_t all, old;

	if (!ready(l) || l->beating)
		return;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->beat_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&l->beat_lock, NULL);
	l->beat_stop = 0;
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	pthread_sigmask(SIG_SETMASK, &all, &old);	/* inherited by the thread */
	l->beating = !pthread_create(&l->beat_thread, NULL, beat_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!l->beating) {
		pthread_cond_destroy(&l->beat_cond);
		pthread_mutex_destroy(&l->beat_lock);
		pr_debug("no heartbeat thread: the heartbeat is refreshed between drains only");
	}
}

void agent_link_beat_stop(struct agent_link *l)
{
	if (!l || !l->beating)
		return;
	pthread_mutex_lock(&l->beat_lock);
	l->beat_stop = 1;
	pthread_cond_signal(&l->beat_cond);
	pthread_mutex_unlock(&l->beat_lock);
	pthread_join(l->beat_thread, NULL);
	pthread_cond_destroy(&l->beat_cond);
	pthread_mutex_destroy(&l->beat_lock);
	l->beating = 0;
}

/* Fault in len bytes of our shared mapping at p (page aligned), so that
 * their pages are charged to our memory cgroup rather than the target's. */
static void prefault(uint8_t *p, size_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < len; off += 4096)
		__atomic_fetch_or(&p[off], 0, __ATOMIC_RELAXED);
}

/*
 * target_on_change listener (after the frame table's reset): forget the
 * stack ids too. An id stands for the frames the agent walked, which stay
 * true, but the walks that led to them used rules of the old code.
 */
static void on_code_change(void *arg, const struct proc_maps *old)
{
	struct agent_link *l = arg;

	(void)old;
	if (ready(l))
		stackids_reset((struct shm_stack *)(data_of(l) + SHM_OFF_STACKS));
}

static void fp_refresh(struct agent_link *l);
static void xacct_bytes(struct agent_link *l);
static void xacct_stats(struct agent_link *l);
static void note(struct agent_link *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* shm_exp_gap's multiplier for a mean interval of rate bytes; rates above
 * 2^46 (64 TiB) sample as that. */
static uint64_t gap_mul_of(uint64_t rate)
{
	return (uint64_t)((double)(rate < (1ull << 46) ? rate : 1ull << 46) * M_LN2 * 65536.0 + 0.5);
}

/* Fill the shared layout (already mapped, zeroed by ftruncate); what goes
 * into the header goes into the implant's copy (w) first. */
static void init_data(struct agent_link *l, struct shm_hdr *h, struct shm_hdr *w)
{
	uint8_t *d = (uint8_t *)h;

	l->shm = h;
	l->want = w;
	/* charged to our memory cgroup, not the target's (membudget.c) */
	if (l->p.prefault)
		prefault(d, SHM_OFF_RING);
	w->flags = (l->exact ? SHM_F_EXACT : 0) | (l->xslots ? SHM_F_XACCT : 0) |
		   (l->xslots && l->xtp ? SHM_F_XTP : 0) | l->p.sc->shm_flags;
	w->xlive_slots = l->xslots;	/* its regions after the rings: never prefaulted */
	h->no_stack_copy = l->p.sc->no_stack_copy;	/* seccomp: no process_vm_readv */
	w->data_remote = l->fenv.data;
	w->ring_size = l->p.ring_size;
	w->rate = l->p.rate;
	w->max_depth = l->depth;
	w->gap_mul = gap_mul_of(w->rate);
	h->flags = w->flags;
	h->data_remote = w->data_remote;
	h->ring_size = w->ring_size;
	h->rate = w->rate;
	h->gap_mul = w->gap_mul;
	h->max_depth = w->max_depth;
	h->xlive_slots = w->xlive_slots;
	if (l->p.py && l->p.py->kind && l->p.pyframes) {
		if (l->p.sc->no_stack_copy) {
			/* the agent reads other threads' states only through it */
			note(l, "the target's seccomp filter may refuse process_vm_readv: no "
			     "Python frames, native stacks only");
		} else {
			w->py = *l->p.py;
			w->py.found = w->py.not_found = 0;
			h->py = w->py;
			l->py_max = w->py.max_frames < SHM_PY_MAX_FRAMES ? w->py.max_frames :
									  SHM_PY_MAX_FRAMES;
		}
	}
	l->since = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		struct shm_counter *c = (struct shm_counter *)(d + SHM_OFF_COUNTERS +
							       i * SHM_COUNTER_STRIDE);

		c->left = l->exact ? 0 : (int64_t)sampler_next_gap(l->p.sampler);
		c->rng = sampler_rand(l->p.sampler) | 1;	/* xorshift seed, non-zero */
	}
	memset(d + SHM_OFF_BITS, l->exact ? 0xff : 0, SHM_BLOOM_SIZE / 8);
	ring_reader_init(&l->rings, h, l->p.ring_size, l->depth, l->py_max);
	l->ftab = l->p.target ?
		  frametab_new_target(l->p.target, (struct shm_frame *)(d + SHM_OFF_FRAMES)) : NULL;
	if (l->ftab) {
		struct frametab_stats fs;

		frametab_set_gen(l->ftab, &h->walk_gen);
		frametab_prime_go(l->ftab);
		frametab_get_stats(l->ftab, &fs);
		if (fs.go_nosyms)
			note(l, "a Go binary without symbols (-ldflags=-s): stacks through cgo "
			     "calls end at runtime.asmcgocall (not supported)");
	}
	agent_link_heartbeat(l);	/* ready now: writers must not find none */
	/* before the hooks go in: till then the agent walks nothing */
	if (toolguard_arm(&l->guard, &h->tool_alive))
		pr_warn("cannot set up the guard of the agent's reads (set_robust_list): "
		     "no stacks will be walked in the target");
	if (l->p.target && !target_on_change(l->p.target, on_code_change, l))
		l->watching = 1;
	fp_refresh(l);
}

/* Say msg once on stderr and in the profile (the run's note). */
static void note(struct agent_link *l, const char *fmt, ...)
{
	char msg[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->p.note)
		l->p.note(l->p.note_arg, msg);
	else
		pr_warn("%s", msg);
}

/*
 * The shared area is no longer trusted: the target wrote what the agent
 * never writes (what). Said once, on stderr and in the profile; from now
 * on nothing in the area is read (session.c detaches).
 */
static void shm_hostile(struct agent_link *l, const char *what)
{
	if (l->hostile)
		return;
	/* pages past a cut read as zeros (mapguard): whatever field they zeroed
	 * first is a symptom, the cut is the cause */
	if (mapguard_zeroed_in(data_of(l) - REGION_CODE))
		what = "it cut the memory short";
	l->hostile = 1;
	note(l, "%d wrote over heapattach's shared memory (%s): it is no longer "
	     "trusted; detaching, the profile ends there", l->p.pid, what);
}

int agent_link_hostile(const struct agent_link *l)
{
	return l && l->hostile;
}

/* ---- code walked by its frame pointer (shm_hdr.fp) ---- */

/* Whether m is code of no ELF object: anonymous (or [anon:...]) or a memfd
 * other than ours, executable. */
static int jit_code(const struct proc_map *m)
{
	if (!(m->prot & PROC_MAP_X))
		return 0;
	if (!m->path || !strncmp(m->path, "[anon", 5))
		return 1;
	return !strncmp(m->path, "/memfd:", 7) && strncmp(m->path, "/memfd:heapattach", 17);
}

/*
 * The target's JIT-like code, into at most SHM_FP_RANGES ranges:
 * adjacent mappings are merged, then the two ranges with the smallest
 * gap between them until they fit (a rule for code in a gap still comes
 * first). Returns the count.
 */
static uint32_t fp_ranges(const struct proc_maps *m, struct shm_range *v)
{
	uint32_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct proc_map *p = &m->v[i];

		if (!jit_code(p))
			continue;
		if (n && v[n - 1].hi == p->start) {
			v[n - 1].hi = p->end;
			continue;
		}
		if (n == SHM_FP_RANGES) {
			uint32_t best = 0;

			for (uint32_t k = 1; k + 1 < n; k++)
				if (v[k + 1].lo - v[k].hi < v[best + 1].lo - v[best].hi)
					best = k;
			v[best].hi = v[best + 1].hi;
			memmove(&v[best + 1], &v[best + 2], (n - best - 2) * sizeof(*v));
			n--;
		}
		v[n++] = (struct shm_range){ p->start, p->end };
	}
	return n;
}

/* Read the maps and publish the ranges (ours first, then the shared
 * header: ranges before their count). */
static void fp_refresh(struct agent_link *l)
{
	struct shm_hdr *w = (struct shm_hdr *)l->want;
	struct shm_range v[SHM_FP_RANGES];
	uint32_t n;

	l->fp_read_ns = clock_ns(CLOCK_MONOTONIC);
	l->fp_stale = 0;
	/* the one cache of the maps: a change of code seen here is acted on
	 * like any other (target_on_change); no target, no maps */
	if (!l->p.target || target_maps_reload(l->p.target) < 0 || !target_maps(l->p.target))
		return;
	n = fp_ranges(target_maps(l->p.target), v);
	if (n == w->fp_n && !memcmp(v, w->fp, n * sizeof(*v)))
		return;
	w->fp_n = 0;
	l->shm->fp_n = 0;
	shm_barrier();
	memcpy(w->fp, v, sizeof(v));
	memcpy((void *)l->shm->fp, v, sizeof(v));
	shm_barrier();
	w->fp_n = n;
	l->shm->fp_n = n;
	shm_barrier();
	l->shm->walk_gen++;	/* walks the agent kept took the old ranges */
	l->fp_ranges = n;
}

/* A walk missed at ip: if it is no frame-pointer code we know of, look at
 * the maps again soon (new JIT code), at most every FP_REFRESH_NS. */
static void fp_missed(struct agent_link *l, uint64_t ip)
{
	struct walk_fp fp = { l->want->fp, l->want->fp_n };

	if (!walk_fp_has(&fp, ip))
		l->fp_stale = 1;
}

/* Header fields the tool wrote and nothing else does, by name. */
static const struct {
	size_t off, len;
	const char *name;
} hdr_fields[] = {
#define F(f) { offsetof(struct shm_hdr, f), sizeof(((struct shm_hdr *)0)->f), #f }
	F(magic), F(version), F(flags), F(total_size), F(data_remote), F(code_remote),
	F(code_size), F(tool_pid), F(target_pid), F(ring_size), F(rate), F(npatches),
	F(max_depth), F(patches), F(nest_n), F(nest), F(gap_mul), F(stats_kind), F(stats_fn),
	F(stats_n), F(stats_names), F(fp_n), F(fp), F(py.kind), F(py.max_frames), F(py.holder),
	F(py.threads_head), F(py.ts_next), F(py.ts_thread_id), F(py.ts_frame),
	F(py.cf_current_frame), F(py.fr_back), F(py.fr_code), F(py.fr_lasti), F(py.fr_owner),
	F(py.fr_is_entry), F(py.co_code_adaptive), F(py.co_firsttraceable), F(xlive_slots),
#undef F
};

/* Compare the shared header with what we wrote (l->want); the first
 * field that differs makes the link hostile. */
static void check_header(struct agent_link *l)
{
	const uint8_t *h = (const uint8_t *)l->shm, *w = (const uint8_t *)l->want;
	char what[96];

	for (size_t i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++) {
		if (!memcmp(h + hdr_fields[i].off, w + hdr_fields[i].off, hdr_fields[i].len))
			continue;
		snprintf(what, sizeof(what), "its header's %s changed", hdr_fields[i].name);
		shm_hostile(l, what);
		return;
	}
}

/*
 * ---- the sampling interval, raised while heapattach cannot keep up ----
 *
 * In sampled mode a writer that finds its ring full drops its event, and
 * dropped samples bias the profile (whatever allocates fastest loses
 * most). So while the rings fill faster than we empty them, we sample
 * less: the agent draws each gap with the header's gap_mul, and we raise
 * the mean interval to rate << shift, then lower it step by step once we
 * keep up. Each sample is scaled by the interval it was drawn with (its
 * bucket's rate, profile.h), so the estimates stay unbiased, only
 * coarser. A change is stamped with our time stamp, the clock of the
 * records: an event stamped before it was sampled at the interval before
 * (a sample taken a moment before and stamped after, the walk in between,
 * is counted at the new one: a few events a change). The counters are
 * set to fresh gaps of the new interval at once (the marks are memoryless,
 * so this is the new sampling from then on), rather than running out
 * gaps of the old one. What the target writes can only make us raise our
 * own interval, up to PROFILE_MAX_SHIFT (its drops, its rings' fill).
 */

/* The shift in force when an event stamped tsc was sampled. */
static unsigned shift_at(const struct agent_link *l, uint64_t tsc)
{
	uint64_t n = l->nshifts, k;
	unsigned before = l->ad.shift;

	for (k = 0; k < n && k < SHIFT_HIST; k++) {
		const struct shift_change *c = &l->shifts[(n - 1 - k) % SHIFT_HIST];

		if (tsc >= c->tsc)
			return c->shift;
		before = c->before;
	}
	return before;	/* older than every change kept */
}

/* Sample at rate << shift from now on, after rate << before (adapt_judge's
 * verdict): the header's gap_mul (ours first), then every counter to a
 * fresh gap; the profile keeps the period. */
static void set_shift(struct agent_link *l, unsigned before, unsigned shift, uint64_t now)
{
	struct shift_change *c = &l->shifts[l->nshifts % SHIFT_HIST];
	uint64_t gm = gap_mul_of(l->p.rate << shift);
	char a[32], b[32];

	c->before = (uint8_t)before;
	c->shift = (uint8_t)shift;
	c->tsc = arch_timestamp();
	l->nshifts++;
	((struct shm_hdr *)l->want)->gap_mul = gm;
	__atomic_store_n(&l->shm->gap_mul, gm, __ATOMIC_RELEASE);
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		struct shm_counter *k = (struct shm_counter *)(data_of(l) + SHM_OFF_COUNTERS +
							       i * SHM_COUNTER_STRIDE);

		__atomic_store_n(&k->left, (int64_t)shm_exp_gap(sampler_rand(l->p.sampler), gm),
				 __ATOMIC_RELAXED);
	}
	profile_set_shift(l->p.prof, shift, now);
	if (!before) {
		l->raised_from_ns = now;
		pr_warn("%d allocates faster than heapattach can follow at a sampling interval of "
			"%s: raised to %s while it cannot keep up (each sample is scaled by the "
			"interval it was taken at; the profile's comments say for how long)",
			(int)l->p.pid, profile_interval_text(l->p.rate, a, sizeof(a)),
			profile_interval_text(l->p.rate << shift, b, sizeof(b)));
	} else if (!shift) {
		pr_debug("sampling interval back to %s after %.1f s",
			 profile_interval_text(l->p.rate, a, sizeof(a)), (now - l->raised_from_ns) / 1e9);
	} else {
		pr_debug("sampling interval now %s",
			 profile_interval_text(l->p.rate << shift, a, sizeof(a)));
	}
}

/* The largest shift: PROFILE_MAX_SHIFT, and the rate within PROFILE_MAX_RATE. */
static unsigned max_shift(const struct agent_link *l)
{
	unsigned s = 0;

	while (s < PROFILE_MAX_SHIFT && l->p.rate <= (PROFILE_MAX_RATE >> (s + 1)))
		s++;
	return s;
}

/* The bytes our readers have consumed from all rings. */
static uint64_t tails_total(const struct agent_link *l)
{
	uint64_t t = 0;

	for (unsigned r = 0; r < SHM_NRINGS; r++)
		t += l->rings.tail[r];
	return t;
}

/* After a drain: the window's figures to the controller (adapt.h), and
 * its verdict applied. */
static void adapt(struct agent_link *l, uint64_t now)
{
	unsigned top = max_shift(l), before = l->ad.shift;
	struct adapt_verdict v;
	struct adapt_window w;

	if (l->exact || l->hostile || l->final || !top)
		return;
	w = (struct adapt_window){
		.now = now,
		.drops = __atomic_load_n(&l->shm->drops, __ATOMIC_RELAXED),
		.heads = ring_heads_total(&l->rings),
		.tails = tails_total(l),
		.napped = l->napped_ns,
		.allocs = l->nallocs,
		.frees = l->nfrees,
		.most = ring_pending_max(&l->rings),
		.size = l->rings.size,
		.top = top,
	};
	adapt_judge(&l->ad, &w, &v);
	if (v.say & ADAPT_SAY_DROPS)
		pr_debug("%llu events dropped in %.0f ms, the fullest ring %llu%% full, busy %.0f%%",
			 (unsigned long long)v.dropped, v.span_ns / 1e6,
			 (unsigned long long)(w.most * 100 / w.size), v.busy * 100);
	if (v.say & ADAPT_SAY_FUTILE)
		pr_debug("behind on frees of overflowed live buckets: no interval helps");
	if (v.shift != before)
		set_shift(l, before, v.shift, now);
}

/* ---- events ---- */

/* Hand the queued events to the profile (they are recorded in batches). */
static void flush_ops(struct agent_link *l)
{
	profile_record_batch(l->p.prof, l->ops, l->nops);
	l->nops = 0;
}

static void queue_op(struct agent_link *l, uint32_t kind, uint32_t stack, uint64_t size,
		     uint64_t ptr, unsigned shift)
{
	l->ops[l->nops++] = (struct profile_op){ kind, stack, size, ptr, shift };
	if (l->nops == OP_BATCH)
		flush_ops(l);
}

/* The agent keeps its live table itself: only the profile to update. */
static void on_free(struct agent_link *l, const struct shm_ev_free *e)
{
	l->p.stats->events++;
	l->nfrees++;
	queue_op(l, PROFILE_OP_FREE, 0, 0, e->ptr, 0);
}

#define EVF_KNOWN (SHM_EVF_STACK | SHM_EVF_TRUNC | SHM_EVF_MISS | SHM_EVF_UNTABLED | \
		   SHM_EVF_STACKID | SHM_EVF_NOCOPY | SHM_EVF_HOP | (0xffu << SHM_EVF_HOOK_SHIFT) | \
		   (0xffu << SHM_EVF_PY_SHIFT))

/*
 * Whether an allocation record of len bytes (our copy) is one the agent
 * writes: at most our depth of frames, exactly our depth if the walk was
 * cut there, or none if there was no walk (cut at 0: every scratch held;
 * never on a miss), at most the Python words we allow, its length exactly
 * what its frames, registers and copy take (agent_alloc; NOCOPY only on a
 * miss of sampled mode, with no copy), a stack id is one we gave out, and
 * its pointer and size are user-space figures of a call that succeeded.
 */
static int alloc_ok(const struct agent_link *l, const struct shm_ev_alloc *e, uint32_t len)
{
	uint32_t f = e->flags;
	size_t base = sizeof(*e) + ((size_t)e->nframes + SHM_EVF_PY(f)) * 8;

	if (e->nframes > l->depth || SHM_EVF_PY(f) > l->py_max || (f & ~EVF_KNOWN) || !e->ptr ||
	    e->ptr >= SHM_ADDR_LIMIT || e->size >= SHM_ADDR_LIMIT)
		return 0;
	/* cut at the depth, or at 0: a call with no scratch free, not walked */
	if ((f & SHM_EVF_TRUNC) &&
	    ((f & SHM_EVF_MISS) ||
	     (!(f & SHM_EVF_STACKID) && e->nframes != l->depth && e->nframes)))
		return 0;
	if ((f & SHM_EVF_NOCOPY) && (l->exact || !(f & SHM_EVF_MISS) || (f & SHM_EVF_STACK)))
		return 0;
	/* a hop's miss: the frames before the one it missed in, the hop's at least */
	if ((f & SHM_EVF_HOP) && (!(f & SHM_EVF_MISS) || !e->nframes || e->nframes >= l->depth))
		return 0;
	if (f & SHM_EVF_STACKID)
		return !e->nframes && !(f & (SHM_EVF_MISS | SHM_EVF_STACK)) && len == base &&
		       e->stack_id < profile_nstacks(l->p.prof);
	if (!(f & SHM_EVF_MISS))
		return !(f & SHM_EVF_STACK) && !e->stack_len && len == base;
	base += sizeof(struct frame_regs);
	if (f & SHM_EVF_STACK)
		return e->stack_len && e->stack_len <= SHM_STACK_COPY &&
		       len == base + SHM_STACK_COPY;
	if (f & SHM_EVF_NOCOPY)
		return !e->stack_len && len == base;
	return !e->stack_len && (len == base || len == base + SHM_STACK_COPY);
}

/* The walks of stack copies with our copy of what the agent walks with. */
static struct copywalk copywalk_of(struct agent_link *l)
{
	return (struct copywalk){
		.unw = l->p.unw,
		.table = (const struct shm_frame *)(data_of(l) + SHM_OFF_FRAMES),
		.fp = { l->want->fp, l->want->fp_n },
		.depth = l->depth,
		.own = l->own,
		.st = &l->cwst,
	};
}

/*
 * Walk a stack copy (copy_len bytes from copy_sp) from *at with the frame
 * table, learning the rule of each frame it misses in and going on from
 * there: libunwind reads no .debug_frame, all the CFI Go's code has, nor an
 * .eh_frame without .eh_frame_hdr (Go's static links). At most max frames
 * into pcs; *trunc when a frame has no rule, or the copy or max ends.
 */
static unsigned learn_walk(struct agent_link *l, const struct frame_regs *at0, uint64_t copy_sp,
			   const uint8_t *copy, uint32_t copy_len, uint64_t *pcs, unsigned max,
			   int *trunc)
{
	struct copywalk cw = copywalk_of(l);
	struct frame_regs at = *at0, miss;
	uint64_t last_sp = 0;
	unsigned n = 0;

	*trunc = 1;
	while (n < max) {
		uint32_t flags = 0;

		miss = at;
		n += copywalk_table(&cw, &at, copy, copy_len, copy_sp, pcs + n, max - n, &flags,
				    &miss);
		if (!(flags & SHM_EVF_MISS)) {
			*trunc = !!(flags & SHM_EVF_TRUNC);
			break;
		}
		/* a rule for the frame it missed in, and not there before */
		if (miss.sp == last_sp || frametab_learn(l->ftab, miss.ip) != 1)
			break;
		last_sp = miss.sp;
		at = miss;
		n--;	/* walked again from there */
	}
	return n;
}

/*
 * After neither walk of a stack copy got past pcs[nt - 1] (the frame the
 * table missed in, miss): if the table, learning as it goes (learn_walk),
 * reaches a cgo call (a SHM_BASE_CGO rule: the goroutine's stack is not in
 * the copy), that stack cut there, and the agent hops from now on; the
 * frame is no root. Its length (at most max), or 0.
 */
static int cgo_cut(struct agent_link *l, const struct frame_regs *regs, const uint8_t *copy,
		   uint32_t copy_len, uint64_t *pcs, size_t nt, unsigned max,
		   const struct frame_regs *miss)
{
	uint64_t more[PROFILE_MAX_FRAMES];
	const struct shm_frame *r;
	unsigned k;
	int trunc;

	if (!nt || nt > max || pcs[nt - 1] != miss->ip)
		return 0;
	k = learn_walk(l, miss, regs->sp, copy, copy_len, more, max - (unsigned)nt + 1, &trunc);
	if (k < 2 || !(r = frametab_lookup((const struct shm_frame *)(data_of(l) + SHM_OFF_FRAMES),
					   more[k - 1])) || r->base != SHM_BASE_CGO)
		return 0;
	memcpy(pcs + nt - 1, more, k * sizeof(*pcs));
	return (int)(nt - 1 + k);
}

/*
 * After the frame table missed in a stack copy (its walk in pcs[0..nt)),
 * walk the copy with libunwind; both walks are cut before the first
 * return address that is no code (a frame chain that was none). Where
 * libunwind gets no further than the table and did not run out of the
 * copy, the last frame is one that neither unwind info nor a frame chain
 * leads past: for code without CFI the table makes it an end
 * (frametab_set_unwalkable), so that the agent's next walks through it
 * need no copy, and the stack ends in PROFILE_PC_UNWALKABLE (*unwalk); a
 * frame with CFI there is a root if libunwind ended there too, else (a
 * rule the table had not learnt yet) the stack is cut short. At most max
 * frames into pcs (*trunc: cut short), or <= 0 when libunwind failed.
 */
static int copy_unwind(struct agent_link *l, const struct frame_regs *regs, const uint8_t *copy,
		       uint32_t copy_len, uint64_t *pcs, size_t nt, unsigned max,
		       const struct frame_regs *miss, int *trunc, int *unwalk)
{
	struct copywalk cw = copywalk_of(l);
	uint64_t upcs[PROFILE_MAX_FRAMES];
	size_t nu;
	int n, ret;

	if (!nt)
		return 0;
	cw.depth = max;
	memcpy(upcs, pcs, nt * sizeof(*pcs));
	n = copywalk_mixed(&cw, miss, copy, copy_len, regs->sp, upcs, nt, trunc);
	if (n <= 0)
		return n;
	nu = frametab_code_prefix(l->ftab, upcs, (size_t)n);
	frametab_learn_many(l->ftab, upcs, nu);
	nt = frametab_code_prefix(l->ftab, pcs, nt);
	if (nu > nt || (*trunc && nu == (size_t)n)) {
		/* libunwind went further: to the root, to the copy's end, or
		 * to junk after upcs[nu - 1] */
		memcpy(pcs, upcs, nu * sizeof(*pcs));
		if (nu < (size_t)n) {
			*trunc = 0;
			*unwalk = 1;
			frametab_set_unwalkable(l->ftab, pcs[nu - 1]);
		} else if (!*trunc) {
			/* the root, or a frame without CFI libunwind could not
			 * step either (over a budget: decided by a later copy) */
			ret = frametab_set_unwalkable(l->ftab, pcs[n - 1]);
			if (ret == 1)
				*unwalk = 1;
			else if (ret == 0)
				frametab_set_end(l->ftab, pcs[n - 1]);
		}
		return (int)nu;
	}
	/* neither got past pcs[nt - 1] */
	ret = cgo_cut(l, regs, copy, copy_len, pcs, nt, max, miss);
	if (ret > 0) {
		*trunc = 1;
		return ret;
	}
	*trunc = 0;
	frametab_learn_many(l->ftab, pcs, nt);
	ret = frametab_set_unwalkable(l->ftab, pcs[nt - 1]);
	if (ret)
		*unwalk = 1;	/* an end now, or (over a budget) for this stack */
	else if (nu == (size_t)n && upcs[n - 1] == pcs[nt - 1])
		frametab_set_end(l->ftab, pcs[nt - 1]);	/* its CFI ends the stack */
	else
		*trunc = 1;	/* its CFI goes on: the table has the rule now */
	return (int)nt;
}

/* The bytes one sample of size bytes taken at rate << shift stands for
 * (for --interval). */
static uint64_t unsampled_bytes(const struct agent_link *l, uint64_t size, unsigned shift)
{
	double rate = (double)(l->p.rate << shift);

	if (l->exact || !size)
		return size;
	return (uint64_t)((double)size / -expm1(-(double)size / rate));
}

/*
 * An allocation record (our copy, checked by alloc_ok). A stack cut short
 * (the agent's walk at the depth, or a walk of its stack copy at the depth
 * or at the copy's end) ends in PROFILE_PC_TRUNCATED, one whose last frame
 * nothing leads past (copy_unwind) in PROFILE_PC_UNWALKABLE.
 */
/*
 * The stack of an event with Python frames: the native stack (by its id)
 * with the event's Python frames in place of the eval loop's frames; a
 * native stack cut short stays so (its mark last).
 */
static uint32_t py_stack(struct agent_link *l, const struct shm_ev_alloc *e, uint32_t native)
{
	uint64_t in[PROFILE_MAX_FRAMES], out[PROFILE_MAX_FRAMES], py[SHM_PY_MAX_FRAMES];
	uint8_t ends[SHM_PY_MAX_FRAMES];
	size_t n, npy = SHM_EVF_PY(e->flags), m;
	const uint64_t *pcs = profile_stack_pcs(l->p.prof, native, &n);
	int trunc;

	if (!pcs || !l->p.pyframes)
		return native;
	if (n > PROFILE_MAX_FRAMES)
		n = PROFILE_MAX_FRAMES;
	memcpy(in, pcs, n * sizeof(*in));	/* pcs moves as the profile grows */
	trunc = n && profile_mark_name(in[n - 1]);	/* cut short, or unwalkable */
	npy = pyframes_decode(l->p.pyframes, e->frames + e->nframes, npy, py, ends);
	m = pymerge(&l->p.pymerge, in, n - trunc, py, ends, npy, out,
		    PROFILE_MAX_FRAMES - trunc);
	if (trunc)
		out[m++] = in[n - 1];
	return profile_stack_id(l->p.prof, out, m);
}

/* Whether the agent's live table no longer holds ptr, a pointer it entered
 * (it never drops one: see shm.h). */
static int freed_in_table(uint64_t ptr, void *arg)
{
	struct agent_link *l = arg;
	const uint64_t *w = (const uint64_t *)(data_of(l) + SHM_OFF_LIVE) +
			    (size_t)shm_bloom_slot(ptr) * SHM_LIVE_WAYS;

	for (int i = 0; i < SHM_LIVE_WAYS; i++)
		if ((__atomic_load_n(&w[i], __ATOMIC_ACQUIRE) & ~(uint64_t)SHM_LIVE_OVERFLOW) == ptr)
			return 0;
	return 1;
}

/*
 * The profile's op for an allocation event: KEPT if the agent could not
 * enter its pointer in the live table (its free comes as an event); in
 * sampled mode GONE if the pointer already left the table (freed before we
 * read the event: it would be live only until the next sweep took it out,
 * and most sampled blocks of an allocation storm die that young); else
 * ALLOC. The pointer was entered before the event was committed.
 */
static uint32_t alloc_op(struct agent_link *l, const struct shm_ev_alloc *e)
{
	if (e->flags & SHM_EVF_UNTABLED)
		return PROFILE_OP_ALLOC_KEPT;
	if (!l->exact && freed_in_table(e->ptr, l))
		return PROFILE_OP_ALLOC_GONE;
	return PROFILE_OP_ALLOC;
}

static void on_alloc(struct agent_link *l, const struct shm_ev_alloc *e)
{
	uint64_t pcs[PROFILE_MAX_FRAMES];
	const uint64_t *stack_pcs = e->frames;
	const struct frame_regs *regs =
		(const struct frame_regs *)(e->frames + e->nframes + SHM_EVF_PY(e->flags));
	size_t nframes = e->nframes;
	/* a copy the agent held back (its ring past half): cut, and marked so */
	int trunc = !!(e->flags & (SHM_EVF_TRUNC | SHM_EVF_NOCOPY)), unwalk = 0;
	size_t pre = 0;		/* the agent's frames before a hop's copy */
	uint32_t stack;
	unsigned shift = l->nshifts ? shift_at(l, e->tsc) : 0;
	int n;

	l->p.stats->events++;
	l->nallocs++;
	if (l->p.count_bytes)
		l->p.stats->bytes += unsampled_bytes(l, e->size, shift);
	if (e->flags & SHM_EVF_STACKID) {
		stack = e->stack_id;
		goto python;
	}
	if (e->flags & SHM_EVF_HOP) {
		/* the agent's frames, then the goroutine's from its copy */
		pre = e->nframes;
		memcpy(pcs, e->frames, pre * sizeof(*pcs));
		trunc = 1;	/* unless its copy walks on */
	}
	if ((e->flags & (SHM_EVF_HOP | SHM_EVF_STACK)) == (SHM_EVF_HOP | SHM_EVF_STACK)) {
		/* the goroutine's stack: from the frame the agent missed in */
		nframes = pre + learn_walk(l, regs, regs->sp, (const uint8_t *)(regs + 1),
					   e->stack_len, pcs + pre, l->depth - (unsigned)pre, &trunc);
		stack_pcs = pcs;
		goto record;
	}
	if (e->flags & SHM_EVF_STACK) {
		const uint8_t *copy = (const uint8_t *)(regs + 1);
		struct copywalk cw = copywalk_of(l);
		struct frame_regs miss = *regs;
		uint32_t flags;
		unsigned nt = copywalk_table(&cw, regs, copy, e->stack_len, regs->sp, pcs + pre,
					     l->depth - (unsigned)pre, &flags, &miss);

		if (nt && !(flags & SHM_EVF_MISS)) {
			trunc = !!(flags & SHM_EVF_TRUNC);
			stack_pcs = pcs;
			nframes = pre + nt;
			goto record;
		}
		n = copy_unwind(l, regs, copy, e->stack_len, pcs + pre, nt, l->depth - (unsigned)pre,
				&miss, &trunc, &unwalk);
		if (n > 0) {
			stack_pcs = pcs;
			nframes = pre + (size_t)n;
		} else {
			l->p.stats->unwind_errors++;
		}
	}
	if (e->flags & SHM_EVF_HOP)
		fp_missed(l, regs->ip);
	else if ((e->flags & SHM_EVF_MISS) && e->nframes)
		fp_missed(l, e->frames[e->nframes - 1]);
	if ((e->flags & SHM_EVF_MISS) && !unwalk && (stack_pcs == e->frames || trunc)) {
		/* No copy (refused), or none that unwinds to the root: teach
		 * what we can from the frames the agent walked (the last is
		 * the one it had no rule for, or junk a frame chain led to),
		 * and keep them if they go further. */
		size_t k = frametab_code_prefix(l->ftab, e->frames, e->nframes);

		frametab_learn_many(l->ftab, e->frames, k);
		if ((e->flags & SHM_EVF_NOCOPY) && k < nframes)
			nframes = k;	/* not the junk a frame chain led to */
		if (k > nframes) {
			stack_pcs = e->frames;
			nframes = k;
		}
	}
record:
	if (trunc || unwalk ||
	    (nframes && frametab_unwalkable(l->ftab, stack_pcs[nframes - 1]))) {
		if (stack_pcs != pcs)
			memcpy(pcs, stack_pcs, nframes * sizeof(*pcs));
		/* nframes <= l->depth before */
		pcs[nframes++] = trunc ? PROFILE_PC_TRUNCATED : PROFILE_PC_UNWALKABLE;
		stack_pcs = pcs;
	}
	stack = profile_stack_id(l->p.prof, stack_pcs, nframes);
	/* a complete walk of the agent's: from now on it sends the id */
	if (!(e->flags & SHM_EVF_MISS))
		stackids_publish((struct shm_stack *)(data_of(l) + SHM_OFF_STACKS),
				 e->frames, e->nframes, !!(e->flags & SHM_EVF_TRUNC), stack);
python:
	if (SHM_EVF_PY(e->flags))
		stack = py_stack(l, e, stack);
	queue_op(l, alloc_op(l, e), stack, e->size, e->ptr, shift);
}

/* ring_fn: one record (our copy). Non-zero stops the drain: a record the
 * agent cannot have written, or the drain's time is up. */
static int on_record(void *arg, const void *rec, uint32_t len)
{
	struct agent_link *l = arg;
	uint16_t kind = ((const struct shm_ev_free *)rec)->kind;

	if (kind == SHM_EV_FREE && len == sizeof(struct shm_ev_free)) {
		on_free(l, rec);
	} else if (kind == SHM_EV_ALLOC && len >= sizeof(struct shm_ev_alloc) &&
		   alloc_ok(l, rec, len)) {
		on_alloc(l, rec);
	} else {
		shm_hostile(l, "a record no agent writes");
		return 1;
	}
	if (--l->drain_left)
		return 0;
	l->drain_left = DRAIN_CLOCK_EVERY;
	return clock_ns(CLOCK_MONOTONIC) > l->drain_deadline;
}

/* Say once that frame rules are learnt at the capped rate. */
static void note_learning(struct agent_link *l)
{
	struct frametab_stats st;

	if (l->learn_noted)
		return;
	frametab_get_stats(l->ftab, &st);
	if (st.throttled) {
		l->learn_noted = 1;
		note(l, "the target reports frames without a rule faster than heapattach "
		     "learns rules (capped): the others are learnt when they come again");
	}
}

size_t agent_link_drain(struct agent_link *l, size_t max)
{
	size_t total = 0, n, batch = max < DRAIN_BATCH ? max : DRAIN_BATCH;

	if (!ready(l) || l->hostile)
		return 0;
	if (mapguard_zeroed_in(data_of(l) - REGION_CODE)) {
		shm_hostile(l, "it cut the memory short");
		return 0;
	}
	l->drain_deadline = clock_ns(CLOCK_MONOTONIC) + DRAIN_NS;
	l->drain_left = DRAIN_CLOCK_EVERY;
	do {
		n = ring_drain(&l->rings, batch, on_record, l);
		total += n;
		agent_link_heartbeat(l);	/* exact-mode writers wait only while it is fresh */
	} while (n == batch && total < max && !l->hostile &&
		 clock_ns(CLOCK_MONOTONIC) <= l->drain_deadline);
	flush_ops(l);
	if (l->xslots && l->p.count_bytes)
		xacct_bytes(l);
	/* a writer whose ring stood still through this drain stops waiting (agent.c) */
	__atomic_store_n(&l->shm->drained, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
	if (l->rings.corrupt)
		shm_hostile(l, l->rings.corrupt);
	check_header(l);
	note_learning(l);
	adapt(l, clock_ns(CLOCK_MONOTONIC));
	if (l->fp_stale && !l->hostile &&
	    clock_ns(CLOCK_MONOTONIC) - l->fp_read_ns >= FP_REFRESH_NS)
		fp_refresh(l);
	return total;
}

void agent_link_final(struct agent_link *l)
{
	if (!ready(l))
		return;
	ring_reader_final(&l->rings);	/* writers gone, maybe mid-record */
	l->final = 1;
}

/*
 * How long to sleep before the next drain: the time the writers take to
 * fill an eighth of a ring at the rate they filled them all since the last
 * call, within [NAP_MIN_NS, NAP_MAX_NS]. Every wake-up costs the target
 * too (ours may preempt one of its threads), so an idle ring is looked at
 * only NAP_MAX_NS apart; SIGCHLD and the tick still cut a nap short.
 */
long agent_link_nap_ns(struct agent_link *l)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), head, bytes, dt, nap = NAP_MAX_NS;

	if (!ready(l))
		return NAP_MIN_NS;
	head = ring_heads_total(&l->rings);
	bytes = head - l->nap_head;
	dt = now - l->nap_ns;
	if (!l->nap_ns) {
		nap = NAP_MIN_NS;	/* first call: no rate known yet */
	} else if (bytes && dt) {
		double fill = (double)(l->rings.size / 8) * (double)dt / (double)bytes;

		nap = fill < NAP_MIN_NS ? NAP_MIN_NS : fill > NAP_MAX_NS ? NAP_MAX_NS :
			(uint64_t)fill;
	}
	l->nap_head = head;
	l->nap_ns = now;
	return (long)nap;
}

/* Sleep until a doorbell, a signal or ns have come (agent_link_nap). */
static void nap(struct agent_link *l, long ns)
{
	struct timespec ts = { 0, ns };
	struct shm_hdr *h = l->shm;
	uint32_t seq;

	/* exact mode drops nothing (writers wait) and drains in bigger
	 * batches when not woken at every quarter ring */
	if (!ready(l) || l->exact || l->hostile) {
		nanosleep(&ts, NULL);
		return;
	}
	seq = h->doorbell;
	__atomic_store_n(&h->tool_asleep, 1, __ATOMIC_RELAXED);
	/* pairs with the writers' cmpxchg: either they see us asleep, or we
	 * see the ring they took past the mark. Then only a short nap: if the
	 * last drain could not move that ring (a writer stopped mid-record),
	 * no doorbell comes and a nap of none would spin. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ring_pending_max(&l->rings) >= SHM_DOORBELL_FILL(l->rings.size) && ns > (long)NAP_MIN_NS)
		ts.tv_nsec = NAP_MIN_NS;
	syscall(SYS_futex, &h->doorbell, FUTEX_WAIT, seq, &ts, NULL, 0);
	__atomic_store_n(&h->tool_asleep, 0, __ATOMIC_RELAXED);
}

void agent_link_nap(struct agent_link *l, long ns)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	nap(l, ns);
	if (l)
		l->napped_ns += clock_ns(CLOCK_MONOTONIC) - t0;	/* how busy we are: adapt */
}

int agent_link_busy(struct agent_link *l)
{
	if (!ready(l) || l->hostile)
		return 0;
	return ring_pending_max(&l->rings) > l->rings.size / 4;
}

/* A counter of the agent's that started at 0 when the area was set up:
 * whether v is a count it could have reached by now. */
static int plausible(const struct agent_link *l, uint64_t v)
{
	uint64_t ns = clock_ns(CLOCK_MONOTONIC) - l->since;

	return v <= COUNT_SLACK || (v - COUNT_SLACK) / COUNT_PER_NS <= ns;
}

/*
 * Copy the agent's counters into the profile and the stats, each read
 * once and believed only if the agent could have counted that far: drops
 * only grow (lock inc), and no counter grows faster than COUNT_PER_NS.
 */
static void sync_stats(struct agent_link *l)
{
	uint64_t drops, sum[4] = { 0, 0, 0, 0 }, v[4];
	char what[96];

	if (!ready(l) || l->hostile)
		return;
	drops = __atomic_load_n(&l->shm->drops, __ATOMIC_RELAXED);
	if (drops < l->drops_seen || !plausible(l, drops)) {
		snprintf(what, sizeof(what), "a drop count of %llu is implausible",
			 (unsigned long long)drops);
		shm_hostile(l, what);
		return;
	}
	if (drops > l->drops_seen) {
		profile_add_drops(l->p.prof, drops - l->drops_seen);
		l->drops_seen = drops;
		/* said only: a hostile word misleads nobody */
		l->p.stats->drop_why |= __atomic_load_n(&l->shm->drop_why, __ATOMIC_RELAXED) &
					SHM_DROP_ALL;
	}
	for (int i = 0; i < SHM_NCOUNTERS; i++) {
		const struct shm_counter *c = (const struct shm_counter *)(data_of(l) +
			SHM_OFF_COUNTERS + i * SHM_COUNTER_STRIDE);

		v[0] = __atomic_load_n(&c->walks, __ATOMIC_RELAXED);
		v[1] = __atomic_load_n(&c->walk_misses, __ATOMIC_RELAXED);
		v[2] = __atomic_load_n(&c->nested, __ATOMIC_RELAXED);
		v[3] = __atomic_load_n(&c->memo_hits, __ATOMIC_RELAXED);
		for (int k = 0; k < 4; k++) {
			if (!plausible(l, v[k]) || !plausible(l, sum[k] + v[k])) {
				shm_hostile(l, "an implausible count of calls in its counters");
				return;
			}
			sum[k] += v[k];
		}
	}
	l->p.stats->walks = sum[0];
	l->p.stats->walk_misses = sum[1];
	l->p.stats->nested = sum[2];
	l->p.stats->memo_hits = sum[3];
	l->p.stats->doorbells = __atomic_load_n(&l->shm->doorbell, __ATOMIC_RELAXED);
	l->p.stats->wait_max_ns = __atomic_load_n(&l->shm->wait_max_ns, __ATOMIC_RELAXED);
	if (l->xslots)
		xacct_stats(l);
	if (l->py_max) {	/* said with -v only: a hostile figure misleads nobody */
		l->p.stats->py_found = __atomic_load_n(&l->shm->py.found, __ATOMIC_RELAXED);
		l->p.stats->py_not_found = __atomic_load_n(&l->shm->py.not_found,
							   __ATOMIC_RELAXED);
	}
}

/* "; why: ..." for the reasons writers gave for their drops (SHM_DROP_*), or "". */
void agent_link_drop_reasons(uint32_t why, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *what;
	} reasons[] = {
		{ SHM_DROP_FULL, "a ring was full" },
		{ SHM_DROP_HUGE, "a record larger than a ring" },
		{ SHM_DROP_NO_TOOL, "no heartbeat from heapattach" },
		{ SHM_DROP_STALE, "heapattach's heartbeat stopped" },
		{ SHM_DROP_STUCK, "a ring stood still 1 s while heapattach drained" },
		{ SHM_DROP_BUSY, "a ring stood still 30 s" },
		{ SHM_DROP_LATCH, "another writer had just given up" },
	};
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]) && n < len; i++)
		if (why & reasons[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "; why: ",
					      reasons[i].what);
}

/*
 * ---- exact mode's in-target accounting (SHM_F_XACCT, shm.h) ----
 *
 * The agent counts an allocation of a numbered stack in its lane's
 * xcounts and enters the block in xlive, and sends no event for it nor
 * for its free: the profile's figures for it are read here, anew each
 * time (profile_xacct_*). Everything there is the target's to write, at
 * any moment: each word is read once, a key must name a stack we gave out
 * and a size the agent can key, a count must be one the agent could have
 * reached since the area was set up (plausible), a block is taken only
 * if its pointer read the same before and after its key. What fails is
 * counted and left out (said once with -v); none of it can make us
 * believe more than COUNT_PER_NS allocations a nanosecond per entry, nor
 * more blocks than the table has slots. The regions are never prefaulted
 * and only the pages the agent has touched are read (mincore), so that
 * reading does not fault in the whole table.
 */

static const struct shm_xlane *xlanes(const struct agent_link *l)
{
	return (const struct shm_xlane *)((const uint8_t *)l->shm + SHM_OFF_XLANES(l->p.ring_size));
}

/* The sum of one field (at offset off) over the lanes, saturated; with
 * bad, 0 if a lane's is not a count the agent could have reached (*bad
 * set). */
static uint64_t xlanes_sum(const struct agent_link *l, size_t off, int *bad)
{
	uint64_t sum = 0;

	for (unsigned r = 0; r < SHM_NLANES; r++) {
		const volatile uint64_t *f = (const volatile uint64_t *)
					     ((const uint8_t *)&xlanes(l)[r] + off);
		uint64_t v = *f;

		if (bad && !plausible(l, v)) {
			*bad = 1;
			return 0;
		}
		sum = sat_add(sum, v);
	}
	return sum;
}

/* --interval: what the lanes allocated since the last look, into the
 * stats' bytes (a total that went back, the target's doing, is taken as
 * the new start). The bytes are not bounded by plausible: one call may
 * ask for any size; a hostile total only brings the next dump sooner. */
static void xacct_bytes(struct agent_link *l)
{
	uint64_t sum = xlanes_sum(l, offsetof(struct shm_xlane, alloc_bytes), NULL);

	if (sum > l->xbytes_seen)
		l->p.stats->bytes += sum - l->xbytes_seen;
	l->xbytes_seen = sum;
}

#define XPAGE 4096

/* The pages of our view that xp's region spans: their count, *first the
 * first one's address. */
static size_t xpages_span(struct agent_link *l, const struct xpages *xp, uintptr_t *first)
{
	uintptr_t lo = (uintptr_t)(data_of(l) + xp->off);

	*first = lo & ~(uintptr_t)(XPAGE - 1);
	return ((lo + xp->n * 16 + XPAGE - 1) / XPAGE * XPAGE - *first) / XPAGE;
}

/* Mark the pages of xp's region that are in memory now (they stay marked:
 * a page swapped out since still holds entries); all of them if mincore
 * cannot tell. */
static void xpages_update(struct agent_link *l, struct xpages *xp)
{
	uintptr_t a;
	size_t np = xpages_span(l, xp, &a);
	unsigned char *vec = xmalloc(np);

	if (!xp->seen)
		xp->seen = xcalloc(np, 1);
	if (mincore((void *)a, np * XPAGE, vec))
		memset(vec, 1, np);
	for (size_t i = 0; i < np; i++)
		xp->seen[i] |= vec[i] & 1;
	free(vec);
}

/* Call fn(l, entry) for the entries from..to-1 of xp's region in the
 * pages marked (the others were never touched: all zero). */
static void xpages_each(struct agent_link *l, const struct xpages *xp, uint64_t from,
			uint64_t to, void (*fn)(struct agent_link *l, const volatile uint64_t *e))
{
	uintptr_t lo = (uintptr_t)(data_of(l) + xp->off), a;
	size_t np = xpages_span(l, xp, &a);

	if (to > xp->n)
		to = xp->n;
	if (from >= to)
		return;
	/* only the pages that hold entries from..to-1 */
	for (size_t i = (lo + from * 16 - a) / XPAGE; i < np; i++) {
		uintptr_t p = a + i * XPAGE;
		uint64_t first = p > lo ? (p - lo) / 16 : 0, end = (p + XPAGE - lo) / 16;

		if (first >= to)
			break;
		if (!xp->seen[i])
			continue;
		for (uint64_t k = first < from ? from : first; k < end && k < to; k++)
			fn(l, (const volatile uint64_t *)(lo + k * 16));
	}
}

/* Whether the agent touched the page of our view holding a (in xp's region). */
static int xpage_seen(struct agent_link *l, const struct xpages *xp, uintptr_t a)
{
	uintptr_t first;
	size_t np = xpages_span(l, xp, &first);

	return a >= first && (a - first) / XPAGE < np && xp->seen[(a - first) / XPAGE];
}

/* A key of the agent's: its stack id one we gave out, its size one it keys. */
static int xkey_ok(const struct agent_link *l, uint64_t key)
{
	uint64_t size = shm_xkey_size(key);

	return (key & 0xffffff) && shm_xkey_id(key) <= SHM_XID_MAX &&
	       shm_xkey_id(key) < profile_nstacks(l->p.prof) && size <= SHM_XSIZE_MAX &&
	       size < SHM_ADDR_LIMIT;
}

/* count allocations of (stack id, size) into the profile if the agent
 * could have reached it, else left out (and counted). */
static void xcount_take(struct agent_link *l, uint32_t id, uint64_t size, uint64_t count)
{
	if (!plausible(l, count))
		l->xbad_counts++;
	else
		profile_xacct_alloc(l->p.prof, id, size, count);
}

/* One struct shm_xcount: key, then count, each read once. */
static void xcount_one(struct agent_link *l, const volatile uint64_t *e)
{
	uint64_t key = e[0], count;

	if (!key)
		return;
	count = e[1];
	if (!count)
		return;	/* claimed, not counted yet */
	if (!xkey_ok(l, key))
		l->xbad_keys++;
	else
		xcount_take(l, shm_xkey_id(key), shm_xkey_size(key), count);
}

/* Lane xcounts t's count pages (shm.h): a directory word must name a
 * stack we gave out (id + 1), a count be plausible; each read once. */
static void xcount_pages_of(struct agent_link *l, const uint8_t *t)
{
	const volatile uint64_t *dir = (const volatile uint64_t *)(t + SHM_XPAGES_OFF);

	if (!xpage_seen(l, &l->xcount_pages, (uintptr_t)dir))
		return;
	for (unsigned p = 0; p < SHM_XPAGES; p++) {
		const volatile uint64_t *c = (const volatile uint64_t *)
					     ((const uint8_t *)dir + SHM_XPAGE_AT(p));
		uint64_t d = dir[p];
		uintptr_t pg = 0;
		int seen = 0;

		if (!d)
			continue;
		if (d > 0xffffff || !xkey_ok(l, d)) {	/* d: the key of (id, size 0) */
			l->xbad_keys++;
			continue;
		}
		for (uint64_t size = 0; size < SHM_XPAGE_SIZES; size++) {
			uintptr_t a = (uintptr_t)(c + size) & ~(uintptr_t)(XPAGE - 1);
			uint64_t v;

			if (a != pg) {	/* the counts need not start a page */
				pg = a;
				seen = xpage_seen(l, &l->xcount_pages, a);
			}
			if (!seen)
				continue;
			v = c[size];
			if (v)
				xcount_take(l, shm_xkey_id(d), size, v);
		}
	}
}

/* An accounted block that checked out: counted, and listed if large. */
static void xlive_keep(struct agent_link *l, uint64_t ptr, uint64_t key)
{
	uint64_t size = shm_xkey_size(key);

	profile_xacct_inuse(l->p.prof, shm_xkey_id(key), size);
	if (size < AGENT_LINK_BIG)
		return;
	if (l->nxbig == l->xbig_cap) {
		l->xbig_cap = l->xbig_cap ? 2 * l->xbig_cap : 64;
		l->xbig = xrealloc(l->xbig, l->xbig_cap * sizeof(*l->xbig));
	}
	l->xbig[l->nxbig].ptr = ptr;
	l->xbig[l->nxbig++].size = size;
}

/* One struct shm_xlive: ptr, key, ptr again (0 never used, 1 freed, 2
 * being filled). */
static void xlive_one(struct agent_link *l, const volatile uint64_t *e)
{
	uint64_t ptr = e[0], key;

	if (ptr <= 2)
		return;
	shm_barrier();
	key = e[1];
	shm_barrier();
	if (e[0] != ptr)
		l->xtorn++;	/* freed or taken again meanwhile: the next read has it */
	else if (ptr >= SHM_ADDR_LIMIT)
		l->xbad_ptrs++;
	else if (!xkey_ok(l, key))
		l->xbad_keys++;
	else
		xlive_keep(l, ptr, key);
}

/* Close the lanes for good (SHM_F_XSHARED): the agent claims and counts in
 * none from now on. In our copy of the header first: the header is
 * compared with it after every drain. */
static void xacct_close_lanes(struct agent_link *l)
{
	l->xshared = 1;
	((struct shm_hdr *)l->want)->flags |= SHM_F_XSHARED;
	__atomic_or_fetch(&l->shm->flags, SHM_F_XSHARED, __ATOMIC_SEQ_CST);
}

int agent_link_xacct_thread(struct agent_link *l, struct tracee *tr, struct thread *th)
{
	const char *why;
	int gone;

	if (!l->xslots || l->xshared || !ready(l))
		return l->xslots && !l->xshared;
	why = thread_id(l, tr->pid, th->tid, &th->tp, &gone);
	if (gone) {
		th->tp = 0;
		return 1;	/* gone before it ran */
	}
	if (why) {
		xacct_close_lanes(l);
		note(l, "thread %d's %s: in-target accounting counts per thread no more; every "
		     "later allocation is an event (slower, still exact)", th->tid, why);
		return 0;
	}
	for (size_t i = 0; i < tr->n; i++) {
		const struct thread *o = &tr->t[i];

		if (o == th || o->vfork_child || o->exiting || !o->tp || o->tp != th->tp)
			continue;
		xacct_close_lanes(l);
		note(l, "threads %d and %d share a thread pointer (a clone without CLONE_SETTLS?): "
		     "in-target accounting counts per thread no more; every later allocation is "
		     "an event (slower, still exact)", o->tid, th->tid);
		return 0;
	}
	return 1;
}

void agent_link_xacct_sync(struct agent_link *l)
{
	uint64_t bad, t0;

	if (!ready(l) || l->hostile || !l->xslots || l->xfinal_read)
		return;
	t0 = clock_ns(CLOCK_MONOTONIC);
	if (l->final)
		l->xfinal_read = 1;	/* the writers are gone: this reading is the last */
	if (!l->xcount_pages.n) {
		l->xcount_pages = (struct xpages){ SHM_OFF_XCOUNTS(l->p.ring_size),
						   (uint64_t)SHM_NLANES * SHM_XCOUNTS, NULL };
		l->xlive_pages = (struct xpages){ SHM_OFF_XLIVE(l->p.ring_size), l->xslots, NULL };
	}
	xpages_update(l, &l->xcount_pages);
	xpages_update(l, &l->xlive_pages);
	profile_xacct_reset(l->p.prof);
	for (unsigned r = 0; r < SHM_NLANES; r++) {
		uint64_t at = (uint64_t)r * SHM_XCOUNTS;

		xpages_each(l, &l->xcount_pages, at, at + SHM_XHASHED, xcount_one);
		xcount_pages_of(l, data_of(l) + l->xcount_pages.off + at * 16);
	}
	l->nxbig = 0;
	xpages_each(l, &l->xlive_pages, 0, l->xslots, xlive_one);
	l->xsyncs++;
	t0 = clock_ns(CLOCK_MONOTONIC) - t0;
	if (t0 > l->xsync_max_ns)
		l->xsync_max_ns = t0;
	bad = l->xbad_keys + l->xbad_counts + l->xbad_ptrs;
	if (bad && !l->xbad_noted) {
		l->xbad_noted = 1;
		pr_debug("in-target accounting: %llu entries left out (%llu keys of no stack or "
			 "size of ours, %llu implausible counts, %llu pointers out of range)",
			 (unsigned long long)bad, (unsigned long long)l->xbad_keys,
			 (unsigned long long)l->xbad_counts, (unsigned long long)l->xbad_ptrs);
	}
}

void agent_link_xacct_big(const struct agent_link *l,
			  void (*cb)(uint64_t ptr, uint64_t size, void *arg), void *arg)
{
	for (size_t i = 0; i < l->nxbig; i++)
		cb(l->xbig[i].ptr, l->xbig[i].size, arg);
}

int agent_link_xacct_live(struct agent_link *l, uint64_t *bytes)
{
	uint64_t a, f;

	if (!ready(l) || l->hostile || !l->xslots)
		return -ENODATA;
	a = xlanes_sum(l, offsetof(struct shm_xlane, alloc_bytes), NULL);
	f = sat_add(xlanes_sum(l, offsetof(struct shm_xlane, free_bytes), NULL),
		    __atomic_load_n(&l->shm->xforeign_bytes, __ATOMIC_RELAXED));
	*bytes = a > f ? a - f : 0;
	return 0;
}

/* The lanes' allocation and free totals into the stats (-v); a count
 * the agent cannot have reached leaves them as they were. */
static void xacct_stats(struct agent_link *l)
{
	int bad = 0;
	uint64_t a = xlanes_sum(l, offsetof(struct shm_xlane, alloc_count), &bad);
	uint64_t f = xlanes_sum(l, offsetof(struct shm_xlane, free_count), &bad);
	uint64_t fo = __atomic_load_n(&l->shm->xforeign_count, __ATOMIC_RELAXED);

	if (bad || !plausible(l, fo))
		return;
	l->p.stats->xacct_allocs = a;
	l->p.stats->xacct_frees = sat_add(f, fo);
}

struct shm_hdr *agent_link_shm(struct agent_link *l)
{
	return ready(l) ? l->shm : NULL;
}

/*
 * Drain, then (sampled mode) sweep: the agent reports no free it finds in
 * its live table (see shm.h), so a pointer we hold live (and it entered) is
 * freed once its bucket no longer has it. The drain first, so that the
 * frees already reported come before the sweep. A pointer entered but not
 * committed yet is not ours yet; one freed and entered again (another
 * sampled block at the same address) stays live here until that block's
 * event replaces it.
 */
void agent_link_reconcile(struct agent_link *l)
{
	if (!ready(l))
		return;
	/* a drain ends after DRAIN_NS: with the writers gone, what the
	 * rings hold is all there is, and must not be left behind */
	while (agent_link_drain(l, AGENT_LINK_DRAIN_ALL) && l->final)
		;
	if (!l->exact && !l->hostile)
		profile_sweep_live(l->p.prof, freed_in_table, l);
	sync_stats(l);
}

int agent_link_fault(struct agent_link *l, pid_t tid)
{
	int rc;

	if (!l || !l->guard.word)
		return 0;
	rc = toolguard_fault(&l->fenv, tid);
	if (rc > 0)
		l->faults++;
	return rc;
}

void agent_link_free(struct agent_link *l)
{
	if (!l)
		return;
	toolguard_disarm(&l->guard);
	agent_link_beat_stop(l);
	if (l->faults)
		pr_debug("the agent's reads of the target faulted %llu times (taken back: those "
			 "walks end there)", (unsigned long long)l->faults);
	if (l->watching)
		target_off_change(l->p.target, on_code_change, l);
	if (l->ftab) {
		struct frametab_stats st;

		frametab_get_stats(l->ftab, &st);
		pr_debug("frame table: %llu rules learnt (%llu frame-pointer ones), %llu without one, "
			 "%llu skipped (full), %llu throttled, %llu objects, %llu unwalkable ends",
			 (unsigned long long)st.learned, (unsigned long long)st.fp_frames,
			 (unsigned long long)st.unrepresentable, (unsigned long long)st.full,
			 (unsigned long long)st.throttled, (unsigned long long)st.objects,
			 (unsigned long long)st.unwalkable);
	}
	if (l->xslots)
		pr_debug("in-target accounting: %llu allocations and %llu frees accounted in the "
			 "target (no events); read %llu times (the longest %.1f ms), %llu blocks "
			 "read while they changed", (unsigned long long)l->p.stats->xacct_allocs,
			 (unsigned long long)l->p.stats->xacct_frees, (unsigned long long)l->xsyncs,
			 l->xsync_max_ns / 1e6, (unsigned long long)l->xtorn);
	if (l->cwst.own || l->cwst.own_stuck)
		pr_debug("stack copies walked through heapattach's code (a signal interrupted a "
			 "trampoline or the agent): %llu, %llu more ended there",
			 (unsigned long long)l->cwst.own, (unsigned long long)l->cwst.own_stuck);
	free(l->xcount_pages.seen);
	free(l->xlive_pages.seen);
	free(l->xbig);
	frametab_free(l->ftab);
	ownframes_free(l->own);
	if (l->map) {
		mapguard_remove(l->map);
		munmap(l->map, l->map_size);
	}
	free(l);
}

/* ---- the fast mode's implant backend ---- */

static uint64_t ops_data_size(void *arg)
{
	struct agent_link *l = arg;

	return agent_link_data_size(l->p.ring_size, l->xslots);
}

/* The first region: shared data, the agent blob, and where trampolines find them. */
static int ops_setup(void *arg, struct implant_area *a)
{
	struct agent_link *l = arg;
	size_t at = (a->used + 63) & ~(size_t)63;
	int rc;

	l->fenv.data = a->data_remote;
	/* A locked sub measured ~3% slower with two busy threads; a rare lost
	 * update between two threads sharing a counter only shifts a sample. */
	l->fenv.plain_sub = 1;
	init_data(l, a->hdr, a->want);
	rc = tramp_fast_agent_install(a->code + at, a->code_size - at, a->code_remote + at,
				      &l->fenv);
	if (rc)
		return rc;
	a->used = at + tramp_fast_agent_size();
	ownframes_set_agent(l->own, a->code_remote + at, a->code_remote + a->used);
	pr_debug("agent at +%#zx, trampolines below", at);
	return 0;
}

static int ops_reloc_offset(void *arg, const struct hook *h, enum tramp_class cls)
{
	struct agent_link *l = arg;

	return tramp_fast_reloc_offset(cls, h, &l->fenv);
}

static int ops_emit(void *arg, const struct hook *h, enum tramp_class cls, uint64_t at,
		    const struct reloc_result *r, uint8_t *buf, size_t len,
		    struct tramp_layout *lay)
{
	struct agent_link *l = arg;
	int rc = tramp_fast_emit(cls, h, at, r, &l->fenv, buf, len, lay);

	if (!rc)
		ownframes_add_tramp(l->own, at, lay, r);
	return rc;
}

/* exact mode: a thread inside a trampoline may be waiting for ring room */
static void ops_quiesce(void *arg)
{
	agent_link_drain(arg, QUIESCE_DRAIN_MAX);
}

/* No writer comes back: what the rings still hold is read from our view,
 * which outlives the target's. */
static void ops_removed(void *arg, void *map, size_t size)
{
	struct agent_link *l = arg;

	agent_link_final(l);
	if (l->shm && !l->map) {
		l->map = map;
		l->map_size = size;
	} else {
		mapguard_remove(map);
		munmap(map, size);
	}
}

const struct implant_ops agent_link_implant_ops = {
	.name = "fast",
	.agent = 1,
	.tramp_max = TRAMP_FAST_MAX_SIZE,
	.data_size = ops_data_size,
	.setup = ops_setup,
	.reloc_offset = ops_reloc_offset,
	.emit = ops_emit,
	.quiesce = ops_quiesce,
	.removed = ops_removed,
};
