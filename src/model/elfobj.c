/* ELF files through libelf: symbols, segments, build id, load bias, debug links. */
/* SPDX-License-Identifier: MIT */
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/mapguard.h"
#include "model/zsection.h"

struct elfobj {
	Elf *elf;
	char *name;             /* for messages, or NULL */
	struct zsection_held zheld;     /* inflated sections, libelf's until elf_end */
	int dwarf_ready;        /* the DWARF sections are inflated or emptied */
	char *image;            /* in-memory copy, or NULL */
	void *map;              /* the file mapped (private), under mapguard, or NULL */
	size_t map_len;
	GElf_Ehdr ehdr;
	struct elfobj_sym *syms;
	size_t nsyms;
	char *names;            /* backing store of every sym name */
	struct elfobj_segment *segs;
	size_t nsegs;
	int has_interp, has_dynamic, has_debug_info;
	uint64_t dt_debug_vaddr;
	int has_dt_debug;
	uint64_t eh_hdr_vaddr, eh_hdr_size;     /* PT_GNU_EH_FRAME; size 0 if none */
	char *build_id;
	char *debuglink;
	uint32_t debuglink_crc;
	char *altlink;          /* .gnu_debugaltlink: dwz file name, and its build id */
	char *altlink_id;
	unsigned flags;         /* what it was opened with (ELFOBJ_OPEN_NO_SYMS) */
	uint32_t *by_name;      /* syms' indexes sorted by name, made at the first lookup */
	int refs;               /* in the cache: its users, the cache's own hold included */
};

/*
 * The objects already read, by file identity, when elfobj_cache_start was
 * called (a run over several processes): the file a process maps was
 * opened by the caller with that process's access, and an identical file
 * (device, inode, size, change time) is not parsed again. Inherited by a
 * fork, so what the run read before forking its sessions each session has
 * read already. Never freed: at most ELFOBJ_CACHE_MAX objects.
 */
#define ELFOBJ_CACHE_MAX 256
static struct cached {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec ctime;
	struct elfobj *e;
} cache[ELFOBJ_CACHE_MAX];
static size_t ncache;
static int cache_on;

void elfobj_cache_start(void)
{
	cache_on = 1;
}

int elfobj_shared(const struct elfobj *e)
{
	return e && e->refs > 0;
}

/* The cached object of st's file that serves flags, or NULL. */
static struct elfobj *cache_find(const struct stat *st, unsigned flags)
{
	for (size_t i = 0; i < ncache; i++) {
		struct cached *c = &cache[i];

		if (c->dev == st->st_dev && c->ino == st->st_ino && c->size == st->st_size &&
		    c->ctime.tv_sec == st->st_ctim.tv_sec && c->ctime.tv_nsec == st->st_ctim.tv_nsec &&
		    (!(c->e->flags & ELFOBJ_OPEN_NO_SYMS) || (flags & ELFOBJ_OPEN_NO_SYMS))) {
			c->e->refs++;
			return c->e;
		}
	}
	return NULL;
}

static void cache_add(const struct stat *st, struct elfobj *e)
{
	if (!e || ncache == ELFOBJ_CACHE_MAX)
		return;
	cache[ncache++] = (struct cached){ st->st_dev, st->st_ino, st->st_size, st->st_ctim, e };
	e->refs = 2;	/* the caller's and the cache's */
}

/* ---- reading ---- */

/* Collect PT_LOAD segments and note PT_INTERP/PT_DYNAMIC. 0 or -EINVAL. */
static int read_segments(struct elfobj *e)
{
	size_t n;

	if (elf_getphdrnum(e->elf, &n))
		return -EINVAL;
	e->segs = xcalloc(n ? n : 1, sizeof(*e->segs));
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e->elf, i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_INTERP)
			e->has_interp = 1;
		if (ph.p_type == PT_DYNAMIC)
			e->has_dynamic = 1;
		if (ph.p_type == PT_GNU_EH_FRAME && !e->eh_hdr_size) {
			e->eh_hdr_vaddr = ph.p_vaddr;
			e->eh_hdr_size = ph.p_memsz;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs++] = (struct elfobj_segment) {
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
			.offset = ph.p_offset, .filesz = ph.p_filesz,
			.align = ph.p_align, .flags = ph.p_flags,
		};
	}
	return 0;
}

/* Lowercase hex of n bytes (malloc'd). */
static char *hex(const unsigned char *d, size_t n)
{
	char *h = xmalloc(n * 2 + 1);

	for (size_t i = 0; i < n; i++)
		sprintf(h + 2 * i, "%02x", d[i]);
	h[2 * n] = '\0';
	return h;
}

