/* The session's profiles: what each dump writes and says (notes, the heap-vs-RSS breakdown, wrappers found), and the peak profile. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "model/jvmasker.h"
#include "model/perfmap.h"
#include "model/target.h"
#include "model/zsection.h"
#include "output/breakdown.h"
#include "output/dump.h"
#include "output/wrapfind.h"
#include "profile/profile.h"
#include "python/pyattach.h"
#include "session/state.h"
#include "snapshot/snapshot.h"
#include "stacks/symbolize.h"

void session_note(struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (s->nnotes == SESSION_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(s->notes[s->nnotes], sizeof(s->notes[0]), fmt, ap);
	va_end(ap);
	pr_warn("%s", s->notes[s->nnotes++]);
}

void session_zsection_notes(struct session *s)
{
	char note[sizeof(s->notes[0])];

	while (zsection_take_note(note, sizeof(note)))
		session_note(s, "%s", note);
}

void session_note_cb(void *arg, const char *msg)
{
	session_note(arg, "%s", msg);
}

void session_note_caps(struct session *s)
{
	unsigned hit = profile_caps_hit(s->prof) & ~s->noted;

	s->noted |= hit;
	if (hit & PROFILE_CAP_STACKS)
		session_note(s, "more distinct stacks than the cap (%u stacks, %u frames): new ones "
			     "are counted under an empty stack", PROFILE_MAX_STACKS, PROFILE_MAX_PCS);
	if (hit & PROFILE_CAP_BUCKETS)
		session_note(s, "more (stack, size) pairs than the cap (%u): new ones are counted "
			     "under an empty stack, by size rounded down to a power of two",
			     PROFILE_MAX_BUCKETS);
	if (hit & PROFILE_CAP_LIVE)
		session_note(s, "more live %sblocks than the cap (%zu%s): new ones count as "
			     "allocated, not as in use", s->opt->sample_rate == 1 ? "" : "sampled ",
			     profile_live_cap(s->prof), s->opt->sample_rate == 1 ?
			     ": half of heapattach's memory at start, 32 bytes a block" : "");
}

/* Its names are the latest for each range, as perf has them; all of it
 * again when the JVM wrote it anew on our asking; says once what is cut,
 * and why the JVM was not asked. -EINVAL: not a regular file. */
int session_jit_refresh(struct session *s)
{
	char note[sizeof(s->notes[0])];
	int rc;

	if (!s->jit)
		return -ENOENT;
	if (s->jvm) {
		unsigned n = jvm_asker_done(s->jvm);

		if (n != s->jvm_maps)	/* rewritten on our asking: read all again */
			perfmap_rewind(s->jit);
		s->jvm_maps = n;
		while (jvm_asker_take_note(s->jvm, note, sizeof(note)))
			session_note(s, "%s", note);
	}
	perfmap_set_tid(s->jit, s->ev.gone || s->ev.exec_seen ? 0 : s->ev.reader);
	rc = perfmap_refresh(s->jit);
	while (perfmap_take_note(s->jit, note, sizeof(note)))
		session_note(s, "%s", note);
	return rc;
}

static const char before_attach[] =
	"allocations made before heapattach attached are not in this profile's samples "
	"(the heapattach-rss line says how many bytes they hold, where the allocator tells)";
static const char before_attach_snapshot[] =
	"samples labelled kind=snapshot are the blocks in use when heapattach attached, "
	"one sample each, stacks type <- owners <- root (heapattach snapshot); "
	"kind=sampled are allocations since";

/* FILE.peak.heap (pprof only): the final profile's d with the in-use
 * figures of the peak snapshot, and one more comment (comments has room). */
static void write_peak(struct session *s, struct dump_info *d, const char **comments)
{
	char note[160];
	char *path;

	if (!s->peak.bytes || s->opt->format != DUMP_PPROF)
		return;
	snprintf(note, sizeof(note), "peak: the live set at the session's highest point, "
		 "%.1f MiB at +%.1f s (in-use sample types only)", s->peak.bytes / 1048576.0,
		 s->peak.at_ns / 1e9);
	comments[d->ncomments++] = note;
	d->peak = &s->peak;
	path = dump_tagged_path(s->output, "peak");
	if (dump_write_at(&s->out, path, s->opt->format, s->prof, d) == 0)
		fprintf(stderr, "heapattach: wrote %s (%s)\n", path, note + 6);
	free(path);
}

/* Lines of the breakdown, kept for the profile's comments. */
struct breakdown_text {
	char v[BREAKDOWN_MAX_LINES + 2][1024];
	size_t n;
};

static void keep_line(void *arg, const char *text)
{
	struct breakdown_text *t = arg;

	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		snprintf(t->v[t->n++], sizeof(t->v[0]), "%s", text);
}

static int read_target(void *arg, uint64_t addr, void *buf, size_t len)
{
	return target_read(arg, addr, buf, len);
}

struct wrapfind_src session_wrapfind_src(struct session *s)
{
	struct wrapfind_src src = { s->sym, read_target, s->t, 0, 0 };

	pyattach_interp(s->py, &src.interp_lo, &src.interp_hi);
	return src;
}

/*
 * The functions found allocator wrappers by their code (wrapfind.h) over
 * the profile so far, each a "heapattach-wrapper: NAME" comment (at most
 * WRAPPER_NOTES, into notes) so that heapattach report names sites past
 * them as --top does; how many.
 */
