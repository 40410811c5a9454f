/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * The cpa stream: the one binary framing every cpa tool reads and writes.
 * docs/stream-format.md is the specification; this header is its code.
 *
 * A stream is a 16-byte header followed by records. Every record is an
 * 8-byte record header (u16 type, u16 flags, u32 payload length) and its
 * payload. All integers are little-endian. The decoder checks every length
 * against the remaining input and CPA_RECORD_MAX before it trusts it, so
 * no input can make it read out of bounds or allocate without limit.
 */
#ifndef CPA_STREAM_H
#define CPA_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "le.h"

/* First byte 0x89 can never start a line of UTF-8 text, so a tool can tell
 * the stream from folded text by its first byte (as PNG does). */
#define CPA_STREAM_MAGIC "\x89" "CPA"
#define CPA_STREAM_MAGIC_LEN 4
#define CPA_STREAM_MAJOR 1
#define CPA_STREAM_MINOR 4
#define CPA_STREAM_HEADER_SIZE 16
#define CPA_RECORD_HEADER_SIZE 8
/* Largest payload a decoder accepts: a raw sample with a 64 KiB stack
 * snapshot and full kernel and user chains fits with room to spare. */
#define CPA_RECORD_MAX (256u * 1024u)

#define CPA_MAX_FRAMES 127	/* per kernel or FP user chain in a raw sample */
#define CPA_MAX_REGS 8		/* user registers in a raw sample */
#define CPA_MAX_STACK_BYTES (64u * 1024u)
#define CPA_MAX_STACK_DEPTH 4096 /* frames in a symbolized stack */
#define CPA_COMM_LEN 16
#define CPA_BUILD_ID_MAX 20
#define CPA_PATH_MAX 4096

enum cpa_record_type {
	CPA_REC_RAW_SAMPLE = 1,	/* capture -> unwind */
	CPA_REC_TASK = 2,	/* process seen / exec / exit */
	CPA_REC_MMAP = 3,	/* executable mapping of a process */
	CPA_REC_LOST = 4,	/* data dropped, with reason and count */
	CPA_REC_STRING = 5,	/* dictionary: string id -> bytes */
	CPA_REC_STACK = 6,	/* dictionary: stack id -> string ids */
	CPA_REC_SAMPLE = 7,	/* symbolized sample: labels, stack id, weight */
	CPA_REC_META = 8,	/* key = value about the whole stream */
	CPA_REC_RESET = 9,	/* dictionaries start over from id 1 */
	CPA_REC_END = 15,	/* clean end, with totals */
};

/* What a sample measures. The kind fixes the unit of its weight. */
enum cpa_kind {
	CPA_KIND_ONCPU = 0,		/* samples */
	CPA_KIND_OFFCPU_BLOCKED = 1,	/* ns: switch-out to wakeup */
	CPA_KIND_SCHED_PREEMPTED = 2,	/* ns: preempted, waiting on runqueue */
	CPA_KIND_SCHED_YIELDED = 3,	/* ns: yielded, waiting on runqueue */
	CPA_KIND_SCHED_DELAY = 4,	/* ns: wakeup to running */
	CPA_KIND_IRQOFF = 5,		/* ns: gap between timer samples */
	CPA_KIND_PROBE = 6,		/* count: probe hits */
	CPA_KIND_MEM_VIRT = 7,		/* bytes: mmap, brk, mremap growth */
	CPA_KIND_MEM_PHYS = 8,		/* bytes: pages page faults allocate */
	CPA_KIND_MEM_USAGE = 9,		/* bytes, signed: pages still resident */
	CPA_KIND_HEAP_ALLOC = 10,	/* bytes: malloc and friends */
	CPA_KIND_HEAP_INUSE = 11,	/* bytes, signed: malloc'd, not freed */
	CPA_KIND_JAVA_ALLOC = 12,	/* bytes: sampled Java objects (JVMTI) */
	CPA_KIND_JAVA_LIVE = 13,	/* bytes, signed: those not freed yet */
	CPA_KIND_COUNT
};

enum cpa_unit {
	CPA_UNIT_SAMPLES = 0,
	CPA_UNIT_NS = 1,
	CPA_UNIT_COUNT = 2,
	CPA_UNIT_BYTES = 3,
	CPA_UNIT_PAGES = 4,
};