/* Set e->build_id from the first NT_GNU_BUILD_ID note in data. */
static void scan_notes(struct elfobj *e, Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (!e->build_id && off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz >= ELFOBJ_BUILD_ID_MIN && nh.n_descsz <= ELFOBJ_BUILD_ID_MAX &&
		    desc_off + nh.n_descsz <= data->d_size)
			e->build_id = hex((unsigned char *)data->d_buf + desc_off, nh.n_descsz);
		off = next;
	}
}

/* Set e->build_id from PT_NOTE segments, else from SHT_NOTE sections. */
static void read_build_id(struct elfobj *e)
{
	Elf_Scn *scn = NULL;
	size_t n;

	/* Program headers first: they survive section-header stripping. */
	if (!elf_getphdrnum(e->elf, &n)) {
		for (size_t i = 0; i < n && !e->build_id; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(e->elf, i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(e->elf, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
			if (d)
				scan_notes(e, d);
		}
	}
	while (!e->build_id && (scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d)
			scan_notes(e, d);
	}
}

/* The .gnu.version section (one GElf_Versym per .dynsym entry), or NULL. */
static Elf_Data *find_versym(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

struct raw_sym {
	GElf_Sym sym;
	const char *name;
	unsigned flags;
};

/*
 * Append the symbols of one symbol table section to *v. Names point into
 * libelf's string data until copied by read_symbols.
 */
static void read_symtab(struct elfobj *e, Elf_Scn *scn, GElf_Shdr *sh, int dynamic,
			struct raw_sym **v, size_t *n, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL), *versym = NULL;
	size_t count;

	if (!data || !sh->sh_entsize)
		return;
	count = data->d_size / gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT);
	if (dynamic)
		versym = find_versym(e->elf);
	for (size_t i = 1; i < count; i++) {
		GElf_Sym s;
		const char *name;
		unsigned flags = dynamic ? ELFOBJ_SYM_DYNAMIC : 0;

		if (!gelf_getsym(data, i, &s))
			break;
		name = elf_strptr(e->elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (versym) {
			GElf_Versym vs;

			if (gelf_getversym(versym, i, &vs) && (vs & 0x8000))
				flags |= ELFOBJ_SYM_HIDDEN_VER;
		}
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 256;
			*v = xrealloc(*v, *cap * sizeof(**v));
		}
		(*v)[(*n)++] = (struct raw_sym) { .sym = s, .name = name, .flags = flags };
	}
}

/* Copy .symtab then .dynsym into e->syms, version suffixes stripped into flags. */
static void read_symbols(struct elfobj *e)
{
	struct raw_sym *raw = NULL;
	size_t n = 0, cap = 0, total = 0, pos = 0;
	Elf_Scn *scn = NULL;

	for (int pass = 0; pass < 2; pass++) {
		Elf32_Word want = pass ? SHT_DYNSYM : SHT_SYMTAB;

		scn = NULL;
		while ((scn = elf_nextscn(e->elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				read_symtab(e, scn, &sh, pass, &raw, &n, &cap);
		}
	}
	for (size_t i = 0; i < n; i++)
		total += strlen(raw[i].name) + 1;
	e->names = xmalloc(total ? total : 1);
	e->syms = xcalloc(n ? n : 1, sizeof(*e->syms));
	for (size_t i = 0; i < n; i++) {
		struct elfobj_sym *s = &e->syms[i];
		const char *at = strchr(raw[i].name, '@');
		size_t len = at ? (size_t)(at - raw[i].name) : strlen(raw[i].name);

		memcpy(e->names + pos, raw[i].name, len);
		e->names[pos + len] = '\0';
		s->name = e->names + pos;
		pos += len + 1;
		s->value = raw[i].sym.st_value;
		s->size = raw[i].sym.st_size;
		s->type = GELF_ST_TYPE(raw[i].sym.st_info);
		s->bind = GELF_ST_BIND(raw[i].sym.st_info);
		s->shndx = raw[i].sym.st_shndx;
		s->flags = raw[i].flags;
		/* "name@VER" is a non-default version, "name@@VER" the default. */
		if (at && at[1] != '@')
			s->flags |= ELFOBJ_SYM_HIDDEN_VER;
	}
	e->nsyms = n;
	free(raw);
}

/*
 * Whether a debug link's file name (NUL-terminated within its section) may
 * be looked up: a plain file name, never a path, "." or "..".
 */
static int plain_name(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= ELFOBJ_NAME_MAX && !strchr(name, '/') &&
	       strcmp(name, ".") && strcmp(name, "..");
}

/* Read .gnu_debuglink from d: name, NUL, padding to 4, then a 4-byte CRC. */
static void read_debuglink(struct elfobj *e, Elf_Data *d)
{
	size_t len;

	if (!d || !d->d_buf || d->d_size < 8)
		return;
	len = strnlen(d->d_buf, d->d_size);
	if (((len + 4) & ~3UL) + 4 > d->d_size || !plain_name(d->d_buf))
		return;
	e->debuglink = xstrdup(d->d_buf);
	memcpy(&e->debuglink_crc, (char *)d->d_buf + ((len + 4) & ~3UL), 4);
}

/* Read .gnu_debugaltlink from d: a file name (a path: dwz writes absolute
 * ones), NUL, then the dwz file's build id. */
static void read_altlink(struct elfobj *e, Elf_Data *d)
{
	size_t len, idlen;

	if (!d || !d->d_buf || !d->d_size)
		return;
	len = strnlen(d->d_buf, d->d_size);
	if (len == 0 || len >= d->d_size || len > ELFOBJ_PATH_MAX)
		return;
	idlen = d->d_size - len - 1;
	if (idlen < ELFOBJ_BUILD_ID_MIN || idlen > ELFOBJ_BUILD_ID_MAX)
		return;
	e->altlink = xstrdup(d->d_buf);
	e->altlink_id = hex((unsigned char *)d->d_buf + len + 1, idlen);
}

/* Note .debug_info and read .gnu_debuglink and .gnu_debugaltlink. */
static void read_sections(struct elfobj *e)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		/* .zdebug_info: GNU-compressed (zsection inflates it for libdw) */
		if ((!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) &&
		    sh.sh_type != SHT_NOBITS)
			e->has_debug_info = 1;
		if (!strcmp(name, ".gnu_debuglink") && !e->debuglink && sh.sh_type != SHT_NOBITS)
			read_debuglink(e, elf_getdata(scn, NULL));
		if (!strcmp(name, ".gnu_debugaltlink") && !e->altlink && sh.sh_type != SHT_NOBITS)
			read_altlink(e, elf_getdata(scn, NULL));
	}
}

/* Find DT_DEBUG through PT_DYNAMIC, which survives section-header stripping. */
static void read_dynamic(struct elfobj *e)
{
	size_t n, esz = gelf_fsize(e->elf, ELF_T_DYN, 1, EV_CURRENT);

	if (!esz || elf_getphdrnum(e->elf, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(e->elf, i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		d = elf_getdata_rawchunk(e->elf, ph.p_offset, ph.p_filesz, ELF_T_DYN);
		if (!d)
			return;
		for (size_t j = 0; j < d->d_size / esz; j++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, j, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_DEBUG) {
				/* the value word follows the tag word */
				e->dt_debug_vaddr = ph.p_vaddr + j * esz + esz / 2;
				e->has_dt_debug = 1;
				return;
			}
		}
	}
}

/* Finish an elfobj whose e->elf is set: validate and read everything. */
static struct elfobj *load(struct elfobj *e, unsigned flags)
{
	e->flags = flags;
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &e->ehdr))
		goto err;
	/* before any name is read: elf_strptr would inflate a string table itself */
	if (zsection_prepare(e->elf, ZSECTION_STRTABS, e->name, &e->zheld))
		goto err;
	if (read_segments(e))
		goto err;
	if (!(flags & ELFOBJ_OPEN_NO_SYMS))
		read_symbols(e);
	read_sections(e);
	read_dynamic(e);
	read_build_id(e);
	return e;
err:
	elfobj_free(e);
	return NULL;
}

