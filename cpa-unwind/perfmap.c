// SPDX-License-Identifier: MIT
/* Parsing and refreshing JIT perf maps (/tmp/perf-PID.map). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "jvmattach.h"
#include "perfmap.h"
#include "procfs.h"
#include "safeopen.h"

#define PERFMAP_MAX_BYTES (512u << 20)	/* a map larger than this is cut */
#define STALE_SLACK_NS (50 * 1000000ull)	/* clock ticks, rounding */

/* Parses a hex number (optional 0x) at *p, up to end. */
static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	uint64_t r = 0;
	const char *d = s;
	for (; s < end; s++) {
		unsigned c = (unsigned char)*s, x;
		if (c >= '0' && c <= '9')
			x = c - '0';
		else if (c >= 'a' && c <= 'f')
			x = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			x = c - 'A' + 10;
		else
			break;
		if (r >> 60)
			return false;	/* more than 64 bits */
		r = r << 4 | x;
	}
	if (s == d)
		return false;
	*p = s;
	*v = r;
	return true;
}

long perfmap_parse(struct perfmap *m, const char *buf, size_t len, char *err,
		   size_t errlen)
{
	symtab_free(&m->syms);
	m->bad_lines = 0;
	if (err && errlen)
		err[0] = '\0';
	const char *p = buf, *end = buf + len;
	for (unsigned long line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *q = p;
		uint64_t start, size;
		bool ok = parse_hex(&q, eol, &start) && q < eol && *q == ' ' &&
			  (q++, parse_hex(&q, eol, &size)) && q < eol &&
			  *q == ' ' && ++q < eol && start + size >= start;
		if (ok) {
			size_t nlen = (size_t)(eol - q);
			if (nlen && q[nlen - 1] == '\r')
				nlen--;
			ok = nlen > 0 &&
			     symtab_add(&m->syms, start, size, q, nlen) == 0;
		}
		if (!ok && eol > p) {
			if (m->bad_lines++ == 0 && err && errlen)
				snprintf(err, errlen, "line %lu: expected "
					 "'START SIZE NAME'", line);
		}
		p = nl ? nl + 1 : end;
	}
	symtab_finish(&m->syms);
	return m->syms.n;
}

int perfmap_refresh(struct perfmap *m, uint32_t pid, uint64_t now_ns)
{
	if (m->tried && now_ns - m->checked_ns < CPA_NSEC_PER_SEC)
		return m->syms.n ? 0 : -1;
	m->tried = true;
	m->checked_ns = now_ns;

	/* The process names the file (a FIFO or a symlink out of its
	 * container would stall or mislead us): opened as safeopen.h
	 * opens mapped files, inside the process's root. */
	char path[64];
	struct stat st;
	int rootfd;
	uint32_t nspid = cpa_ns_pid(pid);
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", nspid ? nspid : pid);
	int fd = safeopen_in_proc_root(pid, path, 0, &st, &rootfd);
	if (fd >= 0) {
		close(rootfd);
	} else if (errno == ENOENT || errno == ESRCH) {
		/* the process has exited: its map may still be on the host */
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
		fd = safeopen_host(path, 0, &st);
	}
	if (fd < 0)
		return m->syms.n ? 0 : -1;
	/* A map older than the process is an earlier process's that had
	 * the same pid: its addresses name nothing of this one. A JVM asked
	 * for its map writes it anew. The start is known to a clock tick. */
	if (!m->start_ns)
		m->start_ns = cpa_proc_start_realtime_ns(pid);
	uint64_t mtime = cpa_timespec_ns(&st.st_mtim);
	if (m->start_ns && mtime + STALE_SLACK_NS < m->start_ns) {
		close(fd);
		return m->syms.n ? 0 : -1;
	}
	/* A JVM rewrites its map whole (jcmd Compiler.perfmap): a map of
	 * the same size may still be new. */
	if ((uint64_t)st.st_size == m->size && mtime == m->mtime_ns) {
		close(fd);
		return m->syms.n ? 0 : -1;
	}
	size_t want = (uint64_t)st.st_size > PERFMAP_MAX_BYTES ?
		      PERFMAP_MAX_BYTES : (size_t)st.st_size;
	char *buf = malloc(want ? want : 1);
	size_t got = 0;
	while (buf && got < want) {
		ssize_t k = read(fd, buf + got, want - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	if (!buf)
		return m->syms.n ? 0 : -1;
	/* A writer may be mid-line: parse complete lines only. */
	while (got > 0 && buf[got - 1] != '\n')
		got--;
	perfmap_parse(m, buf, got, NULL, 0);
	m->size = (uint64_t)st.st_size;
	m->mtime_ns = mtime;
	free(buf);
	return m->syms.n ? 0 : -1;
}

void perfmap_recheck(struct perfmap *m)
{
	m->tried = false;
}

void perfmap_free(struct perfmap *m)
{
	symtab_free(&m->syms);
	memset(m, 0, sizeof(*m));
}
