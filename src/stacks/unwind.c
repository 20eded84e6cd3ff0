/* Remote unwinder: libunwind's remote API over a bulk copy of the stopped thread's stack. */
/* SPDX-License-Identifier: MIT */

/*
 * Design. One struct unwinder per target process holds a libunwind address
 * space with our own accessors:
 *  - access_reg is served from the caller's struct unwind_regs (no
 *    PTRACE_GETREGS per register, as _UPT_access_reg would do);
 *  - access_mem is served from a window of the stack read in one
 *    process_vm_readv per unwind (from sp up to UNWIND_STACK_WINDOW bytes,
 *    bounded by the end of the stack mapping), then from a small
 *    direct-mapped page cache. Pages of file-backed, non-writable mappings
 *    (.eh_frame_hdr, .eh_frame, code) stay cached across unwinds; other pages
 *    live for one unwind only;
 *  - find_proc_info searches the object's .eh_frame_hdr table with
 *    libunwind's own search (dwarf_search_unwind_table, as
 *    libunwind-ptrace's _UPT_find_proc_info does), over a table entry we
 *    build once per executable mapping: the ELF is opened only by
 *    proc_open_mapped (the mapped file itself, never a path resolved on the
 *    host, never a FIFO or device) and the header checked here. The table
 *    and the FDEs are then read from the target's memory through
 *    access_mem. libunwind-ptrace itself is not used: it opens
 *    /proc/PID/root + path with a plain open() (a FIFO blocks it, an
 *    absolute symlink resolves on the host, and without /proc/PID/root it
 *    opens the bare path on the host), follows .gnu_debuglink by path, and
 *    abort()s on an .eh_frame_hdr table encoding it does not expect;
 *  - libunwind's own register-state cache (keyed by ip) is on, so a known ip
 *    costs no unwind-info lookup at all.
 * The accessors find the unwinder through a thread-local pointer that is set
 * for the duration of unwind_stack().
 *
 * Cost (tests/tools/unwtest bench, 13 frames over exe/libgcc_s/libc): ~10 us
 * per warm unwind, one process_vm_readv; most of the rest is the
 * rt_sigprocmask pair libunwind 1.6.2 issues around its cache lock on every
 * step. Stock _UPT_accessors: ~3 ms. Memory: 1 MiB page cache + 32 KiB
 * stack window per unwinder, plus libunwind's cache.
 */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>
#include <elf.h>
#include <libunwind.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/unwind.h"

/* libunwind's search of a binary-search table (remote: read through the
 * accessors); exported, and called by libunwind-ptrace, but not declared in
 * libunwind's public headers. */
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
				     unw_proc_info_t *pi, int need_unwind_info, void *arg);

#define UNWIND_STACK_WINDOW	(32 * 1024)
#define UNWIND_PAST_COPY	(1024 * 1024)	/* a failed read this far past the
						 * copy: the stack went on there */
#define PAGE_SZ			4096UL
#define PCACHE_SLOTS		256	/* power of two; 1 MiB */
#define UNWIND_RS_CACHE_SIZE	2048	/* libunwind register states (ips) */

