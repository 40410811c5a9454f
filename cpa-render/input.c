/* SPDX-License-Identifier: MIT */
/*
 * Input: folded text or the cpa stream, told apart by the first byte
 * (cpa_stream_detect), merged into the profile's frame tree.
 *
 * Folded text is read in large blocks and split on newlines in place. A
 * line shares its leading frames with the line before it more often than
 * not (collapsers sort their output), so the nodes of the previous line's
 * frames are kept and reused for the common prefix without hashing them
 * again.
 *
 * Stream samples are merged by their ids: a cache from sample identity
 * (stack id and the label values shown) to leaf node, and a map from
 * dictionary string id to frame name, so a sample already seen costs one
 * probe, and a new one a probe per frame, with no text in between. The
 * root labels come from lib/format/labels.c, so they read exactly as the ones
 * cpa-unwind --folded and cpa-query print.
 *
 * A sample flagged free (mem-usage, heap-inuse) is bytes that its stack
 * allocated and gave back: frees are summed per leaf apart and taken off
 * the leaf's allocations at the end, never below zero, so the graph shows
 * what was still held when the stream ended, as cpa-query's default does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "folded.h"
#include "hash.h"
#include "htab.h"
#include "log.h"
#include "pprof.h"
#include "render.h"
#include "symstream.h"

#define READ_BLOCK (1u << 20)

struct line_reader {
	int fd;
	char *buf;
	size_t start, end, cap;
	bool eof;
};

/* Next line without its newline, or NULL at end of input. */
static char *next_line(struct line_reader *lr, size_t *len, const char *name)
{
	for (;;) {
		char *nl = memchr(lr->buf + lr->start, '\n', lr->end - lr->start);
		if (nl) {
			char *line = lr->buf + lr->start;
			*len = (size_t)(nl - line);
			lr->start += *len + 1;
			return line;
		}
		if (lr->eof) {
			if (lr->start == lr->end)
				return NULL;
			/* last line without a newline */
			char *line = lr->buf + lr->start;
			*len = lr->end - lr->start;
			lr->start = lr->end;
			return line;
		}
		/* move the partial line to the front, grow if it fills all */
		memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
		lr->end -= lr->start;
		lr->start = 0;
		CPA_GROW(lr->buf, lr->cap, lr->end + READ_BLOCK / 2);
		ssize_t n = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			cpa_die("%s: read: %s", name, strerror(errno));
		}
		if (n == 0)
			lr->eof = true;
		lr->end += (size_t)n;
	}
}

struct frame_span {
	const char *s;
	uint32_t len;
};

struct walker {
	struct frame_span *frames;
	uint32_t *path;		/* node of each frame of the last stack */
	uint32_t npath;
	char *prev;		/* bytes of the last stack */
	size_t prevlen, prevcap;
	size_t cap_frames, cap_path;
};

static void walker_free(struct walker *w)
{
	free(w->frames);
	free(w->path);
	free(w->prev);
}

/* Splits a stack on ';' into w->frames; returns the frame count. */
static uint32_t split_frames(struct walker *w, const char *s, size_t len)
{
	uint32_t n = 0;
	const char *p = s, *f;
	size_t flen;

	while (cpa_folded_frame(&p, s + len, &f, &flen)) {
		CPA_GROW(w->frames, w->cap_frames, (size_t)n + 1);
		CPA_GROW(w->path, w->cap_path, (size_t)n + 1);
		w->frames[n].s = f;
		w->frames[n].len = (uint32_t)flen;
		n++;
	}
	return n;
}

static uint32_t frame_node(struct tree *t, uint32_t parent,
			   const struct frame_span *f)
{
	/* an empty frame (";;") is drawn, as flamegraph.pl does, but
	 * needs a visible name */
	if (f->len == 0)
		return tree_child(t, parent, tree_name(t, "[unknown]", 9));
	return tree_child(t, parent, tree_name(t, f->s, f->len));
}

