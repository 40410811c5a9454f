/* SPDX-License-Identifier: MIT */
/*
 * The privileged half of cpa-serve. Forked before the server drops its
 * capabilities, it keeps them only to start each job's cpa-capture and
 * cpa-unwind through cpa-supervise, as `cpa monitor` does, and hears nothing but
 * fixed-size messages on a socket: start a job of this spec, stop it.
 * It builds every argument itself, so the server cannot make it run
 * anything else.
 */
#ifndef CPA_SERVE_LAUNCHER_H
#define CPA_SERVE_LAUNCHER_H

#include <stdint.h>

#include "spec.h"

enum launch_op { LAUNCH_START = 1, LAUNCH_STOP, LAUNCH_STARTED, LAUNCH_ENDED };

/* Server to launcher: LAUNCH_START (with two descriptors: the stream
 * file and the log) and LAUNCH_STOP. Launcher to server: LAUNCH_STARTED
 * once the job's processes run, LAUNCH_ENDED once they have all exited
 * (or could not start: capture status 127, the reason in the log). */
struct launch_msg {
	uint32_t op;
	char id[SPEC_ID_MAX + 1];
	struct job_spec spec;
	int32_t status[2];	/* ENDED: wait statuses of capture, unwind */
	int32_t timed_out;	/* ENDED: it ran past its duration's grace */
};

/* A job stopped at its deadline is killed this long after, at most. */
#define LAUNCH_KILL_S 10

/* Forks the launcher; returns the server's end of its socket, or -1.
 * supervise is cpa-supervise's path; max_stream bounds the bytes
 * cpa-unwind may write of a job's stream (0: no bound); a job runs at
 * most its duration and grace_s (HUATUO's completion grace), then it is
 * stopped (cpa-supervise --grace), and killed LAUNCH_KILL_S later. */
int launcher_start(const char *supervise, uint64_t max_stream,
		   unsigned grace_s);

/* Sends a message, with fds[2] when out_fd >= 0. 0 or -1. */
int launcher_send(int sock, const struct launch_msg *m, int out_fd,
		  int log_fd);
/* Reads one message: 1, 0 at the launcher's end, -1 on error. */
int launcher_recv(int sock, struct launch_msg *m);

#endif
