/* libFuzzer target: the three Python line-table decoders (pylines.c) on any bytes, every instruction index. */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>
#include "python/pyframes.h"
#include "shm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Input: format (byte 0: 0 lnotab, 1 3.10, 2 3.11+), first line (bytes
 * 1-4), then the table; indexes 0..0x7fff are each looked up. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first;
	int (*fn)(const uint8_t *, size_t, int, uint32_t);

	if (size < 5)
		return 0;
	fn = data[0] % 3 == 0 ? pylines_lnotab : data[0] % 3 == 1 ? pylines_310 : pylines_311;
	memcpy(&first, data + 1, 4);
	for (uint32_t idx = 0; idx <= SHM_PY_INSTR_UNKNOWN; idx += 1 + idx / 64) {
		int line = fn(data + 5, size - 5, first, idx);

		if (line < -1)
			__builtin_trap();
	}
	return 0;
}
