/* In-target accounting for exact mode (SHM_F_XACCT, shm.h): the agent's side; included by agent.c. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_AGENT_XACCT_H
#define HEAPATTACH_AGENT_XACCT_H

/*
 * An allocation with a stack id is entered in the xlive table and counted
 * in its thread's lane, and sends no event; its free takes it out again.
 * Nothing here is ordered by a time stamp: the table is the state, and a
 * block's entry is written before the block is handed to its caller and
 * taken out before the real free. The only locked instructions are the
 * claim of a table slot (one per allocation) and a lane's first claim.
 * See shm.h for the layout and the rules the tool reads by.
 */

/* The regions' geometry, from a header the target can write: 0 if they do
 * not fit the memfd (then everything takes the event path). */
struct xacct {
	struct shm_xlane *lanes;
	struct shm_xcount *counts;
	struct shm_xlive *live;
	uint64_t slots;
};

static int xacct_geometry(const struct shm_hdr *h, struct xacct *x)
{
	uint64_t ring_size = h->ring_size, slots = h->xlive_slots;

	if (!slots || (slots & (slots - 1)) || slots > SHM_XLIVE_MAX ||
	    !ring_size || ring_size > (1ULL << 32) ||
	    SHM_OFF_XLIVE(ring_size) + slots * sizeof(struct shm_xlive) > h->total_size)
		return 0;
	x->lanes = (struct shm_xlane *)((char *)h + SHM_OFF_XLANES(ring_size));
	x->counts = (struct shm_xcount *)((char *)h + SHM_OFF_XCOUNTS(ring_size));
	x->live = (struct shm_xlive *)((char *)h + SHM_OFF_XLIVE(ring_size));
	x->slots = slots;
	return 1;
}

/*
 * This thread's fs base: who owns a lane. The tool set XACCT only where
 * the kernel lets user space read it (AT_HWCAP2's FSGSBASE) or, with XTP,
 * where every thread's first TLS word holds its thread pointer (the
 * x86-64 TLS ABI's self-pointer), read here with one load. A thread that
 * reaches an allocator hook has a valid fs: the allocators reach their
 * own thread-local data through it.
 */
static inline uint64_t fs_base(const struct shm_hdr *h)
{
	uint64_t v;

	if (h->flags & SHM_F_XTP)
		__asm__ __volatile__("movq %%fs:0, %0" : "=r"(v));
	else
		__asm__ __volatile__("rdfsbase %0" : "=r"(v));
	return v;
}

/* Lane `lane` if this thread owns it or has just claimed it; else NULL. */
static struct shm_xlane *xlane_mine(const struct shm_hdr *h, const struct xacct *x,
				    unsigned lane)
{
	struct shm_xlane *l = &x->lanes[lane];
	uint64_t me = fs_base(h), o = l->owner;

	if (!me)
		return NULL;
	if (o == me)
		return l;
	if (o)
		return NULL;
	return __atomic_compare_exchange_n(&l->owner, &o, me, 0, __ATOMIC_SEQ_CST,
					   __ATOMIC_RELAXED) ? l : NULL;
}

/*
 * Claim *p for v if it is 0: the value found there (0 if claimed now).
 * In an owned lane without lock (atomic against a signal handler of ours,
 * and no other thread writes there); in the shared one with lock.
 */
