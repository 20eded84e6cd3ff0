/* The agent link's trust: the shared header compared with ours, and the link turned hostile. */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include "fast/link_priv.h"
#include "model/mapguard.h"

/*
 * The shared area is no longer trusted: the target wrote what the agent
 * never writes (what). Said once, on stderr and in the profile; from now
 * on nothing in the area is read (session.c detaches).
 */
void hdrcheck_hostile(struct agent_link *l, const char *what)
{
	if (l->hostile)
		return;
	/* pages past a cut read as zeros (mapguard): whatever field they zeroed
	 * first is a symptom, the cut is the cause */
	if (mapguard_zeroed_in(data_of(l) - REGION_CODE))
		what = "it cut the memory short";
	l->hostile = 1;
	link_note(l, "%d wrote over heapattach's shared memory (%s): it is no longer "
	     "trusted; detaching, the profile ends there", l->p.pid, what);
}

int agent_link_hostile(const struct agent_link *l)
{
	return l && l->hostile;
}

/* Header fields the tool wrote and nothing else does, by name. */
static const struct {
	size_t off, len;
	const char *name;
} hdr_fields[] = {
#define F(f) { offsetof(struct shm_hdr, f), sizeof(((struct shm_hdr *)0)->f), #f }
	F(magic), F(version), F(flags), F(total_size), F(data_remote), F(code_remote),
	F(code_size), F(tool_pid), F(target_pid), F(ring_size), F(rate), F(npatches),
	F(max_depth), F(patches), F(nest_n), F(nest), F(gap_mul), F(stats_kind), F(stats_fn),
	F(stats_n), F(stats_names), F(fp_n), F(fp), F(py.kind), F(py.max_frames), F(py.holder),
	F(py.threads_head), F(py.ts_next), F(py.ts_thread_id), F(py.ts_frame),
	F(py.cf_current_frame), F(py.fr_back), F(py.fr_code), F(py.fr_lasti), F(py.fr_owner),
	F(py.fr_is_entry), F(py.co_code_adaptive), F(py.co_firsttraceable), F(xlive_slots),
#undef F
};

/* Compare the shared header with what we wrote (l->want); the first
 * field that differs makes the link hostile. */
void hdrcheck_header(struct agent_link *l)
{
	const uint8_t *h = (const uint8_t *)l->shm, *w = (const uint8_t *)l->want;
	char what[96];

	for (size_t i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++) {
		if (!memcmp(h + hdr_fields[i].off, w + hdr_fields[i].off, hdr_fields[i].len))
			continue;
		snprintf(what, sizeof(what), "its header's %s changed", hdr_fields[i].name);
		hdrcheck_hostile(l, what);
		return;
	}
}
