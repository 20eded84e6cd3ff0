/* Unit tests for serve.c: answers at once and from the caller's thread, a second stage after again_ns, a client that leaves, 503 at the 17th and at close, IPv6. */
/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "serve/serve.h"

static int freed_states;

/* "/now": answered on the server thread; anything else handed on, kind 1,
 * "/twice" with a second stage. */
static int route(void *arg, const struct httpreq *rq, struct serve_job *j)
{
	(void)arg;
	if (!strcmp(rq->path, "/now")) {
		j->status = 200;
		j->body = strdup("now\n");
		j->len = 4;
		return 0;
	}
	j->kind = !strcmp(rq->path, "/twice") ? 2 : 1;
	return 1;
}

static void free_state(void *arg, void *state)
{
	(void)arg;
	free(state);
	freed_states++;
}

static const struct serve_ops ops = { .route = route, .free_state = free_state };

static int port_of(const char *bound)
{
	return atoi(strrchr(bound, ':') + 1);
}

static int connect_to(int family, int port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (family == AF_INET6 ? connect(fd, (struct sockaddr *)&a6, sizeof(a6)) :
				 connect(fd, (struct sockaddr *)&a4, sizeof(a4))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_req(int fd, const char *path)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);

	return write(fd, buf, (size_t)n) == n ? 0 : -1;
}

