/* --listen's address: "PORT", "A.B.C.D:PORT", "[IPv6]:PORT" or "localhost:PORT" into a socket address, and back to text. */
/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve/serve_priv.h"

/* A port: 1 to 5 digits, at most 65535. 0 or -EINVAL. */
static int parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5 || strspn(s, "0123456789") != n)
		return -EINVAL;
	v = strtoul(s, NULL, 10);
	if (v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int serve_addr_parse(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[64];
	const char *colon;
	uint16_t port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!addr || strlen(addr) > 80)
		return -EINVAL;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':' || (size_t)(close - addr - 1) >= sizeof(host))
			return -EINVAL;
		hl = (size_t)(close - addr - 1);
		memcpy(host, addr + 1, hl);
		host[hl] = 0;
		if (parse_port(close + 2, &port) || inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	colon = strrchr(addr, ':');
	in4->sin_family = AF_INET;
	*len = sizeof(*in4);
	if (!colon) {
		in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (parse_port(addr, &port))
			return -EINVAL;
		in4->sin_port = htons(port);
		return 0;
	}
	hl = (size_t)(colon - addr);
	if (hl == 0 || hl >= sizeof(host) || parse_port(colon + 1, &port))
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = 0;
	if (!strcmp(host, "localhost"))
		in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
		return -EINVAL;
	in4->sin_port = htons(port);
	return 0;
}

void serve_addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in4->sin_port));
	}
}

int serve_check_addr(const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;

	return serve_addr_parse(addr, &ss, &len);
}

const char *serve_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}
