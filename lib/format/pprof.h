/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * A pprof profile encoder: profile.proto (github.com/google/pprof,
 * proto/profile.proto) written by hand, gzipped, with no protobuf
 * library. Used by cpa-render --format pprof and cpa-query --format pprof.
 *
 * Stacks are added root first, as folded text and the cpa stream hold
 * them; pprof wants leaf first, which the encoder reverses. Equal stacks
 * are merged. Every distinct frame name becomes one function and one
 * location (pprof needs no addresses to show a profile); a frame such as
 * "libfoo.so+0x1a2b" gets a mapping for libfoo.so and that address.
 *
 * Sample types follow the event kind, in Go's names where Go has one:
 *   oncpu                      -> samples/count, cpu/nanoseconds
 *   offcpu-*, scheduling delay -> off_cpu/nanoseconds (the marker frames
 *                                 keep the phases apart)
 *   irqoff                     -> irq_off/nanoseconds
 *   probe                      -> events/count
 *   mem-virt, mem-phys,        -> mem_virt, mem_phys, mem_usage/bytes
 *   mem-usage
 *   heap-alloc, heap-inuse     -> alloc_space, inuse_space/bytes
 *   java-alloc, java-live      -> the same (their marker frames keep
 *                                 them apart from the C heap's)
 * Folded text has no kind, only a unit: samples and ns as above, count
 * events/count, bytes space/bytes, pages pages/count.
 * A profile of several types keeps each apart: one column per type
 * present, a sample's value zero in the columns of other types, CPU time
 * (else the first column) the default that go tool pprof shows.
 *
 * Each sample may carry labels (pid, tid, comm, ...), which go tool
 * pprof's -tags and -tagfocus, Pyroscope and Grafana slice by: samples
 * of one stack with other labels stay apart.
 */
#ifndef CPA_PPROF_H
#define CPA_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "intern.h"
#include "owner.h"
#include "stream.h"
#include "symstream.h"

struct cpa_pprof;

/*
 * period: ns per on-CPU sample (1e9 / the capture's frequency), which
 * gives the cpu/nanoseconds column; 0 when the frequency is not known,
 * which leaves that column out rather than guess it.
 */
struct cpa_pprof *cpa_pprof_new(uint64_t period);

/* The sample type of an event kind's weights, and of a unit's (input
 * without kinds). */
int cpa_pprof_kind_type(unsigned kind);
int cpa_pprof_unit_type(enum cpa_unit unit);

/* A string label of a sample: key, and a value of len bytes. */
struct cpa_pprof_label {
	const char *key;
	const char *value;
	size_t len;
};

/*
 * The labels of a stream sample, always these keys in this order, a value
 * empty where the sample has none: pid, tid, comm (the process),
 * thread (its name), container (id, or the name recorded), pod (UID),
 * cgroup (path), env (the recorded env value).
 */
#define CPA_PPROF_SAMPLE_LABELS 8
extern const char *const cpa_pprof_label_keys[CPA_PPROF_SAMPLE_LABELS];
struct cpa_pprof_sample_labels {
	struct cpa_pprof_label l[CPA_PPROF_SAMPLE_LABELS];
	char pid[12], tid[12];
	struct cpa_owner owner;
};
/* Fills out, which the values point into, from s and its dictionary. */
void cpa_pprof_sample_labels(struct cpa_pprof_sample_labels *out,
			     const struct cpa_dict *d,
			     const struct cpa_sample *s);

/*
 * The same labels as ids of their values in strings (0 for an empty
 * one), which outlive a stream's dictionary, and back.
 */
void cpa_pprof_sample_label_ids(uint32_t ids[CPA_PPROF_SAMPLE_LABELS],
				struct cpa_strtab *strings,
				const struct cpa_dict *d,
				const struct cpa_sample *s);
void cpa_pprof_labels_of_ids(struct cpa_pprof_label l[CPA_PPROF_SAMPLE_LABELS],
			     const uint32_t ids[CPA_PPROF_SAMPLE_LABELS],
			     const struct cpa_strtab *strings);

/* Adds value, of sample type type, to the stack frames[0..n-1] (root
 * first) with the labels[0..nlabels-1] (an empty value is left out). n
 * may be 0. A sum beyond INT64_MAX makes cpa_pprof_write fail. */
void cpa_pprof_add(struct cpa_pprof *p, int type, const char *const *frames,
		   uint32_t n, uint64_t value,
		   const struct cpa_pprof_label *labels, unsigned nlabels);
/* The same for the stack of a folded line, "root;...;leaf" without its
 * count, split as cpa-render splits it: an empty frame is "[unknown]". */
void cpa_pprof_add_folded(struct cpa_pprof *p, int type, const char *stack,
			  size_t len, uint64_t value,
			  const struct cpa_pprof_label *labels,
			  unsigned nlabels);
/* time_nanos and duration_nanos of the profile (CLOCK_REALTIME ns). */
void cpa_pprof_set_time(struct cpa_pprof *p, uint64_t start_ns,
			uint64_t duration_ns);
/* Writes the gzipped profile to fd. 0, or -1 with err set. */
int cpa_pprof_write(struct cpa_pprof *p, int fd, char *err, size_t errlen);
void cpa_pprof_free(struct cpa_pprof *p);

#endif
