/* SPDX-License-Identifier: MIT */
/*
 * The apiserver's client of a node's Operation API (HUATUO's §13.6):
 * one HTTP request per call on its own connection, the node token, a
 * 10 s bound on the whole call, and every answer sorted into what the
 * Job's supervisor decides on: an Operation snapshot, a node error (a
 * known code with its status and a message), a protocol error (anything
 * else a node must not answer), or a transport error (no answer).
 */
#ifndef CPA_SERVE_NODEAPI_H
#define CPA_SERVE_NODEAPI_H

#include <stdbool.h>
#include <stdint.h>

#include "nodes.h"

enum node_answer_kind { NODE_SNAPSHOT, NODE_ERROR, NODE_PROTOCOL,
			NODE_TRANSPORT };

struct node_answer {
	enum node_answer_kind kind;
	/* NODE_ERROR: the code; the others: what went wrong, in words */
	char code[48];
	char message[256];
	/* NODE_SNAPSHOT */
	char status[16];	/* pending, running, stopping, terminal */
	bool has_terminal;
	char outcome[16], reason[48];
};

enum node_call { NODE_START, NODE_GET, NODE_STOP };

/* Calls the node at a for Operation id (start: body is the request):
 * always fills *out. timeout_ms bounds the whole call. */
void node_call(const struct node_addr *a, const char *token,
	       enum node_call what, const char *id, const char *body,
	       int timeout_ms, struct node_answer *out);

#endif
