// SPDX-License-Identifier: MIT
/* /proc/kallsyms into a sorted table of kernel text symbols. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hash.h"
#include "kallsyms.h"
#include "log.h"

#define REFRESH_NS (2 * CPA_NSEC_PER_SEC)

static uint64_t modules_hash(void)
{
	FILE *f = fopen("/proc/modules", "re");
	if (!f)
		return 0;
	/* Only names and addresses matter: the use counts in the line change
	 * without any module coming or going. */
	uint64_t h = 0;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		char name[256];
		unsigned long addr = 0;
		if (sscanf(line, "%255s %*s %*s %*s %*s %lx", name, &addr) >= 1) {
			h = cpa_hash(name, strlen(name), h);
			h = cpa_hash(&addr, sizeof(addr), h);
		}
	}
	fclose(f);
	return h;
}

int kallsyms_load(struct kallsyms *k, const char *path)
{
	const char *file = path ? path : "/proc/kallsyms";
	FILE *f = fopen(file, "re");
	if (!f)
		return -1;
	struct symtab t = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	bool nonzero = false;
	while ((len = getline(&line, &cap, f)) > 0) {
		unsigned long long addr;
		char type;
		int name_at = 0;
		if (sscanf(line, "%llx %c %n", &addr, &type, &name_at) < 2 ||
		    !name_at)
			continue;
		/* text symbols only: T/t (and W/w weak text) */
		if (type != 'T' && type != 't' && type != 'W' && type != 'w')
			continue;
		char *name = line + name_at;
		size_t n = strcspn(name, "\t \n");
		if (n == 0)
			continue;
		nonzero |= addr != 0;
		char buf[512];
		int bl = snprintf(buf, sizeof(buf), "%.*s_[k]", (int)n, name);
		if (bl < 0 || (size_t)bl >= sizeof(buf))
			continue;
		if (symtab_add(&t, addr, 0, buf, (size_t)bl) < 0) {
			symtab_free(&t);
			free(line);
			fclose(f);
			return -1;
		}
	}
	free(line);
	fclose(f);
	if (!nonzero) {
		symtab_free(&t);
		return -1;
	}
	symtab_finish(&t);
	symtab_free(&k->syms);
	free(k->out_ids);
	k->syms = t;
	k->out_ids = cpa_calloc(t.n ? t.n : 1, sizeof(*k->out_ids));
	k->path = path;
	if (!path)
		k->modules_hash = modules_hash();
	return 0;
}

bool kallsyms_refresh(struct kallsyms *k, uint64_t now_ns)
{
	if (k->path || now_ns - k->checked_ns < REFRESH_NS)
		return false;
	k->checked_ns = now_ns;
	uint64_t h = modules_hash();
	if (h == k->modules_hash)
		return false;
	if (kallsyms_load(k, NULL) < 0)
		return false;
	k->reloads++;
	return true;
}

void kallsyms_free(struct kallsyms *k)
{
	symtab_free(&k->syms);
	free(k->out_ids);
	memset(k, 0, sizeof(*k));
}