/* raw sample flags */
#define CPA_RAW_USER_TRUNCATED	0x0001	/* stack copy hit --stack-size */
#define CPA_RAW_KSTACK_FAILED	0x0002	/* kernel stack could not be read */
#define CPA_RAW_USTACK_FAILED	0x0004	/* FP user chain could not be read */
#define CPA_RAW_SNAPSHOT_FAILED	0x0008	/* user stack copy failed */
#define CPA_RAW_IN_KERNEL	0x0010	/* sample landed in kernel mode */
/* The snapshot is stored as zero runs and literal bytes
 * (docs/stream-format.md): stack holds stack_stored bytes of that form.
 * The writer encodes a plain snapshot itself where that is shorter; a
 * caller that already has the encoded form (cpa_stack_zruns) sets this.
 * A decoded sample never has it. */
#define CPA_RAW_STACK_ZRUNS	0x0020
/* Sample flags, the same bit in raw-sample and sample records (1.3).
 * FREE: the weight is bytes freed that the sample's stack allocated, so
 * it is subtracted. ESTIMATE: the weight was scaled up from sampling. */
#define CPA_FLAG_FREE		0x0040
#define CPA_FLAG_ESTIMATE	0x0080
/* The flags a sample record keeps: a raw sample's other bits say how its
 * stack was read, which the symbolized stack already shows. Readers mask
 * with it too: older streams and stores may hold those bits. */
#define CPA_SAMPLE_FLAGS	(CPA_FLAG_FREE | CPA_FLAG_ESTIMATE)
/* Raw sample only: an 8-byte allocation id follows the fixed part, so a
 * later free (FREE|ALLOC_ID, no stack) finds its allocation's stack in
 * cpa-unwind. Never set on a symbolized sample. */
#define CPA_RAW_ALLOC_ID	0x0100
/* The sample carries the Python frames the capture walked (a section
 * after the snapshot, docs/stream-format.md): py_version, n_py, py_flags
 * and py[] are valid. */
#define CPA_RAW_PY_FRAMES	0x0200

/* The sample carries frames already named (1.4): a JVMTI agent's Java
 * stack, which has no address to resolve. They are the leaf end of the
 * user chain; n_named, named_len and named are valid. */
#define CPA_RAW_NAMED_FRAMES	0x0400

#define CPA_MAX_PY_FRAMES 64
#define CPA_MAX_NAMED_FRAMES 256
#define CPA_NAMED_FRAME_MAX 1024	/* bytes of one named frame */
/* py_flags */
#define CPA_PY_TRUNCATED	0x1	/* deeper than CPA_MAX_PY_FRAMES */
#define CPA_PY_BROKEN		0x2	/* a frame could not be read */
/* cpa_py_frame.flags: the frame a C call into the eval loop began with,
 * the outermost Python frame of one eval function frame */
#define CPA_PY_FRAME_ENTRY	0x1

/* One Python frame: its code object and the byte offset of its current
 * instruction in the code's bytecode. */
struct cpa_py_frame {
	uint64_t code;
	uint32_t instr;
	uint32_t flags;		/* CPA_PY_FRAME_* */
};

/* x86-64 order of regs[] in a raw sample; other arches document theirs. */
enum cpa_reg { CPA_REG_IP = 0, CPA_REG_SP = 1, CPA_REG_BP = 2 };

struct cpa_raw_sample {
	uint64_t time_ns;	/* CLOCK_REALTIME */
	uint64_t cgroup_id;
	uint64_t weight;
	uint32_t pid;		/* thread group id */
	uint32_t tid;
	uint32_t cpu;
	uint16_t kind;		/* enum cpa_kind */
	uint16_t flags;		/* CPA_RAW_* */
	char comm[CPA_COMM_LEN];	/* thread name, NUL-padded */
	char pcomm[CPA_COMM_LEN];	/* group leader name, NUL-padded */
	uint16_t n_kernel, n_user, n_regs;
	uint32_t stack_len;
	uint64_t kernel_ips[CPA_MAX_FRAMES];	/* leaf first */
	uint64_t user_ips[CPA_MAX_FRAMES];	/* leaf first */
	uint64_t regs[CPA_MAX_REGS];
	const uint8_t *stack;	/* stack_len bytes from regs[SP]; points
				 * into the reader's buffer when decoded */
	uint32_t stack_stored;	/* with CPA_RAW_STACK_ZRUNS only */
	uint64_t alloc_id;	/* with CPA_RAW_ALLOC_ID only */
	/* with CPA_RAW_PY_FRAMES only */
	uint16_t py_version;	/* 0x030b: CPython 3.11 */
	uint16_t n_py;
	uint32_t py_flags;	/* CPA_PY_* */
	struct cpa_py_frame py[CPA_MAX_PY_FRAMES];	/* leaf first */
	/* with CPA_RAW_NAMED_FRAMES only: n_named frames, leaf first, each
	 * a u16 length and its bytes (cpa_named_frame walks them) */
	uint16_t n_named;
	uint32_t named_len;
	const uint8_t *named;	/* into the record when decoded */
};

