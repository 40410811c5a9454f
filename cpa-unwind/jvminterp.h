/* SPDX-License-Identifier: MIT */
/*
 * Interpreted Java frames. HotSpot's interpreter keeps a frame pointer and
 * holds the running Method* at fp - 24 (x86-64); the JVM publishes where
 * the fields that lead from a Method* to its class and name live in its
 * vmStructs tables (gHotSpotVMStructs, gHotSpotVMTypes, exported by
 * libjvm.so). The attach thread reads those tables once per JVM
 * (jvm_layout_read, off the sample path); a sample's interpreted frames
 * are then named from the stack snapshot and /proc/PID/mem, each Method*
 * once.
 */
#ifndef CPA_UNWIND_JVMINTERP_H
#define CPA_UNWIND_JVMINTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the vmStructs tables say, for the fields read here. */
struct jvm_layout {
	bool ok;
	uint32_t method_const;		/* Method::_constMethod */
	uint32_t cmethod_constants;	/* ConstMethod::_constants */
	uint32_t cmethod_name_index;	/* ConstMethod::_name_index */
	uint32_t cpool_holder;		/* ConstantPool::_pool_holder */
	uint32_t cpool_size;		/* sizeof(ConstantPool): slots follow */
	uint32_t klass_name;		/* Klass::_name */
	uint32_t symbol_length, symbol_body;
};

#define JVM_METHOD_CACHE 256

/* A JVM process's side: its layout, /proc/PID/mem, names by Method*. */
struct jvm_interp {
	struct jvm_layout layout;
	int memfd;		/* /proc/PID/mem, once mem_open */
	bool mem_open;
	uint64_t method[JVM_METHOD_CACHE];
	char *name[JVM_METHOD_CACHE];
};

/* Reads pid's vmStructs tables through its libjvm.so and memory. */
int jvm_layout_read(uint32_t pid, struct jvm_layout *l, char *err,
		    size_t errlen);

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
void jvm_interp_free(struct jvm_interp *ji);

#endif