/*
 * Leaf node of a stack "a;b;c", root first in the text; reversed (leaf
 * at the root) with --reverse. The previous stack's nodes are reused for
 * the frames the two share at the front.
 */
static uint32_t walk_stack(struct tree *t, struct walker *w, const char *s,
			   size_t len, bool reverse)
{
	uint32_t n = split_frames(w, s, len);
	uint32_t node = TREE_ROOT, i = 0;

	tree_saw_depth(t, n);
	if (reverse) {
		for (uint32_t k = n; k-- > 0;)
			node = frame_node(t, node, &w->frames[k]);
		w->npath = 0;
		return node;
	}

	size_t common = 0, lim = len < w->prevlen ? len : w->prevlen;
	while (common < lim && s[common] == w->prev[common])
		common++;
	for (; i < n && i < w->npath; i++) {
		size_t e = (size_t)(w->frames[i].s - s) + w->frames[i].len;
		if (e > common || (e < w->prevlen && w->prev[e] != ';'))
			break;
		node = w->path[i];
	}
	for (; i < n; i++) {
		node = frame_node(t, node, &w->frames[i]);
		w->path[i] = node;
	}
	w->npath = n;
	CPA_GROW(w->prev, w->prevcap, len);
	memcpy(w->prev, s, len);
	w->prevlen = len;
	return node;
}

static int add_weight(struct profile *p, uint32_t leaf, uint64_t w,
		      uint64_t w1, const char *name, const char *where,
		      uint64_t pos)
{
	if (tree_add(&p->tree, leaf, w, w1))
		return 0;
	cpa_err("%s: %s %llu: weight overflows 64 bits", name, where,
		(unsigned long long)pos);
	return -1;
}

/* ---- folded text -------------------------------------------------------- */

/* Whether a folded stack starts with the marker of a memory kind
 * ("memory usage;app;main"): cpa-query's memory lines are in bytes. */
static bool memory_marked(const char *stack, size_t len)
{
	for (unsigned k = 0; k < CPA_KIND_COUNT; k++) {
		const char *m = cpa_kind_marker(k);
		size_t n = m ? strlen(m) : 0;
		if (n && cpa_kind_unit(k) == CPA_UNIT_BYTES && len > n &&
		    stack[n] == ';' && !memcmp(stack, m, n))
			return true;
	}
	return false;
}

static int read_folded(struct profile *p, const struct render_opts *o, int fd,
		       const char *name, char *prefix, size_t plen,
		       bool skip_bad)
{
	struct line_reader lr = { .fd = fd, .cap = 2 * READ_BLOCK };
	struct walker w = { 0 };
	struct cpa_folded_line fl;
	char err[256];
	uint64_t lineno = 0;
	size_t len;
	char *line;
	int two = -1;	/* column count of the first line, as a bool */

	lr.buf = cpa_malloc(lr.cap);
	memcpy(lr.buf, prefix, plen);
	lr.end = plen;
	while ((line = next_line(&lr, &len, name))) {
		lineno++;
		/* cpa-query marks weights scaled up from sampling */
		if (len == 10 && !memcmp(line, "# estimate", 10))
			p->estimate = true;
		int rc = cpa_folded_parse(line, len, &fl, err, sizeof(err));
		if (rc == 0)
			continue;
		if (rc > 0 && two >= 0 && fl.two_counts != (two == 1)) {
			rc = cpa_fail(err, sizeof(err), "%s counts, but "
				      "line(s) before had %s",
				      fl.two_counts ? "two" : "one",
				      two ? "two" : "one");
		}
		if (rc < 0) {
			if (!skip_bad) {
				cpa_err("%s: line %llu: %s", name,
					(unsigned long long)lineno, err);
				free(lr.buf);
				walker_free(&w);
				return -1;
			}
			if (p->skipped++ < 10)
				cpa_warn("%s: line %llu: %s (skipped)", name,
					 (unsigned long long)lineno, err);
			continue;
		}
		two = fl.two_counts;
		if (p->memory_lines >= 0)
			p->memory_lines = memory_marked(fl.stack, fl.stack_len)
					  ? 1 : -1;
		uint32_t leaf = walk_stack(&p->tree, &w, fl.stack, fl.stack_len,
					   o->reverse);
		/* differential: drawn with the second column, colored by the
		 * change from the first, as flamegraph.pl does */
		if (add_weight(p, leaf, fl.two_counts ? fl.count2 : fl.count,
			       fl.two_counts ? fl.count : 0, name, "line",
			       lineno) < 0) {
			free(lr.buf);
			walker_free(&w);
			return -1;
		}
	}
	p->tree.diff = two == 1;	/* even if every first count is 0 */
	if (p->skipped)
		cpa_warn("%s: %llu malformed line(s) skipped", name,
			 (unsigned long long)p->skipped);
	free(lr.buf);
	walker_free(&w);
	return 0;
}

