/* Logging to stderr with the tool's name in front, and reasons written into a caller's buffer. */
/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include "base/log.h"

int log_verbose;
const char *log_prefix = "heapattach: ";

/* One write a message where it fits (the sessions of one run share stderr). */
void log_msg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int saved = errno, n;

	va_start(ap, fmt);
	n = snprintf(line, sizeof(line), "%s", log_prefix);
	if (n >= 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(line)) {
		fputs(line, stderr);
	} else {	/* longer: as it comes */
		fputs(log_prefix, stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
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
