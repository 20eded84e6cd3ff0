/* Logging to stderr with the tool's name in front, and reasons written into a caller's buffer. */
/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include "base/log.h"

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

void log_say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}
