/* A stopped thread's state for remote calls: registers, signal mask and rseq saved, the frame written, and all put back. */
/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sys_compat.h"
#include "model/tmem.h"
#include "ptrace/remote.h"
#include "ptrace/remote_int.h"

int remote_get_regs(pid_t tid, remote_regs_t *r)
{
	struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	return 0;
}

int remote_set_regs(pid_t tid, const remote_regs_t *r)
{
	struct iovec iov = { .iov_base = (void *)r, .iov_len = sizeof(*r) };

	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	return 0;
}

static int get_sigmask(pid_t tid, uint64_t *mask)
{
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*mask), mask) < 0)
		return -errno;
	return 0;
}

int remote_set_sigmask(pid_t tid, uint64_t mask)
{
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) < 0)
		return -errno;
	return 0;
}

/* The critical section an rseq_cs word points to (linux/rseq.h struct rseq_cs). */
struct rseq_cs_desc {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
};

/*
 * Address of the thread's rseq_cs word, or 0 when rseq is not registered
 * or the kernel cannot tell us. Returning to user space at the borrowed
 * syscall makes the kernel clear rseq_cs (it is outside any critical
 * section), so we save and restore it: a thread stopped inside a critical
 * section must still abort it when it resumes.
 */
static uint64_t rseq_cs_addr(pid_t tid)
{
	struct compat_rseq_config conf;

	memset(&conf, 0, sizeof(conf));
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *)sizeof(conf),
		   &conf) < 0)
		return 0;
	if (!conf.rseq_abi_pointer)
		return 0;
	return conf.rseq_abi_pointer + COMPAT_RSEQ_CS_OFF;
}

/*
 * For the frame: a thread stopped inside the critical section rseq_cs
 * points to resumes at its abort handler, as the kernel would send it
 * there (it was preempted by the stop); r's ip is moved accordingly.
 */
static void rseq_abort_ip(pid_t tid, uint64_t rseq_cs, remote_regs_t *r)
{
	struct rseq_cs_desc cs;

	if (!rseq_cs || tmem_read(tid, rseq_cs, &cs, sizeof(cs)))
		return;
	if (remote_arch_ip(r) - cs.start_ip < cs.post_commit_offset)
		remote_arch_set_ip(r, cs.abort_ip);
}

int remote_save_state(pid_t tid, struct saved_state *st)
{
	int err;

	err = remote_get_regs(tid, &st->regs);
	if (!err)
		err = get_sigmask(tid, &st->mask);
	if (!err)
		err = sigframe_read_fpu(tid, st->fpu, sizeof(st->fpu), &st->fpu_len, &st->xsave);
	if (err)
		return err;
	st->rseq_cs = 0;
	st->rseq_at = rseq_cs_addr(tid);
	if (st->rseq_at && tmem_read(tid, st->rseq_at, &st->rseq_cs, sizeof(st->rseq_cs)))
		st->rseq_at = 0;
	return 0;
}

/*
 * Write below the red zone of st's stack the frame that rt_sigreturn turns
 * back into the state st would resume with (that state in *resume); its
 * address in *at.
 */
int remote_write_frame(pid_t tid, const struct saved_state *st, uint64_t restorer,
		       uint64_t *at, remote_regs_t *resume)
{
	uint8_t frame[SIGFRAME_MAX];
	uint64_t top = remote_arch_sp(&st->regs) - REMOTE_ARCH_RED_ZONE - REMOTE_ARCH_SCRATCH;
	size_t len;
	int err;

	*resume = st->regs;
	remote_arch_resume_regs(resume);
	rseq_abort_ip(tid, st->rseq_cs, resume);
	err = sigframe_build(frame, sizeof(frame), top, resume, st->mask, st->fpu,
			     st->fpu_len, st->xsave, restorer, at, &len);
	if (!err)
		err = tmem_write(tid, *at, frame, len);
	return err;
}

/* Re-send the signals held during the call, so they are pending again. */
void remote_resend_held(struct remote_ctx *ctx, const struct held_sigs *h)
{
	for (int i = 0; i < h->n && !ctx->gone; i++) {
		if (syscall(SYS_tgkill, ctx->pid, ctx->tid, h->sig[i]) < 0)
			pr_perror("remote: cannot re-send signal %d to %d",
				  h->sig[i], (int)ctx->tid);
		else
			ctx->requeued++;
	}
}

/*
 * The end of a remote syscall or call: put the thread back as st saved it
 * (ran: it was resumed; mask_dirty, regs_dirty: what was changed), then
 * into a fresh PTRACE_EVENT_STOP. Returns err, or the first error here.
 */
int remote_put_back(struct remote_ctx *ctx, const struct saved_state *st, struct held_sigs *held,
		    int ran, int mask_dirty, int regs_dirty, int err)
{
	pid_t tid = ctx->tid;
	int err2;

	if (ctx->gone)
		return err;
	/* First the interrupt: a dead tool's thread then still passes get_signal(). */
	if (ran && ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 && !err)
		err = -errno;
	remote_die_step(7);
	/* Then everything the frame would restore, the registers last. */
	if (mask_dirty && (err2 = remote_set_sigmask(tid, st->mask)) && !err)
		err = err2;
	remote_die_step(8);
	if (ran && st->rseq_at &&
	    tmem_write(tid, st->rseq_at, &st->rseq_cs, sizeof(st->rseq_cs)))
		pr_warn("remote: cannot restore rseq_cs of thread %d", (int)tid);
	if (regs_dirty && (err2 = remote_set_regs(tid, &st->regs)) && !err)
		err = err2;
	remote_die_step(9);
	if (!ran)
		return err;	/* never resumed: still in its stop */
	if (ptrace(PTRACE_CONT, tid, NULL, NULL) < 0)
		return err ? err : -errno;
	remote_die_step(10);
	err2 = remote_wait_for(ctx, WANT_EVENT, 0, held);
	return err ? err : err2;
}