/* ---- cpa stream ---------------------------------------------------------- */

/* What makes two samples the same stack under the chosen labels. */
struct sample_key {
	uint32_t kind, stack_id, comm_id, pid, tid, thread_id, container_id,
		 env_id, cpu;
};

struct leaf_entry {
	struct sample_key key;
	uint32_t leaf;
	uint32_t pp;			/* pprof: id in profile.pp_keys */
	uint32_t group;			/* speedscope: its profile */
};

struct stream_state {
	struct cpa_dict dict;
	struct tree *tree;
	struct cpa_htab leaves;		/* sample_key -> leaf entry */
	struct leaf_entry *ent;		/* ent[1..nent] */
	size_t nent, cap_ent;
	uint32_t *name_of;		/* dictionary string id -> frame name */
	size_t cap_name;
	uint32_t *path;			/* frame names of one stack */
	size_t npath, cap_path;
	uint64_t *freed;		/* leaf node -> bytes freed */
	size_t cap_freed;
	uint64_t *pp_freed;		/* pprof key -> bytes freed */
	size_t cap_pp_freed;
	struct cpa_buf label;		/* "[tag value]" */
};

static void make_key(struct sample_key *k, const struct cpa_sample *s,
		     const struct cpa_labels *l, bool every)
{
	memset(k, 0, sizeof(*k));
	k->kind = s->kind;
	k->stack_id = s->stack_id;
	if (every) {	/* pprof's labels, speedscope's tasks */
		k->comm_id = s->comm_id;
		k->pid = s->pid;
		k->tid = s->tid;
		k->thread_id = s->thread_id;
		k->container_id = s->container_id;
		k->env_id = s->env_id;
	}
	for (unsigned i = 0; i < l->n; i++) {
		switch (l->order[i]) {
		case CPA_LABEL_COMM: k->comm_id = s->comm_id; break;
		case CPA_LABEL_PID: k->pid = s->pid; break;
		case CPA_LABEL_TID: k->tid = s->tid; break;
		case CPA_LABEL_THREAD: k->thread_id = s->thread_id; break;
		case CPA_LABEL_CONTAINER:
		case CPA_LABEL_POD:
		case CPA_LABEL_CGROUP:
			k->container_id = s->container_id;
			break;
		case CPA_LABEL_ENV: k->env_id = s->env_id; break;
		case CPA_LABEL_CPU: k->cpu = s->cpu; break;
		}
	}
}

static void push_name(struct stream_state *st, uint32_t name)
{
	CPA_GROW(st->path, st->cap_path, st->npath + 1);
	st->path[st->npath++] = name;
}

/*
 * Frames of a piece of text as a folded line would split it: on ';',
 * an empty frame drawn as "[unknown]". So a stream and the folded text
 * cpa-query makes of it draw the same graph, whatever the names hold.
 */
