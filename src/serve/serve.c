/* The server thread: one poll() over the listener, a wake-up eventfd and at most SERVE_MAX_CONNS clients, each a small state machine. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "serve/serve_priv.h"

#define AWAY_NS (60ULL * 1000000000)    /* a job at the caller's thread, at most */
#define DRAIN_NS (2ULL * 1000000000)    /* reading what a client sent after its answer */
#define DRAIN_MAX (64u << 10)
#define ACCEPT_PAUSE_NS 100000000ULL    /* out of descriptors: listen again after this */
#define EVICT_NS 1000000000ULL          /* all taken: a client without a whole head after
					 * this long gives its place to a new one */
#define POLL_MAX_MS 1000

enum conn_state { C_FREE, C_READ, C_AWAY, C_SEND, C_DRAIN };

struct conn {
	enum conn_state st;
	int fd;
	uint64_t deadline;              /* CLOCK_MONOTONIC: cut when passed */
	uint64_t send_end;              /* C_SEND: the answer ends by then */
	uint64_t since;                 /* when it was accepted */
	struct serve_job *job;          /* C_AWAY: at the caller's or held; C_SEND: its body */
	char in[HTTPREQ_MAX_HEAD];
	size_t inlen, drained;
	char head[640];                 /* the answer's status line and headers */
	size_t hlen, off;               /* off: bytes of head + body sent */
};

struct serve {
	int lfd, wake;
	pthread_t th;
	int started;
	atomic_int stop;
	struct serve_ops ops;
	pthread_mutex_t mu;             /* todo and done */
	struct serve_job *todo, *todo_tail, *done;
	atomic_int ntodo;
	struct serve_job *held;         /* server only: waiting for their due time */
	uint64_t accept_at;             /* server only: accept again from then */
	struct conn c[SERVE_MAX_CONNS];
};

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* ---- jobs ---- */

static void job_free(struct serve *sv, struct serve_job *j)
{
	if (!j)
		return;
	if (j->state && sv->ops.free_state)
		sv->ops.free_state(sv->ops.arg, j->state);
	free(j->body);
	free(j);
}

/* To the caller's thread. */
static void job_send_away(struct serve *sv, struct serve_job *j)
{
	j->next = NULL;
	j->again_ns = 0;
	pthread_mutex_lock(&sv->mu);
	if (sv->todo_tail)
		sv->todo_tail->next = j;
	else
		sv->todo = j;
	sv->todo_tail = j;
	atomic_fetch_add(&sv->ntodo, 1);
	pthread_mutex_unlock(&sv->mu);
}

int serve_pending(const struct serve *sv)
{
	return sv && atomic_load_explicit(&sv->ntodo, memory_order_relaxed) > 0;
}

struct serve_job *serve_take(struct serve *sv)
{
	struct serve_job *j;

	if (!serve_pending(sv))
		return NULL;
	pthread_mutex_lock(&sv->mu);
	j = sv->todo;
	if (j) {
		sv->todo = j->next;
		if (!sv->todo)
			sv->todo_tail = NULL;
		atomic_fetch_sub(&sv->ntodo, 1);
		j->next = NULL;
	}
	pthread_mutex_unlock(&sv->mu);
	return j;
}

void serve_give(struct serve *sv, struct serve_job *j)
{
	uint64_t one = 1;

	pthread_mutex_lock(&sv->mu);
	j->next = sv->done;
	sv->done = j;
	pthread_mutex_unlock(&sv->mu);
	if (write(sv->wake, &one, sizeof(one)) < 0) {
		/* the counter is full: a wake-up is pending anyway */
	}
}

/* ---- connections ---- */

