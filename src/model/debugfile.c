/* Separate debug files (build id, .gnu_debuglink, dwz alt files), found without trusting the target's paths. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/debugfile.h"
#include "model/tfile.h"

const char *debugfile_host_dir = "/usr/lib/debug";

#define TARGET_DEBUG_DIR "/usr/lib/debug"

/*
 * CRC-32 (zlib's, as .gnu_debuglink uses) of the first size bytes of fd,
 * fd's size when it was opened: a file that grows since is not read further.
 * 0 and *crc, or -errno (-EFBIG past DEBUGFILE_CRC_MAX, -EIO if it shrank).
 */
static int file_crc(int fd, off_t size, uint32_t *crc)
{
	const size_t bufsz = 65536;
	uLong c = crc32(0, NULL, 0);
	unsigned char *buf;
	off_t off = 0;
	int ret = 0;

	if (size < 0 || (unsigned long long)size > DEBUGFILE_CRC_MAX)
		return -EFBIG;
	buf = xmalloc(bufsz);
	while (off < size) {
		size_t want = size - off < (off_t)bufsz ? (size_t)(size - off) : bufsz;
		ssize_t r = pread(fd, buf, want, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r < 0 ? -errno : -EIO;
			goto out;
		}
		c = crc32(c, buf, (uInt)r);
		off += r;
	}
	*crc = (uint32_t)c;
out:
	free(buf);
	return ret;
}

/*
 * Open path (in root, with the access of thread as: see tfile_open) as a
 * debug file whose build id must be build_id, or, when build_id is NULL
 * and crc is not, whose CRC must be *crc. NULL if it is absent, not a
 * regular file, not for as to read or does not match.
 */
static struct elfobj *try_file(int root, const char *path, pid_t as, const char *build_id,
			       const uint32_t *crc)
{
	struct elfobj *d;
	struct stat st;
	uint32_t c = 0;
	int fd;

	if (root < 0 && root != TFILE_HOST)
		return NULL;
	fd = tfile_open(root, path, &st, as);
	if (fd == -EACCES || fd == -EPERM)
		pr_debug("debug file %s%s not opened with %d's access: %s", path,
			 root == TFILE_HOST ? " (on the host)" : "", (int)as, strerror(-fd));
	if (fd < 0)
		return NULL;
	if (!build_id && (!crc || file_crc(fd, st.st_size, &c) || c != *crc)) {
		close(fd);
		return NULL;
	}
	d = elfobj_open_fd_named(fd, 0, path);
	if (d && build_id && (!elfobj_build_id(d) || strcmp(elfobj_build_id(d), build_id))) {
		elfobj_free(d);
		return NULL;
	}
	return d;
}

/* Try DIR/.build-id/xx/rest.debug in root for build id id, with as's
 * access; the path goes to path[len]. */
static struct elfobj *try_build_id(int root, const char *dir, pid_t as, const char *id,
				   char *path, size_t len)
{
	if (!id || strlen(id) < 2 * ELFOBJ_BUILD_ID_MIN ||
	    snprintf(path, len, "%s/.build-id/%.2s/%s.debug", dir, id, id + 2) >= (int)len)
		return NULL;
	return try_file(root, path, as, id, NULL);
}

/* *where = path (a copy) when d was found in the target's root; returns d. */
static struct elfobj *found(struct elfobj *d, int root, const char *path, char **where)
{
	if (d && where && root >= 0)
		*where = xstrdup(path);
	return d;
}

struct elfobj *debugfile_open(const struct elfobj *e, int root, pid_t as,
			      const char *obj_path, char **where)
{
	const char *id = elfobj_build_id(e), *link;
	char dir[ELFOBJ_PATH_MAX + 1], path[2 * ELFOBJ_PATH_MAX + 64];
	struct elfobj *d = NULL;
	const char *slash;
	uint32_t crc;

	if (where)
		*where = NULL;
	link = elfobj_debuglink(e, &crc);
	if (root >= 0 && (d = try_build_id(root, TARGET_DEBUG_DIR, as, id, path, sizeof(path))))
		return found(d, root, path, where);
	if (root >= 0 && link && obj_path && obj_path[0] == '/' &&
	    (slash = strrchr(obj_path, '/')) && (size_t)(slash - obj_path) < sizeof(dir)) {
		static const char *const fmt[] = { "%s/%s", "%s/.debug/%s", TARGET_DEBUG_DIR "%s/%s" };

		memcpy(dir, obj_path, slash - obj_path);
		dir[slash - obj_path] = '\0';
		for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
			if (snprintf(path, sizeof(path), fmt[i], dir, link) >= (int)sizeof(path))
				continue;
			/* never the object itself */
			if (!strcmp(path, obj_path))
				continue;
			d = try_file(root, path, as, id, &crc);
			if (d)
				return found(d, root, path, where);
		}
	}
	return try_build_id(TFILE_HOST, debugfile_host_dir, as, id, path, sizeof(path));
}