/* All the server says until it closes (at most len - 1 bytes, 5 s). */
static void read_all(int fd, char *buf, size_t len)
{
	size_t n = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	while (n < len - 1 && poll(&pf, 1, 5000) == 1) {
		ssize_t r = read(fd, buf + n, len - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
}

/* The caller's side: answer the next job, waiting up to 5 s for one. */
static struct serve_job *take_wait(struct serve *sv)
{
	for (int i = 0; i < 500; i++) {
		struct serve_job *j = serve_take(sv);

		if (j)
			return j;
		usleep(10000);
	}
	return NULL;
}

static void test_answers(void)
{
	struct serve *sv;
	struct serve_job *j;
	char bound[96], buf[2048];
	int fd, port;

	expect_int_eq(serve_open(&sv, "0", bound, sizeof(bound)), 0);
	expect_true(!strncmp(bound, "127.0.0.1:", 10));
	port = port_of(bound);
	expect_int_eq(serve_start(sv, &ops), 0);

	/* at once */
	fd = connect_to(AF_INET, port);
	expect_true(fd >= 0 && send_req(fd, "/now") == 0);
	read_all(fd, buf, sizeof(buf));
	close(fd);
	expect_true(!strncmp(buf, "HTTP/1.1 200 OK\r\n", 17));
	expect_true(strstr(buf, "\r\nContent-Length: 4\r\n") && strstr(buf, "\r\nConnection: close\r\n"));
	expect_true(strstr(buf, "\r\n\r\nnow\n") != NULL);
	expect_int_eq(serve_pending(sv), 0);

	/* from this thread */
	fd = connect_to(AF_INET, port);
	expect_true(fd >= 0 && send_req(fd, "/later") == 0);
	j = take_wait(sv);
	expect_true(j && j->kind == 1 && j->stage == 0);
	if (j) {
		j->status = 404;
		j->type = "text/x-test";
		j->headers = "X-Test: 1\r\n";
		j->body = strdup("gone");
		j->len = 4;
		serve_give(sv, j);
	}
	read_all(fd, buf, sizeof(buf));
	close(fd);
	expect_true(!strncmp(buf, "HTTP/1.1 404 Not Found\r\n", 24));
	expect_true(strstr(buf, "\r\nContent-Type: text/x-test\r\nContent-Length: 4\r\n") != NULL);
	expect_true(strstr(buf, "\r\nX-Test: 1\r\n\r\ngone") != NULL);

	/* two stages, the state kept between them */
	fd = connect_to(AF_INET, port);
	expect_true(fd >= 0 && send_req(fd, "/twice") == 0);
	j = take_wait(sv);
	expect_true(j && j->kind == 2 && j->stage == 0);
	if (j) {
		j->state = strdup("base");
		j->again_ns = 50000000;
		serve_give(sv, j);
	}
	j = take_wait(sv);
	expect_true(j && j->stage == 1 && j->state && !strcmp(j->state, "base"));
	if (j) {
		free(j->state);
		j->state = NULL;
		j->status = 200;
		j->body = strdup("delta");
		j->len = 5;
		serve_give(sv, j);
	}
	read_all(fd, buf, sizeof(buf));
	close(fd);
	expect_true(strstr(buf, "\r\n\r\ndelta") != NULL);

	/* a client that leaves while its job is held: the job and its state end */
	freed_states = 0;
	fd = connect_to(AF_INET, port);
	expect_true(fd >= 0 && send_req(fd, "/twice") == 0);
	j = take_wait(sv);
	if (j) {
		j->state = strdup("x");
		j->again_ns = 60ULL * 1000000000;
		serve_give(sv, j);
	}
	usleep(100000);
	close(fd);
	for (int i = 0; i < 100 && !freed_states; i++)
		usleep(10000);
	expect_int_eq(freed_states, 1);

	/* 405, 400 */
	fd = connect_to(AF_INET, port);
	expect_true(fd >= 0 && write(fd, "PUT / HTTP/1.1\r\n\r\n", 18) == 18);
	read_all(fd, buf, sizeof(buf));
	close(fd);
	expect_true(!strncmp(buf, "HTTP/1.1 405 ", 13) && strstr(buf, "\r\nAllow: GET\r\n"));
	fd = connect_to(AF_INET, port);
	expect_true(fd >= 0 && write(fd, "\x01\x02\x03", 3) == 3);
	read_all(fd, buf, sizeof(buf));
	close(fd);
	expect_true(!strncmp(buf, "HTTP/1.1 400 ", 13));
	serve_close(sv);
}

/* 16 clients at once; the 17th is answered 503; close answers a waiting one 503. */
static void test_limits(void)
{
	struct serve *sv;
	char bound[96], buf[1024];
	int fd[SERVE_MAX_CONNS + 1], port;

	expect_int_eq(serve_open(&sv, "127.0.0.1:0", bound, sizeof(bound)), 0);
	port = port_of(bound);
	expect_int_eq(serve_start(sv, &ops), 0);
	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		fd[i] = connect_to(AF_INET, port);
	expect_true(send_req(fd[0], "/later") == 0);	/* one waits for this thread */
	for (int i = 0; i < 100 && !serve_pending(sv); i++)
		usleep(10000);
	expect_int_eq(serve_pending(sv), 1);
	fd[SERVE_MAX_CONNS] = connect_to(AF_INET, port);
	read_all(fd[SERVE_MAX_CONNS], buf, sizeof(buf));
	expect_true(!strncmp(buf, "HTTP/1.1 503 ", 13));
	serve_close(sv);	/* the job never taken */
	read_all(fd[0], buf, sizeof(buf));
	expect_true(!strncmp(buf, "HTTP/1.1 503 ", 13));
	for (int i = 0; i <= SERVE_MAX_CONNS; i++)
		close(fd[i]);
	/* the port is free again */
	expect_true(connect_to(AF_INET, port) < 0);
}

static void test_addrs(void)
{
	struct serve *sv;
	char bound[96], buf[256];
	int fd, rc;

	expect_int_eq(serve_open(&sv, "example.org:80", bound, sizeof(bound)), -EINVAL);
	rc = serve_open(&sv, "[::1]:0", bound, sizeof(bound));
	if (rc == -EADDRNOTAVAIL || rc == -EAFNOSUPPORT) {
		printf("serve: no IPv6 loopback here, its check skipped\n");
		return;
	}
	expect_int_eq(rc, 0);
	if (rc)
		return;
	expect_true(!strncmp(bound, "[::1]:", 6));
	expect_int_eq(serve_start(sv, &ops), 0);
	fd = connect_to(AF_INET6, port_of(bound));
	expect_true(fd >= 0 && send_req(fd, "/now") == 0);
	read_all(fd, buf, sizeof(buf));
	close(fd);
	expect_true(strstr(buf, "now\n") != NULL);
	serve_close(sv);
}

HARNESS_MAIN("serve", T(test_answers), T(test_limits), T(test_addrs))
