/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Writing all of a buffer: write(2), pwrite(2) and send(2) may take part
 * of it (a pipe, a signal, a socket's buffer); these go on until all is
 * written, across EINTR. Each returns 0, or -errno of the failed call (a
 * call that wrote nothing is -EIO), after which what was written is
 * unknown.
 */
#ifndef CPA_IO_H
#define CPA_IO_H

#include <stddef.h>
#include <stdint.h>

int cpa_write_full(int fd, const void *buf, size_t len);
/* at offset off, which advances with what is written */
int cpa_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* send(2) with MSG_NOSIGNAL: a peer gone is -EPIPE, not SIGPIPE */
int cpa_send_full(int fd, const void *buf, size_t len);
/* The same on a non-blocking socket: a full send buffer is waited on for
 * timeout_ms at a time, then -ETIMEDOUT. */
int cpa_send_full_within(int fd, const void *buf, size_t len, int timeout_ms);

#endif
