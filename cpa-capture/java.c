/* SPDX-License-Identifier: MIT */
/*
 * --java-alloc and --java-live: the JVMTI agent (cpa-jvmti/) loaded into
 * each JVM named, through the attach mechanism, or found already loaded
 * by its socket; its sampled objects turned into raw samples whose
 * frames come named (the allocated class as the leaf, `_[a]`, then the
 * Java frames, `_[j]`). Live objects use the allocation-id contract of
 * the native memory kinds: each sampled object is sent as java-live with
 * an id, its free later as a free of that id with no stack, and
 * cpa-unwind pairs the two. The wire format is lib/runtime/jvmagent.h.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cpa-capture.h"
#include "jvmagent.h"
#include "jvmattach.h"
#include "log.h"

#define ATTACH_TIMEOUT_MS 5000
#define ANSWER_TIMEOUT_MS 5000
#define STOP_TIMEOUT_MS 2000
#define AGENT_NAME "libcpa-jvmti.so"

struct jvm {
	uint32_t pid, nspid;
	unsigned index;		/* mixed into the allocation ids */
	bool live;
	int fd;			/* -1 once closed */
	char pcomm[CPA_COMM_LEN];
	uint64_t cgroup_id;
	uint8_t *buf;		/* received, not yet a whole record */
	size_t len, cap;
	uint64_t offset;	/* of buf[0] in what the agent sent */
};

static struct jvm *jvms;
static size_t n_jvms;
static uint64_t mean_bytes;

/* The agent next to this cpa-capture in a build tree, else installed. */
static bool agent_path(char *out, size_t len)
{
	char exe[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, len, "%s/../cpa-jvmti/" AGENT_NAME, exe);
			if (access(out, R_OK) == 0)
				return true;
		}
	}
	snprintf(out, len, "%s/" AGENT_NAME, CPA_PKGLIBDIR);
	return access(out, R_OK) == 0;
}

/* Copies the agent into the JVM's /tmp (t->tmpfd), as tmp_name. */
static int copy_agent(const char *src, int tmpfd, const char *name)
{
	char part[128];
	int in = open(src, O_RDONLY | O_CLOEXEC), out;
	char buf[65536];
	ssize_t n = 0;

	if (in < 0)
		return -1;
	snprintf(part, sizeof(part), "%s.%d", name, (int)getpid());
	unlinkat(tmpfd, part, 0);
	out = openat(tmpfd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				  O_CLOEXEC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	if (close(out) < 0 || n < 0 || renameat(tmpfd, part, tmpfd, name) < 0) {
		unlinkat(tmpfd, part, 0);
		return -1;
	}
	return 0;
}

/*
 * The agent's path as the JVM sees it: ours when the same path inside
 * its root is the same file, else a copy in its own /tmp (a container
 * does not see our files).
 */
static int agent_for(struct jvm_target *t, char *out, size_t len, char *err,
		     size_t errlen)
{
	char ours[PATH_MAX], theirs[PATH_MAX + 64];
	struct stat a, b;

	if (!agent_path(ours, sizeof(ours)) || !realpath(ours, out)) {
		cpa_fail(err, errlen, "%s: %s", ours, strerror(errno));
		return -1;
	}
	snprintf(theirs, sizeof(theirs), "/proc/%u/root%s", t->pid, out);
	if (stat(out, &a) == 0 && stat(theirs, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 0;
	char name[64];
	snprintf(name, sizeof(name), ".cpa-jvmti-%u.so", t->nspid);
	if (copy_agent(ours, t->tmpfd, name) < 0) {
		cpa_fail(err, errlen, "copying the agent into its /tmp: %s",
			 strerror(errno));
		return -1;
	}
	snprintf(out, len, "/tmp/%s", name);
	return 0;
}

/* The first line the agent answers, within ANSWER_TIMEOUT_MS. */
static bool read_line(int fd, char *line, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ANSWER_TIMEOUT_MS) <= 0)
			break;
		if (recv(fd, line + n, 1, 0) != 1)
			break;
		if (line[n] == '\n') {
			line[n] = '\0';
			return true;
		}
		n++;
	}
	line[n] = '\0';
	return false;
}

/* The cgroup v2 id of a process: the inode of its cgroup directory. */
static uint64_t cgroup_of(uint32_t pid)
{
	char path[64], line[4096], dir[4200];
	struct stat st;
	uint64_t id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", line + 3);
		if (stat(dir, &st) == 0)
			id = st.st_ino;
	}
	fclose(f);
	return id;
}