static inline uint64_t xclaim(volatile uint64_t *p, uint64_t v, int shared)
{
	uint64_t d = 0;

	if (shared)
		__atomic_compare_exchange_n(p, &d, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	else
		__asm__ __volatile__("cmpxchgq %2, %1" : "+a"(d), "+m"(*p) : "r"(v) : "memory", "cc");
	return d;
}

/* *c += v: a plain add in an owned lane, a locked one in the shared lane. */
static inline void xadd(volatile uint64_t *c, uint64_t v, int shared)
{
	if (shared)
		__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
	else
		__asm__ __volatile__("addq %1, %0" : "+m"(*c) : "r"(v) : "memory");
}

/* key's count in its stack's count page of lane t (claiming a page for
 * the stack if one is free), or NULL: a size too large, no page. */
static volatile uint64_t *xpage_count(struct shm_xcount *t, uint64_t key, int shared)
{
	volatile uint64_t *dir = (volatile uint64_t *)((char *)t + SHM_XPAGES_OFF);
	uint64_t size = shm_xkey_size(key), id1 = key & 0xffffff;

	if (size >= SHM_XPAGE_SIZES)
		return NULL;
	for (int i = 0; i < SHM_XPAGES; i++) {
		uint64_t d = dir[i];

		if (!d) {
			d = xclaim(&dir[i], id1, shared);
			if (!d)
				d = id1;
		}
		if (d == id1)
			return (volatile uint64_t *)((char *)dir + SHM_XPAGE_AT(i)) + size;
	}
	return NULL;
}

/* One more of key in lane `lane`'s counts (only its owner writes an
 * owned lane's; shared: the shared lane): 0, or -1 if the key's window is
 * full. */
static int xcount_add(const struct xacct *x, unsigned lane, uint64_t key, int shared)
{
	struct shm_xcount *t = x->counts + (size_t)lane * SHM_XCOUNTS;
	volatile uint64_t *c = xpage_count(t, key, shared);
	uint32_t s = shm_xcount_slot(key);

	if (c) {
		xadd(c, 1, shared);
		return 0;
	}
	for (int i = 0; i < SHM_XPROBES; i++) {
		struct shm_xcount *e = &t[(s + i) & (SHM_XHASHED - 1)];
		uint64_t k = e->key;

		if (!k) {
			k = xclaim(&e->key, key, shared);
			if (k && k != key)
				continue;	/* another (a handler, a thread) took it */
			k = key;
		}
		if (k == key) {
			xadd(&e->count, 1, shared);
			return 0;
		}
	}
	return -1;
}

/* Enter ptr with key in the xlive table: its slot, or NULL if its window
 * is full. The slot is claimed (2), then key, then ptr are stored. */
static struct shm_xlive *xlive_add(const struct xacct *x, uint64_t ptr, uint64_t key)
{
	uint64_t s = shm_xlive_slot(ptr, x->slots), mask = x->slots - 1;

	for (int i = 0; i < SHM_XPROBES; i++) {
		struct shm_xlive *e = &x->live[(s + i) & mask];
		uint64_t v = e->ptr;

		if (v > 1 || !__atomic_compare_exchange_n(&e->ptr, &v, 2, 0, __ATOMIC_SEQ_CST,
							  __ATOMIC_RELAXED))
			continue;
		e->key = key;
		barrier();
		e->ptr = ptr;
		return e;
	}
	return NULL;
}

/*
 * Account an allocation of size bytes at ptr with stack id `id`, made on
 * the stack at sp, in this thread's lane or, if its ring's lane is
 * another's, in the shared lane: 1 if done (no event to send), 0 if it
 * must take the event path (lanes closed (SHM_F_XSHARED), a window full,
 * a key that cannot hold it).
 */
static int xacct_alloc(const struct shm_hdr *h, uint64_t sp, uint64_t ptr, int64_t id,
		       uint64_t size)
{
	struct xacct x;
	struct shm_xlane *l;
	struct shm_xlive *e;
	uint64_t key;
	unsigned lane = ring_of(sp);
	int shared = 0;

	if (id < 0 || id > SHM_XID_MAX || size > SHM_XSIZE_MAX || ptr <= 2 ||
	    (h->flags & SHM_F_XSHARED) || !xacct_geometry(h, &x))
		return 0;
	l = xlane_mine(h, &x, lane);
	if (!l) {
		shared = 1;
		lane = SHM_XLANE_SHARED;
		l = &x.lanes[lane];
	}
	key = shm_xkey((uint32_t)id, size);
	e = xlive_add(&x, ptr, key);
	if (!e)
		return 0;
	if (xcount_add(&x, lane, key, shared)) {
		e->ptr = 1;	/* ours until now: nobody else looked it up */
		return 0;
	}
	xadd(&l->alloc_count, 1, shared);
	xadd(&l->alloc_bytes, size, shared);
	return 1;
}

/*
 * The free of ptr, made on the stack at sp: 1 if ptr was accounted (it is
 * taken out and counted, in its lane or, with none of ours or lanes
 * closed, as foreign; no event), 0 if the event path must report it.
 */
static int xacct_free(const struct shm_hdr *h, uint64_t sp, uint64_t ptr)
{
	struct xacct x;
	struct shm_xlane *l;
	uint64_t s, mask, key, size;

	if (ptr <= 2 || !xacct_geometry(h, &x))
		return 0;
	s = shm_xlive_slot(ptr, x.slots);
	mask = x.slots - 1;
	for (int i = 0; i < SHM_XPROBES; i++) {
		struct shm_xlive *e = &x.live[(s + i) & mask];
		uint64_t v = e->ptr;

		if (!v)
			return 0;
		if (v != ptr)
			continue;
		key = e->key;
		barrier();
		e->ptr = 1;	/* the block is ours to free: no one else writes here */
		size = shm_xkey_size(key);
		l = (h->flags & SHM_F_XSHARED) ? NULL : xlane_mine(h, &x, ring_of(sp));
		if (l) {
			__asm__ __volatile__("incq %0" : "+m"(l->free_count) :: "memory");
			__asm__ __volatile__("addq %1, %0" : "+m"(l->free_bytes) : "r"(size) : "memory");
		} else {
			__atomic_fetch_add(&((struct shm_hdr *)h)->xforeign_count, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&((struct shm_hdr *)h)->xforeign_bytes, size,
					   __ATOMIC_RELAXED);
		}
		return 1;
	}
	return 0;
}

#endif
