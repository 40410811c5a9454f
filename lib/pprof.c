/* SPDX-License-Identifier: MIT */
/*
 * pprof profile.proto, encoded by hand. The message is small and fixed,
 * so a few varint and length-delimited writers are all it takes; see
 * https://github.com/google/pprof/blob/main/proto/profile.proto for the
 * field numbers used below.
 *
 * Strings, functions and stacks are interned as they are added (frame
 * name -> string id -> function id = location id), so a profile of a
 * million samples over a thousand stacks holds a thousand stacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"
#include "intern.h"
#include "log.h"
#include "pprof.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3,
	MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
};

#define WIRE_VARINT 0
#define WIRE_LEN 2
/* Fake address space per module of a "module+0xoffset" frame. */
#define MAPPING_SPAN (1ull << 40)

struct loc {
	uint32_t name;		/* string id of the frame */
	uint32_t mapping;	/* 0 none */
	uint64_t address;
};

struct cpa_pprof {
	enum cpa_unit unit;
	uint64_t period;
	uint64_t start_ns, duration_ns;
	struct cpa_strtab *strings;	/* ids are string_table indexes */
	struct cpa_stacktab *stacks;	/* location ids, leaf first */
	int64_t *values;		/* per stack id */
	uint32_t nvalues;
	uint32_t *loc_of_name;		/* string id -> location id */
	uint32_t cap_loc_of_name;
	struct loc *locs;		/* location id - 1 */
	uint32_t nlocs, caplocs;
	uint32_t *mappings;		/* mapping id - 1 -> filename string */
	uint32_t nmappings;
	uint32_t *frame_buf;
	uint32_t frame_cap;
};

static void put_key(struct cpa_buf *b, unsigned field, unsigned wire)
{
	cpa_buf_uleb128(b, (uint64_t)field << 3 | wire);
}

/* An int64 field; zero is the default and is left out. */
static void put_int(struct cpa_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	put_key(b, field, WIRE_VARINT);
	cpa_buf_uleb128(b, v);
}

static void put_bytes(struct cpa_buf *b, unsigned field, const void *p, size_t n)
{
	put_key(b, field, WIRE_LEN);
	cpa_buf_uleb128(b, n);
	cpa_buf_add(b, p, n);
}

/* A nested message: msg's bytes under field; msg is emptied for reuse. */
static void put_msg(struct cpa_buf *b, unsigned field, struct cpa_buf *msg)
{
	put_bytes(b, field, msg->p, msg->len);
	msg->len = 0;
}

static uint32_t str_id(struct cpa_pprof *p, const char *s, size_t len)
{
	bool is_new;

	if (len == 0)
		return 0;	/* string_table[0] is "" */
	return cpa_strtab_intern(p->strings, s, len, &is_new);
}

struct cpa_pprof *cpa_pprof_new(enum cpa_unit unit, uint64_t period)
{
	struct cpa_pprof *p = cpa_calloc(1, sizeof(*p));

	p->unit = unit;
	p->period = unit == CPA_UNIT_SAMPLES ? period : 0;
	p->strings = cpa_strtab_new();
	p->stacks = cpa_stacktab_new();
	return p;
}

void cpa_pprof_free(struct cpa_pprof *p)
{
	if (!p)
		return;
	cpa_strtab_free(p->strings);
	cpa_stacktab_free(p->stacks);
	free(p->values);
	free(p->loc_of_name);
	free(p->locs);
	free(p->mappings);
	free(p->frame_buf);
	free(p);
}

void cpa_pprof_set_time(struct cpa_pprof *p, uint64_t start_ns,
			uint64_t duration_ns)
{
	p->start_ns = start_ns;
	p->duration_ns = duration_ns;
}

