/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * The cpa store: per-window aggregated samples kept in rotating segment
 * directories. docs/store-format.md is the specification; this header is
 * its code, shared by cpa-store (which writes) and cpa-query (which reads).
 *
 *   DIR/lock                       held (flock) by the one cpa-store writing
 *   DIR/20261130T060000Z/meta      key=value text about the segment
 *   DIR/20261130T060000Z/index     fixed 64-byte entries, one per block
 *   DIR/20261130T060000Z/dict      zstd blocks: new strings, stacks, labelsets
 *   DIR/20261130T060000Z/data      zstd blocks: windows of counts
 *   DIR/20261130T060000Z/sums      (1.3) zstd blocks: each data block's
 *                                  per-window totals by kind and side
 *
 * Every flush appends one dictionary block (when anything is new), one
 * data block and then one index entry, in that order. An index entry is
 * the commit: readers trust only data an intact entry points to, so a
 * torn tail after a crash or a full disk is simply not yet committed.
 */
#ifndef CPA_STORE_H
#define CPA_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "symstream.h"

#define CPA_STORE_MAJOR 1
#define CPA_STORE_MINOR 3

#define CPA_STORE_FILE_HEADER 64	/* header of index, dict and data */
#define CPA_STORE_INDEX_ENTRY 64
#define CPA_STORE_BLOCK_HEADER 16
/* Largest block, raw or compressed, that a reader accepts. */
#define CPA_STORE_BLOCK_MAX (64u << 20)
/* Most index entries a reader takes from one segment (1 GiB of index). */
#define CPA_STORE_INDEX_MAX (16u << 20)
/* Largest meta file a reader accepts. */
#define CPA_STORE_META_MAX (64u << 10)
/* Segment directory names: YYYYMMDDTHHMMSSZ, then "-N" when reused. */
#define CPA_STORE_NAME_MAX 32

enum cpa_store_file {
	CPA_STORE_INDEX = 0,
	CPA_STORE_DICT = 1,
	CPA_STORE_DATA = 2,
	CPA_STORE_SUMS = 3,	/* 1.3, optional: the data blocks' totals */
};
extern const char *const cpa_store_file_names[4];	/* "index", ... */

/* Everything that tells samples apart besides their stack. String fields
 * are ids in the segment's dictionary, 0 for none. */
struct cpa_store_labelset {
	uint64_t cgroup_id;
	uint32_t pid, tid, cpu;
	uint16_t kind, flags;
	uint32_t comm, thread, container, env;
};

/* One index entry: where a block is and which times it holds. */
struct cpa_store_index_entry {
	uint64_t cover_from, cover_to;	/* input time this flush covered */
	uint64_t min_start, max_end;	/* windows in the data block */
	uint64_t data_off, dict_off;
	uint32_t data_len, dict_len;	/* dict_len 0: no dictionary block */
	uint32_t n_windows;
};

struct cpa_store_entry {
	uint32_t labelset, stack;
	uint64_t weight;
};

struct cpa_store_window {
	uint64_t start_ns;
	uint32_t n, cap;
	struct cpa_store_entry *e;
};

/* ---- codec: pure functions on memory (store_format.c) ----------------- */

uint32_t cpa_store_crc32(const void *data, size_t len);

void cpa_store_header_encode(uint8_t out[CPA_STORE_FILE_HEADER],
			     enum cpa_store_file which, uint64_t interval_ns,
			     uint64_t start_ns);
/* Checks magic, version and checksum. Returns 0, -1 (not this file or
 * damaged), or -2 (a newer major version); err says which. */
int cpa_store_header_decode(const uint8_t *buf, size_t len,
			    enum cpa_store_file which, uint16_t *major,
			    uint16_t *minor, uint64_t *interval_ns,
			    uint64_t *start_ns, char *err, size_t errlen);

void cpa_store_index_encode(uint8_t out[CPA_STORE_INDEX_ENTRY],
			    const struct cpa_store_index_entry *e);
/* 0, or -1 with err when the checksum or a field is wrong. */
int cpa_store_index_decode(const uint8_t in[CPA_STORE_INDEX_ENTRY],
			   struct cpa_store_index_entry *e, char *err,
			   size_t errlen);

/* Compresses raw into a block (header + zstd frame) appended to out. */
int cpa_store_block_pack(struct cpa_buf *out, const void *raw,
			 size_t len, int level, char *err, size_t errlen);