/* How long a cached page stays valid (pslot.persistent) */
#define PAGE_KEEP_UNWIND	0	/* for one unwind */
#define PAGE_KEEP_FLUSH		1	/* until a flush: a read-only file page */
#define PAGE_KEEP_MAPS		2	/* until the maps are read again: code of
					 * no file (a JIT's), which changes without
					 * a change of code mappings, but which
					 * libunwind reads only to match PLT stubs
					 * and signal trampolines */

struct uobj {
	uint64_t start, end;		/* the executable mapping */
	int have_table;			/* di is valid */
	uint64_t delta;			/* the mapping's bias minus the table's */
	unw_dyn_info_t di;		/* its .eh_frame_hdr table, in target memory */
};

struct pslot {
	uint64_t page;			/* page address; UINT64_MAX if empty */
	uint64_t gen;			/* unwind generation that read it */
	uint64_t ver;			/* target_maps_version when it was read */
	int persistent;			/* PAGE_KEEP_* */
	uint8_t data[PAGE_SZ];
};

struct unwinder {
	struct target *t;
	unw_addr_space_t as;
	uint64_t maps_gen;		/* unwind generation of the last maps read */
	uint64_t reload_ns;		/* when we last read them for a missing address */
	int reload_vain;		/* and found nothing there */
	struct uobj *objs;
	size_t nobjs, cap_objs;
	struct pslot *pcache;
	uint64_t gen;
	int stale;			/* the maps changed during a walk */

	/* state of the unwind in progress */
	pid_t tid;
	struct unwind_regs regs;
	uint8_t *stk;			/* our copy of a live stack */
	const uint8_t *win;		/* [stk_lo, stk_hi): stk, or the caller's copy */
	uint64_t stk_lo, stk_hi;
	int truncated;			/* the last walk stopped with frames left */
	unsigned walk_flags;		/* the last walk's UNWIND_WALK_* */
	int want_signal;		/* look for signal frames (unwind_stack_judged) */
	int past_copy;			/* it failed to read the stack past the copy */
	struct unwind_stats st;
};

static __thread struct unwinder *cur_unwinder;

/* ---- target memory ---- */

/* Copy len bytes at addr of the target into buf (target_read_some). */
static ssize_t mem_read(struct unwinder *u, uint64_t addr, void *buf, size_t len)
{
	u->st.mem_reads++;
	return target_read_some(u->t, addr, buf, len);
}

/* Word by word: process_vm_readv is refused, a page costs 512 calls. */
static int use_peek(const struct unwinder *u)
{
	return target_reads_slow(u->t);
}

/* ---- maps and objects ---- */

/* Backed by a regular, stable file: not anonymous, [stack]/[vdso], deleted,
 * a memfd (e.g. our trampoline page, which changes behind its read-only
 * mapping) or a device. */
static int stable_file(const struct proc_map *m)
{
	return m->path && m->path[0] == '/' && !m->deleted &&
	       strncmp(m->path, "/memfd:", 7) && strncmp(m->path, "/dev/", 5);
}

/*
 * The mapping containing addr, reading maps first if needed, and again if
 * addr is not in the cached copy (a new mapping), at most once per unwind;
 * and, once such a read found nothing (a garbage address: a stack's junk
 * taken for a return address, or the target's), at most once every
 * TARGET_MAPS_GAP_NS until one finds its address again, so that garbage
 * does not cost a maps parse per unwind. NULL if none.
 */
static const struct proc_map *maps_lookup(struct unwinder *u, uint64_t addr)
{
	const struct proc_maps *maps = target_maps(u->t);
	const struct proc_map *m;
	struct target_stats st;

	if (!maps)
		return NULL;
	m = proc_maps_find(maps, addr);
	if (!m && u->maps_gen != u->gen &&
	    (!u->reload_vain || clock_ns(CLOCK_MONOTONIC) - u->reload_ns >= TARGET_MAPS_GAP_NS)) {
		u->maps_gen = u->gen;
		u->reload_ns = clock_ns(CLOCK_MONOTONIC);
		if (target_maps_reload(u->t) >= 0)
			m = proc_maps_find(target_maps(u->t), addr);
		u->reload_vain = !m;
	}
	target_get_stats(u->t, &st);
	u->st.maps_reads = st.maps_reads;
	return m;
}

/* Byte size of a DW_EH_PE_* encoded value (low nibble: format), or -1 for
 * variable-length or unknown formats. */
static int enc_size(uint8_t enc)
{
	if (enc == 0xff)	/* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00:		/* absptr */
	case 0x04:		/* udata8 */
	case 0x0c:		/* sdata8 */
		return 8;
	case 0x02:		/* udata2 */
	case 0x0a:		/* sdata2 */
		return 2;
	case 0x03:		/* udata4 */
	case 0x0b:		/* sdata4 */
		return 4;
	default:
		return -1;
	}
}

