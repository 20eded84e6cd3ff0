/* --listen: the session's HTTP endpoints (Go's /debug/pprof/heap and allocs, /metrics, an index), answered on the session's thread. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "output/dump.h"
#include "serve/serve.h"
#include "session/state.h"

#define SECONDS_MAX 300                 /* ?seconds=N: 1 to this, as Go's WriteTimeout allows */
#define MEMREPORT_EVERY_NS (10ULL * 1000000000)	/* smaps and allocator figures, at most */
#define JOBS_PER_POLL 2                 /* answers made between two drains, at most */

enum job_kind { JOB_HEAP = 1, JOB_ALLOCS, JOB_METRICS };

static const char index_html[] =
	"<!DOCTYPE html>\n<html><head><title>heapattach</title></head><body>\n"
	"<h1>heapattach</h1>\n<ul>\n"
	"<li><a href=\"/debug/pprof/heap\">/debug/pprof/heap</a>: the heap profile (pprof; "
	"<code>?seconds=N</code>: what changed over the next N seconds)</li>\n"
	"<li><a href=\"/debug/pprof/allocs\">/debug/pprof/allocs</a>: the same, allocations "
	"first</li>\n"
	"<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>\n"
	"</ul>\n<p><code>go tool pprof http://HOST:PORT/debug/pprof/heap</code></p>\n"
	"</body></html>\n";

/* body as the job's answer, copied (NULL: out of memory, 503). */
static void answer(struct serve_job *j, int status, const char *type, const char *body)
{
	j->status = status;
	j->type = type;
	j->len = strlen(body);
	j->body = malloc(j->len + 1);
	if (!j->body) {
		j->status = 503;
		j->len = 0;
		return;
	}
	memcpy(j->body, body, j->len + 1);
}

/* serve_ops.route, on the server thread: nothing of the session is read here. */
static int route(void *arg, const struct httpreq *rq, struct serve_job *j)
{
	char v[16];
	int heap = !strcmp(rq->path, "/debug/pprof/heap");

	(void)arg;
	if (!strcmp(rq->path, "/") || !strcmp(rq->path, "/debug/pprof/")) {	/* Go's index too */
		answer(j, 200, "text/html; charset=utf-8", index_html);
		return 0;
	}
	if (!strcmp(rq->path, "/metrics")) {
		j->kind = JOB_METRICS;
		return 1;
	}
	if (!heap && strcmp(rq->path, "/debug/pprof/allocs")) {
		answer(j, 404, NULL, "404 page not found\n");
		return 0;
	}
	j->kind = heap ? JOB_HEAP : JOB_ALLOCS;
	if (httpreq_query(rq->query, "seconds", v, sizeof(v)) == 0) {
		char *end;
		unsigned long n = strtoul(v, &end, 10);

		if (!v[0] || *end || v[0] == '-' || v[0] == '+' || n < 1 || n > SECONDS_MAX) {
			answer(j, 400, NULL, "invalid value for \"seconds\": 1 to 300\n");
			return 0;
		}
		j->arg = n;
	}
	return 1;
}

static void free_base(void *arg, void *state)
{
	(void)arg;
	pprof_base_free(state);
	free(state);
}

/* smaps and the allocator's figures for the breakdown, at most every
 * MEMREPORT_EVERY_NS (a safe point stops the target for jemalloc's). */
static void fresh_memreport(struct session *s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (s->srv_mr_ns && now - s->srv_mr_ns < MEMREPORT_EVERY_NS)
		return;
	s->srv_mr_ns = now;
	memreport_snapshot(&s->mr);
}

/* A profile (delta since j->state, if any) into the job. */
static void profile_answer(struct session *s, struct serve_job *j)
{
	static const char *const disp[2][2] = {
		{ "Content-Disposition: attachment; filename=\"heap\"\r\n",
		  "Content-Disposition: attachment; filename=\"heap-delta\"\r\n" },
		{ "Content-Disposition: attachment; filename=\"allocs\"\r\n",
		  "Content-Disposition: attachment; filename=\"allocs-delta\"\r\n" },
	};
	struct session_render r = {
		.default_type = j->kind == JOB_HEAP ? NULL : "alloc_space",	/* heap: unset, as Go */
		.base = j->state,
	};
	char *buf = NULL;
	size_t len = 0;
	int rc;

	r.f = open_memstream(&buf, &len);
	if (!r.f) {
		j->status = 503;
		return;
	}
	rc = session_render(s, &r);
	if (fclose(r.f) || rc) {
		free(buf);
		pr_debug("--listen: could not render a profile: %s", strerror(rc ? -rc : EIO));
		answer(j, 500, NULL, "500 the profile could not be written\n");
		return;
	}
	j->status = 200;
	j->type = "application/octet-stream";
	j->headers = disp[j->kind == JOB_ALLOCS][j->state != NULL];
	j->body = buf;
	j->len = len;
}

/* One job, on the session's thread. */
static void handle(struct session *s, struct serve_job *j)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	if (s->mode->sync)
		s->mode->sync(s);	/* the rings' and the agent's figures, as for a dump */
	if (j->kind == JOB_METRICS) {
		fresh_memreport(s);
		j->status = 200;
		j->type = "text/plain; version=0.0.4; charset=utf-8";
		j->body = session_metrics(s, &j->len);
		if (!j->body)
			j->status = 503;
	} else if (j->arg && j->stage == 0) {
		struct pprof_base *b = xmalloc(sizeof(*b));

		pprof_base_take(s->prof, b);	/* the start of a delta */
		j->state = b;
		j->again_ns = j->arg * 1000000000ULL;
	} else {
		fresh_memreport(s);
		profile_answer(s, j);
		if (j->state) {
			free_base(NULL, j->state);
			j->state = NULL;
		}
	}
	pr_debug("--listen: request %d (stage %u) answered in %.1f ms", j->kind, j->stage,
		 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
}

void session_serve_poll(struct session *s)
{
	struct serve_job *j;

	for (int i = 0; i < JOBS_PER_POLL && serve_pending(s->srv); i++) {
		j = serve_take(s->srv);
		if (!j)
			break;
		handle(s, j);
		serve_give(s->srv, j);
	}
}

int session_serve_open(struct session *s)
{
	char bound[96];
	int rc;

	if (!s->opt->listen)
		return 0;
	rc = serve_open(&s->srv, s->opt->listen, bound, sizeof(bound));
	if (rc) {
		pr_err("--listen %s: %s", s->opt->listen, strerror(-rc));
		return 1;
	}
	fprintf(stderr, "heapattach: listening on http://%s/ (while attached)\n", bound);
	return 0;
}

void session_serve_start(struct session *s)
{
	static const struct serve_ops ops = { .route = route, .free_state = free_base };
	int rc;

	if (!s->srv)
		return;
	rc = serve_start(s->srv, &ops);
	if (rc) {
		/* profiling goes on without it */
		session_note(s, "--listen: the server thread did not start (%s): not serving",
			     strerror(-rc));
		serve_close(s->srv);
		s->srv = NULL;
	}
}

void session_serve_close(struct session *s)
{
	serve_close(s->srv);
	s->srv = NULL;
}
