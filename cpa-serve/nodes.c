/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "nodes.h"
#include "spec.h"

struct node {
	char name[SPEC_HOSTNAME_MAX + 1];
	struct node_addr addr;
};

static struct node *nodes;
static size_t n_nodes, cap_nodes;
static bool from_file;
static unsigned default_port = 19704;

void nodes_set_port(unsigned port)
{
	default_port = port;
}

/* "ADDR:PORT" or "[V6]:PORT" into a; -1 when it is neither. */
static int parse_addr(const char *s, struct node_addr *a)
{
	const char *colon;
	char *end;
	unsigned long port;
	size_t hl;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -1;
		hl = (size_t)(close - s - 1);
		if (!hl || hl >= sizeof(a->host))
			return -1;
		memcpy(a->host, s + 1, hl);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hl = (size_t)(colon - s);
		if (!hl || hl >= sizeof(a->host) || memchr(s, ':', hl))
			return -1;
		memcpy(a->host, s, hl);
	}
	a->host[hl] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port < 1 || port > 65535)
		return -1;
	snprintf(a->port, sizeof(a->port), "%lu", port);
	return 0;
}

int nodes_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int lineno = 0;

	if (!f)
		return cpa_fail_errno(err, errlen, errno, "--nodes %s", path);
	from_file = true;
	while (fgets(line, sizeof(line), f)) {
		char name[512], addr[512], extra[2];
		struct node n;
		int k;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fclose(f);
			return cpa_fail(err, errlen, "%s:%d: line too long",
					path, lineno);
		}
		line[strcspn(line, "#\n")] = 0;
		k = sscanf(line, "%511s %511s %1s", name, addr, extra);
		if (k <= 0)
			continue;
		memset(&n, 0, sizeof(n));
		if (k != 2 || strlen(name) > SPEC_HOSTNAME_MAX ||
		    parse_addr(addr, &n.addr)) {
			fclose(f);
			return cpa_fail(err, errlen, "%s:%d: expected HOSTNAME "
					"ADDR:PORT", path, lineno);
		}
		memcpy(n.name, name, strlen(name) + 1);	/* fits: checked above */
		for (size_t i = 0; i < n_nodes; i++)
			if (!strcmp(nodes[i].name, name)) {
				fclose(f);
				return cpa_fail(err, errlen, "%s:%d: node %s is "
						"named twice", path, lineno,
						name);
			}
		CPA_GROW(nodes, cap_nodes, n_nodes + 1);
		nodes[n_nodes++] = n;
	}
	fclose(f);
	if (!n_nodes)
		return cpa_fail(err, errlen, "%s: no node in the file", path);
	return 0;
}

int nodes_find(const char *hostname, struct node_addr *out)
{
	if (!from_file) {
		if (strlen(hostname) >= sizeof(out->host))
			return -1;
		snprintf(out->host, sizeof(out->host), "%s", hostname);
		snprintf(out->port, sizeof(out->port), "%u", default_port);
		return 0;
	}
	for (size_t i = 0; i < n_nodes; i++)
		if (!strcmp(nodes[i].name, hostname)) {
			*out = nodes[i].addr;
			return 0;
		}
	return -1;
}

void nodes_free(void)
{
	free(nodes);
	nodes = NULL;
	n_nodes = cap_nodes = 0;
}
