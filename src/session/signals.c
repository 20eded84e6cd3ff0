/* The session's signals: stop requests, the periodic tick, SIGCHLD and SIGUSR1, seen as flags. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include "session/state.h"

#define TICK_MS 50

volatile sig_atomic_t session_stop_signal;
volatile sig_atomic_t session_ticked;
volatile sig_atomic_t session_child_event = 1;
volatile sig_atomic_t session_dump_asked;

static void on_stop_signal(int sig)
{
	session_stop_signal = sig;
}

static void on_tick(int sig)
{
	(void)sig;
	session_ticked = 1;
}

static void on_child(int sig)
{
	(void)sig;
	session_child_event = 1;
}

static void on_dump_signal(int sig)
{
	(void)sig;
	session_dump_asked = 1;
}

void session_install_stop_handlers(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a mask inherited blocked would hide them (and one pending since
	 * before exec is delivered now) */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

void session_install_signals(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, TICK_MS * 1000 }, { 0, TICK_MS * 1000 } };

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_tick;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = on_dump_signal;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a background heapattach (timeout(1), &) that writes to its terminal
	 * or sets its modes must not stop while attached: the target's
	 * signals and faults would wait for it */
	signal(SIGTTOU, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * Tests only: hold the session for the milliseconds the environment
 * variable var says (at most a minute), hooks in place and nothing
 * drained: HEAPATTACH_TEST_START_DELAY_MS between the attach and the loop
 * (a tool that gets no CPU then), HEAPATTACH_TEST_DETACH_DELAY_MS between
 * the loop and the detach (as a slow memory report would).
 */
void session_test_delay(const char *var)
{
	const char *v = getenv(var);
	long ms = v ? strtol(v, NULL, 10) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	if (ms <= 0 || ms > 60000)
		return;
	while (nanosleep(&ts, &ts) && errno == EINTR)	/* our timer's signals */
		;
}

void session_stop_timer(void)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
}
