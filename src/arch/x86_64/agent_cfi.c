/* The agent blob's frame rules: its .eh_frame, turned into a table when it is built (agent_cfi.awk). */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "agent_cfi.h"
#include "shm.h"

/* The rule for [lo, hi): CFA = rsp (base 0) or rbp (1) + off, the
 * caller's rbp at CFA + rbp_off (0: kept). */
struct agent_cfi_row {
	uint32_t lo, hi;
	uint8_t base;
	int32_t off;
	int16_t rbp_off;
};

static const struct agent_cfi_row rows[] = {
#include "agent_cfi_rows.h"	/* generated */
};

int agent_cfi_rule(uint64_t off, struct shm_frame *rule)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct agent_cfi_row *r = &rows[i];

		if (off < r->lo || off >= r->hi)
			continue;
		memset(rule, 0, sizeof(*rule));
		rule->base = r->base ? SHM_BASE_RBP : SHM_BASE_RSP;
		rule->cfa_off = r->off;
		rule->rbp_saved = r->rbp_off != 0;
		rule->rbp_off = r->rbp_off;
		return 0;
	}
	return -ENOENT;
}
