/* SPDX-License-Identifier: MIT */
/*
 * What cpa-render's stages share: the options, and the profile that input
 * builds and the output formats draw.
 */
#ifndef CPA_RENDER_H
#define CPA_RENDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "intern.h"
#include "labels.h"
#include "stream.h"
#include "tree.h"

enum render_format {
	FORMAT_SVG,
	FORMAT_HTML,
	FORMAT_PPROF,
	FORMAT_TEXT,
	FORMAT_FOLDED,
	FORMAT_SPEEDSCOPE,
};

struct render_opts {
	enum render_format format;
	const char *input;		/* file name, NULL for stdin */
	const char *output;		/* file name, NULL for stdout */
	const char *title;		/* NULL: "Flame Graph" / "Icicle Graph" */
	const char *subtitle;
	const char *countname;		/* NULL: from the unit */
	const char *colors;		/* NULL: from the unit */
	int unit;			/* enum cpa_unit for folded input, -1 auto */
	int kind;			/* only this event kind from a stream, -1 all */
	unsigned width;			/* image width, px */
	unsigned frame_height;		/* px */
	double minwidth;		/* px, or percent when minwidth_pct */
	bool minwidth_pct;
	bool minwidth_set;
	bool hash;			/* colors by name hash, similar names alike */
	bool reverse;			/* leaf frames at the root */
	bool inverted;			/* icicle: root at the top */
	bool flamechart;		/* time order, no merging across time */
	bool negate;			/* differential: swap red and blue */
	bool skip_bad;			/* skip malformed folded lines */
	unsigned top;			/* text: rows of the top lists */
	uint64_t period_ns;		/* pprof: ns per sample, 0 unknown */
	struct cpa_labels labels;	/* root labels from a stream */
	bool labels_set;		/* --labels given */
	bool by_process;		/* speedscope: a profile per process */
	/* --tui: the terminal UI (tui.h) */
	bool tui;
	bool follow;			/* new windows as the store commits */
	uint64_t tui_from, tui_to;	/* the history; 0 the store's own */
	uint64_t tui_last;		/* or the last so long up to now */
};

/* One sample kept in time order (stream input for --flamechart and html;
 * line order for folded input with --flamechart). */
struct timed {
	uint64_t time_ns;
	uint64_t weight;
	uint32_t leaf;			/* node in profile.tree */
	uint32_t group;			/* speedscope: profile id, 0 none */
};

struct profile {
	struct tree tree;
	enum cpa_unit unit;
	bool unit_known;		/* set by a stream's samples */
	bool from_stream;
	bool estimate;			/* weights scaled up from sampling */
	int memory_lines;		/* folded: 1 every line has a memory
					 * marker, -1 one has not, 0 none */
	uint64_t start_ns, end_ns;	/* stream sample times; 0 when none */
	uint64_t lost;			/* LOST records of the stream */
	uint64_t skipped;		/* malformed folded lines skipped */
	uint64_t raw;			/* unsymbolized samples in a stream */
	uint64_t period_ns;		/* from the stream's meta, 0 unknown */
	uint64_t interval_ns;		/* of cpa-query's windows, 0 none */
	uint8_t *leaf_unit;		/* pprof of a stream: node -> unit + 1 */
	size_t cap_leaf_unit;
	/* pprof of a stream: weights apart by kind and labels, keyed by
	 * (leaf, kind, the label values' ids in pp_strings) */
	struct cpa_stacktab *pp_keys;
	struct cpa_strtab *pp_strings;
	uint64_t *pp_weight;
	size_t cap_pp_weight;
	struct timed *timed;
	size_t ntimed, captimed;
	/* speedscope: a profile per process or thread, ids from 1 */
	struct speedscope_group *groups;
	uint32_t ngroups;
	size_t capgroups;
	struct cpa_htab *group_index;	/* (pid, tid) -> group id */
};

/* input.c */
int input_read(struct profile *p, const struct render_opts *o,
	       bool keep_time);
void profile_free(struct profile *p);

/* flamechart.c: rebuilds p->tree in time order from p->timed */
void flamechart_build(struct profile *p);

/* units.c */
const char *unit_countname(enum cpa_unit unit);
/* "1,234 samples", "12.5 ms", "4,096 bytes" */
void format_value(char *buf, size_t len, uint64_t v, enum cpa_unit unit,
		  const char *countname);
/* Frame name without its _[k]/_[j]/_[i]/_[w] annotation: the length. */
uint32_t strip_annotation(const char *name, uint32_t len);

/* palette.c */
bool palette_valid(const char *name);
const char *palette_default(enum cpa_unit unit);
/* "rgb(r,g,b)" for a frame, into buf (at least 24 bytes) */
void palette_color(char *buf, const char *palette, bool hash,
		   const char *name, uint32_t len);
void palette_diff(char *buf, int64_t delta, uint64_t maxdelta, bool negate);
const char *palette_list(void);

/* svg.c: the geometry and chrome shared by svg and html */
struct layout {
	unsigned width, height;		/* image, px */
	unsigned fh;			/* frame height */
	double fontsize, fontwidth;
	double xpad, ypad1, ypad2;	/* ypad1 includes a subtitle's room */
	uint64_t total;			/* root weight */
	double per;			/* px per unit of weight */
	double minw;			/* narrowest weight drawn */
	uint32_t maxdepth;		/* of frames drawn */
	uint64_t maxdelta;		/* differential: largest |self change| */
	const char *palette;
	const char *countname;		/* NULL: the unit's own */
	const char *title;
	char title_buf[256];		/* a title with " (estimated)" */
};
void layout_init(struct layout *l, const struct profile *p,
		 const struct render_opts *o);
/* <defs>, <style>, background, title, buttons and status lines */
void svg_chrome(FILE *f, const struct layout *l, const struct render_opts *o);
/* "var cpaConfig = {...};" for flame.js */
void svg_config(FILE *f, const struct layout *l, const struct profile *p,
		const struct render_opts *o);

/* output formats; each returns 0 or -1 after reporting the error */
int svg_write(FILE *f, struct profile *p, const struct render_opts *o);
int html_write(FILE *f, struct profile *p, const struct render_opts *o);
int text_write(FILE *f, struct profile *p, const struct render_opts *o);
int folded_write(FILE *f, struct profile *p, const struct render_opts *o);
int pprof_write(int fd, struct profile *p, const struct render_opts *o);
int speedscope_write(FILE *f, struct profile *p, const struct render_opts *o);

/* speedscope.c: the profile (process or thread) a stream sample goes to */
uint32_t speedscope_group(struct profile *p, const struct render_opts *o,
			  const struct cpa_dict *d, const struct cpa_sample *s);
void speedscope_free(struct profile *p);

#endif
