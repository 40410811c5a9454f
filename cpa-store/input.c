/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "folded.h"
#include "log.h"
#include "name.h"
#include "input.h"

void input_open(struct input *in, int fd, const char *name,
		uint64_t folded_time_ns)
{
	memset(in, 0, sizeof(*in));
	in->name = name;
	in->fd = fd;
	in->folded_time_ns = folded_time_ns;
	uint8_t first;
	ssize_t k;
	while ((k = read(fd, &first, 1)) < 0 && errno == EINTR)
		;
	if (k < 0)
		cpa_die("%s: %s", name, strerror(errno));
	if (k == 0) {
		in->eof = true;
		in->folded = true;
		return;
	}
	if (cpa_stream_detect(&first, 1)) {
		if (cpa_reader_init(&in->r, fd, name, &first, 1) < 0)
			cpa_die("%s", in->r.err);
		cpa_dict_init(&in->dict);
		return;
	}
	in->folded = true;
	in->f = fdopen(fd, "r");
	if (!in->f || ungetc(first, in->f) == EOF)
		cpa_die("%s: %s", name, strerror(errno));
	in->strs = cpa_strtab_new();
	in->stacks = cpa_stacktab_new();
}

bool input_ready(const struct input *in)
{
	if (in->eof || in->folded)
		return true;
	return cpa_reader_ready(&in->r);
}

/* "text" as meta takes it: key characters [A-Za-z0-9_.-], no control
 * characters in a value, at most max bytes. */