static void push_text(struct stream_state *st, const char *s, size_t len)
{
	const char *p = s, *f;
	size_t flen;

	while (cpa_folded_frame(&p, s + len, &f, &flen))
		push_name(st, flen ? tree_name(st->tree, f, flen)
				   : tree_name(st->tree, "[unknown]", 9));
}

static void push_root(const char *tag, const char *value, void *ctx)
{
	struct stream_state *st = ctx;

	if (!tag) {
		push_text(st, value, strlen(value));
		return;
	}
	st->label.len = 0;
	cpa_buf_add(&st->label, "[", 1);
	cpa_buf_add(&st->label, tag, strlen(tag));
	cpa_buf_add(&st->label, " ", 1);
	cpa_buf_add(&st->label, value, strlen(value));
	cpa_buf_add(&st->label, "]", 1);
	push_text(st, (const char *)st->label.p, st->label.len);
}

/* A dictionary string as a frame: its name is looked up once per id. */
static void push_frame(struct stream_state *st, uint32_t id)
{
	if (id < st->cap_name && st->name_of[id]) {
		push_name(st, st->name_of[id]);
		return;
	}
	uint32_t len;
	const char *s = cpa_dict_string(&st->dict, id, &len);
	if (!len || memchr(s, ';', len)) {
		push_text(st, s, len);	/* rare: not worth caching */
		return;
	}
	CPA_GROW_ZERO(st->name_of, st->cap_name, (size_t)id + 1);
	st->name_of[id] = tree_name(st->tree, s, len);
	push_name(st, st->name_of[id]);
}

/* The pprof key of a sample's leaf, kind and labels: their values are
 * interned in the profile, as dictionary ids start over after a RESET. */
static uint32_t pprof_key(struct profile *p, const struct cpa_dict *d,
			  const struct cpa_sample *s, uint32_t leaf)
{
	uint32_t key[2 + CPA_PPROF_SAMPLE_LABELS] = { leaf, s->kind };
	bool is_new;

	if (!p->pp_keys) {
		p->pp_keys = cpa_stacktab_new();
		p->pp_strings = cpa_strtab_new();
	}
	cpa_pprof_sample_label_ids(key + 2, p->pp_strings, d, s);
	uint32_t id = cpa_stacktab_intern(p->pp_keys, key,
					  2 + CPA_PPROF_SAMPLE_LABELS, &is_new);
	CPA_GROW_ZERO(p->pp_weight, p->cap_pp_weight, (size_t)id + 1);
	return id;
}

/* The leaf entry of a sample (whose ids the dictionary has checked):
 * its leaf node, and its pprof key or speedscope profile when the output
 * is one of those. */
static const struct leaf_entry *sample_leaf(struct profile *p,
					    const struct render_opts *o,
					    struct stream_state *st,
					    const struct cpa_sample *s)
{
	struct sample_key k;
	struct cpa_htab_probe pr;
	uint32_t id, n;
	bool pprof = o->format == FORMAT_PPROF;
	bool speedscope = o->format == FORMAT_SPEEDSCOPE;

	make_key(&k, s, &o->labels, pprof || speedscope);
	for (id = cpa_htab_first(&st->leaves, cpa_hash(&k, sizeof(k), 0), &pr);
	     id; id = cpa_htab_next(&st->leaves, &pr))
		if (!memcmp(&st->ent[id].key, &k, sizeof(k)))
			return &st->ent[id];

	const uint32_t *frames = cpa_dict_stack(&st->dict, s->stack_id, &n);
	st->npath = 0;
	cpa_sample_roots(&o->labels, &st->dict, s, push_root, st);
	for (uint32_t i = 0; i < n; i++)
		push_frame(st, frames[i]);
	if (!st->npath)
		push_name(st, tree_name(st->tree, "[empty]", 7));

	uint32_t node = TREE_ROOT;
	tree_saw_depth(st->tree, (uint32_t)st->npath);
	if (o->reverse)
		for (size_t i = st->npath; i-- > 0;)
			node = tree_child(st->tree, node, st->path[i]);
	else
		for (size_t i = 0; i < st->npath; i++)
			node = tree_child(st->tree, node, st->path[i]);

	CPA_GROW(st->ent, st->cap_ent, st->nent + 2);
	id = (uint32_t)++st->nent;
	st->ent[id] = (struct leaf_entry){
		k, node, pprof ? pprof_key(p, &st->dict, s, node) : 0,
		speedscope ? speedscope_group(p, o, &st->dict, s) : 0,
	};
	cpa_htab_add(&st->leaves, &pr, id);
	return &st->ent[id];
}