struct elfobj *elfobj_open_fd(int fd)
{
	return elfobj_open_fd_flags(fd, 0);
}

struct elfobj *elfobj_open_fd_flags(int fd, unsigned flags)
{
	return elfobj_open_fd_named(fd, flags, NULL);
}

struct elfobj *elfobj_open_fd_named(int fd, unsigned flags, const char *name)
{
	struct elfobj *e;
	struct stat st;
	void *map;

	if (fd < 0)
		return NULL;
	/*
	 * Never a FIFO or a device: a read of either need not end. A regular
	 * file is read as far as its size when opened, through a mapping of
	 * ours that mapguard watches before the first byte is read: the file
	 * may be truncated meanwhile. Private and writable, as elf_memory()
	 * wants (libelf edits section headers in place to decompress).
	 */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		close(fd);
		return NULL;
	}
	if (cache_on && (e = cache_find(&st, flags))) {
		close(fd);
		return e;
	}
	if ((map = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE,
			fd, 0)) == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	/* the mapping keeps the file: no descriptor per object, however
	 * many objects the target maps (they used to exhaust ours) */
	close(fd);
	mapguard_add(map, st.st_size);
	elf_version(EV_CURRENT);
	e = xcalloc(1, sizeof(*e));
	e->name = name ? xstrdup(name) : NULL;
	e->map = map;
	e->map_len = st.st_size;
	e->elf = elf_memory(map, st.st_size);
	e = load(e, flags);
	if (cache_on)
		cache_add(&st, e);
	return e;
}

