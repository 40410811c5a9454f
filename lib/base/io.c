// SPDX-License-Identifier: MIT
/* Writing all of a buffer (see io.h). */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "io.h"

enum how { WRITE, PWRITE, SEND };

/* Until fd takes more, at most timeout_ms: 0, -ETIMEDOUT or -errno. */
static int wait_writable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int r;

	while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

/* timeout_ms < 0: a full buffer (EAGAIN) is an error */
static int write_full(int fd, const void *buf, size_t len, uint64_t off,
		      enum how how, int timeout_ms)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t k = how == SEND ? send(fd, p, len, MSG_NOSIGNAL)
			  : how == PWRITE ? pwrite(fd, p, len, (off_t)off)
			  : write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN && timeout_ms >= 0) {
			int r = wait_writable(fd, timeout_ms);

			if (r < 0)
				return r;
			continue;
		}
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

int cpa_write_full(int fd, const void *buf, size_t len)
{
	return write_full(fd, buf, len, 0, WRITE, -1);
}

int cpa_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	return write_full(fd, buf, len, off, PWRITE, -1);
}

int cpa_send_full(int fd, const void *buf, size_t len)
{
	return write_full(fd, buf, len, 0, SEND, -1);
}

int cpa_send_full_within(int fd, const void *buf, size_t len, int timeout_ms)
{
	return write_full(fd, buf, len, 0, SEND, timeout_ms < 0 ? 0 : timeout_ms);
}