static void conn_close(struct serve *sv, struct conn *c)
{
	if (c->job) {
		if (c->st == C_AWAY && !c->job->due_ns) {
			c->job->orphan = 1;	/* at the caller's: freed when it comes back */
		} else {
			if (c->job->due_ns) {	/* held: unlink */
				struct serve_job **p = &sv->held;

				while (*p && *p != c->job)
					p = &(*p)->next;
				if (*p)
					*p = c->job->next;
			}
			job_free(sv, c->job);
		}
	}
	close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Start sending job's answer (the connection owns the job from now on). */
static void conn_answer(struct conn *c, struct serve_job *j, uint64_t now)
{
	int n;

	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\nX-Content-Type-Options: nosniff\r\n%s%s\r\n",
		     j->status, serve_reason(j->status), j->type ? j->type : "text/plain; charset=utf-8",
		     j->len, j->status == 405 ? "Allow: GET\r\n" : "", j->headers ? j->headers : "");
	c->hlen = n < 0 ? 0 : (size_t)n >= sizeof(c->head) ? sizeof(c->head) - 1 : (size_t)n;
	c->off = 0;
	c->job = j;
	c->st = C_SEND;
	c->deadline = now + SERVE_SEND_NS;
	c->send_end = now + SERVE_SEND_MAX_NS;
}

/* An answer of the server's own: "status reason" as its body. */
static void conn_error(struct serve *sv, struct conn *c, int status, uint64_t now)
{
	struct serve_job *j = calloc(1, sizeof(*j));
	char *b = malloc(64);

	if (!j || !b) {
		free(j);
		free(b);
		conn_close(sv, c);
		return;
	}
	j->status = status;
	j->len = (size_t)snprintf(b, 64, "%d %s\n", status, serve_reason(status));
	j->body = b;
	conn_answer(c, j, now);
}

/* A whole head in c->in: 405, or route's answer, or the job handed on. */
static void conn_request(struct serve *sv, struct conn *c, const struct httpreq *rq, uint64_t now)
{
	struct serve_job *j;

	if (rq->method != HTTPREQ_GET) {
		conn_error(sv, c, 405, now);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		conn_error(sv, c, 503, now);
		return;
	}
	j->conn = (int)(c - sv->c);
	if (sv->ops.route(sv->ops.arg, rq, j) == 0) {
		conn_answer(c, j, now);
		return;
	}
	c->st = C_AWAY;
	c->job = j;
	c->deadline = now + AWAY_NS;
	job_send_away(sv, j);
}

static void conn_read(struct serve *sv, struct conn *c, uint64_t now)
{
	static struct httpreq rq;	/* the server thread's only: 4 KiB off its stack */
	ssize_t n;
	int rc;

	n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(sv, c);	/* left, or an error, before a whole head */
		return;
	}
	c->inlen += (size_t)n;
	rc = httpreq_parse(c->in, c->inlen, &rq);
	if (rc == 0)
		return;
	if (rc == 1)
		conn_request(sv, c, &rq, now);
	else
		conn_error(sv, c, rc, now);
}

static void conn_write(struct serve *sv, struct conn *c, uint64_t now)
{
	struct serve_job *j = c->job;
	size_t total = c->hlen + j->len;
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov };
	ssize_t n;

	if (c->off < c->hlen) {
		iov[mh.msg_iovlen++] = (struct iovec){ c->head + c->off, c->hlen - c->off };
		if (j->len)
			iov[mh.msg_iovlen++] = (struct iovec){ j->body, j->len };
	} else {
		iov[mh.msg_iovlen++] = (struct iovec){ j->body + (c->off - c->hlen),
						       total - c->off };
	}
	n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		conn_close(sv, c);
		return;
	}
	c->off += (size_t)n;
	c->deadline = now + SERVE_SEND_NS < c->send_end ? now + SERVE_SEND_NS : c->send_end;
	if (c->off < total)
		return;
	/* all sent: read what the client still sends, then close (a close
	 * with unread input would reset the connection, answer and all) */
	job_free(sv, j);
	c->job = NULL;
	shutdown(c->fd, SHUT_WR);
	c->st = C_DRAIN;
	c->drained = 0;
	c->deadline = now + DRAIN_NS;
}

static void conn_drain(struct serve *sv, struct conn *c)
{
	char buf[4096];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	c->drained += n > 0 ? (size_t)n : 0;
	if (n <= 0 || c->drained > DRAIN_MAX)
		conn_close(sv, c);
}