#define WRAPPER_NOTES 128
static size_t wrapper_notes(struct session *s, char (*notes)[WRAPFIND_NAME + 24])
{
	struct wrapfind_src src = session_wrapfind_src(s);
	char (*names)[WRAPFIND_NAME];
	size_t n;

	if (!s->sym || !s->wf)
		return 0;
	wrapfind_scan(s->wf, &src, s->prof);
	names = xcalloc(WRAPPER_NOTES, sizeof(*names));
	n = wrapfind_found(s->wf, &src, names, WRAPPER_NOTES);
	for (size_t i = 0; i < n; i++)
		snprintf(notes[i], sizeof(notes[i]), "heapattach-wrapper: %s", names[i]);
	free(names);
	return n;
}

/*
 * A profile with everything it says: into the file of a numbered dump
 * (seq > 0) or the final one (seq == 0), or with r, into r->f (pprof
 * only, its breakdown from the last memreport snapshot, nothing on
 * stderr).
 */
static int dump_to(struct session *s, unsigned seq, const struct session_render *r)
{
	struct symbolizer *sym = s->sym;
	const struct proc_maps *maps;
	char comment[128];
	char sc_note[sizeof(s->sc.note) + 32];
	const struct snapshot_keep *snap = s->opt->format == DUMP_PPROF || r ? s->opt->snapshot : NULL;
	const char **comments = xcalloc(5 + SESSION_MAX_NOTES + BREAKDOWN_MAX_LINES + 2 +
					WRAPPER_NOTES + s->mr.ncensus + (snap ? snap->nlines : 0),
					sizeof(*comments));
	char (*wnotes)[WRAPFIND_NAME + 24] = xcalloc(WRAPPER_NOTES, sizeof(*wnotes));
	size_t nwnotes;
	struct breakdown_text bt = { .n = 0 };
	struct breakdown bd;
	size_t ncomments;
	struct dump_info d;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	struct dump_extra extra = { 0 };
	struct stat st;
	char *path;
	int rc;

	if (s->mode->sync)
		s->mode->sync(s);
	session_note_caps(s);
	session_jit_refresh(s);
	session_zsection_notes(s);
	/* Objects loaded since the last read: a fresh view while we can. */
	if (!s->ev.gone && !s->ev.exec_seen)
		target_maps_reload(s->t);
	maps = target_maps(s->t);
	if (!maps)
		maps = &s->maps;
	if (sym)
		symbolizer_set_perfmap(sym, s->jit);
	snprintf(sc_note, sizeof(sc_note), "seccomp filter: %s", s->sc.note);
	comments[0] = comment;
	comments[1] = snap ? before_attach_snapshot : before_attach;
	comments[2] = s->mem.note;
	comments[3] = sc_note;
	ncomments = s->sc.note[0] ? 4 : 3;
	for (size_t i = 0; i < s->nnotes; i++)
		comments[ncomments++] = s->notes[i];
	/* heap vs RSS: smaps now while attached (the final dump comes after
	 * the detach and uses the snapshot taken just before it) */
	if (seq && !r)
		memreport_snapshot(&s->mr);
	memreport_compute(&s->mr, &bd);
	breakdown_print(&bd, keep_line, &bt);
	for (size_t i = 0; i < s->mr.ncensus; i++)
		comments[ncomments++] = s->mr.census[i];
	for (size_t i = 0; i < bt.n; i++) {
		comments[ncomments++] = bt.v[i];
		if (!r && (log_verbose || !seq))
			fprintf(stderr, "heapattach: %s\n", bt.v[i]);
	}
	for (size_t i = 0; snap && i < snap->nlines; i++)
		comments[ncomments++] = snap->lines[i];
	nwnotes = wrapper_notes(s, wnotes);
	for (size_t i = 0; i < nwnotes; i++)
		comments[ncomments++] = wnotes[i];
	snprintf(comment, sizeof(comment), "events=%llu nested=%llu unwind_errors=%llu",
		 (unsigned long long)s->stats.events, (unsigned long long)s->stats.nested,
		 (unsigned long long)s->stats.unwind_errors);
	if (s->link_xacct)	/* allocations that sent no event */
		snprintf(comment + strlen(comment), sizeof(comment) - strlen(comment),
			 " accounted=%llu", (unsigned long long)s->stats.xacct_allocs);
	d = (struct dump_info){
		.pid = s->pid,
		.time_nanos = s->start_wall_ns,
		.duration_nanos = clock_ns(CLOCK_MONOTONIC) - s->start_ns,
		.maps = maps,
		.sym = sym,
		.comments = comments,
		.ncomments = ncomments,
		.label_pid = s->opt->label_pid,
	};
	if (snap) {
		extra = (struct dump_extra){ snap->p, "kind", "snapshot", "sampled",
					     snapshot_keep_namer, snap->names };
		d.extra = &extra;
	}
	if (r) {
		d.default_type = r->default_type;
		d.base = r->base;
		if (r->base) {	/* as Go: its end, and how long since its start */
			d.time_nanos = clock_ns(CLOCK_REALTIME);
			d.duration_nanos = d.time_nanos - r->base->wall_ns;
		}
		rc = pprof_write(r->f, s->prof, &d);
		free(comments);
		free(wnotes);
		return rc;
	}
	path = seq ? dump_numbered_path(s->output, seq) : xstrdup(s->output);
	rc = dump_write_at_stat(&s->out, path, s->opt->format, s->prof, &d, &st);
	if (!rc && seq)
		rotate_wrote(&s->rot, s->opt->keep, &s->out, s->output, seq, &st);
	if (!rc)
		pr_debug("wrote %s in %.1f ms (%zu live blocks)", path,
			 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6, profile_nlive(s->prof));
	free(path);
	if (!rc && !seq)
		write_peak(s, &d, comments);
	free(comments);
	free(wnotes);
	return rc;
}

int session_dump(struct session *s, unsigned seq)
{
	return dump_to(s, seq, NULL);
}

int session_render(struct session *s, const struct session_render *r)
{
	return dump_to(s, 0, r);
}