/* The named frame at *pos of a raw sample's named section (decoded, so
 * every length is known to fit); *pos moves to the next. */
static inline const char *cpa_named_frame(const uint8_t *named, size_t *pos,
					  uint16_t *len)
{
	*len = (uint16_t)(named[*pos] | named[*pos + 1] << 8);
	*pos += 2u + *len;
	return (const char *)named + *pos - *len;
}

/* Encodes len bytes of snapshot at src as zero runs into out (room for len
 * bytes). Returns the encoded length, or 0 when it is not shorter. */
size_t cpa_stack_zruns(const uint8_t *src, size_t len, uint8_t *out);

enum cpa_task_event {
	CPA_TASK_SEEN = 1,	/* already running when capture started */
	CPA_TASK_EXEC = 2,
	CPA_TASK_EXIT = 3,
	CPA_TASK_FORK = 4,
};

struct cpa_task {
	uint64_t time_ns;
	uint32_t pid, tid, ppid;
	uint16_t event;		/* enum cpa_task_event */
	char comm[CPA_COMM_LEN];
};

struct cpa_mmap {
	uint64_t time_ns;
	uint64_t start, len, pgoff, inode;
	uint32_t pid, prot, flags;
	uint8_t build_id_len;	/* 0 when unknown */
	uint8_t build_id[CPA_BUILD_ID_MAX];
	uint16_t path_len;
	const char *path;	/* path_len bytes, not NUL-terminated */
};

enum cpa_lost_reason {
	CPA_LOST_RINGBUF = 1,		/* BPF ring buffer full */
	CPA_LOST_STACK_COPY = 2,	/* stack could not be copied */
	CPA_LOST_PROBE_RATE = 3,	/* over --probe-rate */
	CPA_LOST_STATE_FULL = 4,	/* per-task state table full */
	CPA_LOST_BACKPRESSURE = 5,	/* downstream too slow, queue full */
	CPA_LOST_UNWIND = 6,		/* sample could not be unwound */
	CPA_LOST_PERF = 7,		/* perf ring buffer PERF_RECORD_LOST */
	CPA_LOST_UPSTREAM = 8,		/* upstream stream ended without END */
	CPA_LOST_ALLOC_TABLE = 9,	/* alloc id table full, or free of an
					 * allocation it does not hold */
	CPA_LOST_REASON_COUNT
};

struct cpa_lost {
	uint64_t time_ns;
	uint64_t count;
	uint32_t reason;	/* enum cpa_lost_reason */
	uint32_t cpu;		/* UINT32_MAX when not per CPU */
};

/* Dictionary ids start at 1; 0 means "none" in every label field. */
struct cpa_string {
	uint32_t id;
	uint32_t len;
	const char *str;	/* len bytes, not NUL-terminated */
};

struct cpa_stack {
	uint32_t id;
	uint32_t n;
	const uint8_t *frames;	/* n little-endian u32 string ids, root
				 * first; use cpa_stack_frame() */
};

struct cpa_sample {
	uint64_t time_ns;
	uint64_t weight;
	uint64_t cgroup_id;
	uint32_t pid, tid, cpu;
	uint16_t kind;
	uint16_t flags;
	uint32_t stack_id;	/* CPA_REC_STACK id */
	uint32_t comm_id;	/* process (group leader) name string */
	uint32_t thread_id;	/* thread name string */
	uint32_t container_id;	/* container or cgroup path string, 0 none */
	uint32_t env_id;	/* recorded env value string, 0 none */
};

