/* SPDX-License-Identifier: MIT */
/* Layer lib/runtime, what cpa reads from language runtimes: uses lib/base
 * alone; only tools use it (lib/local.mk holds them to this). */
/*
 * What the JVMTI agent (cpa-jvmti/) and cpa-capture (cpa-capture/java.c)
 * say to each other over the agent's Unix socket, /tmp/.cpa-jvmti-NSPID
 * in the JVM's own /tmp and pid namespace. Both ends run on one host, so
 * integers are in host byte order.
 *
 * cpa-capture connects and sends one line,
 *     "cpa-jvmti 1 interval=BYTES live=0|1\n"
 * and the agent answers "ok\n" once its events are on, or "error TEXT\n".
 * Then the agent sends records. To stop, cpa-capture sends "stop\n": the
 * agent turns its events off, sends what it had queued and an END record,
 * drops what it held and listens for the next capture (one at a time). A
 * connection that just closes ends the session the same way.
 */
#ifndef CPA_JVMAGENT_H
#define CPA_JVMAGENT_H

#include <stdint.h>

#define JVMAGENT_VERSION 1
#define JVMAGENT_SOCKET_FMT ".cpa-jvmti-%u"	/* in /tmp, the JVM's pid */
#define JVMAGENT_LINE_MAX 256			/* request and answer lines */

enum jvmagent_type {
	/* A sampled object: struct jvmagent_alloc, then n frames of a u16
	 * length and its bytes, leaf first: the object's class, then the
	 * allocating method and its callers. */
	JVMAGENT_ALLOC = 1,
	/* A tagged object was freed: struct jvmagent_free. */
	JVMAGENT_FREE = 2,
	/* Records the agent dropped, its queue full: struct jvmagent_drops. */
	JVMAGENT_DROPS = 3,
	/* The last record of a session stopped by "stop": a bare head. */
	JVMAGENT_END = 4,
};

struct jvmagent_head {
	uint32_t len;		/* the whole record, this header included */
	uint16_t type;		/* enum jvmagent_type */
	uint16_t n;		/* frames (ALLOC), else 0 */
};

/*
 * The tag of a live object is its id and its size at once, so a free
 * needs nothing the agent would have to keep per object: the size in
 * the low bits (a Java object is under 32 GiB), a sequence number above.
 */
#define JVMAGENT_TAG_SIZE_BITS 35
#define JVMAGENT_TAG_SIZE(tag) ((tag) & ((1ull << JVMAGENT_TAG_SIZE_BITS) - 1))

struct jvmagent_alloc {
	struct jvmagent_head h;
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint64_t size;		/* bytes of the object */
	uint64_t tag;		/* live objects: the object's tag, else 0 */
	uint32_t tid;		/* in the JVM's pid namespace */
	uint32_t cpu;
	char thread[16];	/* the thread's name, NUL-padded */
};

struct jvmagent_free {
	struct jvmagent_head h;
	uint64_t time_ns;
	uint64_t tag;
};

struct jvmagent_drops {
	struct jvmagent_head h;
	uint64_t time_ns;
	uint64_t count;
};

#define JVMAGENT_MAX_FRAMES 128		/* Java frames per sample */
#define JVMAGENT_NAME_MAX 512		/* bytes of one frame's name */
#define JVMAGENT_RECORD_MAX \
	(sizeof(struct jvmagent_alloc) + \
	 (JVMAGENT_MAX_FRAMES + 1) * (2 + JVMAGENT_NAME_MAX))

#endif
