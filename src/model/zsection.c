/* Compressed ELF sections, inflated by heapattach itself within a budget of bytes and of time, before libelf or libdw would. */
/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/zsection.h"

/*
 * libelf inflates a section in one call, into a buffer of the size the
 * section declares, and libdw asks for every DWARF section at once
 * (dwarf_begin_elf): nothing there can be stopped or bounded from outside.
 * So heapattach inflates each compressed section itself, a mebibyte at a
 * time, looking at the time gate between two, and hands the result to
 * libelf as the section's data (the Elf_Data that elf_getdata returns,
 * which libelf keeps and gives back to libdw and elf_strptr, and a header
 * without SHF_COMPRESSED), or empties the section. What libelf would then
 * still inflate: nothing. A section whose inflated bytes begin with
 * "ZLIB" is emptied too: libdw tries elf_compress_gnu on every .z name.
 */

uint64_t zsection_section_max = 256ULL << 20;
uint64_t zsection_total_max = 1ULL << 30;

#define STEP		(1u << 20)	/* inflated between two looks at the gate */
#define ZLIB_RATIO	1032		/* the most zlib inflates a byte to (as libelf) */

/* Why a section was skipped. */
#define SKIP_SIZE	1u
#define SKIP_BUDGET	2u
#define SKIP_STOP	4u
#define SKIP_BAD	8u	/* not zlib, a stream that does not end at its size */

static uint64_t inflated;
static uint64_t deadline;
static const volatile sig_atomic_t *stop_flag;
static uint64_t stop_seen;
static unsigned skipped, noted;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- the time gate ---- */

void zsection_set_deadline(uint64_t deadline_ns)
{
	deadline = deadline_ns;
}

void zsection_watch_stop(const volatile sig_atomic_t *stop)
{
	stop_flag = stop;
	stop_seen = 0;
}

/* 1 while inflating may go on. */
static int gate_open(void)
{
	uint64_t now = now_ns();

	if (stop_flag && *stop_flag && !stop_seen)
		stop_seen = now;
	if (stop_seen && now - stop_seen >= ZSECTION_GRACE_NS)
		return 0;
	return !deadline || now < deadline;
}

uint64_t zsection_inflated(void)
{
	return inflated;
}

/* ---- what was skipped ---- */

/* The first section skipped for each reason (SKIP_SIZE, _BUDGET, _STOP). */
static struct first {
	char file[128], name[48];
	uint64_t size;
} first[3];

static double mib(uint64_t n)
{
	return n / 1048576.0;
}

/* 0, 1, 2 for SKIP_SIZE, SKIP_BUDGET, SKIP_STOP. */
static int reason_idx(unsigned why)
{
	return why == SKIP_SIZE ? 0 : why == SKIP_BUDGET ? 1 : 2;
}

/* Section name of file (size bytes inflated) is skipped: said with -v,
 * and the first of each reason is kept for zsection_take_note. */
static void say(const char *file, const char *name, uint64_t size, unsigned why)
{
	static const char *const text[] = {
		"more than the most a section may take", "past the budget of all sections",
		"its time was up (--duration, or a stop)", "not a zlib stream of that size",
	};
	int i = why == SKIP_BAD ? 3 : reason_idx(why);

	file = file ? file : "an ELF file";
	name = name ? name : "(unnamed)";
	pr_debug("%s: compressed section %s (%.1f MiB inflated) skipped: %s", file, name,
		 mib(size), text[i]);
	if (why == SKIP_BAD || (skipped & why))
		return;
	skipped |= why;
	snprintf(first[i].file, sizeof(first[i].file), "%s", file);
	snprintf(first[i].name, sizeof(first[i].name), "%s", name);
	first[i].size = size;
}