struct cpa_meta {
	uint32_t key_len, value_len;
	const char *key, *value;	/* not NUL-terminated */
};

/* Meta keys a reader acts on (docs/stream-format.md lists them all).
 * Writers and readers name them here, never by their spelling. */
#define CPA_META_HOST "host"
#define CPA_META_KERNEL "kernel"
#define CPA_META_FREQUENCY "frequency"	/* on-CPU sampling, Hz */
#define CPA_META_FREQ "freq"		/* the same, as older writers named it */
#define CPA_META_CPUS "cpus"		/* the host's CPU count */
#define CPA_META_MODE "mode"
#define CPA_META_SOURCE "source"	/* the tool that wrote the stream */
#define CPA_META_INTERVAL_NS "interval_ns"	/* a store's window length */
#define CPA_META_POSITION "position"	/* cpa-query --follow: SEGMENT BLOCKS */

/* Whether m's key is key. */
bool cpa_meta_is(const struct cpa_meta *m, const char *key);
/* m's value as a decimal number: true with *v, false when it is not one. */
bool cpa_meta_u64(const struct cpa_meta *m, uint64_t *v);
/* The sampling frequency m gives (frequency, or freq), in Hz: false when
 * m is neither or its value is not a frequency from 1 to 1000000 Hz. */
bool cpa_meta_frequency(const struct cpa_meta *m, uint64_t *hz);

struct cpa_end {
	uint64_t samples;	/* sample records written (raw or symbolized) */
	uint64_t lost;		/* sum of all lost counts */
	uint64_t records;	/* records before this one */
};

/* ---- writer ------------------------------------------------------------ */

struct cpa_writer {
	int fd;
	int err;		/* errno of the first failed write, sticky */
	uint8_t *buf;
	size_t len, cap;
	uint64_t records, samples, lost;
};

/* Buffers output for fd and writes the stream header. Returns 0 or -errno. */
int cpa_writer_init(struct cpa_writer *w, int fd);
/* Appends one record. Returns 0 or -errno (EPIPE when the reader is gone). */
int cpa_write_record(struct cpa_writer *w, uint16_t type, const void *payload,
		     uint32_t len);
int cpa_write_raw_sample(struct cpa_writer *w, const struct cpa_raw_sample *s);
int cpa_write_task(struct cpa_writer *w, const struct cpa_task *t);
int cpa_write_mmap(struct cpa_writer *w, const struct cpa_mmap *m);
int cpa_write_lost(struct cpa_writer *w, const struct cpa_lost *l);
int cpa_write_string(struct cpa_writer *w, uint32_t id, const char *s,
		     uint32_t len);
int cpa_write_stack(struct cpa_writer *w, uint32_t id, const uint32_t *frames,
		    uint32_t n);
int cpa_write_sample(struct cpa_writer *w, const struct cpa_sample *s);
int cpa_write_meta(struct cpa_writer *w, const char *key, const char *value);
/* Writes the END record with the writer's totals, then flushes. The lost
 * total is the sum of the LOST records written through this writer. */
int cpa_write_end(struct cpa_writer *w);
int cpa_writer_flush(struct cpa_writer *w);
/* Flushes and frees the buffer; does not close fd. Returns 0 or -errno. */
int cpa_writer_close(struct cpa_writer *w);

/* ---- reader ------------------------------------------------------------ */

struct cpa_record {
	uint16_t type;
	uint16_t flags;
	uint32_t len;
	uint64_t offset;	/* byte offset of the record header in input */
	const uint8_t *payload;	/* valid until the next cpa_reader_next() */
};

struct cpa_reader {
	int fd;
	const char *name;	/* input name for messages, e.g. "<stdin>" */
	uint8_t *buf;
	size_t start, end, cap;
	uint64_t offset;	/* input offset of buf[start] */
	bool eof;
	bool ended;		/* END record seen */
	uint16_t major, minor;
	struct cpa_end totals;	/* from END, valid when ended */
	uint64_t records;
	char err[256];		/* "NAME: byte N: what is wrong" */
};

/*
 * Reads and checks the stream header. prefix/prefix_len are bytes the
 * caller already read from fd (for format detection); they are consumed
 * first. Returns 0, or -1 with r->err set.
 */
int cpa_reader_init(struct cpa_reader *r, int fd, const char *name,
		    const void *prefix, size_t prefix_len);
