/* SPDX-License-Identifier: MIT */
/*
 * Where the apiserver finds a node: HUATUO uses a Job's hostname as the
 * node's network host, on one port for all ([Agent] Port, --node-port);
 * --nodes FILE names each node's address instead ("HOSTNAME ADDR:PORT"
 * a line, # comments), and then a host name the file does not have is
 * not a node, refused at create.
 */
#ifndef CPA_SERVE_NODES_H
#define CPA_SERVE_NODES_H

#include <stdbool.h>
#include <stddef.h>

#define NODE_HOST_MAX 256

struct node_addr {
	char host[NODE_HOST_MAX];	/* to connect to */
	char port[8];
};

/* Reads --nodes FILE: 0, or -1 with "FILE:LINE: what" in err. */
int nodes_load(const char *path, char *err, size_t errlen);
/* The port of nodes found by their host name (default 19704). */
void nodes_set_port(unsigned port);
/* Where the node hostname is: 0, or -1 when the file does not name it. */
int nodes_find(const char *hostname, struct node_addr *out);
void nodes_free(void);

#endif
