/* A small HTTP/1.1 server on its own thread (--listen): GET only, bounded clients, answers made on the caller's thread. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_SERVE_H
#define HEAPATTACH_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include "serve/httpreq.h"

/*
 * Clients are untrusted: at most SERVE_MAX_CONNS at once (one more is
 * answered 503 and closed, unless a client has sat for a second without
 * sending a whole head: that one is cut for it), a request head of at most HTTPREQ_MAX_HEAD
 * bytes within SERVE_HEAD_NS of the connection (slow ones are cut), an
 * answer that must make progress every SERVE_SEND_NS and end within
 * SERVE_SEND_MAX_NS, Connection: close after each answer, every socket
 * non-blocking. A connection holds its 8 KiB of head and its answer.
 *
 * The server thread never runs the caller's code but route(), which looks
 * at a request and either answers it at once or hands it on as a job:
 * the caller's own thread takes the jobs (serve_take) when it likes, fills
 * in their answers and gives them back (serve_give); a job may ask to be
 * handed on again after a while (again_ns: the second half of a delta).
 */
#define SERVE_MAX_CONNS 16
#define SERVE_HEAD_NS (10ULL * 1000000000)
#define SERVE_SEND_NS (10ULL * 1000000000)
#define SERVE_SEND_MAX_NS (120ULL * 1000000000)

struct serve;

/* One request handed to the caller's thread. */
struct serve_job {
	/* set by route */
	int kind;                       /* the caller's: what to do */
	uint64_t arg;                   /* the caller's */
	unsigned stage;                 /* times handed on before this one */
	void *state;                    /* the caller's, kept between stages; freed by
					 * free_state when the job ends unanswered */
	/* the answer, set by route (answered at once) or the caller's thread */
	uint64_t again_ns;              /* >0: hand it on again after this long */
	int status;                     /* 200, 404, ... */
	const char *type;               /* Content-Type (static), NULL: text/plain */
	const char *headers;            /* more header lines, each "...\r\n" (static), or NULL */
	char *body;                     /* malloc'd, the server frees it */
	size_t len;
	/* the server's */
	struct serve_job *next;
	int orphan;                     /* its client left while it was away */
	int conn;                       /* the connection's slot */
	uint64_t due_ns;                /* when to hand it on again */
};

struct serve_ops {
	/* On the server thread: 0 answered (the job's status, body), 1 hand it on. */
	int (*route)(void *arg, const struct httpreq *rq, struct serve_job *job);
	/* On either thread: free a job's state (it ended before its last stage). */
	void (*free_state)(void *arg, void *state);
	void *arg;
};

/*
 * Listen on addr: "PORT" (127.0.0.1), "A.B.C.D:PORT", "[IPv6]:PORT" or
 * "localhost:PORT"; port 0 takes a free one. The address it listens on
 * ("127.0.0.1:8080", "[::1]:8080") into bound. 0 or -errno (-EINVAL: not
 * such an address).
 */
int serve_open(struct serve **out, const char *addr, char *bound, size_t blen);
/* Parse addr as serve_open does, listening nowhere: 0 or -EINVAL. */
int serve_check_addr(const char *addr);
/* Start the server thread, all signals blocked in it. 0 or -errno. */
int serve_start(struct serve *sv, const struct serve_ops *ops);
/* Whether jobs wait for the caller's thread: one atomic load. */
int serve_pending(const struct serve *sv);
/* The next job waiting, or NULL; the caller owns it until serve_give. */
struct serve_job *serve_take(struct serve *sv);
/* A job answered (or with again_ns set), back to the server. */
void serve_give(struct serve *sv, struct serve_job *job);
/* Stop the thread and close every socket (a client still waiting for its
 * answer gets a 503): jobs not answered end (their state freed). sv is
 * freed; NULL is fine. From the thread of serve_take. */
void serve_close(struct serve *sv);
/* The reason phrase of a status ("Not Found"). */
const char *serve_reason(int status);

#endif
