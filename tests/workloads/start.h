/* SPDX-License-Identifier: MIT */
/*
 * The start handshake of the workloads a test attaches to: print
 * "ready PID", then wait for SIGUSR1, so a capture can attach before the
 * known call chains run. SIGUSR1 is blocked before the line is printed,
 * so a signal sent as soon as it is read is never lost.
 */
#ifndef CPA_WORKLOAD_START_H
#define CPA_WORKLOAD_START_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static inline void wait_for_start(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
}

#endif
