/* Maintainer tool: print one CPython version's struct py_layout row (offsets from its own headers). */
/* SPDX-License-Identifier: MIT */
/*
 * Built by tools/pylayout-gen.sh once per installed CPython 3.8..3.13 with
 * that version's headers and Py_BUILD_CORE (for the internal structures),
 * never by the Makefile. Prints one C initializer for src/python/pylayout.c.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#if PY_VERSION_HEX < 0x03080000 || PY_VERSION_HEX >= 0x030e0000
#error "pylayout-gen: CPython 3.8 to 3.13 only"
#endif

#if PY_VERSION_HEX < 0x03090000
#include <code.h>
#include <frameobject.h>
#include <internal/pycore_pystate.h>
#elif PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#else
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x030c0000
#include <internal/pycore_gil.h>
#endif

#define OFF(name, type, field) printf("\t\t.%s = %zu,\n", name, offsetof(type, field))
#define SIZE(name, type) printf("\t\t.%s = %zu,\n", name, sizeof(type))

int main(void)
{
	/* which optional fields this version has (a field may sit at 0) */
	const char *has = ""
#if PY_VERSION_HEX < 0x030c0000
		"PY_HAS_TSTATE_CURRENT"
#else
		"PY_HAS_GIL"
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
		" |\n\t\t\tPY_HAS_CFRAME"
#endif
#if PY_VERSION_HEX >= 0x030b0000
		" |\n\t\t\tPY_HAS_OWNER | PY_HAS_QUALNAME | PY_HAS_CODE_ADAPTIVE"
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
		" |\n\t\t\tPY_HAS_IS_ENTRY"
#endif
#if PY_VERSION_HEX < 0x030b0000
		" |\n\t\t\tPY_HAS_CO_CODE"
#endif
		;

	printf("\t[%d] = { /* %s */\n", PY_MINOR_VERSION, PY_VERSION);
	printf("\t\t.minor = %d,\n", PY_MINOR_VERSION);
	printf("\t\t.has = %s,\n", has);
	OFF("rt_interp_main", _PyRuntimeState, interpreters.main);
#if PY_VERSION_HEX < 0x030c0000
	OFF("rt_tstate_current", _PyRuntimeState, gilstate.tstate_current);
#endif
#if PY_VERSION_HEX < 0x030b0000
	OFF("is_threads_head", PyInterpreterState, tstate_head);
#else
	OFF("is_threads_head", PyInterpreterState, threads.head);
#endif
#if PY_VERSION_HEX >= 0x030c0000
	OFF("is_gil", PyInterpreterState, ceval.gil);
	OFF("gil_last_holder", struct _gil_runtime_state, last_holder);
#endif
	OFF("ts_next", PyThreadState, next);
	OFF("ts_thread_id", PyThreadState, thread_id);
	OFF("ts_interp", PyThreadState, interp);
#if PY_VERSION_HEX < 0x030b0000
	OFF("ts_frame", PyThreadState, frame);
	OFF("fr_back", PyFrameObject, f_back);
	OFF("fr_code", PyFrameObject, f_code);
	OFF("fr_lasti", PyFrameObject, f_lasti);
#else
#if PY_VERSION_HEX < 0x030d0000
	OFF("ts_frame", PyThreadState, cframe);
	OFF("cf_current_frame", _PyCFrame, current_frame);
	OFF("fr_code", _PyInterpreterFrame, f_code);
	OFF("fr_lasti", _PyInterpreterFrame, prev_instr);
#else
	OFF("ts_frame", PyThreadState, current_frame);
	OFF("fr_code", _PyInterpreterFrame, f_executable);
	OFF("fr_lasti", _PyInterpreterFrame, instr_ptr);
#endif
	OFF("fr_back", _PyInterpreterFrame, previous);
	OFF("fr_owner", _PyInterpreterFrame, owner);
#if PY_VERSION_HEX < 0x030c0000
	OFF("fr_is_entry", _PyInterpreterFrame, is_entry);
#endif
#endif
	OFF("ob_type", PyObject, ob_type);
	OFF("ob_size", PyVarObject, ob_size);
#if PY_VERSION_HEX >= 0x030b0000
	OFF("co_code_adaptive", PyCodeObject, co_code_adaptive);
	OFF("co_firsttraceable", PyCodeObject, _co_firsttraceable);
	OFF("co_qualname", PyCodeObject, co_qualname);
#endif
	OFF("co_filename", PyCodeObject, co_filename);
	OFF("co_name", PyCodeObject, co_name);
	OFF("co_firstlineno", PyCodeObject, co_firstlineno);
#if PY_VERSION_HEX < 0x030a0000
	OFF("co_linetable", PyCodeObject, co_lnotab);
#else
	OFF("co_linetable", PyCodeObject, co_linetable);
#endif
#if PY_VERSION_HEX < 0x030b0000
	OFF("co_code", PyCodeObject, co_code);
#endif
	OFF("bytes_sval", PyBytesObject, ob_sval);
	OFF("uni_length", PyASCIIObject, length);
	OFF("uni_state", PyASCIIObject, state);
	SIZE("uni_ascii_size", PyASCIIObject);
	SIZE("uni_compact_size", PyCompactUnicodeObject);
	printf("\t},\n");
	return 0;
}
