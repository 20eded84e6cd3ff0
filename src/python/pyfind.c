/* Find the CPython interpreter in a target: the object holding _PyRuntime, its version and layout, the agent's addresses. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "model/debugfile.h"
#include "model/elfobj.h"
#include "model/target.h"
#include "model/tfile.h"
#include "python/pyfind.h"

/*
 * Everything here comes from the target: its maps and file names, the
 * symbols of its files, the words read from its memory. Symbol values are
 * turned into addresses only when they land inside a mapping of the same
 * file; pointers read from memory must be user addresses inside a mapping;
 * the 3.13 debug offsets must carry their cookie, the version Py_Version
 * names, sizes below a bound and every offset inside its struct, and they
 * must agree with the table compiled from 3.13's headers.
 */

#define PY_USER_MAX	(1ULL << 57)	/* above any x86-64 user address (5-level paging) */
#define PY_STRUCT_MAX	(16u << 20)	/* no CPython struct we read is larger */
#define PY_EVAL_MAX	(64u << 20)	/* bound on _PyEval_EvalFrameDefault's size */

/* A candidate object: a file mapping whose name says python. */
struct cand {
	struct elfobj *e;
	struct elfobj *dbg;		/* its separate debug file, or NULL */
	char path[4096];
	uint64_t xlo, xhi;		/* its first executable mapping */
	uint64_t bias;
	int major, minor;		/* from the file name; -1 if none */
};

/* "python3.11", "libpython3.7m.so.1.0", "python2.7": the version in a file
 * name's last component, 0 (major, minor set) or -1. */
