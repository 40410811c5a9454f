/* SPDX-License-Identifier: MIT */
/* Fuzz target: an nmethod's debug information as a JVM's memory holds it
 * (cpa-unwind/jvmcode.c): PcDescs, UNSIGNED5 scopes and metadata, each as
 * hostile as the process that maps a file named libjvm.so likes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpa-unwind/jvmcode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Input: one byte of flags (bit 0: JDK 20's UNSIGNED5), a byte each of
 * how many pc pairs and metadata words, then those, the rest scopes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	uint8_t x = data[0] & 1;
	size_t npcs = data[1], nmeta = data[2], at = 3;
	if (size - at < npcs * 8 + nmeta * 8)
		return 0;
	int32_t *pcs = malloc(npcs * 8 + 1);
	uint64_t *meta = malloc(nmeta * 8 + 1);
	if (!pcs || !meta) {
		free(pcs);
		free(meta);
		return 0;
	}
	memcpy(pcs, data + at, npcs * 8);
	at += npcs * 8;
	memcpy(meta, data + at, nmeta * 8);
	at += nmeta * 8;
	/* the lookup needs them sorted, as read_debug makes sure */
	for (size_t i = 1; i < npcs; i++)
		if (pcs[2 * i] < pcs[2 * i - 2])
			pcs[2 * i] = pcs[2 * i - 2];
	const struct jvm_debug d = {
		.pcs = pcs, .npcs = (uint32_t)npcs, .scopes = data + at,
		.scopes_len = (uint32_t)(size - at), .meta = meta,
		.nmeta = (uint32_t)nmeta,
	};
	uint64_t inner[JVM_MAX_SCOPES];
	for (size_t i = 0; i < npcs; i++)
		(void)jvm_scope_chain(&d, pcs[2 * i], x, inner, JVM_MAX_SCOPES);
	(void)jvm_scope_chain(&d, INT32_MIN, x, inner, JVM_MAX_SCOPES);
	free(pcs);
	free(meta);
	return 0;
}
