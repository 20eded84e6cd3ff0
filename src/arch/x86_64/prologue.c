/* x86-64 function prologues: how many callee-saved registers a function pushes on entry. */
/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "prologue.h"

unsigned prologue_pushes(const uint8_t *code, size_t len)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t mov_rbp_rsp[3] = { 0x48, 0x89, 0xe5 };
	unsigned n = 0;
	size_t i = 0;

	if (len >= 4 && !memcmp(code, endbr64, 4))
		i = 4;
	while (i < len && n < 6) {
		if (code[i] == 0x55 || code[i] == 0x53) {		/* push rbp / rbx */
			n++;
			i++;
		} else if (i + 1 < len && code[i] == 0x41 && code[i + 1] >= 0x54 &&
			   code[i + 1] <= 0x57) {			/* push r12-r15 */
			n++;
			i += 2;
		} else if (i + 3 <= len && !memcmp(code + i, mov_rbp_rsp, 3)) {
			i += 3;
		} else {
			break;
		}
	}
	return n;
}