static int name_version(const char *path, int *major, int *minor)
{
	const char *b = strrchr(path, '/'), *p;
	char *end;
	long ma, mi;

	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (strncmp(b, "python", 6))
		return -1;
	p = b + 6;
	if (*p < '0' || *p > '9')
		return -1;
	ma = strtol(p, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return -1;
	mi = strtol(end + 1, &end, 10);
	if (ma > 9 || mi > 99 || (*end >= '0' && *end <= '9'))
		return -1;
	*major = (int)ma;
	*minor = (int)mi;
	return 0;
}

/* 1 if the file's last path component starts with "python" or "libpython". */
static int python_named(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

/* The defined symbol name of c: the object's own symbols, then its debug file's. */
static const struct elfobj_sym *sym(const struct cand *c, const char *name)
{
	const struct elfobj_sym *s = elfobj_lookup(c->e, name, 0);

	if ((!s || !s->value) && c->dbg)
		s = elfobj_lookup(c->dbg, name, 0);
	return s && s->value ? s : NULL;
}

/*
 * 1 if [a, a + size) starts and ends in mappings with prot bits want that
 * are file path's or anonymous (path NULL: any mapping). A struct of the
 * interpreter may straddle a file's data mapping and its anonymous .bss.
 */
static int range_ok(struct target *t, uint64_t a, uint64_t size, unsigned want,
		    const char *path)
{
	uint64_t ends[2] = { a, a + (size ? size - 1 : 0) };
	const struct proc_map *m;

	if (!a || a >= PY_USER_MAX || size > PY_USER_MAX - a)
		return 0;
	for (int i = 0; i < 2; i++)
		if (target_find(t, ends[i], &m) || (m->prot & want) != want ||
		    (path && m->path && strcmp(m->path, path)))
			return 0;
	return 1;
}

/*
 * The runtime address of symbol s of c, if its size bytes lie inside one
 * PT_LOAD segment of c's file and in mappings with prot bits want that are
 * that file's or anonymous (the part of a segment past its file bytes:
 * .bss): 0 or -ENOENT.
 */
static int sym_addr(struct target *t, const struct cand *c, const struct elfobj_sym *s,
		    uint64_t size, unsigned want, uint64_t *addr)
{
	const struct elfobj_segment *seg;
	uint64_t a = c->bias + s->value;
	size_t nseg, k;

	seg = elfobj_segments(c->e, &nseg);
	for (k = 0; k < nseg; k++)
		if (s->value >= seg[k].vaddr && s->value - seg[k].vaddr < seg[k].memsz &&
		    size <= seg[k].memsz - (s->value - seg[k].vaddr))
			break;
	if (k == nseg || a < c->bias || !range_ok(t, a, size, want, c->path))
		return -ENOENT;
	*addr = a;
	return 0;
}

/* Read one pointer-sized word at addr. */
static int read_word(struct target *t, uint64_t addr, uint64_t *v)
{
	return target_read(t, addr, v, sizeof(*v));
}

/* 1 if [p, p + size) is user memory, readable and writable (heap, data,
 * bss: where CPython keeps its states). */
static int ptr_ok(struct target *t, uint64_t p, uint64_t size)
{
	return range_ok(t, p, size, PROC_MAP_R | PROC_MAP_W, NULL);
}

static void cand_free(struct cand *c)
{
	elfobj_free(c->dbg);
	/* c->e is the target's */
	memset(c, 0, sizeof(*c));
}

/*
 * Open the object behind mapping index i of the maps as a candidate: its
 * executable mapping, bias, name version, and its debug file when its own
 * symbols lack _PyRuntime. 0 or -ENOENT.
 */
static int cand_open(struct target *t, size_t i, int root, struct cand *c)
{
	const struct proc_maps *maps = target_maps(t);
	const struct proc_map *m, *x = NULL;

	memset(c, 0, sizeof(*c));
	if (!maps || i >= maps->n)
		return -ENOENT;
	m = &maps->v[i];
	for (size_t k = 0; k < maps->n && !x; k++)
		if (maps->v[k].path && (maps->v[k].prot & PROC_MAP_X) &&
		    maps->v[k].inode == m->inode && maps->v[k].dev_major == m->dev_major &&
		    maps->v[k].dev_minor == m->dev_minor && !strcmp(maps->v[k].path, m->path))
			x = &maps->v[k];
	if (!x || strlen(x->path) >= sizeof(c->path))
		return -ENOENT;
	c->e = target_object(t, x, TARGET_OBJ_SYMS, NULL);
	if (!c->e || target_map_bias(t, x, c->e, &c->bias))
		return -ENOENT;
	strcpy(c->path, x->path);
	c->xlo = x->start;
	c->xhi = x->end;
	c->major = c->minor = -1;
	name_version(c->path, &c->major, &c->minor);
	if (!sym(c, "_PyRuntime") && root >= 0)
		c->dbg = debugfile_open(c->e, root, target_reader(t), c->path, NULL);
	return 0;
}

/* 1 if mapping i is the first mapping of its file in the maps. */
static int first_of_file(const struct proc_maps *maps, size_t i)
{
	const struct proc_map *m = &maps->v[i];

	for (size_t k = 0; k < i; k++)
		if (maps->v[k].path && maps->v[k].inode == m->inode &&
		    maps->v[k].dev_major == m->dev_major && maps->v[k].dev_minor == m->dev_minor &&
		    !strcmp(maps->v[k].path, m->path))
			return 0;
	return 1;
}

/*
 * The object defining _PyRuntime among the python-named files the target
 * maps (the main executable of a static build, or libpython*.so) and its
 * main executable (an application embedding a static libpython), into *c.
 * 0; -ENOTSUP with a reason when a python-named object with Python's API
 * but no _PyRuntime is there (2.7, 3.6); -ENOENT when none.
 */
static int find_runtime_object(struct target *t, struct cand *c, char *err, size_t errlen)
{
	const struct proc_maps *maps = target_maps(t);
	int root = tfile_root(target_reader(t)), ret = -ENOENT;
	char old[64] = "", exe[4096] = "", link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)target_pid(t));
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))	/* as maps show it */
		exe[n - 10] = 0;

	if (!maps) {
		log_say(err, errlen, "cannot read the target's maps");
		if (root >= 0)
			close(root);
		return -ESRCH;
	}
	for (size_t i = 0; i < maps->n; i++) {
		if (!maps->v[i].path || maps->v[i].path[0] != '/' ||
		    !(python_named(maps->v[i].path) || !strcmp(maps->v[i].path, exe)) ||
		    !first_of_file(maps, i))
			continue;
		if (cand_open(t, i, root, c))
			continue;
		if (sym(c, "_PyRuntime")) {
			ret = 0;
			break;
		}
		if (!old[0] && (sym(c, "Py_Initialize") || sym(c, "PyCode_Type"))) {
			if (c->major >= 0)
				snprintf(old, sizeof(old), "Python %d.%d", c->major, c->minor);
			else
				snprintf(old, sizeof(old), "a Python");
		}
		cand_free(c);
		maps = target_maps(t);	/* cand_open may have read them again */
		if (!maps)
			break;
	}
	if (root >= 0)
		close(root);
	if (ret && old[0]) {
		log_say(err, errlen, "%s: not supported, native frames only", old);
		return -ENOTSUP;
	}
	if (ret)
		log_say(err, errlen, "no Python interpreter (_PyRuntime) in the target");
	return ret;
}

