/* CPython's struct layouts per minor version (3.8 to 3.13): the offsets heapattach reads Python frames with. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_PYLAYOUT_H
#define HEAPATTACH_PYLAYOUT_H

#include <stdint.h>

#define PY_LAYOUT_MIN_MINOR 8
#define PY_LAYOUT_MAX_MINOR 13

/*
 * py_layout.has: which optional fields a version has. A field a version
 * lacks is 0, but 0 is also a real offset (3.12's _PyCFrame.current_frame,
 * 3.12/3.13's _PyInterpreterFrame.f_code/f_executable are first in their
 * struct): test these bits, never the offset, for presence. fr_code is in
 * every version and has no bit.
 */
#define PY_HAS_TSTATE_CURRENT	0x01	/* rt_tstate_current (3.8-3.11) */
#define PY_HAS_GIL		0x02	/* is_gil, gil_last_holder (3.12+) */
#define PY_HAS_CFRAME		0x04	/* ts_frame is a _PyCFrame *, cf_current_frame (3.11-3.12) */
#define PY_HAS_OWNER		0x08	/* fr_owner (3.11+) */
#define PY_HAS_IS_ENTRY		0x10	/* fr_is_entry (3.11) */
#define PY_HAS_QUALNAME		0x20	/* co_qualname (3.11+) */
#define PY_HAS_CODE_ADAPTIVE	0x40	/* co_code_adaptive, co_firsttraceable (3.11+) */
#define PY_HAS_CO_CODE		0x80	/* co_code (<= 3.10) */

/* Byte offsets in x86-64 release builds (tools/pylayout-gen.sh). */
struct py_layout {
	int minor;			/* 8..13 */
	uint32_t has;			/* PY_HAS_* */
	/* _PyRuntime */
	uint32_t rt_interp_main;	/* _PyRuntime.interpreters.main (pointer) */
	uint32_t rt_tstate_current;	/* 3.8-3.11 gilstate.tstate_current; 0 if none */
	/* PyInterpreterState */
	uint32_t is_threads_head;	/* tstate_head (3.8-3.10) / threads.head (3.11+) */
	uint32_t is_gil;		/* 3.12+: ceval.gil (pointer); 0 otherwise */
	uint32_t gil_last_holder;	/* 3.12+: struct _gil_runtime_state.last_holder */
	/* PyThreadState */
	uint32_t ts_next, ts_thread_id, ts_interp;
	uint32_t ts_frame;		/* 3.8-3.10 frame; 3.11-3.12 cframe; 3.13 current_frame */
	uint32_t cf_current_frame;	/* 3.11-3.12: _PyCFrame.current_frame; 0 otherwise */
	/* frames: PyFrameObject (3.8-3.10) or _PyInterpreterFrame (3.11+) */
	uint32_t fr_back;		/* f_back / previous */
	uint32_t fr_code;		/* f_code / f_executable */
	uint32_t fr_lasti;		/* 3.8-3.10 f_lasti (int); 3.11-3.12 prev_instr; 3.13 instr_ptr */
	uint32_t fr_owner;		/* 3.11+: owner (char); 0 otherwise */
	uint32_t fr_is_entry;		/* 3.11 only: is_entry (bool); 0 otherwise */
	/* PyCodeObject */
	uint32_t ob_type, ob_size;	/* PyObject.ob_type, PyVarObject.ob_size */
	uint32_t co_code_adaptive;	/* 3.11+: first code unit; 0 otherwise */
	uint32_t co_firsttraceable;	/* 3.11+: _co_firsttraceable (int); 0 otherwise */
	uint32_t co_filename, co_name, co_qualname /* 3.11+, else 0 */, co_firstlineno;
	uint32_t co_linetable;		/* co_lnotab (<= 3.9) or co_linetable (3.10+): a bytes object */
	uint32_t co_code;		/* <= 3.10: co_code, a bytes object; 0 otherwise */
	/* objects */
	uint32_t bytes_sval;		/* PyBytesObject.ob_sval; its length is ob_size */
	uint32_t uni_length, uni_state;	/* PyASCIIObject.length, .state (bitfield word) */
	uint32_t uni_ascii_size;	/* sizeof(PyASCIIObject) */
	uint32_t uni_compact_size;	/* sizeof(PyCompactUnicodeObject) */
};

/* The layout of CPython 3.minor, or NULL when heapattach has none. */
const struct py_layout *py_layout_for(int minor);

#endif
