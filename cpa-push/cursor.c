/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "cursor.h"

#define SEQ_BITS 10
#define BLOCK_BITS 22

int pos_parse(const char *text, size_t len, struct push_pos *p, char *err,
	      size_t errlen)
{
	char buf[96], name[CPA_STORE_NAME_MAX + 1] = "", tail;
	unsigned long long n;
	if (len >= sizeof(buf))
		return cpa_fail(err, errlen, "position too long");
	memcpy(buf, text, len);
	buf[len] = 0;
	if (sscanf(buf, "%32s %llu%c", name, &n, &tail) != 2 ||
	    !cpa_store_is_segment_name(name))
		return cpa_fail(err, errlen, "position '%s': expected "
				"'SEGMENT BLOCKS'", buf);
	memcpy(p->seg, name, strlen(name) + 1);
	p->blocks = n;
	return 0;
}

int pos_pack(const struct push_pos *p, uint64_t *v, char *err,
	     size_t errlen)
{
	if (!p->seg[0]) {
		*v = 0;
		return 0;
	}
	struct tm tm = {0};
	if (sscanf(p->seg, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return cpa_fail(err, errlen, "%s: not a segment name", p->seg);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	unsigned long seq = p->seg[16] ? strtoul(p->seg + 17, NULL, 10) : 0;
	if (t < 0 || (uint64_t)t >> 32 || seq >> SEQ_BITS ||
	    p->blocks >> BLOCK_BITS)
		return cpa_fail(err, errlen, "%s block %llu: past what a "
				"position holds (sequence 1023, %u blocks)",
				p->seg, (unsigned long long)p->blocks,
				1u << BLOCK_BITS);
	*v = (uint64_t)t << 32 | (uint64_t)seq << BLOCK_BITS | p->blocks;
	return 0;
}

void pos_unpack(uint64_t v, struct push_pos *p)
{
	memset(p, 0, sizeof(*p));
	if (!v)
		return;
	cpa_store_segment_name((v >> 32) * 1000000000ull,
			       (unsigned)(v >> BLOCK_BITS & ((1u << SEQ_BITS) - 1)),
			       p->seg, sizeof(p->seg));
	p->blocks = v & ((1u << BLOCK_BITS) - 1);
}

int cursor_read(const char *path, struct push_pos *p, char *err,
		size_t errlen)
{
	memset(p, 0, sizeof(*p));
	FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 1;
		return cpa_fail(err, errlen, "%s: %s", path, strerror(errno));
	}
	char line[128];
	char why[160];
	int r = 0;
	if (!fgets(line, sizeof(line), f))
		r = cpa_fail(err, errlen, "%s: empty", path);
	else if (pos_parse(line, strcspn(line, "\n"), p, why,
			   sizeof(why)) < 0)
		r = cpa_fail(err, errlen, "%s: line 1: %s", path, why);
	fclose(f);
	return r;
}

int cursor_write(const char *path, const struct push_pos *p, char *err,
		 size_t errlen)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return cpa_fail(err, errlen, "%s: %s", tmp, strerror(errno));
	char line[96];
	int n = snprintf(line, sizeof(line), "%s %llu\n", p->seg,
			 (unsigned long long)p->blocks);
	if (write(fd, line, (size_t)n) != n || fdatasync(fd) < 0) {
		int e = errno ? errno : EIO;
		close(fd);
		unlink(tmp);
		return cpa_fail(err, errlen, "%s: %s", tmp, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return cpa_fail(err, errlen, "%s: %s", path, strerror(e));
	}
	return 0;
}