/* Attaches to one JVM: its agent's socket, after loading it if it is
 * not there yet; the session started. -1 with a one-line reason. */
static int attach(struct jvm *j, char *err, size_t errlen)
{
	struct jvm_target t;
	char sock[64], path[PATH_MAX], line[JVMAGENT_LINE_MAX];
	uint64_t t0 = mono_now_ns();
	int rc = jvm_target_open(&t, j->pid, err, errlen);

	if (rc < 0)
		return -1;
	j->nspid = t.nspid;
	snprintf(sock, sizeof(sock), JVMAGENT_SOCKET_FMT, t.nspid);
	j->fd = jvm_tmp_connect(&t, sock);
	if (j->fd >= 0) {
		cpa_debug("pid %u: Java agent already loaded, reused", j->pid);
	} else {
		if (agent_for(&t, path, sizeof(path), err, errlen) < 0 ||
		    jvm_attach_load(j->pid, path, NULL, ATTACH_TIMEOUT_MS, NULL,
				    err, errlen) != 0) {
			jvm_target_close(&t);
			return -1;
		}
		j->fd = jvm_tmp_connect(&t, sock);
		if (j->fd < 0) {
			cpa_fail(err, errlen, "the agent loaded, but /tmp/%s: "
				 "%s", sock, strerror(errno));
			jvm_target_close(&t);
			return -1;
		}
		cpa_debug("pid %u: Java agent loaded in %llu ms", j->pid,
			  (unsigned long long)((mono_now_ns() - t0) / 1000000));
	}
	jvm_target_close(&t);

	snprintf(line, sizeof(line), "cpa-jvmti %d interval=%llu live=%d\n",
		 JVMAGENT_VERSION, (unsigned long long)mean_bytes, j->live);
	if (send(j->fd, line, strlen(line), MSG_NOSIGNAL) < 0 ||
	    !read_line(j->fd, line, sizeof(line)) || strcmp(line, "ok")) {
		cpa_fail(err, errlen, "the agent did not start: %s",
			 line[0] ? line : "no answer");
		close(j->fd);
		j->fd = -1;
		return -1;
	}
	fcntl(j->fd, F_SETFL, fcntl(j->fd, F_GETFL) | O_NONBLOCK);
	/* from here on its allocations are sampled: what a caller waiting
	 * for every JVM waits for, one line each */
	cpa_err("pid %u: Java agent sampling %s, one per %llu bytes", j->pid,
		j->live ? "allocations and live objects" : "allocations",
		(unsigned long long)mean_bytes);
	return 0;
}

static void add_jvm(uint32_t pid, bool live)
{
	for (size_t i = 0; i < n_jvms; i++) {
		if (jvms[i].pid == pid) {
			jvms[i].live |= live;
			return;
		}
	}
	jvms = cpa_realloc(jvms, (n_jvms + 1) * sizeof(*jvms));
	jvms[n_jvms] = (struct jvm){ .pid = pid, .live = live, .fd = -1,
				     .index = (unsigned)n_jvms };
	n_jvms++;
}

static void java_start(const struct capture_config *cfg)
{
	char err[256], path[64];

	mean_bytes = cfg->java_sample_bytes;
	for (size_t i = 0; i < cfg->n_java_alloc; i++)
		add_jvm((uint32_t)cfg->java_alloc[i], false);
	for (size_t i = 0; i < cfg->n_java_live; i++)
		add_jvm((uint32_t)cfg->java_live[i], true);
	for (size_t i = 0; i < n_jvms; i++) {
		struct jvm *j = &jvms[i];

		if (attach(j, err, sizeof(err)) < 0) {
			/* the rest of the capture goes on without it */
			cpa_warn("pid %u: Java allocations: %s", j->pid, err);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%u/comm", j->pid);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(j->pcomm, sizeof(j->pcomm), f))
				j->pcomm[strcspn(j->pcomm, "\n")] = '\0';
			fclose(f);
		}
		j->cgroup_id = cgroup_of(j->pid);
	}
}

/* A frame name with the suffix of its kind; ';' and control characters,
 * which would break folded lines, replaced. */
static size_t put_frame(uint8_t *out, const uint8_t *name, uint16_t len,
			const char *suffix)
{
	size_t sl = strlen(suffix);
	uint16_t n = (uint16_t)(len + sl);

	out[0] = (uint8_t)n;
	out[1] = (uint8_t)(n >> 8);
	for (uint16_t i = 0; i < len; i++)
		out[2 + i] = name[i] == ';' ? ':' : name[i] < 0x20 ? '?' :
								     name[i];
	memcpy(out + 2 + len, suffix, sl);
	return 2u + n;
}

