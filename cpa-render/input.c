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
 * Stream samples are turned into folded lines by lib/labels.c, so the root
 * labels here are exactly those cpa-unwind --folded and cpa-query print;
 * that costs a format and a parse, paid once per distinct (stack, labels)
 * pair thanks to a cache from sample identity to leaf node.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "folded.h"
#include "hash.h"
#include "log.h"
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
		if (lr->cap - lr->end < READ_BLOCK / 2) {
			lr->cap *= 2;
			lr->buf = cpa_realloc(lr->buf, lr->cap);
		}
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
	size_t cap;
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
	const char *end = s + len, *p = s;

	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *fe = semi ? semi : end;
		if (n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 256;
			w->frames = cpa_realloc(w->frames, w->cap * sizeof(*w->frames));
			w->path = cpa_realloc(w->path, w->cap * sizeof(*w->path));
		}
		w->frames[n].s = p;
		w->frames[n].len = (uint32_t)(fe - p);
		n++;
		if (!semi)
			break;
		p = semi + 1;
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
	if (len > w->prevcap) {
		w->prevcap = len * 2;
		w->prev = cpa_realloc(w->prev, w->prevcap);
	}
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
		int rc = cpa_folded_parse(line, len, &fl, err, sizeof(err));
		if (rc == 0)
			continue;
		if (rc > 0 && two >= 0 && fl.two_counts != (two == 1)) {
			snprintf(err, sizeof(err), "%s counts, but line(s) "
				 "before had %s", fl.two_counts ? "two" : "one",
				 two ? "two" : "one");
			rc = -1;
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

/* What makes two samples the same folded stack under the chosen labels. */
struct sample_key {
	uint32_t kind, stack_id, comm_id, pid, tid, thread_id, container_id,
		 env_id, cpu;
};

struct key_slot {
	struct sample_key key;
	uint32_t leaf;		/* TREE_NONE: empty slot */
};

struct leaf_cache {
	struct key_slot *slots;
	size_t mask, n;
};

static void cache_grow(struct leaf_cache *c)
{
	size_t ncap = c->slots ? (c->mask + 1) * 2 : 1024;
	struct key_slot *s = cpa_malloc(ncap * sizeof(*s));

	for (size_t i = 0; i < ncap; i++)
		s[i].leaf = TREE_NONE;
	for (size_t i = 0; c->slots && i <= c->mask; i++) {
		if (c->slots[i].leaf == TREE_NONE)
			continue;
		size_t h = cpa_hash(&c->slots[i].key, sizeof(c->slots[i].key), 0) &
			   (ncap - 1);
		while (s[h].leaf != TREE_NONE)
			h = (h + 1) & (ncap - 1);
		s[h] = c->slots[i];
	}
	free(c->slots);
	c->slots = s;
	c->mask = ncap - 1;
}

static void cache_clear(struct leaf_cache *c)
{
	for (size_t i = 0; c->slots && i <= c->mask; i++)
		c->slots[i].leaf = TREE_NONE;
	c->n = 0;
}

static struct key_slot *cache_slot(struct leaf_cache *c,
				   const struct sample_key *k)
{
	if (!c->slots || (c->n + 1) * 2 > c->mask + 1)
		cache_grow(c);
	size_t h = cpa_hash(k, sizeof(*k), 0) & c->mask;
	while (c->slots[h].leaf != TREE_NONE &&
	       memcmp(&c->slots[h].key, k, sizeof(*k)))
		h = (h + 1) & c->mask;
	return &c->slots[h];
}

static void make_key(struct sample_key *k, const struct cpa_sample *s,
		     const struct cpa_labels *l)
{
	memset(k, 0, sizeof(*k));
	k->kind = s->kind;
	k->stack_id = s->stack_id;
	for (unsigned i = 0; i < l->n; i++) {
		switch (l->order[i]) {
		case CPA_LABEL_COMM: k->comm_id = s->comm_id; break;
		case CPA_LABEL_PID: k->pid = s->pid; break;
		case CPA_LABEL_TID: k->tid = s->tid; break;
		case CPA_LABEL_THREAD: k->thread_id = s->thread_id; break;
		case CPA_LABEL_CONTAINER:
			k->container_id = s->container_id;
			break;
		case CPA_LABEL_ENV: k->env_id = s->env_id; break;
		case CPA_LABEL_CPU: k->cpu = s->cpu; break;
		}
	}
}

static void push_timed(struct profile *p, uint64_t t, uint64_t w,
		       uint32_t leaf)
{
	if (p->ntimed == p->captimed) {
		p->captimed = p->captimed ? p->captimed * 2 : 4096;
		p->timed = cpa_realloc(p->timed, p->captimed * sizeof(*p->timed));
	}
	p->timed[p->ntimed++] = (struct timed){ t, w, leaf };
}

struct stream_state {
	struct cpa_dict dict;
	struct leaf_cache cache;
	struct walker walker;
	FILE *mem;		/* open_memstream for one folded line */
	char *membuf;
	size_t memsize;
};

/* Leaf node of a sample's folded stack, or TREE_NONE with err set. */
static uint32_t sample_leaf(struct profile *p, const struct render_opts *o,
			    struct stream_state *st, const struct cpa_sample *s,
			    uint64_t off, char *err, size_t errlen)
{
	struct sample_key k;
	struct key_slot *slot;
	struct cpa_folded_line fl;
	char why[200];

	make_key(&k, s, &o->labels);
	slot = cache_slot(&st->cache, &k);
	if (slot->leaf != TREE_NONE)
		return slot->leaf;

	if (fseek(st->mem, 0, SEEK_SET) < 0 ||
	    cpa_folded_write_sample(st->mem, &o->labels, &st->dict, s) < 0 ||
	    fflush(st->mem) != 0) {
		snprintf(err, errlen, "byte %llu: cannot format the sample's "
			 "stack", (unsigned long long)off);
		return TREE_NONE;
	}
	long len = ftell(st->mem);
	while (len > 0 && st->membuf[len - 1] == '\n')
		len--;
	if (len <= 0 || cpa_folded_parse(st->membuf, (size_t)len, &fl, why,
					 sizeof(why)) != 1) {
		snprintf(err, errlen, "byte %llu: sample's stack makes a bad "
			 "folded line", (unsigned long long)off);
		return TREE_NONE;
	}
	slot->key = k;
	slot->leaf = walk_stack(&p->tree, &st->walker, fl.stack, fl.stack_len,
				o->reverse);
	st->cache.n++;
	return slot->leaf;
}

/* One graph has one unit: 0, or -1 with err set on a second unit. */
static int unit_check(struct profile *p, const struct cpa_sample *s,
		      uint64_t off, char *err, size_t errlen)
{
	enum cpa_unit u = cpa_kind_unit(s->kind);

	if (!p->unit_known) {
		p->unit = u;
		p->unit_known = true;
	} else if (p->unit != u) {
		snprintf(err, errlen, "byte %llu: samples in %s after samples "
			 "in %s; one graph has one unit, choose an event kind "
			 "with --kind", (unsigned long long)off,
			 cpa_unit_name(u), cpa_unit_name(p->unit));
		return -1;
	}
	return 0;
}

static int read_stream(struct profile *p, const struct render_opts *o, int fd,
		       const char *name, const char *prefix, size_t plen,
		       bool keep_time)
{
	struct cpa_reader r;
	struct cpa_record rec;
	struct stream_state st = { 0 };
	char err[256];
	int rc, ret = -1;

	if (cpa_reader_init(&r, fd, name, prefix, plen) < 0) {
		cpa_err("%s", r.err);
		cpa_reader_free(&r);
		return -1;
	}
	cpa_dict_init(&st.dict);
	st.mem = open_memstream(&st.membuf, &st.memsize);
	if (!st.mem)
		cpa_die("open_memstream: %s", strerror(errno));
	p->from_stream = true;

	while ((rc = cpa_reader_next(&r, &rec)) > 0) {
		struct cpa_sample s;
		struct cpa_lost l;
		struct cpa_meta m;

		switch (rec.type) {
		case CPA_REC_RESET:
			/* Ids start over, so the leaves cached by id go too. */
			cache_clear(&st.cache);
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
			if (unit_check(p, &s, rec.offset, err, sizeof(err)) < 0)
				goto bad;
			uint32_t leaf = sample_leaf(p, o, &st, &s, rec.offset,
						    err, sizeof(err));
			if (leaf == TREE_NONE)
				goto bad;
			if (add_weight(p, leaf, s.weight, 0, name, "byte",
				       rec.offset) < 0)
				goto out;
			if (!p->start_ns || s.time_ns < p->start_ns)
				p->start_ns = s.time_ns;
			if (s.time_ns > p->end_ns)
				p->end_ns = s.time_ns;
			if (keep_time)
				push_timed(p, s.time_ns, s.weight, leaf);
			break;
		case CPA_REC_LOST:
			if (cpa_decode_lost(&rec, &l, err, sizeof(err)) < 0)
				goto bad;
			p->lost += l.count;
			break;
		case CPA_REC_META:
			if (cpa_decode_meta(&rec, &m, err, sizeof(err)) < 0)
				goto bad;
			/* the sampling frequency gives pprof its period */
			if ((m.key_len == 4 && !memcmp(m.key, "freq", 4)) ||
			    (m.key_len == 9 && !memcmp(m.key, "frequency", 9))) {
				char v[32] = "";
				memcpy(v, m.value, m.value_len < 31 ? m.value_len : 31);
				unsigned long hz = strtoul(v, NULL, 10);
				if (hz > 0 && hz <= 1000000)
					p->period_ns = 1000000000ull / hz;
			}
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
	fclose(st.mem);
	free(st.membuf);
	free(st.cache.slots);
	walker_free(&st.walker);
	cpa_dict_free(&st.dict);
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
		p->unit = o->unit >= 0 ? (enum cpa_unit)o->unit : CPA_UNIT_SAMPLES;
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