static char *meta_clean(const char *text, uint32_t len, bool key, size_t max)
{
	if (len > max)
		len = (uint32_t)max;
	char *o = cpa_malloc((size_t)len + 1);
	for (uint32_t i = 0; i < len; i++) {
		char c = text[i];
		bool ok = key ? (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				(c >= '0' && c <= '9') || c == '_' || c == '.' ||
				c == '-'
			      : (unsigned char)c >= 0x20 && c != 0x7f;
		o[i] = ok ? c : key ? '_' : ' ';
	}
	o[len] = 0;
	return o;
}

static void add_meta(struct input *in, const struct cpa_meta *m)
{
	char *key = meta_clean(m->key, m->key_len, true, INPUT_META_KEY);
	char *value = meta_clean(m->value, m->value_len, false,
				 INPUT_META_VALUE);
	in->meta_changed = true;
	for (size_t i = 0; i < in->n_meta; i++) {
		struct in_meta *e = &in->meta[i];
		if (strcmp(e->key, key))
			continue;
		free(e->value);
		e->value = value;
		e->count++;
		free(key);
		return;
	}
	if (in->n_meta == INPUT_META_KEYS) {
		in->meta_keys_dropped++;
		free(key);
		free(value);
		return;
	}
	CPA_GROW(in->meta, in->cap_meta, in->n_meta + 1);
	in->meta[in->n_meta++] = (struct in_meta){key, value, 1};
}

void input_meta_text(const struct input *in, struct cpa_buf *out)
{
	bool any = false;
	for (size_t i = 0; i < in->n_meta; i++) {
		if (in->meta[i].count < 2)
			continue;
		char n[32];
		int k = snprintf(n, sizeof(n), ":%llu",
				 (unsigned long long)in->meta[i].count);
		cpa_buf_add(out, any ? "," : "stream_repeated=", any ? 1 : 16);
		cpa_buf_add(out, in->meta[i].key, strlen(in->meta[i].key));
		cpa_buf_add(out, n, (size_t)k);
		any = true;
	}
	if (any)
		cpa_buf_add(out, "\n", 1);
	if (in->meta_keys_dropped) {
		char n[64];
		int k = snprintf(n, sizeof(n), "stream_dropped=%llu\n",
				 (unsigned long long)in->meta_keys_dropped);
		cpa_buf_add(out, n, (size_t)k);
	}
	for (size_t i = 0; i < in->n_meta; i++) {
		const struct in_meta *e = &in->meta[i];
		cpa_buf_add(out, "stream.", 7);
		cpa_buf_add(out, e->key, strlen(e->key));
		cpa_buf_add(out, "=", 1);
		cpa_buf_add(out, e->value, strlen(e->value));
		cpa_buf_add(out, "\n", 1);
	}
}

static int next_stream(struct input *in, struct in_sample *s)
{
	struct cpa_record rec;
	char err[256];
	for (;;) {
		int r = cpa_reader_next(&in->r, &rec);
		if (r < 0) {
			cpa_err("%s", in->r.err);
			return -1;
		}
		if (r == 0) {
			in->eof = true;
			return 0;
		}
		switch (rec.type) {
		case CPA_REC_STRING:
		case CPA_REC_STACK:
			if (cpa_dict_add(&in->dict, &rec, err, sizeof(err)) < 0) {
				cpa_err("%s: %s", in->name, err);
				return -1;
			}
			break;
		case CPA_REC_SAMPLE: {
			struct cpa_sample cs;
			if (cpa_decode_sample(&rec, &cs, err, sizeof(err)) < 0 ||
			    cpa_dict_check_sample(&in->dict, &cs, rec.offset,
						  err, sizeof(err)) < 0) {
				cpa_err("%s: %s", in->name, err);
				return -1;
			}
			s->time_ns = cs.time_ns;
			s->weight = cs.weight;
			s->stack = cs.stack_id;
			s->ls = (struct cpa_store_labelset){
				.cgroup_id = cs.cgroup_id, .pid = cs.pid,
				.tid = cs.tid, .cpu = cs.cpu, .kind = cs.kind,
				.flags = cs.flags, .comm = cs.comm_id,
				.thread = cs.thread_id,
				.container = cs.container_id, .env = cs.env_id,
			};
			in->samples++;
			return 1;
		}
		case CPA_REC_META: {
			struct cpa_meta m;
			if (cpa_decode_meta(&rec, &m, err, sizeof(err)) < 0) {
				cpa_err("%s: %s", in->name, err);
				return -1;
			}
			add_meta(in, &m);
			break;
		}
		case CPA_REC_LOST: {
			struct cpa_lost l;
			if (cpa_decode_lost(&rec, &l, err, sizeof(err)) < 0) {
				cpa_err("%s: %s", in->name, err);
				return -1;
			}
			in->lost += l.count;
			s->time_ns = l.time_ns;
			s->weight = l.count;
			return INPUT_LOST;
		}
		case CPA_REC_RESET:
			if (rec.len) {
				cpa_err_at(in->name, rec.offset, "reset record: "
					   "length %u, expected 0", rec.len);
				return -1;
			}
			return INPUT_RESET;
		case CPA_REC_RAW_SAMPLE:
			cpa_err_at(in->name, rec.offset, "raw sample: cpa-store "
				   "keeps symbolized samples, pipe through "
				   "cpa-unwind first");
			return -1;
		default:
			/* task, mmap, end and types newer than this build
			 * say nothing the store keeps */
			break;
		}
		/* No sample yet and no whole record waiting: back to the main
		 * loop, which ticks (and reports) rather than block in read. */
		if (!input_ready(in))
			return INPUT_IDLE;
	}
}

/* A folded line becomes one sample: an optional event-kind marker, the
 * process name (the first frame, as stackcollapse-perf.pl and cpa-query
 * write it), then the stack. */
static int next_folded(struct input *in, struct in_sample *s)
{
	for (;;) {
		long len = cpa_read_line(in->f, &in->line, &in->cap);
		if (len < 0) {
			if (ferror(in->f)) {
				cpa_err("%s: %s", in->name, strerror(errno));
				return -1;
			}
			in->eof = true;
			return 0;
		}
		in->lineno++;
		struct cpa_folded_line fl;
		char err[160];
		int r = cpa_folded_parse(in->line, (size_t)len, &fl, err,
					 sizeof(err));
		if (r < 0) {
			cpa_err("%s: line %llu: %s", in->name,
				(unsigned long long)in->lineno, err);
			return -1;
		}
		if (r == 0)
			continue;
		if (fl.two_counts) {
			cpa_err("%s: line %llu: a differential (two-count) "
				"line cannot be stored", in->name,
				(unsigned long long)in->lineno);
			return -1;
		}
		memset(s, 0, sizeof(*s));
		s->time_ns = in->folded_time_ns;
		s->weight = fl.count;
		uint32_t frames[CPA_MAX_STACK_DEPTH];
		uint32_t n = 0;
		bool is_new, seen_comm = false, first = true;
		const char *p = fl.stack, *end = fl.stack + fl.stack_len;
		while (p <= end) {
			const char *semi = memchr(p, ';', (size_t)(end - p));
			const char *fe = semi ? semi : end;
			size_t flen = (size_t)(fe - p);
			/* our own copy of the line: cleaned in place, as
			 * names in a stream are (lib/base/name.h) */
			if (cpa_name_clean(in->line + (p - in->line), flen))
				in->folded_cleaned++;
			int kind = -1;
			if (first) {
				for (unsigned k = 1; k < CPA_KIND_COUNT; k++) {
					const char *mk = cpa_kind_marker(k);
					if (mk && strlen(mk) == flen &&
					    !memcmp(mk, p, flen))
						kind = (int)k;
				}
			}
			if (kind >= 0) {
				s->ls.kind = (uint16_t)kind;
			} else if (!seen_comm) {
				seen_comm = true;
				s->ls.comm = flen ? cpa_strtab_intern(in->strs, p,
								flen, &is_new)
						  : 0;
			} else if (n < CPA_MAX_STACK_DEPTH && flen) {
				frames[n++] = cpa_strtab_intern(in->strs, p,
								flen, &is_new);
			}
			first = false;
			if (!semi)
				break;
			p = semi + 1;
		}
		s->stack = cpa_stacktab_intern(in->stacks, frames, n, &is_new);
		in->samples++;
		return 1;
	}
}

int input_next(struct input *in, struct in_sample *s)
{
	if (in->eof)
		return 0;
	return in->folded ? next_folded(in, s) : next_stream(in, s);
}

void input_apply_reset(struct input *in)
{
	uint64_t cleaned = in->dict.cleaned;
	cpa_dict_free(&in->dict);
	cpa_dict_init(&in->dict);
	in->dict.cleaned = cleaned;
}

uint64_t input_names_cleaned(const struct input *in)
{
	return in->folded ? in->folded_cleaned : in->dict.cleaned;
}

const char *input_string(const struct input *in, uint32_t id, uint32_t *len)
{
	if (id == 0) {
		*len = 0;
		return "";
	}
	if (in->folded)
		return cpa_strtab_get(in->strs, id, len);
	return cpa_dict_string(&in->dict, id, len);
}

const uint32_t *input_stack(const struct input *in, uint32_t id, uint32_t *n)
{
	if (in->folded)
		return cpa_stacktab_get(in->stacks, id, n);
	return cpa_dict_stack(&in->dict, id, n);
}

void input_close(struct input *in)
{
	if (!in->folded) {
		if (!in->r.ended && in->eof)
			cpa_reader_warn_unended(&in->r, "upstream stopped "
						"early; what came is stored");
		cpa_reader_free(&in->r);
		cpa_dict_free(&in->dict);
	} else {
		if (in->f)
			fclose(in->f);
		free(in->line);
		if (in->strs)
			cpa_strtab_free(in->strs);
		if (in->stacks)
			cpa_stacktab_free(in->stacks);
	}
	for (size_t i = 0; i < in->n_meta; i++) {
		free(in->meta[i].key);
		free(in->meta[i].value);
	}
	free(in->meta);
}