static int take_alloc(struct jvm *j, const uint8_t *rec, size_t len,
		      char *err, size_t errlen)
{
	static uint8_t named[JVMAGENT_RECORD_MAX + 4 * (JVMAGENT_MAX_FRAMES + 1)];
	struct jvmagent_alloc a;
	struct cpa_raw_sample s;
	size_t at = sizeof(a), out = 0;

	memcpy(&a, rec, sizeof(a));
	if (a.h.n == 0 || a.h.n > JVMAGENT_MAX_FRAMES + 1)
		return cpa_fail(err, errlen, "%u frames in a sample", a.h.n);
	for (unsigned i = 0; i < a.h.n; i++) {
		uint16_t n;
		if (len - at < 2)
			return cpa_fail(err, errlen, "frame %u past the "
					"record's end", i);
		memcpy(&n, rec + at, 2);
		if (!n || n > JVMAGENT_NAME_MAX || n > len - at - 2)
			return cpa_fail(err, errlen, "frame %u of %u bytes", i,
					n);
		out += put_frame(named + out, rec + at + 2, n,
				 i == 0 ? "_[a]" : "_[j]");
		at += 2u + n;
	}
	if (at != len)
		return cpa_fail(err, errlen, "%zu bytes after the frames",
				len - at);

	memset(&s, 0, sizeof(s));
	s.time_ns = a.time_ns;
	s.cgroup_id = j->cgroup_id;
	s.weight = capture_unbiased_weight(a.size, (double)mean_bytes);
	s.pid = j->pid;
	/* a thread id of another pid namespace would name another task */
	s.tid = j->nspid == j->pid ? a.tid : j->pid;
	s.cpu = a.cpu;
	s.kind = CPA_KIND_JAVA_ALLOC;
	s.flags = CPA_FLAG_ESTIMATE | CPA_RAW_NAMED_FRAMES;
	memcpy(s.comm, a.thread, CPA_COMM_LEN);
	s.comm[CPA_COMM_LEN - 1] = '\0';
	memcpy(s.pcomm, j->pcomm, CPA_COMM_LEN);
	s.n_named = a.h.n;
	s.named_len = (uint32_t)out;
	s.named = named;
	output_queue_sample(&s);
	if (j->live && a.tag) {
		s.kind = CPA_KIND_JAVA_LIVE;
		s.flags |= CPA_RAW_ALLOC_ID;
		s.alloc_id = a.tag ^ ((uint64_t)j->index << 56);
		output_queue_sample(&s);
	}
	return 0;
}

static void take_free(struct jvm *j, const struct jvmagent_free *f)
{
	struct cpa_raw_sample s;

	memset(&s, 0, sizeof(s));
	s.time_ns = f->time_ns;
	s.cgroup_id = j->cgroup_id;
	s.weight = capture_unbiased_weight(JVMAGENT_TAG_SIZE(f->tag),
					   (double)mean_bytes);
	s.pid = j->pid;
	s.tid = j->pid;
	s.cpu = UINT32_MAX;
	s.kind = CPA_KIND_JAVA_LIVE;
	s.flags = CPA_FLAG_FREE | CPA_FLAG_ESTIMATE | CPA_RAW_ALLOC_ID;
	s.alloc_id = f->tag ^ ((uint64_t)j->index << 56);
	memcpy(s.pcomm, j->pcomm, CPA_COMM_LEN);
	memcpy(s.comm, j->pcomm, CPA_COMM_LEN);
	output_queue_sample(&s);
}

/* The whole records in buf, what j's agent sent from byte j->offset on,
 * taken; *taken = their bytes. 1 at END, -1 with err on bad input. */
