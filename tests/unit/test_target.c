/* Unit tests for the target model: maps cache and generation, the memory reader, the object cache. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "model/elfobj.h"
#include "harness.h"
#include "model/target.h"

static const char maps_a[] =
	"00400000-00401000 r--p 00000000 fe:00 11 /bin/a\n"
	"00401000-00402000 r-xp 00001000 fe:00 11 /bin/a\n"
	"7f0000000000-7f0000001000 r-xp 00000000 fe:00 22 /lib/libA.so\n";
/* libA.so gone, libB.so at its place */
static const char maps_b[] =
	"00400000-00401000 r--p 00000000 fe:00 11 /bin/a\n"
	"00401000-00402000 r-xp 00001000 fe:00 11 /bin/a\n"
	"7f0000000000-7f0000001000 r-xp 00000000 fe:00 33 /lib/libB.so\n";

static unsigned calls;
static uint64_t gen_seen;

static void on_change(void *arg, const struct proc_maps *old)
{
	(void)old;
	calls++;
	gen_seen = target_generation(arg);
}

static void test_maps_generation(void)
{
	struct target *t = target_new(getpid(), 0);
	const struct proc_map *m;

	expect_u64_eq(target_generation(t), 0);
	expect_int_eq(target_on_change(t, TARGET_ON_OTHER, on_change, t), 0);
	expect_int_eq(target_maps_set(t, maps_a, sizeof(maps_a) - 1), 0);
	expect_u64_eq(target_generation(t), 1);
	expect_int_eq(calls, 0);	/* the first read changes nothing derived */
	m = target_map_at(t, 0x7f0000000800);
	expect_true(m && !strcmp(m->path, "/lib/libA.so"));
	/* the same text: no bump */
	expect_int_eq(target_maps_set(t, maps_a, sizeof(maps_a) - 1), 0);
	expect_u64_eq(target_generation(t), 1);
	/* another library at the same range: bump, listeners see the new maps */
	expect_int_eq(target_maps_set(t, maps_b, sizeof(maps_b) - 1), 1);
	expect_u64_eq(target_generation(t), 2);
	expect_int_eq(calls, 1);
	expect_u64_eq(gen_seen, 2);
	m = target_map_at(t, 0x7f0000000800);
	expect_true(m && !strcmp(m->path, "/lib/libB.so"));
	/* anonymous memory and data come and go: no bump */
	{
		static const char anon[] =
			"00400000-00401000 r--p 00000000 fe:00 11 /bin/a\n"
			"00401000-00402000 r-xp 00001000 fe:00 11 /bin/a\n"
			"00402000-00403000 rw-p 00002000 fe:00 11 /bin/a\n"
			"01000000-01100000 rw-p 00000000 00:00 0 [heap]\n"
			"7e0000000000-7e0000001000 r-xp 00000000 00:00 0\n"
			"7e0000100000-7e0000110000 r-xs 00000000 00:01 9 /memfd:heapattach (deleted)\n"
			"7f0000000000-7f0000001000 r-xp 00000000 fe:00 33 /lib/libB.so\n";

		expect_int_eq(target_maps_set(t, anon, sizeof(anon) - 1), 0);
		expect_u64_eq(target_generation(t), 2);
		expect_int_eq(calls, 1);
	}
	/* a malformed read leaves the cache alone */
	expect_int_eq(target_maps_set(t, "garbage\n", 8), -EINVAL);
	expect_u64_eq(target_generation(t), 2);
	target_off_change(t, on_change, t);
	expect_int_eq(target_maps_set(t, maps_a, sizeof(maps_a) - 1), 1);
	expect_int_eq(calls, 1);
	target_free(t);
}

/* An address outside every cached mapping re-reads the maps, throttled. */
static void test_maps_miss(void)
{
	struct target *t = target_new(getpid(), 0);
	struct target_stats st;
	void *p;

	expect_true(target_maps(t) != NULL);
	expect_u64_eq(target_maps_version(t), 1);
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	expect_true(p != MAP_FAILED);
	usleep(TARGET_MAPS_GAP_NS / 1000 + 1000);
	expect_true(target_map_at(t, (uint64_t)(uintptr_t)p) != NULL);
	expect_u64_eq(target_maps_version(t), 2);
	expect_u64_eq(target_generation(t), 1);	/* no code changed */
	target_get_stats(t, &st);
	expect_u64_eq(st.maps_reads, 2);
	/* a garbage address right after: no read */
	expect_true(target_map_at(t, 8) == NULL);
	target_get_stats(t, &st);
	expect_u64_eq(st.maps_reads, 2);
	munmap(p, 4096);
	target_free(t);
}

