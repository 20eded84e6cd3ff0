/* Logging to stderr with the tool's name in front. */
/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include "log.h"

int log_verbose;

void log_msg(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	fputs("heapattach: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	errno = saved;
}