/* ---- the loop ---- */

/*
 * A place for a new client: a free one, else one whose answer was sent
 * (draining), else the oldest client still short of a whole head after
 * EVICT_NS (a flood of idle connections, slowloris); NULL: none.
 */
static struct conn *free_slot(struct serve *sv, uint64_t now)
{
	struct conn *old = NULL;

	for (size_t i = 0; i < SERVE_MAX_CONNS; i++)
		if (sv->c[i].st == C_FREE)
			return &sv->c[i];
	for (size_t i = 0; i < SERVE_MAX_CONNS; i++) {
		struct conn *c = &sv->c[i];

		if (c->st == C_DRAIN) {
			old = c;
			break;
		}
		if (c->st == C_READ && now - c->since >= EVICT_NS && (!old || c->since < old->since))
			old = c;
	}
	if (old)
		conn_close(sv, old);
	return old;
}

static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
			   "Content-Length: 20\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
			   "503 too many clients";
static const char gone[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
			   "Content-Length: 28\r\nConnection: close\r\n\r\n"
			   "503 heapattach has detached\n";

static void accept_all(struct serve *sv, uint64_t now)
{

	for (int k = 0; k < 64; k++) {
		int fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c = NULL;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				sv->accept_at = now + ACCEPT_PAUSE_NS;	/* EMFILE... */
			return;
		}
		c = free_slot(sv, now);
		if (!c) {
			if (send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* a best effort */
			}
			close(fd);
			continue;
		}
		c->fd = fd;
		c->st = C_READ;
		c->inlen = 0;
		c->since = now;
		c->deadline = now + SERVE_HEAD_NS;
	}
}

/* The jobs the caller's thread gave back: answers, or held until due. */
static void take_done(struct serve *sv, uint64_t now)
{
	struct serve_job *j, *next;
	uint64_t v;

	if (read(sv->wake, &v, sizeof(v)) < 0) {
		/* nothing to read: a spurious wake-up */
	}
	pthread_mutex_lock(&sv->mu);
	j = sv->done;
	sv->done = NULL;
	pthread_mutex_unlock(&sv->mu);
	for (; j; j = next) {
		struct conn *c = &sv->c[j->conn];

		next = j->next;
		j->next = NULL;
		if (j->orphan) {
			job_free(sv, j);
		} else if (j->again_ns) {
			j->stage++;
			j->due_ns = now + j->again_ns;
			c->deadline = j->due_ns + AWAY_NS;
			j->next = sv->held;
			sv->held = j;
		} else {
			conn_answer(c, j, now);
		}
	}
}

/* Held jobs whose time has come, handed on again; the earliest due left. */
static uint64_t release_held(struct serve *sv, uint64_t now)
{
	struct serve_job **p = &sv->held;
	uint64_t next = UINT64_MAX;

	while (*p) {
		struct serve_job *j = *p;

		if (j->due_ns <= now) {
			*p = j->next;
			j->due_ns = 0;
			job_send_away(sv, j);
			continue;
		}
		if (j->due_ns < next)
			next = j->due_ns;
		p = &j->next;
	}
	return next;
}