int zsection_take_note(char *buf, size_t len)
{
	unsigned fresh = skipped & ~noted;
	struct first *f;

	if (fresh & SKIP_SIZE) {
		noted |= SKIP_SIZE;
		f = &first[0];
		snprintf(buf, len, "%s: compressed section %s (%.0f MiB inflated) skipped, and any "
			 "other over %.0f MiB; symbols are still read", f->file, f->name,
			 mib(f->size), mib(zsection_section_max));
		return 1;
	}
	if (fresh & SKIP_BUDGET) {
		noted |= SKIP_BUDGET;
		f = &first[1];
		snprintf(buf, len, "%s: compressed section %s (%.1f MiB inflated) skipped, and any "
			 "other past the %.0f MiB inflated in all", f->file, f->name, mib(f->size),
			 mib(zsection_total_max));
		return 1;
	}
	if (fresh & SKIP_STOP) {
		noted |= SKIP_STOP;
		f = &first[2];
		snprintf(buf, len, "%s: compressed section %s left unread, and any other after it: "
			 "its time was up (--duration, or a stop)", f->file, f->name);
		return 1;
	}
	return 0;
}

/* ---- one section ---- */

/*
 * Inflate the zlib stream in[0..len) into exactly size bytes, a step at a
 * time while the gate is open; every byte made counts against the
 * budget. The buffer (malloc'd), or NULL with *why.
 */
static void *inflate_all(const unsigned char *in, size_t len, uint64_t size, unsigned *why)
{
	unsigned char *out, extra;
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (len > UINT32_MAX || !(out = malloc(size))) {
		*why = SKIP_BAD;
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	if (inflateInit(&z) != Z_OK) {
		free(out);
		*why = SKIP_BAD;
		return NULL;
	}
	for (;;) {
		uLong before = z.total_out;

		if (!gate_open()) {
			*why = SKIP_STOP;
			break;
		}
		if (z.total_out < size) {
			z.next_out = out + z.total_out;
			z.avail_out = size - z.total_out < STEP ? (uInt)(size - z.total_out) : STEP;
		} else {
			/* full: the stream must end here, without one byte more */
			z.next_out = &extra;
			z.avail_out = 1;
		}
		rc = inflate(&z, Z_NO_FLUSH);
		inflated += z.total_out - before;
		if (z.total_out > size || (rc != Z_OK && rc != Z_STREAM_END)) {
			*why = SKIP_BAD;
			break;
		}
		if (rc == Z_STREAM_END) {
			if (z.total_out == size) {
				inflateEnd(&z);
				return out;
			}
			*why = SKIP_BAD;
			break;
		}
	}
	inflateEnd(&z);
	free(out);
	return NULL;
}

/* Empty section scn (header *sh): SHT_NOBITS, which libdw skips and
 * elf_strptr refuses. 0 or -EINVAL. */
static int empty(Elf_Scn *scn, GElf_Shdr *sh)
{
	sh->sh_type = SHT_NOBITS;
	sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	return gelf_update_shdr(scn, sh) ? 0 : -EINVAL;
}

/* Make buf (size bytes, malloc'd) the data of scn (header *sh, data d). 0 or -EINVAL. */
static int install(Elf_Scn *scn, GElf_Shdr *sh, Elf_Data *d, void *buf, uint64_t size,
		   struct zsection_held *held)
{
	sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	sh->sh_size = size;
	sh->sh_addralign = 1;
	if (!gelf_update_shdr(scn, sh))
		return -EINVAL;
	d->d_buf = buf;
	d->d_size = size;
	d->d_type = ELF_T_BYTE;
	d->d_align = 1;
	d->d_off = 0;
	held->bufs = xrealloc(held->bufs, (held->n + 1) * sizeof(*held->bufs));
	held->bufs[held->n++] = buf;
	return 0;
}

/*
 * Section scn (header *sh, named name) is compressed: gabi (SHF_COMPRESSED)
 * or GNU. Inflate it within the bounds, or empty it. 0 or -EINVAL (its
 * header could not be changed: libelf would inflate it as it stands).
 */
static int one(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, const char *name, int gabi,
	       const char *file, struct zsection_held *held)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t hdr = 12;	/* "ZLIB" and the size */
	unsigned why = 0;
	uint64_t size = 0;
	void *buf = NULL;

	if (!d || !d->d_buf) {
		why = SKIP_BAD;
	} else if (gabi) {
		GElf_Chdr ch;

		hdr = gelf_getclass(elf) == ELFCLASS32 ? sizeof(Elf32_Chdr) : sizeof(Elf64_Chdr);
		if (!gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB || d->d_size < hdr)
			why = SKIP_BAD;
		else
			size = ch.ch_size;
	} else {
		uint64_t be;

		memcpy(&be, (char *)d->d_buf + 4, 8);
		size = be64toh(be);
	}
	if (!why && size > zsection_section_max)
		why = SKIP_SIZE;
	else if (!why && (inflated >= zsection_total_max || size > zsection_total_max - inflated))
		why = SKIP_BUDGET;
	else if (!why && (!size || size / ZLIB_RATIO > d->d_size - hdr))
		why = SKIP_BAD;
	if (!why)
		buf = inflate_all((unsigned char *)d->d_buf + hdr, d->d_size - hdr, size, &why);
	/* libdw would try elf_compress_gnu on it again */
	if (buf && size >= 4 && !memcmp(buf, "ZLIB", 4)) {
		free(buf);
		buf = NULL;
		why = SKIP_BAD;
	}
	if (!buf) {
		say(file, name, size, why);
		return empty(scn, sh);
	}
	if (install(scn, sh, d, buf, size, held)) {
		free(buf);
		return -EINVAL;
	}
	return 0;
}