int unwind_parse_eh_frame_hdr(const void *buf, size_t len, uint64_t seg_size,
			      uint64_t *table_off, uint64_t *fde_count)
{
	const uint8_t *b = buf;
	int psz, csz;
	uint64_t off, n = 0;

	if (len < 4 || seg_size < 4 || b[0] != 1)
		return -EINVAL;
	psz = enc_size(b[1]);
	csz = enc_size(b[2]);
	/* a count stored as an absolute, fixed-size number; the table as
	 * DW_EH_PE_datarel | DW_EH_PE_sdata4 pairs, the one layout libunwind reads */
	if (psz < 0 || csz <= 0 || (b[2] & 0xf0) || b[3] != 0x3b)
		return -EINVAL;
	off = 4 + (uint64_t)psz + (uint64_t)csz;
	if (off > len || off > seg_size)
		return -EINVAL;
	memcpy(&n, b + 4 + psz, csz);	/* little-endian */
	if (csz == 2 && (b[2] & 0x08))
		n = (uint64_t)(int64_t)(int16_t)n;
	else if (csz == 4 && (b[2] & 0x08))
		n = (uint64_t)(int64_t)(int32_t)n;
	if ((int64_t)n < 0 || n > (seg_size - off) / 8)
		return -EINVAL;
	*table_off = off;
	*fde_count = n;
	return 0;
}

static int same_file(const struct proc_map *a, const struct proc_map *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->path && b->path && !strcmp(a->path, b->path);
}

/* 1 if link-time [vaddr, vaddr + size) of e is mapped from e's file at
 * bias + vaddr, by mappings that put it there with that bias. */
static int mapped_at(struct unwinder *u, const struct proc_map *of, struct elfobj *e,
		     uint64_t bias, uint64_t vaddr, uint64_t size)
{
	const struct proc_maps *maps = target_maps(u->t);
	uint64_t a = bias + vaddr, b;

	while (size) {
		const struct proc_map *m = proc_maps_find(maps, a);
		uint64_t k;

		if (!m || !same_file(m, of) || elfobj_load_bias(e, m, &b) || b != bias)
			return 0;
		k = m->end - a < size ? m->end - a : size;
		a += k;
		size -= k;
	}
	return 1;
}

/*
 * The bias under which the target holds the .eh_frame_hdr ([vaddr, +size))
 * of the object e mapped at m: m's own, or, for code mapped a second time
 * from the same file without the rest (node's builtins), that of another
 * mapping of the file that has it. 0 or -ENOENT.
 */
