/* SPDX-License-Identifier: MIT */
/*
 * Naming Java frames. A Method* leads, at the offsets the JVM's vmStructs
 * give (jvmstructs.h), to its class and name; each is read once per
 * process from /proc/PID/mem (JVM_METHOD_CACHE names by Method*). The
 * frames are: interpreted ones, whose Method* HotSpot's interpreter keeps
 * at fp - 24 (x86-64), and compiled ones, the nmethod's method and the
 * methods it inlined at the PC (jvmcode.h), "pkg.Class.method_[j]" for
 * the frame and "_[i]" for each method inlined into it, as native inlined
 * frames read; the code cache's other blobs (stubs) by their names.
 */
#ifndef CPA_UNWIND_JVMINTERP_H
#define CPA_UNWIND_JVMINTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jvmstructs.h"

#define JVM_METHOD_CACHE 1024

/* A JVM process's side: its layout, /proc/PID/mem, names by Method*. */
struct jvm_interp {
	struct jvm_layout layout;
	int memfd;		/* /proc/PID/mem, once mem_open */
	bool mem_open;
	uint64_t method[JVM_METHOD_CACHE];
	char *name[JVM_METHOD_CACHE];
};

struct cpa_raw_sample;
struct proc;
struct unwinder;

/*
 * For each frame of ips (leaf first, as the chain of s) that runs in
 * HotSpot's interpreter, its frame pointer in fps[i], found by following
 * the frame pointers from s's registers; 0 for the others. Returns
 * whether there is any.
 */
bool jvm_interp_fps(struct unwinder *u, struct proc *p,
		    const struct cpa_raw_sample *s, const uint64_t *ips,
		    unsigned n, uint64_t *fps);
/* The output string id of the interpreted method whose frame pointer is
 * fp, "pkg.Class.method_[j]"; 0 when it cannot be read. */
uint32_t jvm_interp_frame(struct unwinder *u, struct proc *p,
			  const struct cpa_raw_sample *s, uint64_t fp);
/* The Method* an interpreted frame whose frame pointer is fp holds, or 0. */
uint64_t jvm_interp_method(struct proc *p, const struct cpa_raw_sample *s,
			   uint64_t fp);
/* The id of the interpreted method m's frame, "pkg.Class.method_[j]". */
uint32_t jvm_method_frame(struct unwinder *u, struct proc *p, uint64_t m);
/*
 * The frames of ip in p's code cache into ids (outermost first, at most
 * max): an nmethod's methods, its own "_[j]" and those it inlined "_[i]";
 * an interpreted frame by method (0 when unknown: Interpreter_[j]); a stub
 * by its blob's name. Returns how many; 0 when ip is in no blob.
 */
unsigned jvm_code_frames(struct unwinder *u, struct proc *p, uint64_t ip,
			 bool exact, uint64_t method, uint32_t *ids,
			 unsigned max);
/* /proc/PID/mem of p, opened on first use; -1 when it cannot be. */
int jvm_memfd(struct proc *p);
void jvm_interp_free(struct jvm_interp *ji);

#endif
