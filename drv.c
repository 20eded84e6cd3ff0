#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "jvmattach.h"
#include "clock.h"
int main(int c, char **v) {
	char why[256] = "";
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int rc = jvm_request(atoi(v[1]), v[2], t0 + 10000000000ull, NULL, why, sizeof why);
	printf("rc %d why '%s' %.1f ms\n", rc, why, (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	return 0;
}
