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
#include "clock.h"
#include "folded.h"
#include "hash.h"
#include "htab.h"
#include "log.h"
#include "render.h"
#include "stackpath.h"
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
	uint32_t entry;			/* the format's, for the same samples */
};

struct stream_state {
	struct profile *p;
	const struct render_opts *o;
	const char *name;
	struct cpa_dict dict;
	struct cpa_htab leaves;		/* sample_key -> leaf entry */
	struct leaf_entry *ent;		/* ent[1..nent] */
	size_t nent, cap_ent;
	uint32_t *name_of;		/* dictionary string id -> frame name */
	size_t cap_name;
	struct stack_path path;
	uint64_t *freed;		/* leaf node -> bytes freed */
	size_t cap_freed;
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
		case CPA_LABEL_PROCESS:
			k->comm_id = s->comm_id;
			k->pid = s->pid;
			break;
		case CPA_LABEL_CPA:	/* CPA's metadata string */
			k->comm_id = s->comm_id;
			k->thread_id = s->thread_id;
			k->pid = s->pid;
			k->cpu = s->cpu;
			k->env_id = s->env_id;
			k->container_id = s->container_id;
			break;
		}
	}
}

/* A dictionary string as a frame: its name is looked up once per id. */
static void push_frame(struct stream_state *st, const struct cpa_dict *d,
		       uint32_t id)
{
	if (id < st->cap_name && st->name_of[id]) {
		stack_path_push(&st->path, st->name_of[id]);
		return;
	}
	uint32_t len;
	const char *s = cpa_dict_string(d, id, &len);
	if (!len || memchr(s, ';', len)) {
		stack_path_text(&st->path, s, len);	/* rare: not cached */
		return;
	}
	CPA_GROW_ZERO(st->name_of, st->cap_name, (size_t)id + 1);
	st->name_of[id] = tree_name(&st->p->tree, s, len);
	stack_path_push(&st->path, st->name_of[id]);
}

/* A new leaf entry: the sample's stack and labels as frames of the tree.
 * Kept out of the per-sample path, which finds most entries cached. */
static __attribute__((noinline)) const struct leaf_entry *
new_leaf(struct stream_state *st, const struct cpa_dict *d,
	 const struct cpa_sample *s, const struct sample_key *k,
	 struct cpa_htab_probe *pr, uint64_t offset, char *err, size_t errlen)
{
	const struct render_format *fmt = st->p->format;
	uint32_t id, n;
	const uint32_t *frames = cpa_dict_stack(d, s->stack_id, &n);

	stack_path_clear(&st->path);
	stack_path_roots(&st->path, &st->o->labels, d, s);
	for (uint32_t i = 0; i < n; i++)
		push_frame(st, d, frames[i]);
	if (!st->path.n)
		stack_path_push(&st->path, tree_name(&st->p->tree, "[empty]", 7));
	uint32_t node = stack_path_leaf(&st->path, st->o->reverse);
	uint32_t tag = 0;
	if (fmt->entry && st->p->acc &&
	    fmt->entry(st->p->acc, d, s, node, &tag, offset, err, errlen) < 0)
		return NULL;

	CPA_GROW(st->ent, st->cap_ent, st->nent + 2);
	id = (uint32_t)++st->nent;
	st->ent[id] = (struct leaf_entry){ *k, node, tag };
	cpa_htab_add(&st->leaves, pr, id);
	return &st->ent[id];
}

/* The leaf entry of a sample (whose ids the dictionary has checked):
 * its leaf node, and what the format keeps for its stack and labels;
 * NULL with err set when the format refuses it. */
static inline __attribute__((always_inline)) const struct leaf_entry *
sample_leaf(struct stream_state *st, const struct cpa_dict *d,
	    const struct cpa_sample *s, uint64_t offset, char *err,
	    size_t errlen)
{
	struct sample_key k;
	struct cpa_htab_probe pr;

	make_key(&k, s, &st->o->labels, st->p->format->every_label);
	for (uint32_t id = cpa_htab_first(&st->leaves, cpa_hash(&k, sizeof(k), 0),
					  &pr);
	     id; id = cpa_htab_next(&st->leaves, &pr))
		if (!memcmp(&st->ent[id].key, &k, sizeof(k)))
			return &st->ent[id];
	return new_leaf(st, d, s, &k, &pr, offset, err, errlen);
}

/* Ids start over after a RESET record: so do the caches by id. */
static int on_reset(void *ctx)
{
	struct stream_state *st = ctx;

	cpa_htab_clear(&st->leaves);
	st->nent = 0;
	if (st->name_of)
		memset(st->name_of, 0, st->cap_name * sizeof(*st->name_of));
	return 0;
}

static void stream_state_free(struct stream_state *st)
{
	cpa_htab_free(&st->leaves);
	free(st->ent);
	free(st->name_of);
	stack_path_free(&st->path);
	free(st->freed);
	cpa_dict_free(&st->dict);
}