struct elfobj *elfobj_open_mem(const void *buf, size_t len)
{
	struct elfobj *e;

	elf_version(EV_CURRENT);
	e = xcalloc(1, sizeof(*e));
	e->image = xmalloc(len ? len : 1);
	memcpy(e->image, buf, len);
	e->elf = elf_memory(e->image, len);
	return load(e, 0);
}

void elfobj_free(struct elfobj *e)
{
	if (!e || (e->refs && --e->refs))
		return;	/* still the cache's (refs never reaches 0 there) */
	if (e->elf)
		elf_end(e->elf);
	zsection_release(&e->zheld);
	free(e->name);
	if (e->map) {
		mapguard_remove(e->map);
		munmap(e->map, e->map_len);
	}
	free(e->image);
	free(e->syms);
	free(e->by_name);
	free(e->names);
	free(e->segs);
	free(e->build_id);
	free(e->debuglink);
	free(e->altlink);
	free(e->altlink_id);
	free(e);
}

/* ---- queries ---- */

int elfobj_type(const struct elfobj *e)
{
	return e->ehdr.e_type;
}

int elfobj_has_interp(const struct elfobj *e)
{
	return e->has_interp;
}

int elfobj_has_dynamic(const struct elfobj *e)
{
	return e->has_dynamic;
}

const struct elfobj_sym *elfobj_syms(const struct elfobj *e, size_t *n)
{
	*n = e->nsyms;
	return e->syms;
}

/* Rank of a candidate for elfobj_lookup: higher is better. */
static int sym_rank(const struct elfobj_sym *s)
{
	int r = 0;

	if (!(s->flags & ELFOBJ_SYM_HIDDEN_VER))
		r += 2;
	if (s->flags & ELFOBJ_SYM_DYNAMIC)
		r += 1;
	return r;
}

/* qsort_r comparator of by_name: the names, then the indexes (file order). */
static int cmp_by_name(const void *a, const void *b, void *arg)
{
	const struct elfobj_sym *syms = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(syms[x].name, syms[y].name);

	return c ? c : (x > y) - (x < y);
}

/* The first entry of by_name whose symbol is called name (or where it
 * would be). */