static int table_bias(struct unwinder *u, const struct proc_map *m, struct elfobj *e,
		      uint64_t bias, uint64_t vaddr, uint64_t size, uint64_t *out)
{
	const struct proc_maps *maps = target_maps(u->t);

	if (mapped_at(u, m, e, bias, vaddr, size)) {
		*out = bias;
		return 0;
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *h = &maps->v[i];
		uint64_t b;

		if (h != m && same_file(h, m) && !elfobj_load_bias(e, h, &b) && b != bias &&
		    mapped_at(u, m, e, b, vaddr, size)) {
			*out = b;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Fill o->di from the ELF behind m (an executable file mapping): the
 * .eh_frame_hdr binary-search table, located by PT_GNU_EH_FRAME, read from
 * the target's memory where the target holds it (o->delta: how far m's
 * code sits from the code that table describes). 0, or -ENOENT when the
 * object has no usable table.
 */
static int load_table(struct unwinder *u, const struct proc_map *m, struct uobj *o)
{
	const struct elfobj_segment *seg;
	uint64_t vaddr, size, bias, tbias, toff, nfde, lo = UINT64_MAX, hi = 0;
	uint8_t hdr[20];
	struct elfobj *e;
	size_t nseg;

	e = target_object(u->t, m, 0, NULL);
	if (!e || elfobj_eh_frame_hdr(e, &vaddr, &size) || target_map_bias(u->t, m, e, &bias) ||
	    table_bias(u, m, e, bias, vaddr, size, &tbias))
		return -ENOENT;
	if (elfobj_read(e, vaddr, hdr, size < sizeof(hdr) ? size : sizeof(hdr)) ||
	    unwind_parse_eh_frame_hdr(hdr, size < sizeof(hdr) ? size : sizeof(hdr), size,
				      &toff, &nfde))
		return -ENOENT;
	seg = elfobj_segments(e, &nseg);
	for (size_t i = 0; i < nseg; i++) {
		if (seg[i].vaddr < lo)
			lo = seg[i].vaddr;
		if (seg[i].vaddr + seg[i].memsz > hi)
			hi = seg[i].vaddr + seg[i].memsz;
	}
	if (lo >= hi)
		return -ENOENT;
	o->delta = bias - tbias;
	memset(&o->di, 0, sizeof(o->di));
	o->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	/* the object's extent where the table is, and never less than the
	 * mapping (moved there) */
	o->di.start_ip = lo + tbias < m->start - o->delta ? lo + tbias : m->start - o->delta;
	o->di.end_ip = hi + tbias > m->end - o->delta ? hi + tbias : m->end - o->delta;
	/* datarel FDE pointers (never emitted on x86-64) would need DT_PLTGOT */
	o->di.gp = 0;
	/* table entries are relative to the start of .eh_frame_hdr */
	o->di.u.rti.segbase = tbias + vaddr;
	o->di.u.rti.table_data = tbias + vaddr + toff;
	/* in words; each entry is two int32 */
	o->di.u.rti.table_len = nfde * 8 / sizeof(unw_word_t);
	return 0;
}

/* The object record for the executable mapping that contains ip, created on
 * first use; NULL if ip is in no executable file mapping. */
static struct uobj *obj_for_ip(struct unwinder *u, uint64_t ip)
{
	const struct proc_map *m;
	struct uobj *o;

	for (size_t i = 0; i < u->nobjs; i++)
		if (ip >= u->objs[i].start && ip < u->objs[i].end)
			return &u->objs[i];
	m = maps_lookup(u, ip);
	if (!m || !(m->prot & PROC_MAP_X) || !stable_file(m))
		return NULL;
	if (u->nobjs == u->cap_objs) {
		u->cap_objs = u->cap_objs ? 2 * u->cap_objs : 16;
		u->objs = xrealloc(u->objs, u->cap_objs * sizeof(*u->objs));
	}
	o = &u->objs[u->nobjs++];
	o->start = m->start;
	o->end = m->end;
	o->have_table = !load_table(u, m, o);
	if (o->have_table)
		u->st.objects++;
	else
		pr_debug("unwind: no unwind info for %s", m->path);
	return o;
}

/* Forget the per-object tables. */
static void objs_drop(struct unwinder *u)
{
	u->nobjs = 0;
}

/* ---- page cache ---- */

/* Whether memory of mapping m (NULL: none, even in maps read again as
 * maps_lookup does) is worth a read: not when no mapping holds it (the
 * target's garbage, or the junk of a stack taken for a pointer: a failed
 * read costs two syscalls). */
static int readable(const struct proc_map *m)
{
	return m && (m->prot & PROC_MAP_R);
}

/*
 * Read the 8 bytes at addr (aligned or not) through the page cache: a miss
 * reads the whole page, which stays valid for this unwind, or until the next
 * flush for a page of a read-only file mapping. 0 or -EFAULT.
 */
static int pcache_read_word(struct unwinder *u, uint64_t addr, uint64_t *val)
{
	uint8_t *out = (uint8_t *)val;
	size_t done = 0;

	while (done < sizeof(*val)) {
		uint64_t a = addr + done, page = a & ~(PAGE_SZ - 1);
		struct pslot *s = &u->pcache[(page / PAGE_SZ) & (PCACHE_SLOTS - 1)];
		size_t off = a - page, k = PAGE_SZ - off;

		if (k > sizeof(*val) - done)
			k = sizeof(*val) - done;
		if (use_peek(u)) {
			/* a page would cost 512 PEEKDATAs: read just the bytes */
			if (mem_read(u, a, out + done, k) != (ssize_t)k)
				return -EFAULT;
			done += k;
			continue;
		}
		if (s->page != page || (s->persistent == PAGE_KEEP_UNWIND && s->gen != u->gen) ||
		    (s->persistent == PAGE_KEEP_MAPS && s->ver != target_maps_version(u->t))) {
			const struct proc_map *m = maps_lookup(u, a);

			if (!readable(m))
				return -EFAULT;
			if (mem_read(u, page, s->data, PAGE_SZ) != (ssize_t)PAGE_SZ) {
				/* page partly unreadable: read just the bytes */
				s->page = UINT64_MAX;
				if (mem_read(u, a, out + done, k) != (ssize_t)k)
					return -EFAULT;
				done += k;
				continue;
			}
			s->page = page;
			s->gen = u->gen;
			s->ver = target_maps_version(u->t);
			s->persistent = page + PAGE_SZ > m->end ? PAGE_KEEP_UNWIND :
					stable_file(m) && !(m->prot & PROC_MAP_W) ? PAGE_KEEP_FLUSH :
					(m->prot & PROC_MAP_X) ? PAGE_KEEP_MAPS : PAGE_KEEP_UNWIND;
		}
		memcpy(out + done, s->data + off, k);
		done += k;
	}
	return 0;
}

/* Empty every slot, persistent ones included. */
static void pcache_clear(struct unwinder *u)
{
	for (size_t i = 0; i < PCACHE_SLOTS; i++)
		u->pcache[i].page = UINT64_MAX;
}

/*
 * ---- libunwind accessors ----
 * Called by libunwind with the address space and an argument that is either
 * our unwinder (cursor operations) or a _UPT context (from inside
 * _UPT_find_proc_info); they use cur_unwinder instead. Return 0 or -UNW_E*.
 */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct unwinder *u = cur_unwinder;
	struct uobj *o;
	int ret;

	(void)arg;
	u->st.find_proc_info++;
	o = obj_for_ip(u, ip);
	if (!o || !o->have_table)
		return -UNW_ENOINFO;
	/* code mapped a second time: look it up where its table describes it */
	ip -= o->delta;
	/* libunwind asserts that ip is in the table's range */
	if (ip < o->di.start_ip || ip >= o->di.end_ip)
		return -UNW_ENOINFO;
	ret = dwarf_search_unwind_table(as, ip, &o->di, pi, need_unwind_info, arg);
	if (ret >= 0) {
		/* the rows advance from start_ip: move the range back to ip */
		pi->start_ip += o->delta;
		pi->end_ip += o->delta;
	}
	return ret;
}

/*
 * Nothing to free: libunwind calls this for dynamically registered unwind
 * info only, and frees the CIE info it allocated for a table entry itself.
 */
static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

/*
 * No dynamically registered unwind info on x86-64 remote targets. (1.6.2's
 * _UPT_get_dyn_info_list_addr is a stub there that reads an uninitialized
 * count, so it is not called.)
 */
static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as;
	(void)dilap;
	(void)arg;
	return -UNW_ENOINFO;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp,
			  int write, void *arg)
{
	struct unwinder *u = cur_unwinder;
	uint64_t v;

	(void)as;
	(void)arg;
	if (write)
		return -UNW_EINVAL;
	if (addr >= u->stk_lo && addr + sizeof(v) <= u->stk_hi && addr + sizeof(v) > addr) {
		memcpy(&v, u->win + (addr - u->stk_lo), sizeof(v));
	} else if (pcache_read_word(u, addr, &v) < 0) {
		if (addr >= u->stk_hi && addr - u->stk_hi < UNWIND_PAST_COPY)
			u->past_copy = 1;
		return -UNW_EINVAL;
	}
	*valp = v;
	return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp,
			  int write, void *arg)
{
	const struct unwind_regs *r = &cur_unwinder->regs;

	(void)as;
	(void)arg;
	if (write)
		return -UNW_EREADONLYREG;
	switch (reg) {
	case UNW_X86_64_RIP:
		*valp = r->ip;
		break;
	case UNW_X86_64_RSP:
		*valp = r->sp;
		break;
	case UNW_X86_64_RBP:
		*valp = r->bp;
		break;
	case UNW_X86_64_RBX:
		*valp = r->bx;
		break;
	case UNW_X86_64_R12:
		*valp = r->r12;
		break;
	case UNW_X86_64_R13:
		*valp = r->r13;
		break;
	case UNW_X86_64_R14:
		*valp = r->r14;
		break;
	case UNW_X86_64_R15:
		*valp = r->r15;
		break;
	default:
		return -UNW_EBADREG;
	}
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
			    int write, void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

static unw_accessors_t unwind_accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = NULL,
};

