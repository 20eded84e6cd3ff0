/* libFuzzer target: the /proc maps and status parsers (proc.c, tcred.c) on arbitrary text. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "model/proc.h"
#include "model/tcred.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m = { 0 };
	struct tcred c;
	char *buf = malloc(size + 1), out[64];

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (proc_maps_parse(buf, size, &m) == 0) {
		for (size_t i = 0; i < m.n; i++) {
			const struct proc_map *p = &m.v[i], *f;

			if (p->end < p->start || (p->path && strlen(p->path) > size))
				abort();
			/* unsorted text finds nothing, never a wrong mapping */
			f = proc_maps_find(&m, p->start);
			if (f && (p->start < f->start || p->start >= f->end))
				abort();
			f = proc_maps_find(&m, p->end - 1);
			if (f && (p->end - 1 < f->start || p->end - 1 >= f->end))
				abort();
		}
		proc_maps_free(&m);
	}
	/* the same text as a status file */
	proc_status_get(buf, "TracerPid", out, sizeof(out));
	proc_status_get(buf, "NSpid", out, sizeof(out));
	proc_status_get(buf, "", out, 1);
	if (tcred_parse(buf, &c) == 0) {
		for (size_t i = 1; i < c.ngroups; i++)
			if (c.groups[i - 1] > c.groups[i])
				abort();
		if (c.ngroups > TCRED_MAX_GROUPS || (c.dac_caps & ~TCRED_DAC_CAPS))
			abort();
		tcred_release(&c);
	}
	free(buf);
	return 0;
}