/* 1 if libdw might read a section called name (a superset of its table:
 * .debug_*, .gnu.debuglto_*, .gnu_debugaltlink, and their .z forms). */
static int dwarf_name(const char *name)
{
	if (!name || name[0] != '.')
		return 0;
	if (name[1] == 'z')
		return !strncmp(name + 2, "debug_", 6) || !strcmp(name + 2, "gnu_debugaltlink");
	return !strncmp(name, ".debug_", 7) || !strncmp(name, ".gnu.debuglto_", 14) ||
	       !strcmp(name, ".gnu_debugaltlink");
}

/* 1 if scn (header *sh, named name) is a GNU compressed DWARF section: a
 * .z name, not SHF_COMPRESSED, data beginning "ZLIB" and a size. */
static int gnu_compressed(Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	Elf_Data *d;

	if (!name || strncmp(name, ".z", 2) || (sh->sh_flags & SHF_COMPRESSED))
		return 0;
	d = elf_getdata(scn, NULL);
	return d && d->d_buf && d->d_size >= 12 && !memcmp(d->d_buf, "ZLIB", 4);
}

/*
 * One pass over elf's sections: the string tables (dwarf 0: the section
 * names' own first, so that every name read after it costs nothing) or
 * the DWARF sections (dwarf 1). 0 or -errno.
 */
static int pass(Elf *elf, int dwarf, const char *file, struct zsection_held *held)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int have_names = !elf_getshdrstrndx(elf, &shstrndx);

	if (!dwarf && have_names && (scn = elf_getscn(elf, shstrndx))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_STRTAB &&
		    (sh.sh_flags & SHF_COMPRESSED) &&
		    one(elf, scn, &sh, "(the section names)", 1, file, held))
			return -EINVAL;
		scn = NULL;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name = NULL;
		GElf_Shdr sh;
		int gabi, rc;

		if (!gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (sh.sh_type == SHT_NOBITS)
			continue;	/* as libdw: it reads a SHT_NULL one by its name */
		if (dwarf && (sh.sh_type == SHT_STRTAB || (sh.sh_flags & SHF_ALLOC)))
			continue;	/* strtabs: the first pass; libelf inflates no SHF_ALLOC one */
		if (!dwarf && sh.sh_type != SHT_STRTAB)
			continue;
		gabi = !!(sh.sh_flags & SHF_COMPRESSED);
		if (!gabi && !dwarf)
			continue;
		if (have_names)
			name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (dwarf && !dwarf_name(name))
			continue;
		if (!gabi && !gnu_compressed(scn, &sh, name))
			continue;
		rc = one(elf, scn, &sh, name, gabi, file, held);
		if (rc)
			return rc;
	}
	return 0;
}

int zsection_prepare(Elf *elf, unsigned which, const char *file, struct zsection_held *held)
{
	int rc;

	if (!elf)
		return -EINVAL;
	/* the string tables first: the section names are in one */
	rc = pass(elf, 0, file, held);
	if (!rc && (which & ZSECTION_DWARF))
		rc = pass(elf, 1, file, held);
	return rc;
}

void zsection_release(struct zsection_held *held)
{
	for (size_t i = 0; i < held->n; i++)
		free(held->bufs[i]);
	free(held->bufs);
	held->bufs = NULL;
	held->n = 0;
}