/*
 * Next record. Returns 1 with *rec filled, 0 at end of input, -1 with
 * r->err set on malformed input. At 0, r->ended tells a clean end (END
 * record seen) from a truncated stream. Records after END are an error.
 */
int cpa_reader_next(struct cpa_reader *r, struct cpa_record *rec);
void cpa_reader_free(struct cpa_reader *r);
/* The one warning for input that ended without its END record, naming
 * the input and the byte offset where it stopped; consequence says what
 * the tool does about it ("the stored windows are kept"). */
void cpa_reader_warn_unended(const struct cpa_reader *r,
			     const char *consequence);
/* True when the next cpa_reader_next() returns without reading: a whole
 * record, or the end of input, is buffered. A consumer that must not
 * block between records (to flush on a timer) polls the fd until then. */
bool cpa_reader_ready(const struct cpa_reader *r);
/* Bytes already read and buffered; 0 means the next cpa_reader_next() may
 * block, so a filter should flush its output first to keep the pipe live. */
static inline size_t cpa_reader_pending(const struct cpa_reader *r)
{
	return r->end - r->start;
}

/*
 * Typed decoders. Each validates the payload completely (exact length,
 * counts within limits) and returns 0, or -1 with err (of errlen bytes)
 * set to "byte N: what is wrong", N being the input offset of the record.
 */
/* stack_buf, of CPA_MAX_STACK_BYTES, receives a snapshot stored as zero
 * runs; s->stack then points into it, else into the record. */
int cpa_decode_raw_sample(const struct cpa_record *rec,
			  struct cpa_raw_sample *s, uint8_t *stack_buf,
			  char *err, size_t errlen);
int cpa_decode_task(const struct cpa_record *rec, struct cpa_task *t,
		    char *err, size_t errlen);
int cpa_decode_mmap(const struct cpa_record *rec, struct cpa_mmap *m,
		    char *err, size_t errlen);
int cpa_decode_lost(const struct cpa_record *rec, struct cpa_lost *l,
		    char *err, size_t errlen);
int cpa_decode_string(const struct cpa_record *rec, struct cpa_string *s,
		      char *err, size_t errlen);
int cpa_decode_stack(const struct cpa_record *rec, struct cpa_stack *s,
		     char *err, size_t errlen);
int cpa_decode_sample(const struct cpa_record *rec, struct cpa_sample *s,
		      char *err, size_t errlen);
int cpa_decode_meta(const struct cpa_record *rec, struct cpa_meta *m,
		    char *err, size_t errlen);
int cpa_decode_end(const struct cpa_record *rec, struct cpa_end *e,
		   char *err, size_t errlen);

/*
 * For a record a tool passes downstream without handling it: validates
 * the payload of a known type as completely as its typed decoder does, so
 * the next stage is never handed a record it must refuse. Records of
 * types newer than this build have only their framing, which the reader
 * checked. 0, or -1 with err set as the decoders set it.
 */
int cpa_record_check(const struct cpa_record *rec, char *err, size_t errlen);

static inline uint32_t cpa_stack_frame(const struct cpa_stack *s, uint32_t i)
{
	return cpa_get_le32(s->frames + 4 * (size_t)i);
}

/* ---- names ------------------------------------------------------------- */

/* "oncpu", "offcpu-blocked", ...; NULL for an unknown kind. */
const char *cpa_kind_name(unsigned kind);
/* Root marker frame of a kind ("off-CPU blocked"), NULL for on-CPU. */
const char *cpa_kind_marker(unsigned kind);
/* Parses a kind name (or the old alias mem-rss); returns the kind or -1. */
int cpa_kind_parse(const char *name);
enum cpa_unit cpa_kind_unit(unsigned kind);
/* True for kinds whose samples are allocations and later frees (flag
 * CPA_FLAG_FREE) that net to what is still held: mem-usage, heap-inuse,
 * java-live. */
bool cpa_kind_nets(unsigned kind);
/* "samples", "ns", "count", "bytes", "pages" */
const char *cpa_unit_name(enum cpa_unit unit);
const char *cpa_lost_reason_name(unsigned reason);
const char *cpa_record_type_name(unsigned type);

/* True when the first bytes of an input look like a cpa stream. */
bool cpa_stream_detect(const void *buf, size_t len);

#endif
