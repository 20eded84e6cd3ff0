/* The server's parts shared by its files only (serve.h is the way in). */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SERVE_PRIV_H
#define HEAPATTACH_SERVE_PRIV_H

#include <sys/socket.h>
#include "serve/serve.h"

/* addr (serve_open's forms) into ss: 0 or -EINVAL. */
int serve_addr_parse(const char *addr, struct sockaddr_storage *ss, socklen_t *len);
/* ss as "127.0.0.1:8080" or "[::1]:8080". */
void serve_addr_text(const struct sockaddr_storage *ss, char *buf, size_t len);

#endif