/* Py_Version (3.11+): 0x030b07f0 for 3.11.7. 0 and *v, or -ENOENT. */
static int read_py_version(struct target *t, const struct cand *c, uint64_t *v)
{
	const struct elfobj_sym *s = sym(c, "Py_Version");
	uint64_t a, w;

	if (!s || sym_addr(t, c, s, sizeof(w), PROC_MAP_R, &a) || read_word(t, a, &w))
		return -ENOENT;
	*v = w & 0xffffffffu;	/* an unsigned long holding a 32-bit hex version */
	return 0;
}

/* The word of the 3.13 debug offsets at byte offset off. */
static uint64_t dw(const void *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)buf + off, sizeof(v));
	return v;
}

/* Offsets of 3.13's _Py_DebugOffsets fields (bytes from its start). */
enum {
	DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_RT_SIZE = 24, DO_RT_INTERP_HEAD = 40,
	DO_IS_SIZE = 48, DO_IS_THREADS_HEAD = 72, DO_IS_CEVAL_GIL = 112,
	DO_IS_GIL_STATE = 120, DO_IS_GIL_HOLDER = 144,
	DO_TS_SIZE = 152, DO_TS_NEXT = 168, DO_TS_INTERP = 176, DO_TS_FRAME = 184,
	DO_TS_THREAD_ID = 192,
	DO_FR_SIZE = 224, DO_FR_PREVIOUS = 232, DO_FR_EXECUTABLE = 240, DO_FR_INSTR_PTR = 248,
	DO_FR_OWNER = 264,
	DO_CO_SIZE = 272, DO_CO_FILENAME = 280, DO_CO_NAME = 288, DO_CO_QUALNAME = 296,
	DO_CO_LINETABLE = 304, DO_CO_FIRSTLINENO = 312, DO_CO_ADAPTIVE = 344,
	DO_OB_SIZE = 352, DO_OB_TYPE = 360,
	DO_BY_SIZE = 512, DO_BY_OB_SIZE = 520, DO_BY_SVAL = 528,
	DO_UN_SIZE = 536, DO_UN_STATE = 544, DO_UN_LENGTH = 552, DO_UN_ASCII_SIZE = 560,
};

/* One layout field taken from the debug offsets: its offset, the offset of
 * its struct's size word, the width of the field read there. */
struct do_field {
	size_t lay_off;			/* offsetof(struct py_layout, ...) */
	unsigned off, size_off, width;
	const char *name;
};