/* Checks a block of exactly len bytes and decompresses it into raw. */
int cpa_store_block_unpack(const uint8_t *block, size_t len,
			   struct cpa_buf *raw, char *err,
			   size_t errlen);

/*
 * The reader's view of a segment dictionary: strings and stacks in a
 * cpa_dict (so lib/format/labels.h formats them), labelsets beside it.
 */
struct cpa_store_dict {
	struct cpa_dict d;
	struct cpa_store_labelset *labelsets;	/* [0] unused */
	uint32_t nlabelsets, caplabelsets;	/* ids 1..nlabelsets-1 */
};
void cpa_store_dict_init(struct cpa_store_dict *sd);
void cpa_store_dict_free(struct cpa_store_dict *sd);
/* Adds the entries of a raw dictionary block. 0, or -1 with err. */
int cpa_store_dict_decode(struct cpa_store_dict *sd, const uint8_t *raw,
			  size_t len, char *err, size_t errlen);

/*
 * Decodes a raw data block, checking every id against sd and every window
 * against the index entry, and calls fn once per window. fn returns 0 to
 * go on. 0, -1 with err on bad input, or fn's non-zero value.
 */
typedef int (*cpa_store_window_fn)(void *arg, uint64_t start_ns,
				   const struct cpa_store_entry *e,
				   uint32_t n);
int cpa_store_windows_decode(const uint8_t *raw, size_t len,
			     const struct cpa_store_dict *sd,
			     const struct cpa_store_index_entry *ie,
			     uint64_t interval_ns, struct cpa_buf *scratch,
			     cpa_store_window_fn fn, void *arg, char *err,
			     size_t errlen);

/*
 * Sums (format 1.3): beside each data block, the block of its windows'
 * totals per (kind, sample flags, side), so a trend of a day reads a few
 * bytes a window instead of every entry. A total's flags are the
 * labelset's flags & CPA_SAMPLE_FLAGS; kernel says the stack's leaf frame
 * is a kernel one (cpa_frame_is_kernel). Totals come in the order their
 * key first appears among the window's sorted entries, so a reader adding
 * them meets its keys as one decoding the entries would.
 */
struct cpa_store_sum {
	uint64_t weight;
	uint16_t kind, flags;
	uint8_t kernel;
};
typedef int (*cpa_store_sums_fn)(void *arg, uint64_t start_ns,
				 const struct cpa_store_sum *s, uint32_t n);
/* Appends a sums block: a block header with magic "CPAT", raw length =
 * stored length, and the payload as it is (a few bytes a window, which
 * zstd would not shrink, and a day's 18000 frames would take longer to
 * decompress than their totals to add). */
void cpa_store_sums_block(struct cpa_buf *out, const void *raw, size_t len);
/* Checks a sums block of exactly len bytes; *raw is its payload. */
int cpa_store_sums_unblock(const uint8_t *block, size_t len,
			   const uint8_t **raw, size_t *rawlen, char *err,
			   size_t errlen);
/* Decodes a raw sums block, checking its windows against the index entry
 * of its data block; fn as cpa_store_windows_decode's. */
int cpa_store_sums_decode(const uint8_t *raw, size_t len,
			  const struct cpa_store_index_entry *ie,
			  uint64_t interval_ns, struct cpa_buf *scratch,
			  cpa_store_sums_fn fn, void *arg, char *err,
			  size_t errlen);
/* True for a kernel frame's name: it ends in "_[k]". */
static inline bool cpa_frame_is_kernel(const char *s, size_t len)
{
	return s && len >= 4 && s[len - 4] == '_' && s[len - 3] == '[' &&
	       s[len - 2] == 'k' && s[len - 1] == ']';
}

/*
 * Meta: "key=value" lines. Parsed into a NULL-terminated array of
 * alternating keys and values. 0, or -1 with err naming the line.
 */
int cpa_store_meta_parse(const char *text, size_t len, char ***kv,
			 char *err, size_t errlen);
const char *cpa_store_meta_get(char *const *kv, const char *key);
void cpa_store_meta_free(char **kv);

/*
 * Windows in which samples were lost upstream (LOST records): runs of
 * whole windows with the number lost, kept in a segment's meta as
 * "lost=FROM-TO:COUNT,..." (format 1.1), so --list can show a stretch
 * where nothing was stored because everything was lost.
 */