static size_t first_named(const struct elfobj *e, const char *name)
{
	size_t lo = 0, hi = e->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(e->syms[e->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void elfobj_index_names(const struct elfobj *e)
{
	struct elfobj *w = (struct elfobj *)e;	/* the index is a cache: made once */

	if (e->by_name || !e->nsyms)
		return;
	w->by_name = xmalloc(e->nsyms * sizeof(*e->by_name));
	for (size_t i = 0; i < e->nsyms; i++)
		w->by_name[i] = (uint32_t)i;
	qsort_r(w->by_name, e->nsyms, sizeof(*e->by_name), cmp_by_name, e->syms);
}

const struct elfobj_sym *elfobj_lookup(const struct elfobj *e, const char *name,
				       int dynamic_only)
{
	const struct elfobj_sym *best = NULL;

	elfobj_index_names(e);
	for (size_t k = e->nsyms ? first_named(e, name) : 0; k < e->nsyms; k++) {
		const struct elfobj_sym *s = &e->syms[e->by_name[k]];

		if (strcmp(s->name, name))
			break;
		if (s->shndx == SHN_UNDEF)
			continue;
		if (dynamic_only && !(s->flags & ELFOBJ_SYM_DYNAMIC))
			continue;
		/* Local symbols never bind across objects. */
		if (dynamic_only && s->bind == STB_LOCAL)
			continue;
		if (!best || sym_rank(s) > sym_rank(best))
			best = s;
	}
	return best;
}

const struct elfobj_segment *elfobj_segments(const struct elfobj *e, size_t *n)
{
	*n = e->nsegs;
	return e->segs;
}

const char *elfobj_build_id(const struct elfobj *e)
{
	return e->build_id;
}

const char *elfobj_debuglink(const struct elfobj *e, uint32_t *crc)
{
	if (crc)
		*crc = e->debuglink_crc;
	return e->debuglink;
}

const char *elfobj_altlink(const struct elfobj *e, const char **build_id)
{
	if (build_id)
		*build_id = e->altlink_id;
	return e->altlink;
}

int elfobj_has_debug_info(const struct elfobj *e)
{
	return e->has_debug_info;
}

void *elfobj_elf(const struct elfobj *e)
{
	return e->elf;
}

Dwarf *elfobj_dwarf_begin(struct elfobj *e)
{
	if (!e->dwarf_ready) {
		if (zsection_prepare(e->elf, ZSECTION_DWARF, e->name, &e->zheld))
			return NULL;	/* a section libdw would inflate as it stands */
		e->dwarf_ready = 1;
	}
	return dwarf_begin_elf(e->elf, DWARF_C_READ, NULL);
}

int elfobj_eh_frame_hdr(const struct elfobj *e, uint64_t *vaddr, uint64_t *size)
{
	if (!e->eh_hdr_size)
		return -ENOENT;
	*vaddr = e->eh_hdr_vaddr;
	*size = e->eh_hdr_size;
	return 0;
}

int elfobj_dt_debug_vaddr(const struct elfobj *e, uint64_t *vaddr)
{
	if (!e->has_dt_debug)
		return -ENOENT;
	*vaddr = e->dt_debug_vaddr;
	return 0;
}

/*
 * A mapping's offset is page-aligned, a segment's p_offset need not be: a
 * mapping belongs to a segment whose page-aligned file range holds its
 * offset. Two segments can share a file page (the RELRO page of the data
 * segment is also the tail of the read-only one): prefer the segment that
 * holds the offset itself, then the one whose X flag matches. Such a shared
 * page is ambiguous from the offset alone, so callers pass an object's
 * lowest (offset 0) mapping where they can.
 */
int elfobj_load_bias(const struct elfobj *e, const struct proc_map *m, uint64_t *bias)
{
	const struct elfobj_segment *best = NULL;
	int best_score = -1;

	for (size_t i = 0; i < e->nsegs; i++) {
		const struct elfobj_segment *s = &e->segs[i];
		uint64_t lo = s->offset & ~(uint64_t)4095;
		int score = 0;

		if (m->offset < lo || m->offset >= s->offset + (s->filesz ? s->filesz : 1))
			continue;
		if (s->offset <= m->offset)
			score += 2;
		if (!!(s->flags & PF_X) == !!(m->prot & PROC_MAP_X))
			score += 1;
		if (score > best_score) {
			best = s;
			best_score = score;
		}
	}
	if (!best)
		return -ENOENT;
	/* may wrap when m->offset < p_offset: unsigned arithmetic is exact */
	*bias = m->start - (best->vaddr + (m->offset - best->offset));
	return 0;
}

int elfobj_read(const struct elfobj *e, uint64_t vaddr, void *buf, size_t len)
{
	size_t fsize = 0;
	const char *raw = elf_rawfile(e->elf, &fsize);

	if (!raw)
		return -ENOENT;
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct elfobj_segment *s = &e->segs[i];
		uint64_t off;

		if (vaddr < s->vaddr || vaddr - s->vaddr > s->filesz ||
		    len > s->filesz - (vaddr - s->vaddr))
			continue;
		off = s->offset + (vaddr - s->vaddr);
		if (off > fsize || len > fsize - off)
			return -ENOENT;
		memcpy(buf, raw + off, len);
		return 0;
	}
	return -ENOENT;
}

const char *elfobj_got_symbol(const struct elfobj *e, uint64_t got_vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e->elf, scn))) {
		Elf_Data *data, *symdata;
		GElf_Shdr sh, symsh;
		Elf_Scn *symscn;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		symscn = elf_getscn(e->elf, sh.sh_link);
		if (!data || !symscn || !gelf_getshdr(symscn, &symsh) ||
		    !(symdata = elf_getdata(symscn, NULL)))
			continue;
		n = data->d_size / gelf_fsize(e->elf, ELF_T_RELA, 1, EV_CURRENT);
		for (size_t i = 0; i < n; i++) {
			unsigned type;
			GElf_Rela r;
			GElf_Sym sym;

			if (!gelf_getrela(data, i, &r) || r.r_offset != got_vaddr)
				continue;
			type = GELF_R_TYPE(r.r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			if (!gelf_getsym(symdata, GELF_R_SYM(r.r_info), &sym))
				return NULL;
			return elf_strptr(e->elf, symsh.sh_link, sym.st_name);
		}
	}
	return NULL;
}