#define F(field, off, size_off, width) \
	{ offsetof(struct py_layout, field), off, size_off, width, #field }
static const struct do_field do_fields[] = {
	F(rt_interp_main, DO_RT_INTERP_HEAD, DO_RT_SIZE, 16),	/* head, then main */
	F(is_threads_head, DO_IS_THREADS_HEAD, DO_IS_SIZE, 8),
	F(is_gil, DO_IS_CEVAL_GIL, DO_IS_SIZE, 8),
	F(ts_next, DO_TS_NEXT, DO_TS_SIZE, 8),
	F(ts_thread_id, DO_TS_THREAD_ID, DO_TS_SIZE, 8),
	F(ts_interp, DO_TS_INTERP, DO_TS_SIZE, 8),
	F(ts_frame, DO_TS_FRAME, DO_TS_SIZE, 8),
	F(fr_back, DO_FR_PREVIOUS, DO_FR_SIZE, 8),
	F(fr_code, DO_FR_EXECUTABLE, DO_FR_SIZE, 8),
	F(fr_lasti, DO_FR_INSTR_PTR, DO_FR_SIZE, 8),
	F(fr_owner, DO_FR_OWNER, DO_FR_SIZE, 1),
	F(co_filename, DO_CO_FILENAME, DO_CO_SIZE, 8),
	F(co_name, DO_CO_NAME, DO_CO_SIZE, 8),
	F(co_qualname, DO_CO_QUALNAME, DO_CO_SIZE, 8),
	F(co_linetable, DO_CO_LINETABLE, DO_CO_SIZE, 8),
	F(co_firstlineno, DO_CO_FIRSTLINENO, DO_CO_SIZE, 4),
	F(co_code_adaptive, DO_CO_ADAPTIVE, DO_CO_SIZE, 2),
	F(ob_type, DO_OB_TYPE, DO_OB_SIZE, 8),
	F(ob_size, DO_BY_OB_SIZE, DO_BY_SIZE, 8),
	F(bytes_sval, DO_BY_SVAL, DO_BY_SIZE, 1),
	F(uni_state, DO_UN_STATE, DO_UN_SIZE, 4),
	F(uni_length, DO_UN_LENGTH, DO_UN_SIZE, 8),
	F(uni_ascii_size, DO_UN_ASCII_SIZE, DO_UN_SIZE, 0),
};
#undef F

int py_debug_offsets_parse(const void *buf, size_t len, uint64_t py_version,
			   struct py_layout *lay, char *err, size_t errlen)
{
	const struct py_layout *tab = py_layout_for(13);
	struct py_layout l = *tab;
	uint64_t v, gil_state, holder;

	if (len < PY_DEBUG_OFFSETS_LEN || memcmp(buf, "xdebugpy", 8)) {
		log_say(err, errlen, "Python 3.13: no _Py_DebugOffsets cookie at _PyRuntime");
		return -ENOTSUP;
	}
	v = dw(buf, DO_VERSION);
	if ((v >> 16) != 0x030d || (py_version && v != py_version)) {
		log_say(err, errlen, "Python 3.13: _Py_DebugOffsets names version 0x%llx",
		    (unsigned long long)v);
		return -ENOTSUP;
	}
	if (dw(buf, DO_FREE_THREADED)) {
		log_say(err, errlen, "Python 3.13 free-threaded build: not supported, native frames only");
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(do_fields) / sizeof(do_fields[0]); i++) {
		const struct do_field *f = &do_fields[i];
		uint64_t size = dw(buf, f->size_off), off = dw(buf, f->off);
		uint32_t *dst = (uint32_t *)((char *)&l + f->lay_off);

		if (f->width == 0)	/* a size, not an offset: at most its struct */
			off = off <= size ? off : UINT64_MAX;
		if (!size || size > PY_STRUCT_MAX || off >= size || size - off < f->width) {
			log_say(err, errlen, "Python 3.13: _Py_DebugOffsets: %s (%llu) outside its struct (%llu bytes)",
			    f->name, (unsigned long long)off, (unsigned long long)size);
			return -ENOTSUP;
		}
		if (f->lay_off == offsetof(struct py_layout, rt_interp_main))
			off += 8;	/* interpreters.main follows interpreters.head */
		*dst = (uint32_t)off;
	}
	gil_state = dw(buf, DO_IS_GIL_STATE);
	holder = dw(buf, DO_IS_GIL_HOLDER);
	if (holder < gil_state || holder - gil_state >= PY_STRUCT_MAX) {
		log_say(err, errlen, "Python 3.13: _Py_DebugOffsets: the GIL's holder is outside the GIL");
		return -ENOTSUP;
	}
	l.gil_last_holder = (uint32_t)(holder - gil_state);
	/*
	 * The table's fields the debug offsets do not carry (_co_firsttraceable,
	 * sizeof(PyCompactUnicodeObject)) hold only if the build is laid out as
	 * the headers the table came from: any difference (a debug build, an
	 * unknown patch) and the whole layout is refused.
	 */
	for (size_t i = 0; i < sizeof(do_fields) / sizeof(do_fields[0]); i++) {
		const struct do_field *f = &do_fields[i];
		uint32_t a = *(const uint32_t *)((const char *)&l + f->lay_off);
		uint32_t b = *(const uint32_t *)((const char *)tab + f->lay_off);

		if (a != b) {
			log_say(err, errlen, "Python 3.13: layout differs from a release build's (%s at %u, not %u)",
			    f->name, a, b);
			return -ENOTSUP;
		}
	}
	if (l.gil_last_holder != tab->gil_last_holder) {
		log_say(err, errlen, "Python 3.13: layout differs from a release build's (gil_last_holder)");
		return -ENOTSUP;
	}
	*lay = l;
	return 0;
}

/* Version of c: Py_Version when there (3.11+), else the file name's. */
static int find_version(struct target *t, const struct cand *c, struct py_target *out,
			uint64_t *pyver, char *err, size_t errlen)
{
	int major = c->major, minor = c->minor;

	*pyver = 0;
	if (!read_py_version(t, c, pyver)) {
		int ma = (int)(*pyver >> 24), mi = (int)((*pyver >> 16) & 0xff);

		if (major >= 0 && (ma != major || mi != minor)) {
			log_say(err, errlen, "Python in %s: its name says %d.%d, Py_Version %d.%d",
			    c->path, major, minor, ma, mi);
			return -ENOTSUP;
		}
		major = ma;
		minor = mi;
		snprintf(out->version, sizeof(out->version), "%d.%d.%d", ma, mi,
			 (int)((*pyver >> 8) & 0xff));
	} else if (major >= 0) {
		snprintf(out->version, sizeof(out->version), "%d.%d", major, minor);
	} else {
		log_say(err, errlen, "Python in %s: version unknown, native frames only", c->path);
		return -ENOTSUP;
	}
	if (major != 3 || !py_layout_for(minor)) {
		log_say(err, errlen, "Python %d.%d: not supported, native frames only", major, minor);
		return -ENOTSUP;
	}
	out->minor = minor;
	return 0;
}

/*
 * *p = the pointer read at addr, which must name span bytes of user memory,
 * readable and writable. -EIO unreadable, -EAGAIN NULL (err: "Python V:
 * unset"), -ENOTSUP elsewhere (what names it in err).
 */
static int read_state_ptr(struct target *t, const struct py_target *pt, uint64_t addr,
			  uint64_t span, const char *what, const char *unset, uint64_t *p,
			  char *err, size_t errlen)
{
	if (read_word(t, addr, p)) {
		log_say(err, errlen, "Python %s: cannot read %s at 0x%llx", pt->version, what,
		    (unsigned long long)addr);
		return -EIO;
	}
	if (!*p) {
		log_say(err, errlen, "Python %s: %s", pt->version, unset);
		return -EAGAIN;
	}
	if (!ptr_ok(t, *p, span)) {
		log_say(err, errlen, "Python %s: %s 0x%llx is not in writable memory", pt->version,
		    what, (unsigned long long)*p);
		return -ENOTSUP;
	}
	return 0;
}

/* The agent's two addresses, from the main interpreter. */
static int find_states(struct target *t, struct py_target *out, char *err, size_t errlen)
{
	const struct py_layout *l = &out->lay;
	uint64_t main_is, gil, span = l->is_threads_head + 8;
	int ret;

	if ((l->has & PY_HAS_GIL) && l->is_gil + 8 > span)
		span = l->is_gil + 8;
	ret = read_state_ptr(t, out, out->runtime + l->rt_interp_main, span,
			     "the main interpreter pointer", "not initialised yet", &main_is,
			     err, errlen);
	if (ret)
		return ret;
	out->threads_head = main_is + l->is_threads_head;
	if (l->has & PY_HAS_TSTATE_CURRENT) {
		out->holder = out->runtime + l->rt_tstate_current;
		return 0;
	}
	ret = read_state_ptr(t, out, main_is + l->is_gil, l->gil_last_holder + 8,
			     "the GIL pointer", "no GIL yet", &gil, err, errlen);
	if (ret)
		return ret;
	out->holder = gil + l->gil_last_holder;
	return 0;
}

int py_target_find(struct target *t, struct py_target *out, char *err, size_t errlen)
{
	const struct elfobj_sym *s;
	struct cand c;
	uint64_t pyver, need;
	int ret;

	memset(out, 0, sizeof(*out));
	log_say(err, errlen, "%s", "");
	ret = find_runtime_object(t, &c, err, errlen);
	if (ret)
		return ret;
	ret = find_version(t, &c, out, &pyver, err, errlen);
	if (ret)
		goto out;
	strcpy(out->object, c.path);
	out->interp_lo = c.xlo;
	out->interp_hi = c.xhi;
	s = sym(&c, "_PyRuntime");
	out->lay = *py_layout_for(out->minor);
	need = out->minor >= 13 ? PY_DEBUG_OFFSETS_LEN : out->lay.rt_interp_main + 8;
	if (out->lay.rt_tstate_current + 8 > need)
		need = out->lay.rt_tstate_current + 8;
	if (s->size && s->size < need) {
		log_say(err, errlen, "Python %s: _PyRuntime is %llu bytes, smaller than the layout's %llu",
		    out->version, (unsigned long long)s->size, (unsigned long long)need);
		ret = -ENOTSUP;
		goto out;
	}
	if (sym_addr(t, &c, s, need, PROC_MAP_R | PROC_MAP_W, &out->runtime)) {
		log_say(err, errlen, "Python %s: _PyRuntime is not in writable memory of %s",
		    out->version, c.path);
		ret = -ENOTSUP;
		goto out;
	}
	if (out->minor >= 13) {
		uint8_t buf[PY_DEBUG_OFFSETS_LEN];

		if (target_read(t, out->runtime, buf, sizeof(buf))) {
			log_say(err, errlen, "cannot read _PyRuntime at 0x%llx",
			    (unsigned long long)out->runtime);
			ret = -EIO;
			goto out;
		}
		ret = py_debug_offsets_parse(buf, sizeof(buf), pyver, &out->lay, err, errlen);
		if (ret)
			goto out;
	}
	if ((s = sym(&c, "PyCode_Type")) && sym_addr(t, &c, s, 8, PROC_MAP_R, &out->code_type))
		out->code_type = 0;
	if ((s = sym(&c, "PyType_Type")) && sym_addr(t, &c, s, 8, PROC_MAP_R, &out->type_type))
		out->type_type = 0;
	if ((s = sym(&c, "_PyEval_EvalFrameDefault")) && s->size && s->size <= PY_EVAL_MAX &&
	    !sym_addr(t, &c, s, s->size, PROC_MAP_X, &out->eval_lo))
		out->eval_hi = out->eval_lo + s->size;
	ret = find_states(t, out, err, errlen);
	if (!ret)
		pr_debug("python: %s in %s (_PyRuntime at 0x%llx)", out->version, out->object,
			 (unsigned long long)out->runtime);
out:
	cand_free(&c);
	return ret;
}