/* Ids start over after a RESET record: so do the caches by id. */
static void stream_state_reset(struct stream_state *st)
{
	cpa_htab_clear(&st->leaves);
	st->nent = 0;
	if (st->name_of)
		memset(st->name_of, 0, st->cap_name * sizeof(*st->name_of));
}

static void stream_state_free(struct stream_state *st)
{
	cpa_htab_free(&st->leaves);
	free(st->ent);
	free(st->name_of);
	free(st->path);
	free(st->freed);
	free(st->pp_freed);
	cpa_buf_free(&st->label);
	cpa_dict_free(&st->dict);
}

static void push_timed(struct profile *p, uint64_t t, uint64_t w,
		       uint32_t leaf, uint32_t group)
{
	CPA_GROW(p->timed, p->captimed, p->ntimed + 1);
	p->timed[p->ntimed++] = (struct timed){ t, w, leaf, group };
}

/*
 * One graph has one unit: 0, or -1 with err set on a second unit. A pprof
 * profile keeps each unit in its own column, so there each stack only
 * remembers its unit, and only a stack met in two units is refused.
 */
static int unit_check(struct profile *p, const struct render_opts *o,
		      const struct cpa_sample *s, uint32_t leaf, uint64_t off,
		      char *err, size_t errlen)
{
	enum cpa_unit u = cpa_kind_unit(s->kind);

	if (!p->unit_known) {
		p->unit = u;
		p->unit_known = true;
	}
	if (o->format == FORMAT_PPROF) {
		CPA_GROW_ZERO(p->leaf_unit, p->cap_leaf_unit, (size_t)leaf + 1);
		uint8_t *lu = &p->leaf_unit[leaf];
		if (!*lu)
			*lu = (uint8_t)(u + 1);
		else if (*lu != u + 1)
			return cpa_fail_at(err, errlen, off, "samples in %s "
					   "on a stack of samples in %s; "
					   "choose an event kind with --kind",
					   cpa_unit_name(u),
					   cpa_unit_name(*lu - 1));
	} else if (p->unit != u) {
		return cpa_fail_at(err, errlen, off, "samples in %s after "
				   "samples in %s; one graph has one unit, "
				   "choose an event kind with --kind",
				   cpa_unit_name(u), cpa_unit_name(p->unit));
	}
	return 0;
}

/* Frees taken off the allocations of their leaves: what is still held. */
static void net_frees(struct profile *p, struct stream_state *st)
{
	for (size_t id = 0; id < st->cap_freed; id++) {
		if (!st->freed[id])
			continue;
		struct node *nd = &p->tree.nodes[id];
		nd->self = nd->self > st->freed[id] ? nd->self - st->freed[id]
						    : 0;
	}
	for (size_t id = 0; id < st->cap_pp_freed; id++)
		p->pp_weight[id] = p->pp_weight[id] > st->pp_freed[id] ?
				   p->pp_weight[id] - st->pp_freed[id] : 0;
}

/* The sampling frequency gives pprof its period; cpa-query's window
 * length the end of the last window. */
static void meta_read(struct profile *p, const struct cpa_meta *m)
{
	char v[32] = "";
	memcpy(v, m->value, m->value_len < 31 ? m->value_len : 31);
	unsigned long long n = strtoull(v, NULL, 10);

	if ((m->key_len == 4 && !memcmp(m->key, "freq", 4)) ||
	    (m->key_len == 9 && !memcmp(m->key, "frequency", 9))) {
		if (n > 0 && n <= 1000000)
			p->period_ns = 1000000000ull / n;
	} else if (m->key_len == 11 && !memcmp(m->key, "interval_ns", 11)) {
		p->interval_ns = n;
	}
}

