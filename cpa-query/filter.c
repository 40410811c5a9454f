/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "owner.h"
#include "regbound.h"
#include "filter.h"

void filter_add_comm(struct filter *f, const char *arg)
{
	f->comms = cpa_realloc(f->comms, (f->n_comms + 1) * sizeof(*f->comms));
	struct comm_match *m = &f->comms[f->n_comms++];
	m->name = arg;
	/* A name matches itself; it also works as a regular expression
	 * over the whole comm when it compiles as one. */
	size_t len = strlen(arg);
	char *anchored = cpa_malloc(len + 5);
	snprintf(anchored, len + 5, "^(%s)$", arg);
	m->is_re = cpa_regcomp(&m->re, anchored, REG_EXTENDED | REG_NOSUB,
				NULL, 0) == 0;
	free(anchored);
}

void filter_add_regex(struct filter *f, bool exclude, const char *arg)
{
	regex_t **list = exclude ? &f->exclude : &f->grep;
	size_t *n = exclude ? &f->n_exclude : &f->n_grep;
	*list = cpa_realloc(*list, (*n + 1) * sizeof(**list));
	char msg[128];
	if (cpa_regcomp(&(*list)[*n], arg, REG_EXTENDED | REG_NOSUB, msg,
			sizeof(msg)))
		cpa_die_usage("invalid %s '%.200s': %s",
			      exclude ? "--exclude" : "--grep", arg, msg);
	(*n)++;
}

void filter_add_kinds(struct filter *f, const char *arg)
{
	char *copy = cpa_strdup(arg), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		int k = cpa_kind_parse(t);
		if (k < 0)
			cpa_die_usage("invalid --kind '%s': unknown kind '%s' "
				      "(oncpu, offcpu-blocked, ...)", arg, t);
		f->kinds |= 1u << k;
	}
	free(copy);
}

void filter_finish(struct filter *f)
{
	f->any_label = f->n_pids || f->n_tids || f->n_comms || f->n_cgroups ||
		       f->n_containers || f->n_pods || f->n_envs ||
		       f->has_cpus || f->kinds;
	f->any_frame = f->n_grep || f->n_exclude;
}

static bool has_u64(const uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static const char *str(const struct cpa_store_dict *d, uint32_t id)
{
	const char *s = cpa_dict_string(&d->d, id, NULL);
	return s ? s : "";
}

static bool cgroup_matches(const char *want, const struct cpa_store_labelset *ls,
			   const char *path)
{
	char *end;
	unsigned long long id = strtoull(want, &end, 10);
	if (*want && !*end)
		return ls->cgroup_id == id;
	size_t n = strlen(want);
	return !strncmp(path, want, n) &&
	       (path[n] == 0 || path[n] == '/' || want[n - 1] == '/');
}

static bool labels_pass(const struct filter *f, const struct cpa_store_dict *d,
			const struct cpa_store_labelset *ls)
{
	if (f->n_pids && !has_u64(f->pids, f->n_pids, ls->pid))
		return false;
	if (f->n_tids && !has_u64(f->tids, f->n_tids, ls->tid))
		return false;
	if (f->kinds && (ls->kind >= 32 || !(f->kinds >> ls->kind & 1)))
		return false;
	if (f->has_cpus && !cpa_cpuset_has(&f->cpus, ls->cpu))
		return false;
	if (f->n_comms) {
		const char *c = str(d, ls->comm);
		bool ok = false;
		for (size_t i = 0; i < f->n_comms && !ok; i++)
			ok = !strcmp(c, f->comms[i].name) ||
			     (f->comms[i].is_re &&
			      !regexec(&f->comms[i].re, c, 0, NULL, 0));
		if (!ok)
			return false;
	}
	const char *ctr = str(d, ls->container);
	if (f->n_cgroups) {
		bool ok = false;
		for (size_t i = 0; i < f->n_cgroups && !ok; i++)
			ok = cgroup_matches(f->cgroups[i], ls, ctr);
		if (!ok)
			return false;
	}
	/* a cgroup path names its container and pod (lib/format/owner.h); any
	 * other label is a container name recorded as is */
	struct cpa_owner o;
	cpa_owner_parse(cpa_label_is_cgroup(ctr) ? ctr : NULL, &o);
	const char *cid = cpa_label_is_cgroup(ctr) ? o.container : ctr;
	if (f->n_containers) {
		bool ok = false;
		for (size_t i = 0; i < f->n_containers && !ok; i++)
			ok = *cid && !strncmp(cid, f->containers[i],
					      strlen(f->containers[i]));
		if (!ok)
			return false;
	}
	if (f->n_pods) {
		bool ok = false;
		for (size_t i = 0; i < f->n_pods && !ok; i++)
			ok = o.pod[0] && !strncmp(o.pod, f->pods[i],
						  strlen(f->pods[i]));
		if (!ok)
			return false;
	}
	if (f->n_envs) {
		const char *e = str(d, ls->env);
		bool ok = false;
		for (size_t i = 0; i < f->n_envs && !ok; i++)
			ok = !strcmp(e, f->envs[i]);
		if (!ok)
			return false;
	}
	return true;
}

static bool frames_pass(const struct filter *f, const struct cpa_store_dict *d,
			uint32_t stack)
{
	uint32_t n;
	const uint32_t *fr = cpa_dict_stack(&d->d, stack, &n);
	if (!fr)
		return false;
	bool hit = f->n_grep == 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *s = str(d, fr[i]);
		for (size_t k = 0; k < f->n_exclude; k++)
			if (!regexec(&f->exclude[k], s, 0, NULL, 0))
				return false;
		for (size_t k = 0; k < f->n_grep && !hit; k++)
			hit = !regexec(&f->grep[k], s, 0, NULL, 0);
	}
	return hit;
}

static uint8_t *cache_slot(uint8_t **v, uint32_t *n, uint32_t id)
{
	CPA_GROW_ZERO(*v, *n, (size_t)id + 1);
	return &(*v)[id];
}

bool filter_entry(const struct filter *f, struct filter_cache *c,
		  const struct cpa_store_dict *d, uint32_t ls, uint32_t stack)
{
	if (f->any_label) {
		uint8_t *s = cache_slot(&c->ls, &c->n_ls, ls);
		if (!*s)
			*s = labels_pass(f, d, &d->labelsets[ls]) ? 1 : 2;
		if (*s == 2)
			return false;
	}
	if (f->any_frame) {
		uint8_t *s = cache_slot(&c->stk, &c->n_stk, stack);
		if (!*s)
			*s = frames_pass(f, d, stack) ? 1 : 2;
		if (*s == 2)
			return false;
	}
	return true;
}

void filter_cache_reset(struct filter_cache *c)
{
	free(c->ls);
	free(c->stk);
	memset(c, 0, sizeof(*c));
}

void filter_free(struct filter *f)
{
	for (size_t i = 0; i < f->n_comms; i++)
		if (f->comms[i].is_re)
			regfree(&f->comms[i].re);
	for (size_t i = 0; i < f->n_grep; i++)
		regfree(&f->grep[i]);
	for (size_t i = 0; i < f->n_exclude; i++)
		regfree(&f->exclude[i]);
	free(f->comms);
	free(f->grep);
	free(f->exclude);
	free(f->pids);
	free(f->tids);
	free(f->cgroups);
	free(f->containers);
	free(f->pods);
	free(f->envs);
}
