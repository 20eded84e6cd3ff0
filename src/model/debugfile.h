/* Separate debug files (build id, .gnu_debuglink, dwz alt files), found without trusting the target's paths. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_DEBUGFILE_H
#define HEAPATTACH_DEBUGFILE_H

#include <elfutils/libdw.h>
#include "model/elfobj.h"
#include "model/tfile.h"

/*
 * Where debug files are looked for. In the target's view (root: a
 * tfile_root() fd, or -1 for none), with every path resolved inside its
 * root (tfile_open): /usr/lib/debug/.build-id/xx/rest.debug, then the
 * .gnu_debuglink name in the object's directory, in its .debug/ and under
 * /usr/lib/debug/DIR. On the host, only by build id:
 * debugfile_host_dir/.build-id/xx/rest.debug. No path the target chose is
 * ever resolved on the host. Every candidate, in the root or on the host,
 * is opened with the access of the target's thread as (tfile_open): a
 * file it may not read is no candidate. A candidate must carry the
 * object's build id or, when the object has none, match the debug link's
 * CRC (read up to the file's size, at most DEBUGFILE_CRC_MAX bytes).
 */
extern const char *debugfile_host_dir;  /* "/usr/lib/debug"; a test seam */
#define DEBUGFILE_CRC_MAX (1ULL << 30)

/*
 * The separate debug file of e, an object the target maps at obj_path (its
 * path in the target's view). *where (may be NULL) gets the debug file's
 * path in the target's view (malloc'd), or NULL when it was found on the
 * host. NULL if there is none.
 */
struct elfobj *debugfile_open(const struct elfobj *e, int root, pid_t as,
			      const char *obj_path, char **where);

/* libdw over an object and its dwz alt file. */
struct debugfile_dwarf {
	Dwarf *dw;
	Dwarf *alt_dw;          /* the alt file's, or an empty one's: never NULL with dw */
	struct elfobj *alt;
};

/*
 * Open libdw over e (a file with .debug_info that the target sees at where,
 * or NULL if it came from the host) and hand it its .gnu_debugaltlink file
 * ourselves: by build id in the target's root, by its name inside the
 * target's root (relative to where's directory), then by build id on the
 * host, each with the access of thread as; else an empty one, so that
 * libdw never opens the name itself (it would, on the host, as root). 0,
 * or -ENOENT if libdw cannot read e.
 */
int debugfile_dwarf_begin(struct debugfile_dwarf *out, struct elfobj *e, int root, pid_t as,
			  const char *where);
/*
 * The same in two steps, for a caller that opens the files while the
 * target is there and reads them later (its root and its access are
 * needed to open, not to read): e's alt file, found as above, or NULL;
 * then libdw over e with alt (owned from then on, freed on failure too;
 * NULL: none found, an empty one is handed to libdw).
 */
struct elfobj *debugfile_alt_open(const struct elfobj *e, int root, pid_t as, const char *where);
int debugfile_dwarf_begin_alt(struct debugfile_dwarf *out, struct elfobj *e, struct elfobj *alt);
void debugfile_dwarf_end(struct debugfile_dwarf *d);

#endif
