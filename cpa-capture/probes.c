/* SPDX-License-Identifier: MIT */
/*
 * --probe SPEC: a sample with kernel and user stacks per hit of a
 * tracepoint, uprobe, uretprobe, kprobe or kretprobe. Specs are checked
 * when parsed (exit 2) and attached after the BPF program loads (exit 1
 * with the reason, e.g. no kprobe support in this kernel).
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cpa-capture.h"
#include "log.h"

#define TRACEFS_EVENTS "/sys/kernel/tracing/events"

static const char spec_help[] =
	"expected tracepoint:GROUP:NAME, uprobe:PATH:SYMBOL, "
	"uprobe:PATH:0xOFFSET, uretprobe:PATH:SYMBOL, kprobe:SYMBOL or "
	"kretprobe:SYMBOL";

static bool valid_name(const char *s)
{
	return *s && strspn(s, "abcdefghijklmnopqrstuvwxyz"
			       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@$") ==
			     strlen(s);
}

void probe_parse(const char *arg, struct probe_spec *p)
{
	const char *colon = strchr(arg, ':');
	const char *rest, *last;
	size_t tlen;

	memset(p, 0, sizeof(*p));
	p->spec = arg;
	if (!colon)
		cpa_die_usage("invalid --probe '%s': %s", arg, spec_help);
	tlen = (size_t)(colon - arg);
	rest = colon + 1;
	if (tlen == 10 && !strncmp(arg, "tracepoint", tlen)) {
		const char *sep = strchr(rest, ':');

		p->type = PROBE_TRACEPOINT;
		if (!sep || sep == rest || strchr(sep + 1, ':'))
			cpa_die_usage("invalid --probe '%s': %s", arg,
				      spec_help);
		p->a = cpa_strndup(rest, (size_t)(sep - rest));
		p->b = cpa_strdup(sep + 1);
		if (!valid_name(p->a) || !valid_name(p->b))
			cpa_die_usage("invalid --probe '%s': bad tracepoint "
				      "name", arg);
	} else if ((tlen == 6 && !strncmp(arg, "kprobe", tlen)) ||
		   (tlen == 9 && !strncmp(arg, "kretprobe", tlen))) {
		p->type = tlen == 6 ? PROBE_KPROBE : PROBE_KRETPROBE;
		if (!valid_name(rest))
			cpa_die_usage("invalid --probe '%s': %s", arg,
				      spec_help);
		p->b = cpa_strdup(rest);
	} else if ((tlen == 6 && !strncmp(arg, "uprobe", tlen)) ||
		   (tlen == 9 && !strncmp(arg, "uretprobe", tlen))) {
		p->type = tlen == 6 ? PROBE_UPROBE : PROBE_URETPROBE;
		/* the path may hold ':', the symbol may not */
		last = strrchr(rest, ':');
		if (!last || last == rest || !last[1])
			cpa_die_usage("invalid --probe '%s': %s", arg,
				      spec_help);
		p->a = cpa_strndup(rest, (size_t)(last - rest));
		if (!strncmp(last + 1, "0x", 2)) {
			char *end;

			errno = 0;
			p->offset = strtoull(last + 3, &end, 16);
			if (errno || *end || end == last + 3)
				cpa_die_usage("invalid --probe '%s': bad offset "
					      "'%s'", arg, last + 1);
		} else if (valid_name(last + 1)) {
			p->b = cpa_strdup(last + 1);
		} else {
			cpa_die_usage("invalid --probe '%s': bad symbol '%s'",
				      arg, last + 1);
		}
	} else {
		cpa_die_usage("invalid --probe '%s': unknown probe type "
			      "'%.*s'; %s", arg, (int)tlen, arg, spec_help);
	}
}

void probe_free(struct probe_spec *p)
{
	free(p->a);
	free(p->b);
	p->a = p->b = NULL;
}

void probe_check(const struct probe_spec *p, const struct capture_features *f)
{
	char dir[512];

	switch (p->type) {
	case PROBE_TRACEPOINT:
		snprintf(dir, sizeof(dir), TRACEFS_EVENTS "/%s/%s", p->a, p->b);
		if (access(dir, F_OK))
			cpa_die("--probe '%s': no tracepoint %s:%s in this "
				"kernel (%s not found)", p->spec, p->a, p->b,
				dir);
		break;
	case PROBE_UPROBE:
	case PROBE_URETPROBE:
		if (!f->uprobes)
			cpa_die("--probe '%s': uprobes are not available on "
				"this kernel", p->spec);
		if (access(p->a, R_OK))
			cpa_die("--probe '%s': cannot read '%s': %s", p->spec,
				p->a, strerror(errno));
		break;
	case PROBE_KPROBE:
	case PROBE_KRETPROBE:
		if (!f->kprobes)
			cpa_die("--probe '%s': kprobes are not available on "
				"this kernel (no kprobe PMU and no "
				"kprobe_events in tracefs); use a tracepoint",
				p->spec);
		break;
	}
}

struct bpf_link *probe_attach(const struct probe_spec *p,
			      struct bpf_program *tp_prog,
			      struct bpf_program *regs_prog)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	struct bpf_link *l = NULL;
	int err;

	switch (p->type) {
	case PROBE_TRACEPOINT:
		l = bpf_program__attach_tracepoint(tp_prog, p->a, p->b);
		break;
	case PROBE_UPROBE:
	case PROBE_URETPROBE:
		opts.retprobe = p->type == PROBE_URETPROBE;
		opts.func_name = p->b;
		/* every process that maps the file; the filters choose in
		 * BPF */
		l = bpf_program__attach_uprobe_opts(regs_prog, -1, p->a,
						    p->b ? 0 : (size_t)p->offset,
						    &opts);
		break;
	case PROBE_KPROBE:
	case PROBE_KRETPROBE:
		l = bpf_program__attach_kprobe(regs_prog,
					       p->type == PROBE_KRETPROBE, p->b);
		break;
	}
	if (l)
		return l;
	err = errno;
	if (p->b && p->type != PROBE_TRACEPOINT && err == ENOENT)
		cpa_err("--probe '%s': no function '%s' in %s", p->spec, p->b,
			p->a ? p->a : "the kernel");
	else
		cpa_err("--probe '%s': cannot attach: %s", p->spec,
			strerror(err));
	return NULL;
}