/* "libfoo.so+0x1a2b": module length and offset, or 0 when not that form. */
static size_t module_offset(const char *s, size_t len, uint64_t *off)
{
	const char *plus = NULL;

	for (size_t i = len; i-- > 0;)
		if (s[i] == '+') {
			plus = s + i;
			break;
		}
	if (!plus || plus == s || (size_t)(s + len - plus) < 4 ||
	    plus[1] != '0' || plus[2] != 'x')
		return 0;
	uint64_t v = 0;
	for (const char *q = plus + 3; q < s + len; q++) {
		int d = *q >= '0' && *q <= '9' ? *q - '0' :
			*q >= 'a' && *q <= 'f' ? *q - 'a' + 10 :
			*q >= 'A' && *q <= 'F' ? *q - 'A' + 10 : -1;
		if (d < 0 || v >> 60)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	if (v >= MAPPING_SPAN)
		return 0;
	*off = v;
	return (size_t)(plus - s);
}

static uint32_t location_of(struct cpa_pprof *p, const char *frame)
{
	size_t len = strlen(frame);
	uint32_t name = str_id(p, frame, len);

	CPA_GROW_ZERO(p->loc_of_name, p->cap_loc_of_name, (size_t)name + 1);
	if (p->loc_of_name[name])
		return p->loc_of_name[name];

	CPA_GROW(p->locs, p->caplocs, (size_t)p->nlocs + 1);
	struct loc *l = &p->locs[p->nlocs++];
	uint64_t off;
	size_t mlen = module_offset(frame, len, &off);

	l->name = name;
	l->mapping = 0;
	l->address = 0;
	if (mlen) {
		uint32_t file = str_id(p, frame, mlen);
		uint32_t m = 0;
		for (uint32_t i = 0; i < p->nmappings; i++)
			if (p->mappings[i] == file)
				m = i + 1;
		if (!m) {
			p->mappings = cpa_realloc(p->mappings,
				(size_t)(p->nmappings + 1) * sizeof(uint32_t));
			p->mappings[p->nmappings++] = file;
			m = p->nmappings;
		}
		l->mapping = m;
		l->address = (uint64_t)m * MAPPING_SPAN + off;
	}
	p->loc_of_name[name] = p->nlocs;
	return p->nlocs;
}

void cpa_pprof_add(struct cpa_pprof *p, const char *const *frames, uint32_t n,
		   int64_t value)
{
	bool is_new;

	CPA_GROW(p->frame_buf, p->frame_cap, n);
	/* pprof lists a sample's locations leaf first */
	for (uint32_t i = 0; i < n; i++)
		p->frame_buf[n - 1 - i] = location_of(p, frames[i]);
	uint32_t id = cpa_stacktab_intern(p->stacks, p->frame_buf, n, &is_new);
	CPA_GROW_ZERO(p->values, p->nvalues, (size_t)id + 1);
	p->values[id] += value;
}

static void put_value_type(struct cpa_buf *b, unsigned field, uint32_t type,
			   uint32_t unit, struct cpa_buf *tmp)
{
	put_int(tmp, VALUE_TYPE_TYPE, type);
	put_int(tmp, VALUE_TYPE_UNIT, unit);
	put_msg(b, field, tmp);
}

static void encode(struct cpa_pprof *p, struct cpa_buf *b)
{
	struct cpa_buf m = { 0 }, packed = { 0 };
	const char *type, *unit;
	uint32_t ncols = 1;

	switch (p->unit) {
	case CPA_UNIT_SAMPLES: type = "samples"; unit = "count"; break;
	case CPA_UNIT_NS: type = "off_cpu"; unit = "nanoseconds"; break;
	case CPA_UNIT_BYTES: type = "space"; unit = "bytes"; break;
	case CPA_UNIT_PAGES: type = "pages"; unit = "count"; break;
	default: type = "events"; unit = "count"; break;
	}
	uint32_t t0 = str_id(p, type, strlen(type));
	uint32_t u0 = str_id(p, unit, strlen(unit));
	put_value_type(b, PROFILE_SAMPLE_TYPE, t0, u0, &m);
	uint32_t cpu = 0, ns = 0;
	if (p->period) {
		/* on-CPU: CPU time too, one period per sample */
		cpu = str_id(p, "cpu", 3);
		ns = str_id(p, "nanoseconds", 11);
		put_value_type(b, PROFILE_SAMPLE_TYPE, cpu, ns, &m);
		ncols = 2;
	}

	uint32_t nstacks = cpa_stacktab_count(p->stacks);
	for (uint32_t id = 1; id <= nstacks; id++) {
		uint32_t n;
		const uint32_t *locs = cpa_stacktab_get(p->stacks, id, &n);
		int64_t v = id < p->nvalues ? p->values[id] : 0;

		if (!v)
			continue;
		for (uint32_t i = 0; i < n; i++)
			cpa_buf_uleb128(&packed, locs[i]);
		put_msg(&m, SAMPLE_LOCATION_ID, &packed);	/* packed ids */
		cpa_buf_uleb128(&packed, (uint64_t)v);
		if (ncols == 2)	/* wraps like the int64 it encodes, never UB */
			cpa_buf_uleb128(&packed, (uint64_t)v * p->period);
		put_bytes(&m, SAMPLE_VALUE, packed.p, packed.len);
		packed.len = 0;
		put_msg(b, PROFILE_SAMPLE, &m);
	}

	for (uint32_t i = 0; i < p->nmappings; i++) {
		put_int(&m, MAPPING_ID, i + 1);
		put_int(&m, MAPPING_START, (uint64_t)(i + 1) * MAPPING_SPAN);
		put_int(&m, MAPPING_LIMIT, (uint64_t)(i + 2) * MAPPING_SPAN);
		put_int(&m, MAPPING_FILENAME, p->mappings[i]);
		put_int(&m, MAPPING_HAS_FUNCTIONS, 1);
		put_msg(b, PROFILE_MAPPING, &m);
	}

	/* one function per distinct frame, sharing the location's id */
	for (uint32_t i = 0; i < p->nlocs; i++) {
		const struct loc *l = &p->locs[i];
		put_int(&m, LOCATION_ID, i + 1);
		put_int(&m, LOCATION_MAPPING_ID, l->mapping);
		put_int(&m, LOCATION_ADDRESS, l->address);
		put_int(&packed, LINE_FUNCTION_ID, i + 1);
		put_msg(&m, LOCATION_LINE, &packed);
		put_msg(b, PROFILE_LOCATION, &m);
	}
	for (uint32_t i = 0; i < p->nlocs; i++) {
		put_int(&m, FUNCTION_ID, i + 1);
		put_int(&m, FUNCTION_NAME, p->locs[i].name);
		put_int(&m, FUNCTION_SYSTEM_NAME, p->locs[i].name);
		put_msg(b, PROFILE_FUNCTION, &m);
	}

	put_bytes(b, PROFILE_STRING_TABLE, "", 0);
	uint32_t nstr = cpa_strtab_count(p->strings);
	for (uint32_t id = 1; id <= nstr; id++) {
		uint32_t len;
		const char *s = cpa_strtab_get(p->strings, id, &len);
		put_bytes(b, PROFILE_STRING_TABLE, s, len);
	}

	put_int(b, PROFILE_TIME_NANOS, p->start_ns);
	put_int(b, PROFILE_DURATION_NANOS, p->duration_ns);
	if (p->period) {
		put_value_type(b, PROFILE_PERIOD_TYPE, cpu, ns, &m);
		put_int(b, PROFILE_PERIOD, p->period);
		put_int(b, PROFILE_DEFAULT_SAMPLE_TYPE, cpu);
	} else {
		put_value_type(b, PROFILE_PERIOD_TYPE, t0, u0, &m);
		put_int(b, PROFILE_PERIOD, 1);
	}
	free(m.p);
	free(packed.p);
}

static int write_all(int fd, const uint8_t *p, size_t n, char *err,
		     size_t errlen)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			snprintf(err, errlen, "write: %s", strerror(errno));
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int cpa_pprof_write(struct cpa_pprof *p, int fd, char *err, size_t errlen)
{
	struct cpa_buf raw = { 0 };
	z_stream z;
	uint8_t out[1 << 16];
	int rc = 0, zrc;

	encode(p, &raw);
	if (raw.len > UINT32_MAX) {
		snprintf(err, errlen, "profile too large (%zu bytes)", raw.len);
		free(raw.p);
		return -1;
	}

	memset(&z, 0, sizeof(z));
	/* 15 window bits + 16: a gzip wrapper, which pprof expects */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(err, errlen, "zlib: cannot initialise deflate");
		free(raw.p);
		return -1;
	}
	z.next_in = raw.p;
	z.avail_in = (uInt)raw.len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zrc = deflate(&z, Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			snprintf(err, errlen, "zlib: deflate failed");
			rc = -1;
			break;
		}
		if (write_all(fd, out, sizeof(out) - z.avail_out, err,
			      errlen) < 0) {
			rc = -1;
			break;
		}
	} while (zrc != Z_STREAM_END);
	deflateEnd(&z);
	free(raw.p);
	return rc;
}