struct cpa_store_lost {
	uint64_t from, to;	/* window starts: [from, to) */
	uint64_t count;
};
/* Runs one segment keeps; past it, a new run joins its nearest one. */
#define CPA_STORE_LOST_MAX 256
/* Adds count lost in [from, to) to the sorted, disjoint runs r[0..*n)
 * (room for CPA_STORE_LOST_MAX), joining the runs it touches. */
void cpa_store_lost_add(struct cpa_store_lost *r, size_t *n, uint64_t from,
			uint64_t to, uint64_t count);
/* The meta value for runs r[0..n): at most 64 bytes a run. */
void cpa_store_lost_format(const struct cpa_store_lost *r, size_t n,
			   struct cpa_buf *out);
/* Appends the runs of a meta value to *r (grown as needed). 0, or -1 with
 * err naming the run that is malformed. */
int cpa_store_lost_parse(const char *value, struct cpa_store_lost **r,
			 size_t *n, size_t *cap, char *err, size_t errlen);

/*
 * Processes that went over cpa-store's per-window budget: how many of
 * their distinct stacks were stored as one "[over budget]" stack instead,
 * and how many bytes of new names that kept out of the segment. Kept in a
 * segment's meta as "over_budget=PID:STACKS:BYTES:COMM,..." (format 1.2),
 * COMM last with ',' and '%' written %2C and %25; "0:...:(others)" sums
 * the processes past CPA_STORE_OVER_MAX - 1.
 */
struct cpa_store_over {
	uint32_t pid;
	uint64_t stacks, bytes;
	char comm[64];
};
#define CPA_STORE_OVER_MAX 64	/* at most 128 bytes a process in meta */
/* Counts stacks and bytes over budget for pid (comm: a clean name) in
 * r[0..*n), room for CPA_STORE_OVER_MAX. True when pid got a place of
 * its own just now. */
bool cpa_store_over_add(struct cpa_store_over *r, size_t *n, uint32_t pid,
			const char *comm, uint64_t stacks, uint64_t bytes);
void cpa_store_over_format(const struct cpa_store_over *r, size_t n,
			   struct cpa_buf *out);
/* Appends the processes of a meta value to *r (grown as needed), adding
 * to one of the same pid and comm. 0, or -1 with err. */
int cpa_store_over_parse(const char *value, struct cpa_store_over **r,
			 size_t *n, size_t *cap, char *err, size_t errlen);

/* "20261130T060000Z" for a UTC time; with seq > 0, "...Z-seq". */
void cpa_store_segment_name(uint64_t start_ns, unsigned seq, char *buf,
			    size_t len);
/* True when name has the form of a segment directory. */
bool cpa_store_is_segment_name(const char *name);

/* ---- writer (store_write.c) ------------------------------------------- */

struct cpa_segment_writer;

/*
 * Creates DIR/NAME (0750) with its files (0640) and meta. meta_extra is
 * more "key=value\n" lines (host, kernel, stream meta), may be NULL.
 * Returns NULL with err set (errno kept) on failure.
 */
struct cpa_segment_writer *cpa_segment_create(const char *dir,
					      const char *name,
					      uint64_t start_ns,
					      uint64_t interval_ns,
					      const char *meta_extra,
					      char *err, size_t errlen);
/* Rewrites meta atomically (new stream meta arrived). 0 or -errno. */
int cpa_segment_write_meta(struct cpa_segment_writer *sw,
			   const char *meta_extra, char *err, size_t errlen);
/* Segment dictionary ids; new entries are written with the next block. */
uint32_t cpa_segment_string(struct cpa_segment_writer *sw, const char *s,
			    size_t len);
uint32_t cpa_segment_stack(struct cpa_segment_writer *sw,
			   const uint32_t *frames, uint32_t n);
/* The same ids if the segment holds them already, else 0: adds nothing. */
uint32_t cpa_segment_find_string(const struct cpa_segment_writer *sw,
				 const char *s, size_t len);
uint32_t cpa_segment_find_stack(const struct cpa_segment_writer *sw,
				const uint32_t *frames, uint32_t n);
uint32_t cpa_segment_labelset(struct cpa_segment_writer *sw,
			      const struct cpa_store_labelset *ls);
/*
 * Appends one block holding windows w[0..n-1] (entries get sorted) and
 * commits it with an index entry. On failure (ENOSPC, EIO) the files are
 * cut back to their last commit, the dictionary entries stay pending, and
 * -errno is returned with err set: the caller may retry the same windows.
 */
