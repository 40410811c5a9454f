/* SPDX-License-Identifier: MIT */
/*
 * Java, per JVM process (one that maps libjvm.so). Its first sample has
 * its vmStructs layout read (jvmstructs.h) on a thread of its own, never
 * on the path samples take, the sample waiting at most --load-wait for
 * it; with the layout its code cache is unwound and named from its own
 * memory (jvmwalk.h, jvmcode.h, jvminterp.h) and nothing is asked of it.
 *
 * Only a JVM without one (its tables lack the code cache) is asked for
 * its perf map (jcmd's Compiler.perfmap, over HotSpot's attach protocol,
 * lib/runtime/jvmattach.h) when a sample lands in JIT code the map does
 * not cover: at once the first time, then after 250 ms, 500 ms, 1 s...
 * up to a minute, since a JVM keeps compiling new code for a while; a JVM
 * that refuses is named once on stderr and not asked again. Its map names
 * methods "RET pkg.Class.method(ARGS)", written as pkg.Class.method.
 *
 * Rules: the attach thread owns the requests and the layout reads; the
 * sample thread owns struct jvm_proc and the code caches, and takes what
 * the thread found in jvm_attacher_poll.
 */
#ifndef CPA_UNWIND_JVM_H
#define CPA_UNWIND_JVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jvmcode.h"
#include "jvminterp.h"

enum jvm_kind { JVM_UNKNOWN = 0, JVM_YES, JVM_NO };
/* -XX:+PreserveFramePointer, asked with the first map */
enum jvm_fp { JVM_FP_UNKNOWN = 0, JVM_FP_YES, JVM_FP_NO };

/* The layout: not read yet, being read, read, or not to be had. */
enum jvm_layout_state { JVM_LAYOUT_NONE = 0, JVM_LAYOUT_PENDING,
			JVM_LAYOUT_DONE, JVM_LAYOUT_FAILED };

/* A process's side of it, in struct proc. */
struct jvm_proc {
	uint8_t kind;		/* enum jvm_kind, for checked_nmaps mappings */
	bool pending;		/* a request is queued or running */
	bool waited;		/* a sample waited for its answer */
	bool refused;		/* it failed for good: not asked again */
	uint8_t fp;		/* enum jvm_fp */
	uint8_t layout_state;	/* enum jvm_layout_state */
	bool layout_waited;
	uint32_t checked_nmaps;
	uint32_t backoff_ms;	/* before the next request */
	uint64_t next_ns;	/* monotonic: no request before */
	uint8_t layout_fails;	/* reads that failed, in a row */
	uint32_t layout_backoff_ms;	/* a JVM starting: its code cache */
	uint64_t layout_next_ns;	/* is not set up yet */
	uint64_t now_ns;	/* the sample's time, for the code cache */
	struct jvm_code *code;	/* its code cache, once the layout has it */
	struct jvm_interp interp;	/* naming its methods */
};

struct jvm_stats {
	uint64_t requests, maps, refused, gone;
	uint64_t layouts, layout_failures;
	struct jvm_code_stats code;	/* every JVM's code cache */
};

struct proc;
struct proctab;
struct jvm_attacher;

struct jvm_attacher *jvm_attacher_new(void);
/* Lets the requests under way finish (each bounded by its timeout, so
 * a JVM that is not answering is still named on stderr) and joins the
 * thread. */
void jvm_attacher_free(struct jvm_attacher *a);
bool jvm_is_jvm(struct proc *p);
/*
 * A sample of JVM p at now_ns: its vmStructs layout is read once (on the
 * attach thread, the sample waiting at most wait_ns for it, once), and
 * again later while the JVM's code cache is not set up. With the code
 * cache described, its frames are unwound and named from the JVM's own
 * memory (jvmwalk.h, jvmcode.h) and its perf map is never asked for.
 * Returns whether p's code cache is known.
 */
bool jvm_prepare(struct jvm_attacher *a, struct proctab *procs,
		 struct proc *p, uint64_t now_ns, uint64_t wait_ns);
/*
 * p's JIT address at now_ns is not in its map: asks for one when due, and
 * waits at most wait_ns (once per request) for the answer. True when it
 * came: jvm_attacher_poll, then look again.
 */
bool jvm_map_missed(struct jvm_attacher *a, struct proc *p, uint64_t now_ns,
		    uint64_t wait_ns);
/* Applies finished requests: a process whose JVM wrote its map reads it
 * again on its next JIT frame, one whose layout was read gets it. Cheap
 * when nothing finished. */
void jvm_attacher_poll(struct jvm_attacher *a, struct proctab *procs,
		       uint64_t now_ns);
void jvm_attacher_stats(struct jvm_attacher *a, struct jvm_stats *st);
/* Releases p's JVM state (exit, exec). */
void jvm_proc_free(struct jvm_proc *j);

/*
 * Without -XX:+PreserveFramePointer, compiled Java code uses the frame
 * pointer register as any other, so a chain's callers above its leaf-most
 * compiled method came from whatever frame the register last pointed to
 * and may skip methods. Returns how many of the n frames of ips (leaf
 * first) are to be kept: up to that method, or all of them when the JVM
 * keeps frame pointers or is not known not to.
 */
unsigned jvm_trusted_frames(struct proc *p, const uint64_t *ips, unsigned n,
			    uint64_t now_ns);

/*
 * The frame name of a HotSpot perf-map entry: "long pkg.Cls.m(long)"
 * becomes "pkg.Cls.m" (*start and the returned length); a stub's name
 * ("Interpreter", "StubRoutines (1)") is kept whole.
 */
size_t jvm_method_name(const char *raw, size_t len, const char **start);

#endif