static void *serve_thread(void *arg)
{
	struct serve *sv = arg;
	struct pollfd pf[2 + SERVE_MAX_CONNS];
	int idx[SERVE_MAX_CONNS];

	while (!atomic_load(&sv->stop)) {
		uint64_t now = now_ns(), next = release_held(sv, now);
		size_t n = 2;
		int ms;

		pf[0] = (struct pollfd){ .fd = sv->wake, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = now >= sv->accept_at ? sv->lfd : -1, .events = POLLIN };
		if (sv->accept_at > now && sv->accept_at < next)
			next = sv->accept_at;
		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct conn *c = &sv->c[i];
			short ev = c->st == C_SEND ? POLLOUT : c->st == C_AWAY ? POLLRDHUP : POLLIN;

			idx[i] = -1;
			if (c->st == C_FREE)
				continue;
			if (c->deadline < next)
				next = c->deadline;
			idx[i] = (int)n;
			pf[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
		}
		ms = next == UINT64_MAX ? POLL_MAX_MS :
		     next <= now ? 0 : (int)((next - now) / 1000000 + 1);
		if (ms > POLL_MAX_MS)
			ms = POLL_MAX_MS;
		if (poll(pf, n, ms) < 0 && errno != EINTR)
			break;
		now = now_ns();
		if (pf[0].revents)
			take_done(sv, now);
		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct conn *c = &sv->c[i];
			short re = idx[i] >= 0 ? pf[idx[i]].revents : 0;

			if (c->st == C_FREE || idx[i] < 0)
				continue;	/* new since the poll */
			if (c->st == C_AWAY && (re & (POLLRDHUP | POLLHUP | POLLERR)))
				conn_close(sv, c);	/* the client left */
			else if (c->st == C_READ && re)
				conn_read(sv, c, now);
			else if (c->st == C_SEND && re)
				conn_write(sv, c, now);
			else if (c->st == C_DRAIN && re)
				conn_drain(sv, c);
			if (c->st != C_FREE && now >= c->deadline && c->st != C_AWAY)
				conn_close(sv, c);	/* too slow */
			else if (c->st == C_AWAY && now >= c->deadline && !c->job->due_ns)
				conn_close(sv, c);	/* never answered */
		}
		if (pf[1].revents)
			accept_all(sv, now);	/* after: their slots were not polled */
	}
	return NULL;
}

/* ---- start and stop ---- */

int serve_open(struct serve **out, const char *addr, char *bound, size_t blen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct serve *sv;
	int one = 1, rc;

	*out = NULL;
	rc = serve_addr_parse(addr, &ss, &len);
	if (rc)
		return rc;
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	sv->wake = -1;
	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		sv->c[i].fd = -1;
	sv->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sv->lfd < 0)
		goto err;
	setsockopt(sv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(sv->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(sv->lfd, (struct sockaddr *)&ss, len) || listen(sv->lfd, 64))
		goto err;
	len = sizeof(ss);
	if (getsockname(sv->lfd, (struct sockaddr *)&ss, &len))
		goto err;
	serve_addr_text(&ss, bound, blen);
	sv->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sv->wake < 0)
		goto err;
	pthread_mutex_init(&sv->mu, NULL);
	*out = sv;
	return 0;
err:
	rc = -errno;
	if (sv->lfd >= 0)
		close(sv->lfd);
	free(sv);
	return rc;
}

int serve_start(struct serve *sv, const struct serve_ops *ops)
{
	sigset_t all, old;
	int rc;

	sv->ops = *ops;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);	/* the session's signals stay its own */
	rc = pthread_create(&sv->th, NULL, serve_thread, sv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	sv->started = 1;
	return 0;
}

/* Free a list of jobs linked by next. */
static void free_list(struct serve *sv, struct serve_job *j)
{
	while (j) {
		struct serve_job *next = j->next;

		job_free(sv, j);
		j = next;
	}
}

void serve_close(struct serve *sv)
{
	uint64_t one = 1;

	if (!sv)
		return;
	if (sv->started) {
		atomic_store(&sv->stop, 1);
		if (write(sv->wake, &one, sizeof(one)) < 0) {
			/* a wake-up pending anyway */
		}
		pthread_join(sv->th, NULL);
	}
	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct conn *c = &sv->c[i];

		if (c->st == C_FREE)
			continue;
		if (c->st == C_AWAY && !(c->job && c->job->due_ns))
			c->job = NULL;	/* in todo or done: freed below */
		if (c->st == C_AWAY &&
		    send(c->fd, gone, sizeof(gone) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			/* a best effort: it may have left */
		}
		conn_close(sv, c);
	}
	free_list(sv, sv->held);
	free_list(sv, sv->todo);
	free_list(sv, sv->done);
	close(sv->lfd);
	close(sv->wake);
	pthread_mutex_destroy(&sv->mu);
	free(sv);
}
