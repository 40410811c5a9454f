// SPDX-License-Identifier: MIT
/* Writing all of a buffer (see io.h). */
#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "io.h"

enum how { WRITE, PWRITE, SEND };

static int write_full(int fd, const void *buf, size_t len, uint64_t off,
		      enum how how)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t k = how == SEND ? send(fd, p, len, MSG_NOSIGNAL)
			  : how == PWRITE ? pwrite(fd, p, len, (off_t)off)
			  : write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
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
	return write_full(fd, buf, len, 0, WRITE);
}

int cpa_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	return write_full(fd, buf, len, off, PWRITE);
}

int cpa_send_full(int fd, const void *buf, size_t len)
{
	return write_full(fd, buf, len, 0, SEND);
}