/* ---- libdw and dwz alt files ---- */

/*
 * A minimal ELF image (header, .shstrtab, a 4-byte .debug_line) that libdw
 * accepts as a Dwarf with nothing in it: the alt file of last resort.
 */
static struct elfobj *empty_elf(void)
{
	static const char shstr[] = "\0.shstrtab\0.debug_line";
	unsigned char img[sizeof(Elf64_Ehdr) + 32 + 3 * sizeof(Elf64_Shdr)];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + sizeof(*eh) + 32);

	memset(img, 0, sizeof(img));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shoff = sizeof(*eh) + 32;
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	memcpy(img + sizeof(*eh), shstr, sizeof(shstr));
	sh[1] = (Elf64_Shdr) { .sh_name = 1, .sh_type = SHT_STRTAB, .sh_addralign = 1,
			       .sh_offset = sizeof(*eh), .sh_size = sizeof(shstr) };
	sh[2] = (Elf64_Shdr) { .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_addralign = 1,
			       .sh_offset = sizeof(*eh) + 24, .sh_size = 4 };
	return elfobj_open_mem(img, sizeof(img));
}

struct elfobj *debugfile_alt_open(const struct elfobj *e, int root, pid_t as, const char *where)
{
	const char *id, *name = elfobj_altlink(e, &id);
	char path[2 * ELFOBJ_PATH_MAX + 8];
	struct elfobj *a = NULL;
	const char *slash;

	if (!name)
		return NULL;
	if (root >= 0)
		a = try_build_id(root, TARGET_DEBUG_DIR, as, id, path, sizeof(path));
	if (!a && root >= 0 && name[0] == '/')
		a = try_file(root, name, as, id, NULL);
	if (!a && root >= 0 && name[0] != '/' && where && (slash = strrchr(where, '/')) &&
	    snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - where), where, name) <
	    (int)sizeof(path))
		a = try_file(root, path, as, id, NULL);
	if (!a)
		a = try_build_id(TFILE_HOST, debugfile_host_dir, as, id, path, sizeof(path));
	return a;
}

int debugfile_dwarf_begin(struct debugfile_dwarf *out, struct elfobj *e, int root, pid_t as,
			  const char *where)
{
	return debugfile_dwarf_begin_alt(out, e, debugfile_alt_open(e, root, as, where));
}

int debugfile_dwarf_begin_alt(struct debugfile_dwarf *out, struct elfobj *e, struct elfobj *alt)
{
	memset(out, 0, sizeof(*out));
	out->dw = elfobj_dwarf_begin(e);
	if (!out->dw) {
		elfobj_free(alt);
		return -ENOENT;
	}
	out->alt = alt;
	if (out->alt)
		out->alt_dw = elfobj_dwarf_begin(out->alt);
	if (!out->alt_dw) {
		elfobj_free(out->alt);
		out->alt = empty_elf();
		if (out->alt)
			out->alt_dw = elfobj_dwarf_begin(out->alt);
	}
	if (!out->alt_dw) {
		/* libdw would search on its own: no DWARF rather than that */
		debugfile_dwarf_end(out);
		return -ENOENT;
	}
	/* ours to free: libdw frees only the alt files it opened itself */
	dwarf_setalt(out->dw, out->alt_dw);
	return 0;
}

void debugfile_dwarf_end(struct debugfile_dwarf *d)
{
	if (d->dw)
		dwarf_end(d->dw);
	if (d->alt_dw)
		dwarf_end(d->alt_dw);
	elfobj_free(d->alt);
	memset(d, 0, sizeof(*d));
}