static int read_stream(struct profile *p, const struct render_opts *o, int fd,
		       const char *name, const char *prefix, size_t plen,
		       bool keep_time)
{
	struct cpa_reader r;
	struct cpa_record rec;
	struct stream_state st = { .tree = &p->tree };
	char err[256];
	int rc, ret = -1;

	if (cpa_reader_init(&r, fd, name, prefix, plen) < 0) {
		cpa_err("%s", r.err);
		cpa_reader_free(&r);
		return -1;
	}
	cpa_dict_init(&st.dict);
	cpa_htab_init(&st.leaves, 1024);
	p->from_stream = true;

	while ((rc = cpa_reader_next(&r, &rec)) > 0) {
		struct cpa_sample s;
		struct cpa_lost l;
		struct cpa_meta m;

		switch (rec.type) {
		case CPA_REC_RESET:
			stream_state_reset(&st);
			/* fall through */
		case CPA_REC_STRING:
		case CPA_REC_STACK:
			if (cpa_dict_add(&st.dict, &rec, err, sizeof(err)) < 0)
				goto bad;
			break;
		case CPA_REC_SAMPLE:
			if (cpa_decode_sample(&rec, &s, err, sizeof(err)) < 0 ||
			    cpa_dict_check_sample(&st.dict, &s, rec.offset, err,
						  sizeof(err)) < 0)
				goto bad;
			if (o->kind >= 0 && s.kind != (unsigned)o->kind)
				break;
			if (s.weight == 0)
				break;
			const struct leaf_entry *le = sample_leaf(p, o, &st, &s);
			uint32_t leaf = le->leaf, pp = le->pp, group = le->group;
			if (unit_check(p, o, &s, leaf, rec.offset, err,
				       sizeof(err)) < 0)
				goto bad;
			if (s.flags & CPA_FLAG_ESTIMATE)
				p->estimate = true;
			if (s.flags & CPA_FLAG_FREE) {
				CPA_GROW_ZERO(st.freed, st.cap_freed,
					      (size_t)leaf + 1);
				st.freed[leaf] += s.weight;
				if (pp) {
					CPA_GROW_ZERO(st.pp_freed, st.cap_pp_freed,
						      (size_t)pp + 1);
					st.pp_freed[pp] += s.weight;
				}
				break;	/* the heat map counts allocations */
			}
			if (add_weight(p, leaf, s.weight, 0, name, "byte",
				       rec.offset) < 0)
				goto out;
			/* the tree's sum did not overflow: neither can this */
			if (pp)
				p->pp_weight[pp] += s.weight;
			if (!p->start_ns || s.time_ns < p->start_ns)
				p->start_ns = s.time_ns;
			if (s.time_ns > p->end_ns)
				p->end_ns = s.time_ns;
			if (keep_time)
				push_timed(p, s.time_ns, s.weight, leaf, group);
			break;
		case CPA_REC_LOST:
			if (cpa_decode_lost(&rec, &l, err, sizeof(err)) < 0)
				goto bad;
			p->lost += l.count;
			break;
		case CPA_REC_META:
			if (cpa_decode_meta(&rec, &m, err, sizeof(err)) < 0)
				goto bad;
			meta_read(p, &m);
			break;
		case CPA_REC_RAW_SAMPLE:
			p->raw++;
			break;
		default:
			/* tasks, mmaps, unknown types: nothing to draw */
			break;
		}
	}
	if (rc < 0) {
		cpa_err("%s", r.err);
		goto out;
	}
	net_frees(p, &st);
	if (!r.ended)
		cpa_reader_warn_unended(&r, "truncated; drawing what arrived");
	if (p->lost)
		cpa_warn("%s: %llu samples were lost upstream", name,
			 (unsigned long long)p->lost);
	ret = 0;
	goto out;
bad:
	cpa_err("%s: %s", name, err);
out:
	stream_state_free(&st);
	cpa_reader_free(&r);
	return ret;
}

