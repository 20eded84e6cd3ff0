/* What remote.c, remote_state.c, remote_stop.c and remote_call.c share (each is documented where it is defined); no other file includes it. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REMOTE_INT_H
#define HEAPATTACH_REMOTE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace/remote.h"
#include "remote_arch.h"
#include "sigframe.h"

/* Signals that arrived while the syscall ran, to be re-sent afterwards. */
#define MAX_HELD_SIGS 8
struct held_sigs {
	int sig[MAX_HELD_SIGS];
	int n;
};

/* What remote_wait_for() waits for. */
enum want_stop {
	WANT_SYSEXIT,	/* the exit stop of our syscall (resume with PTRACE_SYSCALL) */
	WANT_EVENT,	/* a PTRACE_EVENT_STOP (resume with PTRACE_CONT) */
	WANT_SIGSYS,	/* the signal-delivery-stop of a seccomp SIGSYS (PTRACE_CONT) */
};

/* A thread's state as saved on entry: what the frame and the end restore. */
struct saved_state {
	remote_regs_t regs;
	uint64_t mask;
	uint64_t rseq_at, rseq_cs;	/* rseq_cs word's address (0: none) and value */
	uint8_t fpu[SIGFRAME_FPU_MAX];
	size_t fpu_len;
	int xsave;
};

/* ---- thread state (remote_state.c) ---- */

int remote_get_regs(pid_t tid, remote_regs_t *r);
int remote_set_regs(pid_t tid, const remote_regs_t *r);
int remote_set_sigmask(pid_t tid, uint64_t mask);
/* tid's registers, signal mask, FPU state and rseq_cs word, into st. */
int remote_save_state(pid_t tid, struct saved_state *st);
/* The frame rt_sigreturn turns back into st's state, below its red zone. */
int remote_write_frame(pid_t tid, const struct saved_state *st, uint64_t restorer,
		       uint64_t *at, remote_regs_t *resume);
/* Re-send the signals held during the call, so they are pending again. */
void remote_resend_held(struct remote_ctx *ctx, const struct held_sigs *h);
/* Put the thread back as st saved it, into a fresh PTRACE_EVENT_STOP. */
int remote_put_back(struct remote_ctx *ctx, const struct saved_state *st, struct held_sigs *held,
		    int ran, int mask_dirty, int regs_dirty, int err);

/* ---- stops (remote_stop.c) ---- */

/* Test seam: the tool dies (SIGKILL) at step n (remote_die_at). */
void remote_die_step(int n);
/* Remember sig once in h (a standard signal pending twice is pending once). */
void remote_hold_sig(struct held_sigs *h, int sig);
/* waitpid(ctx->tid) until deadline (0: none), polling a leader. */
pid_t remote_wait_stop(struct remote_ctx *ctx, int *status, uint64_t deadline);
/* Wait until ctx->tid reaches the stop in want (ip: WANT_SYSEXIT's rip). */
int remote_wait_for(struct remote_ctx *ctx, enum want_stop want, uint64_t ip,
		    struct held_sigs *h);
/* Bring ctx->tid into a PTRACE_EVENT_STOP (a signal is delivered first). */
int remote_usable_stop(struct remote_ctx *ctx, struct held_sigs *h);
/* REMOTE_F_SECCOMP_TRAP: drop a seccomp SIGSYS the call raised. */
int remote_take_trap(struct remote_ctx *ctx, struct held_sigs *h);

#endif
