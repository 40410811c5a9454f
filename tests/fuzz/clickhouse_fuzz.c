/* SPDX-License-Identifier: MIT */
/* Fuzz target: ClickHouse's HTTP answer as lib/format/clickhouse.c reads
 * it (status line, headers, Content-Length or chunked body), then the
 * body as RowBinary rows of the fleet query's shape (String, UInt16, four
 * String, three UInt64), on arbitrary bytes from a socket. */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clickhouse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	/* what fits a socket's buffer is written before it is read */
	if (size > 60000 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 0;
	if (write(sv[1], data, size) != (ssize_t)size) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[1], SHUT_WR);
	struct cpa_ch ch;
	char err[200];
	if (cpa_ch_init(&ch, "http://fuzz:1", err, sizeof(err)) < 0)
		return 0;
	ch.fd = sv[0];
	ch.timeout_ms = 1000;
	if (cpa_ch_read_answer(&ch, "SELECT kind FROM fuzz.samples") == 0) {
		struct cpa_rb rb;
		uint32_t len;
		cpa_rb_init(&rb, ch.body.p, ch.body.len);
		while (cpa_rb_more(&rb)) {
			cpa_rb_get_string(&rb, &len);
			cpa_rb_get_u16(&rb);
			for (int i = 0; i < 4; i++)
				cpa_rb_get_string(&rb, &len);
			cpa_rb_get_u64(&rb);
			uint64_t n = cpa_rb_get_count(&rb, 4096);
			for (uint64_t i = 0; i < n && !rb.bad; i++)
				cpa_rb_get_string(&rb, &len);
			cpa_rb_get_u64(&rb);
		}
	}
	cpa_ch_free(&ch);	/* closes sv[0] */
	close(sv[1]);
	return 0;
}