static inline __attribute__((always_inline)) int
on_sample(void *ctx, const struct cpa_dict *d,
		     const struct cpa_sample *s, uint64_t offset, char *err,
		     size_t errlen)
{
	struct stream_state *st = ctx;
	struct profile *p = st->p;
	const struct render_format *fmt = p->format;

	if (st->o->kind >= 0 && s->kind != (unsigned)st->o->kind)
		return 0;
	if (s->weight == 0)
		return 0;
	enum cpa_unit u = cpa_kind_unit(s->kind);
	p->units_seen |= 1u << u;
	/* a format of one unit a graph draws one unit at a time (byunit.c);
	 * the others hold several */
	bool one = fmt->units == UNITS_GRAPHS || fmt->units == UNITS_SECTIONS;
	if (one && st->o->unit_picked && u != st->o->unit_pick)
		return 0;
	if (!p->unit_known) {
		p->unit = u;
		p->unit_known = true;
	}
	if (one && p->unit != u)
		return 0;
	const struct leaf_entry *le = sample_leaf(st, d, s, offset, err, errlen);
	if (!le)
		return -1;
	uint32_t leaf = le->leaf, entry = le->entry;
	if (s->flags & CPA_FLAG_ESTIMATE)
		p->estimate = true;
	if (s->flags & CPA_FLAG_FREE) {
		CPA_GROW_ZERO(st->freed, st->cap_freed, (size_t)leaf + 1);
		st->freed[leaf] += s->weight;
		if (p->acc && fmt->sample)
			fmt->sample(p->acc, s, leaf, entry);
		return 0;
	}
	if (add_weight(p, leaf, s->weight, 0, st->name, "byte", offset) < 0)
		return -1;	/* reported */
	if (!p->start_ns || s->time_ns < p->start_ns)
		p->start_ns = s->time_ns;
	if (s->time_ns > p->end_ns)
		p->end_ns = s->time_ns;
	if (p->acc && fmt->sample)
		fmt->sample(p->acc, s, leaf, entry);
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
}

/* The sampling frequency gives pprof its period; cpa-query's window
 * length the end of the last window. */
static int on_meta(void *ctx, const struct cpa_meta *m, char *err,
		   size_t errlen)
{
	struct stream_state *st = ctx;
	uint64_t n;

	(void)err, (void)errlen;
	if (cpa_meta_frequency(m, &n))
		st->p->period_ns = CPA_NSEC_PER_SEC / n;
	else if (cpa_meta_is(m, CPA_META_INTERVAL_NS) && cpa_meta_u64(m, &n))
		st->p->interval_ns = n;
	return 0;
}

static int on_lost(void *ctx, const struct cpa_lost *l, char *err,
		   size_t errlen)
{
	struct stream_state *st = ctx;

	(void)err, (void)errlen;
	st->p->lost += l->count;
	return 0;
}

/* tasks, mmaps, unknown types: nothing to draw */
static int on_other(void *ctx, const struct cpa_record *rec)
{
	struct stream_state *st = ctx;

	if (rec->type == CPA_REC_RAW_SAMPLE)
		st->p->raw++;
	return 0;
}

static const struct cpa_symstream_handler stream_handler = {
	.sample = on_sample, .meta = on_meta, .lost = on_lost,
	.reset = on_reset, .other = on_other,
};

static int read_stream(struct profile *p, const struct render_opts *o, int fd,
		       const char *name, const char *prefix, size_t plen)
{
	struct cpa_reader r;
	struct stream_state st = { .p = p, .o = o, .name = name };
	char err[512];
	int ret = -1;

	if (cpa_reader_init(&r, fd, name, prefix, plen) < 0) {
		cpa_err("%s", r.err);
		cpa_reader_free(&r);
		return -1;
	}
	cpa_dict_init(&st.dict);
	cpa_htab_init(&st.leaves, 1024);
	stack_path_init(&st.path, &p->tree);
	p->from_stream = true;

	if (cpa_symstream_read(&r, &st.dict, &stream_handler, &st, err,
			       sizeof(err)) < 0) {
		if (err[0])
			cpa_err("%s", err);
		goto out;
	}
	net_frees(p, &st);
	if (p->format->finish && p->acc)
		p->format->finish(p->acc, p);
	/* a unit's pass after the first (byunit.c) has nothing new to say */
	if (!r.ended && !o->unit_picked)
		cpa_reader_warn_unended(&r, "truncated; drawing what arrived");
	if (p->lost && !o->unit_picked)
		cpa_warn("%s: %llu samples were lost upstream", name,
			 (unsigned long long)p->lost);
	ret = 0;
out:
	stream_state_free(&st);
	cpa_reader_free(&r);
	return ret;
}

int input_read(struct profile *p, const struct render_opts *o,
	       const struct render_format *format)
{
	const char *name = o->input ? o->input : "<stdin>";
	int fd = 0, rc;
	char prefix[CPA_STREAM_HEADER_SIZE];
	size_t plen = 0;

	memset(p, 0, sizeof(*p));
	p->format = format;
	p->acc = format->new ? format->new(o) : NULL;
	if (o->input_again) {
		/* read again, for another unit (byunit.c) */
		if (lseek(o->input_fd, (off_t)o->input_off, SEEK_SET) < 0) {
			cpa_err("%s: %s", name, strerror(errno));
			return -1;
		}
		fd = dup(o->input_fd);
		if (fd < 0) {
			cpa_err("%s: %s", name, strerror(errno));
			return -1;
		}
	} else if (o->input && strcmp(o->input, "-")) {
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
		rc = read_stream(p, o, fd, name, prefix, plen);
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
	profile_free(p);
	return -1;
}

void profile_free(struct profile *p)
{
	if (p->tree.names)
		tree_free(&p->tree);
	if (p->format && p->format->free && p->acc)
		p->format->free(p->acc);
	memset(p, 0, sizeof(*p));
}