/* ---- public API ---- */

/* target_on_change listener: forget the tables, pages and states of the
 * old maps (libunwind's cache only between walks). */
static void on_maps_change(void *arg, const struct proc_maps *old)
{
	struct unwinder *u = arg;

	(void)old;
	objs_drop(u);
	pcache_clear(u);
	if (cur_unwinder == u)
		u->stale = 1;
	else
		unw_flush_cache(u->as, 0, 0);
}

struct unwinder *unwinder_new_target(struct target *t)
{
	struct unwinder *u;

	if (!t) {
		errno = EINVAL;
		return NULL;
	}
	u = xcalloc(1, sizeof(*u));
	u->t = t;
	u->as = unw_create_addr_space(&unwind_accessors, 0);
	if (!u->as || target_on_change(t, on_maps_change, u)) {
		if (u->as)
			unw_destroy_addr_space(u->as);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * The register-state cache belongs to the address space, i.e. to this
	 * unwinder. (UNW_CACHE_PER_THREAD would share one thread-local cache
	 * between unwinders and flush it at each switch; Debian's 1.6.2 maps
	 * it to GLOBAL anyway.) Each cached step still costs a lock with a
	 * sigprocmask pair in 1.6.2 (CONFIG_BLOCK_SIGNALS).
	 */
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(u->as, UNWIND_RS_CACHE_SIZE, 0);
	u->pcache = xmalloc(PCACHE_SLOTS * sizeof(*u->pcache));
	pcache_clear(u);
	u->stk = xmalloc(UNWIND_STACK_WINDOW);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	target_off_change(u->t, on_maps_change, u);
	objs_drop(u);
	free(u->objs);
	if (u->as)
		unw_destroy_addr_space(u->as);
	free(u->pcache);
	free(u->stk);
	free(u);
}

void unwinder_flush(struct unwinder *u)
{
	objs_drop(u);
	pcache_clear(u);
	unw_flush_cache(u->as, 0, 0);
	u->maps_gen = u->gen - 1;	/* the next miss reads the maps */
}

void unwinder_get_stats(const struct unwinder *u, struct unwind_stats *st)
{
	*st = u->st;
}

/*
 * Copy the stack from sp up to the window size or the end of the stack
 * mapping. 0, or -errno if nothing at sp can be read (-ESRCH: the process is
 * gone, -EFAULT: sp is not in readable memory).
 */
static int stack_snapshot(struct unwinder *u, uint64_t sp)
{
	uint64_t end = sp + UNWIND_STACK_WINDOW;
	const struct proc_map *m;
	ssize_t n;

	if (end < sp)
		end = UINT64_MAX;
	m = maps_lookup(u, sp);
	if (m && m->end < end)
		end = m->end;
	if (use_peek(u))	/* word by word: copy only what is needed */
		end = sp + 8 < end ? sp + 8 : end;
	n = mem_read(u, sp, u->stk, end - sp);
	if (n <= 0 && end - sp > PAGE_SZ - (sp & (PAGE_SZ - 1))) {
		/* no mapping info, or a short window: try up to the page end */
		end = (sp | (PAGE_SZ - 1)) + 1;
		n = mem_read(u, sp, u->stk, end - sp);
	}
	if (n <= 0) {
		u->stk_lo = u->stk_hi = 0;
		return n < 0 ? (int)n : -EFAULT;
	}
	u->win = u->stk;
	u->stk_lo = sp;
	u->stk_hi = sp + n;
	return 0;
}

/* ip in [lo, hi); never when lo == hi. */
static int in_range(uint64_t ip, uint64_t lo, uint64_t hi)
{
	return ip >= lo && ip < hi;
}

/* Start a walk of u from *start (see walk): the registers, a flushed cache
 * if the maps changed, a new generation of pages. */
static void walk_begin(struct unwinder *u, pid_t tid, const struct unwind_regs *start)
{
	u->truncated = 0;
	u->past_copy = 0;
	u->tid = tid;
	u->regs = *start;
	if (!(start->flags & UNWIND_IP_EXACT))
		u->regs.ip--;	/* look up the call, not what follows it */
	if (u->stale) {
		u->stale = 0;
		unw_flush_cache(u->as, 0, 0);
	}
	u->gen++;
}

static int sigreturn_at(struct unwinder *u, uint64_t ip);

/* The walk behind unwind_stack and unwind_stack_copy: with copy == NULL the
 * stack is read from the live thread, else from copy[0..copy_len) taken at
 * start->sp; a frame whose return address lies beyond the copy is not
 * taken (the live stack has moved on since). u->truncated: it stopped at
 * max, or at the end of the copy, with a frame left. */
static int walk(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
		const void *copy, size_t copy_len,
		uint64_t *pcs, size_t max, uint64_t stop_lo, uint64_t stop_hi)
{
	struct unwinder *saved = cur_unwinder;
	unw_word_t ip, sp, prev_ip, prev_sp;
	unw_cursor_t c;
	size_t n = 0;
	int ret;

	if (!u || !start || !pcs || !max)
		return -EINVAL;
	u->truncated = 0;
	u->walk_flags = 0;
	if (in_range(start->ip, stop_lo, stop_hi))
		return -UNWIND_ENESTED;
	pcs[n++] = start->ip;

	cur_unwinder = u;
	walk_begin(u, tid, start);
	u->st.unwinds++;
	if (copy) {
		if (copy_len > UNWIND_STACK_WINDOW)
			copy_len = UNWIND_STACK_WINDOW;
		u->win = copy;	/* the caller's, for this walk */
		u->stk_lo = start->sp;
		u->stk_hi = start->sp + copy_len;
		ret = 0;
	} else {
		ret = stack_snapshot(u, start->sp);
		if (ret < 0)
			goto out;
	}
	ret = 1;
	if (unw_init_remote(&c, u->as, u) < 0)
		goto out;
	prev_ip = u->regs.ip;
	prev_sp = start->sp;
	if (u->want_signal && sigreturn_at(u, start->ip))
		u->walk_flags |= UNWIND_WALK_SIGNAL;
	for (;;) {
		int step = unw_step(&c);

		if (step <= 0) {
			if (!step)
				u->walk_flags |= UNWIND_WALK_END;
			break;
		}
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		if (u->want_signal && sigreturn_at(u, ip))
			u->walk_flags |= UNWIND_WALK_SIGNAL;
		if (in_range(ip, stop_lo, stop_hi)) {
			u->st.nested++;
			ret = -UNWIND_ENESTED;
			goto out;
		}
		if (unw_get_reg(&c, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == prev_ip && sp == prev_sp)
			break;	/* no progress: corrupt unwind info */
		if (n == max || (copy && sp > u->stk_hi)) {
			u->truncated = 1;	/* at max, or ip was read past the copy */
			break;
		}
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = sp;
	}
	if (copy && u->past_copy)
		u->truncated = 1;	/* the walk ran out of the copy */
	ret = n;
	u->st.frames += n;
out:
	cur_unwinder = saved;
	return ret;
}

/* Whether the code at ip is the rt_sigreturn trampoline (x86-64: mov
 * $15,%rax; syscall): the frame it returns to is interrupted code, whose
 * ip is exact. */
static int sigreturn_at(struct unwinder *u, uint64_t ip)
{
	uint64_t w0, w1;

	return !pcache_read_word(u, ip, &w0) && !pcache_read_word(u, ip + 8, &w1) &&
	       w0 == 0x0f0000000fc0c748ULL && (w1 & 0xff) == 0x05;
}

int unwind_copy_steps(struct unwinder *u, struct unwind_regs *r, const void *stack, size_t len,
		      uint64_t stack_sp, uint64_t *pcs, size_t max,
		      int (*resume)(void *arg, uint64_t ip, int exact), void *arg, int *more)
{
	static const struct { unw_regnum_t reg; size_t off; } keep[] = {
		{ UNW_X86_64_RBP, offsetof(struct unwind_regs, bp) },
		{ UNW_X86_64_RBX, offsetof(struct unwind_regs, bx) },
		{ UNW_X86_64_R12, offsetof(struct unwind_regs, r12) },
		{ UNW_X86_64_R13, offsetof(struct unwind_regs, r13) },
		{ UNW_X86_64_R14, offsetof(struct unwind_regs, r14) },
		{ UNW_X86_64_R15, offsetof(struct unwind_regs, r15) },
	};
	struct unwinder *saved = cur_unwinder;
	unw_word_t ip, sp, prev_ip, prev_sp, v;
	uint64_t cur = r ? r->ip : 0;
	unw_cursor_t c;
	size_t n = 0;

	if (!u || !r || !stack || !pcs || !more)
		return -EINVAL;
	*more = 0;
	cur_unwinder = u;
	walk_begin(u, target_reader(u->t), r);
	u->st.unwinds++;
	if (len > UNWIND_STACK_WINDOW)
		len = UNWIND_STACK_WINDOW;
	u->win = stack;
	u->stk_lo = stack_sp;
	u->stk_hi = stack_sp + len;
	if (unw_init_remote(&c, u->as, u) < 0)
		goto out;
	prev_ip = u->regs.ip;
	prev_sp = r->sp;
	for (;;) {
		int sig = resume && sigreturn_at(u, cur);

		if (unw_step(&c) <= 0)
			break;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0 ||
		    unw_get_reg(&c, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == prev_ip && sp == prev_sp)
			break;	/* no progress: corrupt unwind info */
		if (sp > u->stk_hi) {
			u->truncated = 1;	/* ip was read past the copy */
			break;
		}
		if (resume && resume(arg, ip, sig)) {
			/* the caller walks on from here */
			r->ip = ip;
			r->sp = sp;
			r->flags = sig ? UNWIND_IP_EXACT : 0;
			for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
				if (unw_get_reg(&c, keep[i].reg, &v) == 0)
					memcpy((char *)r + keep[i].off, &v, sizeof(v));
			*more = 1;
			break;
		}
		if (n == max) {
			u->truncated = 1;
			break;
		}
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = sp;
		cur = ip;
	}
	if (u->past_copy && !*more)
		u->truncated = 1;	/* the walk ran out of the copy */
out:
	u->st.frames += n;
	cur_unwinder = saved;
	return (int)n;
}

int unwind_truncated(const struct unwinder *u)
{
	return u && u->truncated;
}

unsigned unwind_walk_flags(const struct unwinder *u)
{
	return u ? u->walk_flags : 0;
}

int unwind_stack_judged(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
			uint64_t *pcs, size_t max, unsigned *flags)
{
	int n;

	if (!u)
		return -EINVAL;
	u->want_signal = 1;
	n = walk(u, tid, start, NULL, 0, pcs, max, 0, 0);
	u->want_signal = 0;
	*flags = u->walk_flags;
	if (u->truncated)
		*flags &= ~(unsigned)UNWIND_WALK_END;
	return n;
}

int unwind_stack(struct unwinder *u, pid_t tid, const struct unwind_regs *start,
		 uint64_t *pcs, size_t max, uint64_t stop_lo, uint64_t stop_hi)
{
	return walk(u, tid, start, NULL, 0, pcs, max, stop_lo, stop_hi);
}

int unwind_stack_copy(struct unwinder *u, const struct unwind_regs *start,
		      const void *stack, size_t len, uint64_t *pcs, size_t max)
{
	if (!stack)
		return -EINVAL;
	return walk(u, u ? target_reader(u->t) : 0, start, stack, len, pcs, max, 0, 0);
}