int input_read(struct profile *p, const struct render_opts *o, bool keep_time)
{
	const char *name = o->input ? o->input : "<stdin>";
	int fd = 0, rc;
	char prefix[CPA_STREAM_HEADER_SIZE];
	size_t plen = 0;

	memset(p, 0, sizeof(*p));
	if (o->input && strcmp(o->input, "-")) {
		fd = open(o->input, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			cpa_err("%s: %s", o->input, strerror(errno));
			return -1;
		}
	}
	/* enough bytes to tell a stream from text */
	while (plen < 1) {
		ssize_t n = read(fd, prefix + plen, sizeof(prefix) - plen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cpa_err("%s: read: %s", name, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		plen += (size_t)n;
	}
	if (cpa_stream_detect(prefix, plen)) {
		/* merged now; a flame chart is rebuilt in time order later */
		tree_init(&p->tree, false);
		rc = read_stream(p, o, fd, name, prefix, plen,
				 keep_time || o->flamechart);
	} else {
		/* a flame chart of folded text keeps line order: a frame
		 * merges only with the one just before it */
		tree_init(&p->tree, o->flamechart);
		rc = read_folded(p, o, fd, name, prefix, plen, o->skip_bad);
		p->unit = o->unit >= 0 ? (enum cpa_unit)o->unit
			  : p->memory_lines > 0 ? CPA_UNIT_BYTES
						: CPA_UNIT_SAMPLES;
		p->unit_known = true;
	}
	if (rc < 0)
		goto fail;
	if (p->from_stream && o->unit >= 0)
		p->unit = (enum cpa_unit)o->unit;
	if (!p->unit_known)
		p->unit = CPA_UNIT_SAMPLES;
	if (fd > 0)
		close(fd);
	return 0;
fail:
	if (fd > 0)
		close(fd);
	if (p->tree.names)
		profile_free(p);
	return -1;
}

void profile_free(struct profile *p)
{
	tree_free(&p->tree);
	free(p->timed);
	free(p->leaf_unit);
	if (p->pp_keys)
		cpa_stacktab_free(p->pp_keys);
	if (p->pp_strings)
		cpa_strtab_free(p->pp_strings);
	free(p->pp_weight);
	speedscope_free(p);
	memset(p, 0, sizeof(*p));
}

struct order {
	uint64_t time_ns;
	size_t index;
};

static int by_time(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	/* equal times keep arrival order (qsort alone is not stable) */
	return x->index < y->index ? -1 : x->index > y->index;
}

void flamechart_build(struct profile *p)
{
	struct tree chart;
	uint32_t *path = cpa_malloc(((size_t)p->tree.max_depth + 1) *
				    sizeof(*path));
	struct order *ord = cpa_malloc(p->ntimed * sizeof(*ord) + 1);

	for (size_t i = 0; i < p->ntimed; i++)
		ord[i] = (struct order){ p->timed[i].time_ns, i };
	qsort(ord, p->ntimed, sizeof(*ord), by_time);

	tree_init(&chart, true);
	for (size_t k = 0; k < p->ntimed; k++) {
		const struct timed *tm = &p->timed[ord[k].index];
		uint32_t n = tree_path(&p->tree, tm->leaf, path);
		uint32_t node = TREE_ROOT;

		tree_saw_depth(&chart, n);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t len;
			const char *s = tree_name_str(&p->tree,
					p->tree.nodes[path[i]].name, &len);
			node = tree_child(&chart, node, tree_name(&chart, s, len));
		}
		tree_add(&chart, node, tm->weight, 0);
	}
	free(ord);
	free(path);
	tree_free(&p->tree);
	p->tree = chart;
}
