/* Unit tests for stackfill.c: a stack cut short shown as the one full stack that continues it. */
/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include <stdlib.h>
#include "profile/profile.h"

#define TR PROFILE_PC_TRUNCATED
#define UW PROFILE_PC_UNWALKABLE

/* The id stack pcs[0..n) is shown as in p (profile_completions). */
static uint32_t shown_as(struct profile *p, const uint64_t *pcs, size_t n)
{
	uint32_t id = profile_stack_id(p, pcs, n), *map = profile_completions(p), r;

	r = map ? map[id] : id;
	free(map);
	return r;
}

static uint32_t id_of(struct profile *p, const uint64_t *pcs, size_t n)
{
	return profile_stack_id(p, pcs, n);
}

static void test_unique_continuation(void)
{
	const uint64_t t1[] = { 0xa, TR }, t2[] = { 0xa, 0xb, TR }, f[] = { 0xa, 0xb, 0xc, 0xd };
	const uint64_t other[] = { 0x1, 0x2 };
	struct profile *p = profile_new(1);
	uint32_t *map;

	expect_true(profile_completions(p) == NULL);
	profile_record_alloc(p, t1, 2, 10, 0x100);
	profile_record_alloc(p, other, 2, 20, 0x200);
	expect_true(profile_completions(p) == NULL);	/* no full stack yet */
	expect_int_eq(shown_as(p, t1, 2), id_of(p, t1, 2));
	profile_record_alloc(p, t2, 3, 30, 0x300);
	profile_record_alloc(p, f, 4, 40, 0x400);
	expect_int_eq(shown_as(p, t1, 2), id_of(p, f, 4));
	expect_int_eq(shown_as(p, t2, 3), id_of(p, f, 4));
	map = profile_completions(p);
	expect_true(map != NULL);
	expect_int_eq(map[id_of(p, other, 2)], id_of(p, other, 2));
	expect_int_eq(map[id_of(p, f, 4)], id_of(p, f, 4));
	free(map);
	profile_free(p);
}

static void test_ambiguous_kept(void)
{
	const uint64_t t[] = { 0xa, 0xb, TR }, f1[] = { 0xa, 0xb, 0xc }, f2[] = { 0xa, 0xb, 0xe, 0xf };
	const uint64_t t1[] = { 0xa, 0xb, 0xc, TR };
	struct profile *p = profile_new(1);

	id_of(p, t, 3);
	id_of(p, f1, 3);
	expect_int_eq(shown_as(p, t, 3), id_of(p, f1, 3));
	id_of(p, f2, 4);
	expect_int_eq(shown_as(p, t, 3), id_of(p, t, 3));	/* two callers: kept */
	id_of(p, t1, 4);
	expect_int_eq(shown_as(p, t1, 4), id_of(p, t1, 4));	/* f1 has no frame past 0xc */
	profile_free(p);
}

static void test_not_full_not_prefix(void)
{
	const uint64_t t[] = { 0xa, 0xb, TR }, cut[] = { 0xa, 0xb, 0xc, TR };
	const uint64_t uw[] = { 0xa, 0xb, UW }, uwlong[] = { 0xa, 0xb, 0xc, UW };
	const uint64_t diff[] = { 0xa, 0x9, 0xc, 0xd }, bare[] = { TR }, any[] = { 0x5, 0x6 };
	struct profile *p = profile_new(1);

	id_of(p, t, 3);
	id_of(p, cut, 4);	/* cut short itself: not a completion */
	id_of(p, uw, 3);	/* no frame past 0xb */
	id_of(p, diff, 4);	/* differs inside t's frames */
	expect_int_eq(shown_as(p, t, 3), id_of(p, t, 3));
	expect_int_eq(shown_as(p, cut, 4), id_of(p, cut, 4));
	id_of(p, uwlong, 4);	/* a whole walk that ended in an unwalkable frame */
	expect_int_eq(shown_as(p, t, 3), id_of(p, uwlong, 4));
	id_of(p, any, 2);
	expect_int_eq(shown_as(p, bare, 1), id_of(p, bare, 1));	/* no frame: kept */
	profile_free(p);
}

struct seen {
	size_t n;
	uint64_t last[4];
	uint64_t bytes[4];
};

static int seen_cb(const struct profile_bucket *b, void *arg)
{
	struct seen *s = arg;

	if (s->n < 4) {
		s->last[s->n] = b->npcs ? b->pcs[b->npcs - 1] : 0;
		s->bytes[s->n] = b->alloc_bytes;
	}
	s->n++;
	return 0;
}

/* profile_foreach shows a cut stack's buckets with the full frames, in
 * creation order, its figures its own. */
static void test_foreach_shows_full(void)
{
	const uint64_t t[] = { 0xa, 0xb, TR }, f[] = { 0xa, 0xb, 0xc, 0xd };
	struct profile *p = profile_new(1);
	struct seen s = { 0 };

	profile_record_alloc(p, t, 3, 100, 0x100);
	profile_record_alloc(p, f, 4, 100, 0x200);
	profile_record_alloc(p, f, 4, 100, 0x300);
	expect_int_eq(profile_foreach(p, seen_cb, &s), 0);
	expect_int_eq(s.n, 2);
	expect_u64_eq(s.last[0], 0xd);
	expect_u64_eq(s.last[1], 0xd);
	expect_u64_eq(s.bytes[0], 100);
	expect_u64_eq(s.bytes[1], 200);
	profile_free(p);
}

HARNESS_MAIN("stackfill",
	T(test_unique_continuation),
	T(test_ambiguous_kept),
	T(test_not_full_not_prefix),
	T(test_foreach_shows_full))
