/* SPDX-License-Identifier: MIT */
/*
 * cpa-dump: prints a cpa stream as one text line per record, for tests and
 * for looking at a stream by eye:
 *   cpa-capture --duration 1 | cpa-dump | head
 * Exits 1 with the reader's "byte N" message on malformed input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "stream.h"

/* snapshots stored as zero runs are decoded here */
static uint8_t snap[CPA_MAX_STACK_BYTES];

static void print_ips(const char *tag, const uint64_t *ips, unsigned n)
{
	printf(" %s=", tag);
	for (unsigned i = 0; i < n; i++)
		printf("%s0x%" PRIx64, i ? "," : "", ips[i]);
}

static void print_kind(unsigned kind)
{
	const char *k = cpa_kind_name(kind);
	if (k)
		printf(" kind=%s", k);
	else
		printf(" kind=%u", kind);
}

static int dump(const struct cpa_record *rec, char *err, size_t errlen)
{
	switch (rec->type) {
	case CPA_REC_RAW_SAMPLE: {
		struct cpa_raw_sample s;
		if (cpa_decode_raw_sample(rec, &s, snap, err, errlen))
			return -1;
		printf("raw time=%" PRIu64 " pid=%u tid=%u cpu=%u", s.time_ns,
		       s.pid, s.tid, s.cpu);
		print_kind(s.kind);
		printf(" weight=%" PRIu64 " cgroup=%" PRIu64 " flags=0x%x "
		       "comm=%s pcomm=%s nk=%u nu=%u nregs=%u stack=%u",
		       s.weight, s.cgroup_id, s.flags, s.comm, s.pcomm,
		       s.n_kernel, s.n_user, s.n_regs, s.stack_len);
		print_ips("kips", s.kernel_ips, s.n_kernel);
		print_ips("uips", s.user_ips, s.n_user);
		print_ips("regs", s.regs, s.n_regs);
		if (s.flags & CPA_RAW_PY_FRAMES) {
			printf(" py=%x.%x pyflags=0x%x pyframes=", s.py_version >> 8,
			       s.py_version & 0xff, s.py_flags);
			for (unsigned i = 0; i < s.n_py; i++)
				printf("%s0x%" PRIx64 "+%u%s", i ? "," : "",
				       s.py[i].code, s.py[i].instr,
				       s.py[i].flags & CPA_PY_FRAME_ENTRY ? "e" : "");
		}
		putchar('\n');
		return 0;
	}
	case CPA_REC_TASK: {
		static const char *const ev[] = {"?", "seen", "exec", "exit",
						 "fork"};
		struct cpa_task t;
		if (cpa_decode_task(rec, &t, err, errlen))
			return -1;
		printf("task time=%" PRIu64 " event=%s pid=%u tid=%u ppid=%u "
		       "comm=%s\n", t.time_ns, ev[t.event], t.pid, t.tid,
		       t.ppid, t.comm);
		return 0;
	}
	case CPA_REC_MMAP: {
		struct cpa_mmap m;
		if (cpa_decode_mmap(rec, &m, err, errlen))
			return -1;
		printf("mmap time=%" PRIu64 " pid=%u start=0x%" PRIx64
		       " len=0x%" PRIx64 " pgoff=0x%" PRIx64 " prot=%u buildid=",
		       m.time_ns, m.pid, m.start, m.len, m.pgoff, m.prot);
		for (unsigned i = 0; i < m.build_id_len; i++)
			printf("%02x", m.build_id[i]);
		printf(" path=%.*s\n", (int)m.path_len, m.path);
		return 0;
	}
	case CPA_REC_LOST: {
		struct cpa_lost l;
		if (cpa_decode_lost(rec, &l, err, errlen))
			return -1;
		printf("lost time=%" PRIu64 " reason=%s count=%" PRIu64
		       " cpu=%d\n", l.time_ns, cpa_lost_reason_name(l.reason),
		       l.count, (int)l.cpu);
		return 0;
	}
	case CPA_REC_STRING: {
		struct cpa_string s;
		if (cpa_decode_string(rec, &s, err, errlen))
			return -1;
		printf("string id=%u %.*s\n", s.id, (int)s.len, s.str);
		return 0;
	}
	case CPA_REC_STACK: {
		struct cpa_stack s;
		if (cpa_decode_stack(rec, &s, err, errlen))
			return -1;
		printf("stack id=%u frames=", s.id);
		for (uint32_t i = 0; i < s.n; i++)
			printf("%s%u", i ? "," : "", cpa_stack_frame(&s, i));
		putchar('\n');
		return 0;
	}
	case CPA_REC_SAMPLE: {
		struct cpa_sample s;
		if (cpa_decode_sample(rec, &s, err, errlen))
			return -1;
		printf("sample time=%" PRIu64 " pid=%u tid=%u cpu=%u",
		       s.time_ns, s.pid, s.tid, s.cpu);
		print_kind(s.kind);
		printf(" weight=%" PRIu64 " cgroup=%" PRIu64 " stack=%u comm=%u "
		       "thread=%u container=%u env=%u", s.weight,
		       s.cgroup_id, s.stack_id, s.comm_id, s.thread_id,
		       s.container_id, s.env_id);
		if (s.flags)
			printf(" flags=0x%x", s.flags);
		putchar('\n');
		return 0;
	}
	case CPA_REC_META: {
		struct cpa_meta m;
		if (cpa_decode_meta(rec, &m, err, errlen))
			return -1;
		printf("meta %.*s=%.*s\n", (int)m.key_len, m.key,
		       (int)m.value_len, m.value);
		return 0;
	}
	case CPA_REC_RESET:
		printf("reset\n");
		return 0;
	case CPA_REC_END: {
		struct cpa_end e;
		if (cpa_decode_end(rec, &e, err, errlen))
			return -1;
		printf("end samples=%" PRIu64 " lost=%" PRIu64 " records=%" PRIu64
		       "\n", e.samples, e.lost, e.records);
		return 0;
	}
	}
	printf("unknown type=%u len=%u\n", rec->type, rec->len);
	return 0;
}

int main(int argc, char **argv)
{
	cpa_set_progname(argv[0]);
	const char *name = argc > 1 ? argv[1] : "<stdin>";
	if (argc > 1 && !freopen(argv[1], "rb", stdin))
		cpa_die("%s: cannot open", argv[1]);
	struct cpa_reader r;
	if (cpa_reader_init(&r, 0, name, NULL, 0) < 0)
		cpa_die("%s", r.err);
	struct cpa_record rec;
	char err[256];
	int rc;
	while ((rc = cpa_reader_next(&r, &rec)) == 1) {
		if (dump(&rec, err, sizeof(err)) < 0)
			cpa_die("%s: %s", name, err);
	}
	if (rc < 0)
		cpa_die("%s", r.err);
	if (!r.ended)
		cpa_die("%s: byte %llu: stream ended without an end record",
			name, (unsigned long long)r.offset);
	cpa_reader_free(&r);
	return 0;
}
