/* SPDX-License-Identifier: MIT */
/* Layer lib/runtime, what cpa reads from language runtimes: uses lib/base
 * alone; only tools use it (lib/local.mk holds them to this). */
/*
 * HotSpot's dynamic attach, as jcmd and jattach speak it, so that no JDK
 * tool has to run on the host. A JVM starts its attach listener when it
 * finds /tmp/.attach_pidNSPID and gets SIGQUIT; the listener then serves
 * one request per connection on the Unix socket /tmp/.java_pidNSPID:
 * "1\0CMD\0ARG1\0ARG2\0ARG3\0", answered by a decimal result code, a
 * newline and the command's output. Both files are reached through
 * /proc/PID/root, with the pid the JVM has in its own namespace, so a JVM
 * in a container is attached from the host.
 */
#ifndef CPA_JVMATTACH_H
#define CPA_JVMATTACH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What went wrong, as a negative return of jvm_attach. */
enum jvm_attach_error {
	JVM_ATTACH_GONE = -1,		/* the process exited */
	JVM_ATTACH_REFUSED = -2,	/* not attachable: no listener came up,
					 * SIGQUIT not handled, or the JVM
					 * closed the connection */
	JVM_ATTACH_FAILED = -3,		/* any other error */
	JVM_ATTACH_CANCELLED = -4,	/* *cancel became true */
};

/* One JVM being attached: its ids and its /tmp, opened once. */
struct jvm_target {
	uint32_t pid, nspid;
	uid_t uid;
	gid_t gid;
	uint64_t sigcgt;	/* signals it catches */
	int tmpfd;		/* O_PATH, its /tmp inside its root */
	bool triggered;		/* our .attach_pid file is there */
	uint64_t trigger_dev, trigger_ino;	/* the file we created */
};

/*
 * Sends CMD with up to three arguments (NULL for none) to the JVM pid,
 * starting its attach listener first if it has none, and waits at most
 * timeout_ms for the listener and again for the answer. Returns the JVM's
 * result code (0 is success) with its output in out (NUL-terminated, cut
 * to outlen), or a jvm_attach_error with a one-line reason in err.
 * cancel (may be NULL) is polled while waiting.
 */
int jvm_attach(uint32_t pid, const char *cmd, const char *const args[3],
	       unsigned timeout_ms, const atomic_bool *cancel, char *out,
	       size_t outlen, char *err, size_t errlen);

/* The steps of jvm_attach, for a caller that attaches to several JVMs
 * at once and cannot wait for one listener. Each returns 0 or a
 * jvm_attach_error with err. */
int jvm_target_open(struct jvm_target *t, uint32_t pid, char *err,
		    size_t errlen);
/* Removes the trigger file if we created it and it is still there,
 * and closes. */
void jvm_target_close(struct jvm_target *t);
/* 1 when the listener's socket is there, 0 when not, or
 * JVM_ATTACH_GONE. */
int jvm_attach_listening(struct jvm_target *t);
/* The trigger file, then SIGQUIT; sent only to a process that catches
 * it, since it ends any other. The file is created new (O_EXCL), and
 * only a file created so is given to the JVM's user; a trigger that is
 * already there is used as it is when the JVM would accept it (a
 * regular file of its user or root), else refused, never changed. */
int jvm_attach_trigger(struct jvm_target *t, char *err, size_t errlen);
/* After the trigger: 1 when the listener is up, 0 while it may still
 * come (before deadline_ms, CLOCK_MONOTONIC), else an error. */
int jvm_attach_wait(struct jvm_target *t, uint64_t deadline_ms,
		    const atomic_bool *cancel, char *err, size_t errlen);
/* One request on a listener that is up: the JVM's result code, or an
 * error. */
int jvm_attach_cmd(struct jvm_target *t, const char *cmd,
		   const char *const args[3], unsigned timeout_ms,
		   const atomic_bool *cancel, char *out, size_t outlen,
		   char *err, size_t errlen);

/*
 * Loads a JVMTI agent: the attach mechanism's "load" request with path
 * (absolute, as the JVM sees it: inside its root) and options (may be
 * NULL). 0 when the JVM loaded it and its Agent_OnAttach returned 0, else
 * a jvm_attach_error or 1 with a one-line reason in err.
 */
int jvm_attach_load(uint32_t pid, const char *path, const char *options,
		    unsigned timeout_ms, const atomic_bool *cancel, char *err,
		    size_t errlen);

/* Connects to the Unix socket name in the JVM's /tmp when it is there
 * and its owner is the JVM's user or root: the connected socket, or -1
 * with errno. */
int jvm_tmp_connect(struct jvm_target *t, const char *name);

/* The pid the process has in its own pid namespace (the last NSpid
 * field of /proc/PID/status); 0 when the process is gone. */
uint32_t cpa_ns_pid(uint32_t pid);

#endif
