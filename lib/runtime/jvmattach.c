// SPDX-License-Identifier: MIT
/* HotSpot's attach protocol (see jvmattach.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "jvmattach.h"
#include "log.h"
#include "procfs.h"

#define POLL_MS 20

/* Fields of /proc/PID/status: the last NSpid and SigCgt. Returns false
 * when the process is gone. */
static bool read_status(uint32_t pid, uint32_t *nspid, uint64_t *sigcgt)
{
	struct cpa_proc_status st;
	if (!cpa_proc_status(pid, &st))
		return false;
	*nspid = st.nspid;
	*sigcgt = st.sigcgt;
	return true;
}

uint32_t cpa_ns_pid(uint32_t pid)
{
	uint32_t nspid;
	uint64_t sigcgt;
	return read_status(pid, &nspid, &sigcgt) ? nspid : 0;
}

/* Exited, or a zombie whose parent has not reaped it yet. */
static bool process_gone(uint32_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')');
	return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

static bool cancelled(const atomic_bool *cancel)
{
	return cancel && atomic_load(cancel);
}

static uint64_t mono_ms(void)
{
	return cpa_mono_ns() / CPA_NSEC_PER_MSEC;
}

/*
 * The listener's socket, opened O_PATH without following a symlink and
 * owned by the JVM's user (or root), so a file another user planted in a
 * shared /tmp is not taken for it. -1 with errno when not (yet) there.
 */
static int open_socket_path(int tmpfd, const char *name, uid_t jvm_uid)
{
	int fd = openat(tmpfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    (st.st_uid != jvm_uid && st.st_uid != 0)) {
		close(fd);
		errno = ENOENT;
		return -1;
	}
	return fd;
}

int jvm_target_open(struct jvm_target *t, uint32_t pid, char *err,
		    size_t errlen)
{
	char path[64];
	struct stat pst;
	memset(t, 0, sizeof(*t));
	t->tmpfd = -1;
	t->pid = pid;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	if (!read_status(pid, &t->nspid, &t->sigcgt) || stat(path, &pst) < 0) {
		cpa_fail(err, errlen, "exited before attaching");
		return JVM_ATTACH_GONE;
	}
	t->uid = pst.st_uid;
	t->gid = pst.st_gid;
	/* The JVM's /tmp: the one component below its root, never a
	 * symlink, so a container cannot point us at the host's files. */
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	int rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		int e = errno;
		cpa_fail(err, errlen, "%s: %s", path, strerror(e));
		return e == ENOENT || e == ESRCH ? JVM_ATTACH_GONE
						 : JVM_ATTACH_FAILED;
	}
	t->tmpfd = openat(rootfd, "tmp",
			  O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rootfd);
	if (t->tmpfd < 0) {
		cpa_fail(err, errlen, "its /tmp: %s", strerror(errno));
		return JVM_ATTACH_FAILED;
	}
	return 0;
}

static void trigger_name(const struct jvm_target *t, char *buf, size_t len)
{
	snprintf(buf, len, ".attach_pid%u", t->nspid);
}