static void test_read(void)
{
	struct target *t = target_new(getpid(), 0);
	uint8_t *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	uint8_t buf[2 * 4096];

	expect_true(p != MAP_FAILED);
	memset(p, 0x5a, 3 * 4096);
	munmap(p + 4096, 4096);		/* a hole */
	expect_int_eq(mprotect(p + 2 * 4096, 4096, PROT_NONE), 0);
	/* short at the hole */
	expect_int_eq(target_read_some(t, (uint64_t)(uintptr_t)p + 4000, buf, 200), 96);
	expect_int_eq(buf[95], 0x5a);
	expect_int_eq(target_read_some(t, (uint64_t)(uintptr_t)p + 4096, buf, 8), -EFAULT);
	expect_int_eq(target_read(t, (uint64_t)(uintptr_t)p + 4000, buf, 200) < 0, 1);
	/* PROT_NONE: process_vm_readv cannot, /proc/PID/mem can */
	expect_int_eq(target_read(t, (uint64_t)(uintptr_t)p + 2 * 4096, buf, 16), 0);
	expect_int_eq(buf[15], 0x5a);
	expect_int_eq(target_reads_slow(t), 0);
	munmap(p, 3 * 4096);
	target_free(t);
}

/* The mapping of this test's own code. */
static const struct proc_map *own_text(struct target *t)
{
	return target_map_at(t, (uint64_t)(uintptr_t)own_text);
}

static void test_objects(void)
{
	struct target *t = target_new(getpid(), 0);
	const struct proc_map *m = own_text(t);
	struct elfobj *e, *es;
	struct target_stats st;
	char text[512];
	uint64_t bias;
	int err = 1;

	expect_true(m != NULL);
	if (!m)
		goto out;
	e = target_object(t, m, 0, &err);
	expect_true(e != NULL);
	expect_int_eq(err, 0);
	expect_true(target_object(t, m, 0, NULL) == e);	/* cached */
	es = target_object(t, m, TARGET_OBJ_SYMS, NULL);	/* with symbols: opened again */
	expect_true(es != NULL);
	expect_true(target_object(t, m, 0, NULL) == es);	/* richest first */
	expect_int_eq(target_map_bias(t, m, es, &bias), 0);
	expect_true(bias <= m->start);
	target_get_stats(t, &st);
	expect_u64_eq(st.objects, 2);
	/* maps where the file is no longer mapped: the objects go (and m) */
	snprintf(text, sizeof(text), "%lx-%lx r-xp %08lx %02x:%02x %lu %s\n",
		 (unsigned long)m->start, (unsigned long)m->end, (unsigned long)m->offset,
		 m->dev_major, m->dev_minor, (unsigned long)m->inode, m->path);
	expect_int_eq(target_maps_set(t, maps_b, sizeof(maps_b) - 1), 1);
	/* the same file mapped again: opened again */
	expect_int_eq(target_maps_set(t, text, strlen(text)), 1);
	m = target_map_at(t, (uint64_t)(uintptr_t)own_text);
	expect_true(m != NULL);
	if (m)
		expect_true(target_object(t, m, 0, NULL) != NULL);
	target_get_stats(t, &st);
	expect_u64_eq(st.objects, 3);
	/* anonymous: none */
	{
		struct proc_map anon = { .start = 0x1000, .end = 0x2000 };

		err = 0;
		expect_true(target_object(t, &anon, 0, &err) == NULL);
		expect_int_eq(err, -ENOENT);
	}
out:
	target_free(t);
}

/* The dispatcher's order: by kind, then registration; not by slot. */
static char order[16];
static size_t norder;

static void note_order(void *arg, const struct proc_maps *old)
{
	(void)old;
	if (norder + 1 < sizeof(order))
		order[norder++] = *(const char *)arg;
}

static void test_listener_order(void)
{
	struct target *t = target_new(getpid(), 0);
	static const char a = 'a', b = 'b', c = 'c', d = 'd', e = 'e';

	expect_int_eq(target_on_change(t, TARGET_ON_STACKIDS, note_order, (void *)&e), 0);
	expect_int_eq(target_on_change(t, TARGET_ON_OTHER, note_order, (void *)&a), 0);
	expect_int_eq(target_on_change(t, TARGET_ON_FRAMES, note_order, (void *)&d), 0);
	expect_int_eq(target_on_change(t, TARGET_ON_UNWIND, note_order, (void *)&b), 0);
	/* a slot freed and taken again: the order is still by kind */
	target_off_change(t, note_order, (void *)&a);
	expect_int_eq(target_on_change(t, TARGET_ON_NAMES, note_order, (void *)&a), 0);
	expect_int_eq(target_on_change(t, TARGET_ON_SYMBOLS, note_order, (void *)&c), 0);
	expect_int_eq(target_maps_set(t, maps_a, sizeof(maps_a) - 1), 0);
	expect_int_eq(target_maps_set(t, maps_b, sizeof(maps_b) - 1), 1);
	order[norder] = 0;
	expect_str_eq(order, "abcde");
	target_free(t);
}

HARNESS_MAIN("target", T(test_maps_generation), T(test_maps_miss), T(test_read),
	     T(test_objects), T(test_listener_order))
