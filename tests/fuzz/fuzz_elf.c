/* libFuzzer target: the ELF reader (elfobj.c) and the .eh_frame_hdr check (unwind.c) on arbitrary images. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "model/elfobj.h"
#include "stacks/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every query heapattach makes of an object it opened. */
static void query(const struct elfobj *e)
{
	const struct elfobj_segment *seg;
	const struct elfobj_sym *syms;
	const char *id, *s;
	uint64_t v, sz, toff, nfde;
	uint8_t buf[64];
	size_t n, nseg;
	uint32_t crc;

	elfobj_type(e);
	elfobj_has_interp(e);
	elfobj_has_dynamic(e);
	elfobj_has_debug_info(e);
	if ((s = elfobj_build_id(e)) && (strlen(s) < 2 * ELFOBJ_BUILD_ID_MIN ||
					 strlen(s) > 2 * ELFOBJ_BUILD_ID_MAX))
		abort();
	if ((s = elfobj_debuglink(e, &crc)) && (strchr(s, '/') || !*s))
		abort();
	elfobj_altlink(e, &id);
	syms = elfobj_syms(e, &n);
	for (size_t i = 0; i < n && i < 64; i++) {
		elfobj_lookup(e, syms[i].name, 0);
		elfobj_lookup(e, syms[i].name, 1);
		elfobj_got_symbol(e, syms[i].value);
	}
	elfobj_lookup(e, "malloc", 1);
	seg = elfobj_segments(e, &nseg);
	for (size_t i = 0; i < nseg; i++) {
		struct proc_map m = {
			.start = 0x7f0000000000ULL, .end = 0x7f0000001000ULL,
			.offset = seg[i].offset & ~4095ULL, .prot = PROC_MAP_R | PROC_MAP_X,
		};

		elfobj_load_bias(e, &m, &v);
		elfobj_read(e, seg[i].vaddr, buf, sizeof(buf));
		elfobj_read(e, seg[i].vaddr + seg[i].filesz - 1, buf, 1);
	}
	elfobj_dt_debug_vaddr(e, &v);
	if (!elfobj_eh_frame_hdr(e, &v, &sz)) {
		size_t len = sz < 20 ? sz : 20;

		if (!elfobj_read(e, v, buf, len) &&
		    !unwind_parse_eh_frame_hdr(buf, len, sz, &toff, &nfde) &&
		    (toff > sz || nfde > (sz - toff) / 8))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfobj *e = elfobj_open_mem(data, size);
	uint64_t toff, nfde;

	if (e) {
		query(e);
		elfobj_free(e);
	}
	/* the header check alone, over the input as a section */
	if (!unwind_parse_eh_frame_hdr(data, size, size, &toff, &nfde) &&
	    (toff > size || nfde > (size - toff) / 8))
		abort();
	return 0;
}