void jvm_target_close(struct jvm_target *t)
{
	if (t->triggered) {
		/* the JVM's user may have put another file at the name since:
		 * only the one we created is removed */
		char trigger[64];
		struct stat st;
		trigger_name(t, trigger, sizeof(trigger));
		if (fstatat(t->tmpfd, trigger, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (uint64_t)st.st_dev == t->trigger_dev &&
		    (uint64_t)st.st_ino == t->trigger_ino)
			unlinkat(t->tmpfd, trigger, 0);
		t->triggered = false;
	}
	if (t->tmpfd >= 0)
		close(t->tmpfd);
	t->tmpfd = -1;
}

static void socket_name(const struct jvm_target *t, char *buf, size_t len)
{
	snprintf(buf, len, ".java_pid%u", t->nspid);
}

int jvm_attach_listening(struct jvm_target *t)
{
	char name[64];
	socket_name(t, name, sizeof(name));
	int fd = open_socket_path(t->tmpfd, name, t->uid);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return process_gone(t->pid) ? JVM_ATTACH_GONE : 0;
}

/*
 * The trigger file in the JVM's /tmp, which its user can write: a name
 * it chose in advance may be a hard link to any file (fs.protected_hardlinks
 * is 0 by default), so the file is created new, checked to be the new
 * empty file we made, and only then given to the JVM's user (a JVM in a
 * user namespace accepts no other owner). One that is already there is
 * someone else's: used as it is when the JVM takes it, never chowned or
 * removed.
 */
static int make_trigger(struct jvm_target *t, const char *trigger, char *err,
			size_t errlen)
{
	struct stat st;
	int tfd = openat(t->tmpfd, trigger, O_WRONLY | O_CREAT | O_EXCL |
					    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (tfd < 0 && errno == EEXIST) {
		int pfd = openat(t->tmpfd, trigger,
				 O_PATH | O_NOFOLLOW | O_CLOEXEC);
		bool usable = pfd >= 0 && fstat(pfd, &st) == 0 &&
			      S_ISREG(st.st_mode) &&
			      (st.st_uid == t->uid || st.st_uid == 0);
		if (pfd >= 0)
			close(pfd);
		if (usable)
			return 0;
		cpa_fail(err, errlen, "/tmp/%s is there already and is not a "
			 "trigger the JVM takes: not attached", trigger);
		return JVM_ATTACH_REFUSED;
	}
	if (tfd < 0) {
		cpa_fail(err, errlen, "/tmp/%s: %s", trigger, strerror(errno));
		return JVM_ATTACH_FAILED;
	}
	if (fstat(tfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_uid != geteuid() || st.st_size != 0) {
		close(tfd);
		cpa_fail(err, errlen, "/tmp/%s: not the file just created",
			 trigger);
		return JVM_ATTACH_FAILED;
	}
	t->triggered = true;
	t->trigger_dev = (uint64_t)st.st_dev;
	t->trigger_ino = (uint64_t)st.st_ino;
	if (fchown(tfd, t->uid, t->gid) < 0) {
		/* root's file is still accepted outside user namespaces */
	}
	close(tfd);
	return 0;
}

int jvm_attach_trigger(struct jvm_target *t, char *err, size_t errlen)
{
	/* A process that does not catch SIGQUIT (not a JVM, or one run
	 * with -Xrs) would be killed by it. */
	if (!(t->sigcgt & (1ull << (SIGQUIT - 1)))) {
		cpa_fail(err, errlen, "does not handle SIGQUIT (not a JVM, "
			 "or run with -Xrs): not attached");
		return JVM_ATTACH_REFUSED;
	}
	char trigger[64];
	trigger_name(t, trigger, sizeof(trigger));
	int rc = t->triggered ? 0 : make_trigger(t, trigger, err, errlen);
	if (rc < 0)
		return rc;
	if (kill((pid_t)t->pid, SIGQUIT) < 0) {
		int e = errno;
		/* gone (and reaped) since the trigger was made: said as
		 * every other exit during the attach is */
		if (e == ESRCH) {
			cpa_fail(err, errlen, "exited while attaching");
			return JVM_ATTACH_GONE;
		}
		cpa_fail(err, errlen, "SIGQUIT: %s", strerror(e));
		return JVM_ATTACH_FAILED;
	}
	return 0;
}

int jvm_attach_wait(struct jvm_target *t, uint64_t deadline_ms,
		    const atomic_bool *cancel, char *err, size_t errlen)
{
	int rc = jvm_attach_listening(t);
	if (rc == JVM_ATTACH_GONE) {
		cpa_fail(err, errlen, "exited while attaching");
	} else if (!rc && cancelled(cancel)) {
		cpa_fail(err, errlen, "cancelled");
		rc = JVM_ATTACH_CANCELLED;
	} else if (!rc && mono_ms() >= deadline_ms) {
		cpa_fail(err, errlen, "no attach listener came up (run with "
			 "-XX:+DisableAttachMechanism?)");
		rc = JVM_ATTACH_REFUSED;
	}
	return rc;
}

/* The request, and the answer up to EOF. */
static int converse(int sock, const char *cmd, const char *const args[3],
		    unsigned timeout_ms, const atomic_bool *cancel, char *out,
		    size_t outlen, char *err, size_t errlen)
{
	char req[4096];
	size_t n = 0;
	const char *parts[5] = { "1", cmd, args ? args[0] : NULL,
				 args ? args[1] : NULL, args ? args[2] : NULL };
	for (int i = 0; i < 5; i++) {
		const char *s = parts[i] ? parts[i] : "";
		size_t l = strlen(s) + 1;
		if (n + l > sizeof(req)) {
			cpa_fail(err, errlen, "request too long");
			return JVM_ATTACH_FAILED;
		}
		memcpy(req + n, s, l);
		n += l;
	}
	if (cpa_send_full(sock, req, n) < 0) {
		cpa_fail(err, errlen, "sending the request: %s",
			 strerror(errno));
		return JVM_ATTACH_REFUSED;
	}

	char head[32];
	size_t got = 0, hlen = 0;
	bool in_head = true;
	uint64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int r = poll(&pfd, 1, POLL_MS * 5);
		if (r < 0 && errno != EINTR) {
			cpa_fail(err, errlen, "poll: %s", strerror(errno));
			return JVM_ATTACH_FAILED;
		}
		if (r <= 0) {
			if (cancelled(cancel)) {
				cpa_fail(err, errlen, "cancelled");
				return JVM_ATTACH_CANCELLED;
			}
			if (mono_ms() >= deadline) {
				cpa_fail(err, errlen, "no answer after %u ms",
					 timeout_ms);
				return JVM_ATTACH_FAILED;
			}
			continue;
		}
		char buf[4096];
		ssize_t k = recv(sock, buf, sizeof(buf), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			cpa_fail(err, errlen, "reading the answer: %s",
				 strerror(errno));
			return JVM_ATTACH_FAILED;
		}
		if (k == 0)
			break;
		for (ssize_t i = 0; i < k; i++) {
			if (in_head) {
				if (buf[i] == '\n')
					in_head = false;
				else if (hlen + 1 < sizeof(head))
					head[hlen++] = buf[i];
			} else if (out && got + 1 < outlen) {
				out[got++] = buf[i];
			}
		}
	}
	if (out && outlen)
		out[got] = '\0';
	head[hlen] = '\0';
	char *end;
	long code = strtol(head, &end, 10);
	if (!hlen || *end || code < 0 || code > 0xffff) {
		cpa_fail(err, errlen, "the JVM closed the connection without "
			 "a result");
		return JVM_ATTACH_REFUSED;
	}
	return (int)code;
}

int jvm_tmp_connect(struct jvm_target *t, const char *name)
{
	int sfd = open_socket_path(t->tmpfd, name, t->uid);
	if (sfd < 0)
		return -1;
	/* Connected through the descriptor's magic link: the socket found
	 * above, whatever its path is named by now. */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", sfd);
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock >= 0 &&
	    connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(sock);
		sock = -1;
		errno = e;
	}
	int e = errno;
	close(sfd);
	errno = e;
	return sock;
}

int jvm_attach_cmd(struct jvm_target *t, const char *cmd,
		   const char *const args[3], unsigned timeout_ms,
		   const atomic_bool *cancel, char *out, size_t outlen,
		   char *err, size_t errlen)
{
	char sockname[64];
	int rc;
	if (out && outlen)
		out[0] = '\0';
	socket_name(t, sockname, sizeof(sockname));
	int sock = jvm_tmp_connect(t, sockname);
	if (sock < 0) {
		int e = errno;
		if (e == ENOENT)
			cpa_fail(err, errlen, "/tmp/%s: no attach listener",
				 sockname);
		else
			cpa_fail(err, errlen, "/tmp/%s: %s", sockname,
				 strerror(e));
		return process_gone(t->pid) ? JVM_ATTACH_GONE
					    : JVM_ATTACH_REFUSED;
	}
	rc = converse(sock, cmd, args, timeout_ms, cancel, out, outlen, err,
		      errlen);
	if (rc == JVM_ATTACH_REFUSED && process_gone(t->pid)) {
		rc = JVM_ATTACH_GONE;
		cpa_fail(err, errlen, "exited while attaching");
	}
	close(sock);
	return rc;
}

int jvm_attach(uint32_t pid, const char *cmd, const char *const args[3],
	       unsigned timeout_ms, const atomic_bool *cancel, char *out,
	       size_t outlen, char *err, size_t errlen)
{
	struct jvm_target t;
	int rc = jvm_target_open(&t, pid, err, errlen);
	if (rc == 0 && (rc = jvm_attach_listening(&t)) == 0 &&
	    (rc = jvm_attach_trigger(&t, err, errlen)) == 0) {
		uint64_t deadline = mono_ms() + timeout_ms;
		while ((rc = jvm_attach_wait(&t, deadline, cancel, err,
					     errlen)) == 0)
			poll(NULL, 0, POLL_MS);
	}
	if (rc == 1)
		rc = jvm_attach_cmd(&t, cmd, args, timeout_ms, cancel, out,
				    outlen, err, errlen);
	jvm_target_close(&t);
	return rc;
}

int jvm_attach_load(uint32_t pid, const char *path, const char *options,
		    unsigned timeout_ms, const atomic_bool *cancel, char *err,
		    size_t errlen)
{
	/* "true": the path is absolute, not a library name to search */
	const char *const args[3] = { path, "true", options };
	char out[512];
	int rc = jvm_attach(pid, "load", args, timeout_ms, cancel, out,
			    sizeof(out), err, errlen);
	if (rc < 0)
		return rc;
	/* JDK 9 and later answer 0 and then the agent's own return code */
	out[strcspn(out, "\n")] = '\0';
	const char *code = strstr(out, "return code: ");
	if (rc == 0 && (!code || atoi(code + 13) == 0))
		return 0;
	cpa_fail(err, errlen, "loading %s: %s", path,
		 out[0] ? out : "refused");
	return 1;
}