int cpa_segment_append(struct cpa_segment_writer *sw,
		       struct cpa_store_window *w, size_t n,
		       uint64_t cover_from, uint64_t cover_to, char *err,
		       size_t errlen);
/* fdatasync of the three files. 0 or -errno. */
int cpa_segment_sync(struct cpa_segment_writer *sw);
uint64_t cpa_segment_bytes(const struct cpa_segment_writer *sw);
/* Memory held by the segment's string, stack and label-set dictionaries. */
size_t cpa_segment_dict_bytes(const struct cpa_segment_writer *sw);
uint64_t cpa_segment_max_end(const struct cpa_segment_writer *sw);
const char *cpa_segment_name(const struct cpa_segment_writer *sw);
void cpa_segment_close(struct cpa_segment_writer *sw);

/* ---- reader (store_read.c) -------------------------------------------- */

struct cpa_cpastore;
struct cpa_cpastore_reader;

/* What a reader learns about a segment without reading its blocks. A
 * directory CPA wrote (cpastore.h) reads as one segment too. */
struct cpa_segment_info {
	char *path;		/* DIR/NAME */
	char name[CPA_STORE_NAME_MAX];
	uint16_t major, minor;
	uint64_t interval_ns, start_ns;
	char **meta;		/* cpa_store_meta_parse() */
	struct cpa_store_index_entry *idx;
	size_t n_idx;
	uint64_t index_size, dict_size, data_size;	/* as opened */
	uint64_t bytes;		/* all files, on disk */
	uint64_t torn_bytes;	/* index bytes past the last good entry */
	uint64_t valid_index, valid_dict, valid_data;	/* committed lengths */
	char torn_why[160];	/* why the tail was cut, when torn_bytes */
	uint64_t min_start, max_end;	/* over all entries; 0 when none */
	struct cpa_cpastore *cpa;	/* a store CPA wrote (cpastore.h) */
};

/*
 * Reads meta and index of the segment at path. Returns 0; -1 when it is
 * not a readable segment (err says why); -2 when its format is newer.
 * A torn index tail is not an error: torn_bytes and torn_why tell.
 */
int cpa_segment_info_read(const char *path, struct cpa_segment_info *si,
			  char *err, size_t errlen);
void cpa_segment_info_free(struct cpa_segment_info *si);

/* Sorted segment directory names in dir, CPA's day directories among
 * them. -1 with err if dir is unreadable. */
int cpa_store_list_names(const char *dir, char ***names, size_t *n,
			 char *err, size_t errlen);
void cpa_store_names_free(char **names, size_t n);
/* Time order of two segment names: start, then sequence number. */
int cpa_store_name_cmp(const char *a, const char *b);

/* Reads blocks of one segment; loads the dictionary as far as needed. */
struct cpa_segment_reader {
	const struct cpa_segment_info *si;
	int dict_fd, data_fd;
	struct cpa_store_dict dict;
	size_t dict_upto;	/* dict blocks of entries < dict_upto loaded */
	struct cpa_buf comp, raw, scratch;
	struct cpa_cpastore_reader *cpa;	/* of a CPA segment */
	/* the sums file (1.3), read whole when first asked */
	struct cpa_buf sums;
	uint64_t *sums_at;	/* offset of entry i's sums block, 0: none */
	bool sums_read;
};

int cpa_segment_reader_open(struct cpa_segment_reader *r,
			    const struct cpa_segment_info *si, char *err,
			    size_t errlen);
/* Loads dictionary blocks of entries 0..entry. 0 or -1 with err. */
int cpa_segment_reader_dict(struct cpa_segment_reader *r, size_t entry,
			    char *err, size_t errlen);
/* Decodes the data block of index entry i, calling fn per window. */
int cpa_segment_reader_block(struct cpa_segment_reader *r, size_t entry,
			     cpa_store_window_fn fn, void *arg, char *err,
			     size_t errlen);
/*
 * Sends the totals of index entry i's windows from the sums file to fn,
 * without reading its data block. 0 when sent; 1 when the entry has none
 * (a segment older than 1.3, of CPA's, or whose sums file is missing or
 * ends early): the caller decodes the data block; -1 with err naming the
 * file and byte offset when they are damaged, said once per damage: the
 * caller decodes the data block too.
 */
int cpa_segment_reader_sums(struct cpa_segment_reader *r, size_t entry,
			    cpa_store_sums_fn fn, void *arg, char *err,
			    size_t errlen);
void cpa_segment_reader_close(struct cpa_segment_reader *r);

#endif