static int parse_records(struct jvm *j, const uint8_t *buf, size_t len,
			 size_t *taken, char *err, size_t errlen)
{
	size_t at = 0;
	int rc = 0;

	while (!rc && len - at >= sizeof(struct jvmagent_head)) {
		struct jvmagent_head h;
		const uint8_t *rec = buf + at;

		memcpy(&h, rec, sizeof(h));
		size_t want = h.type == JVMAGENT_ALLOC ? sizeof(struct jvmagent_alloc)
			    : h.type == JVMAGENT_FREE ? sizeof(struct jvmagent_free)
			    : h.type == JVMAGENT_DROPS ? sizeof(struct jvmagent_drops)
			    : h.type == JVMAGENT_END ? sizeof(struct jvmagent_head)
			    : 0;
		if (!want || h.len < want || h.len > JVMAGENT_RECORD_MAX ||
		    (h.type != JVMAGENT_ALLOC && h.len != want)) {
			rc = cpa_fail(err, errlen, "byte %llu: record of type "
				      "%u and %u bytes",
				      (unsigned long long)(j->offset + at),
				      h.type, h.len);
			break;
		}
		if (len - at < h.len)
			break;	/* the rest comes later */
		if (h.type == JVMAGENT_ALLOC) {
			char why[160];
			if (take_alloc(j, rec, h.len, why, sizeof(why)) < 0) {
				rc = cpa_fail(err, errlen, "byte %llu: %s",
					      (unsigned long long)(j->offset +
								   at),
					      why);
				break;
			}
		} else if (h.type == JVMAGENT_FREE) {
			struct jvmagent_free f;
			memcpy(&f, rec, sizeof(f));
			take_free(j, &f);
		} else if (h.type == JVMAGENT_DROPS) {
			struct jvmagent_drops d;
			memcpy(&d, rec, sizeof(d));
			output_queue_lost(d.time_ns, CPA_LOST_BACKPRESSURE,
					  UINT32_MAX, d.count);
		} else {
			rc = 1;
		}
		at += h.len;
	}
	*taken = at;
	return rc;
}

int java_records(const uint8_t *buf, size_t len, bool live, size_t *taken,
		 char *err, size_t errlen)
{
	struct jvm j = { .pid = 1, .nspid = 1, .live = live, .fd = -1 };

	return parse_records(&j, buf, len, taken, err, errlen);
}

/* The whole records in j->buf; 1 at END, -1 with err on bad input. */
static int take_records(struct jvm *j, char *err, size_t errlen)
{
	size_t at;
	int rc = parse_records(j, j->buf, j->len, &at, err, errlen);

	memmove(j->buf, j->buf + at, j->len - at);
	j->len -= at;
	j->offset += at;
	return rc;
}

static void close_jvm(struct jvm *j)
{
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
}

/* Reads what one agent sent, at most DRAIN_MAX a poll cycle so that a
 * JVM that never stops sending cannot hold the capture's loop; 1 at its
 * END or EOF, -1 when it was bad. */
#define DRAIN_MAX (16u << 20)
static int drain_one(struct jvm *j)
{
	char err[256];
	size_t got = 0;

	while (got < DRAIN_MAX) {
		CPA_GROW(j->buf, j->cap, j->len + 65536);
		ssize_t n = recv(j->fd, j->buf + j->len, j->cap - j->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			cpa_warn("pid %u: Java allocations: the agent's "
				 "connection ended (the JVM exited?)", j->pid);
			close_jvm(j);
			return 1;
		}
		j->len += (size_t)n;
		got += (size_t)n;
		int rc = take_records(j, err, sizeof(err));
		if (rc) {
			if (rc < 0)
				cpa_warn("pid %u: Java agent: %s", j->pid, err);
			close_jvm(j);
			return rc;
		}
	}
	return 0;
}

static void java_drain(void)
{
	for (size_t i = 0; i < n_jvms; i++)
		if (jvms[i].fd >= 0)
			drain_one(&jvms[i]);
}

static void java_stop(void)
{
	uint64_t deadline = mono_now_ns() + STOP_TIMEOUT_MS * 1000000ull;

	for (size_t i = 0; i < n_jvms; i++)
		if (jvms[i].fd >= 0 &&
		    send(jvms[i].fd, "stop\n", 5, MSG_NOSIGNAL) != 5)
			close_jvm(&jvms[i]);
	/* what the agents still had queued, up to their END records */
	for (size_t i = 0; i < n_jvms; i++) {
		struct jvm *j = &jvms[i];

		while (j->fd >= 0 && mono_now_ns() < deadline) {
			struct pollfd p = { .fd = j->fd, .events = POLLIN };
			poll(&p, 1, 50);
			drain_one(j);
		}
		close_jvm(j);
	}
	free(jvms);
	jvms = NULL;
	n_jvms = 0;
}

/* --java-alloc, --java-live: the JVMTI agent in each JVM, attached once
 * the stream's start records are out, its samples over a socket */
const struct capture_addon java_addon = {
	.name = "java",
	.start = java_start,
	.drain = java_drain,
	.stop = java_stop,
};
