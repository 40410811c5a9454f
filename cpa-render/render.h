/* SPDX-License-Identifier: MIT */
/*
 * What cpa-render's stages share: the options, the profile that input
 * builds and the output formats draw, and the output formats, each an
 * accumulator of what it keeps of a stream beyond the merged tree and a
 * writer (struct render_format).
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

enum render_format_id {
	FORMAT_SVG,
	FORMAT_HTML,
	FORMAT_PPROF,
	FORMAT_TEXT,
	FORMAT_FOLDED,
	FORMAT_SPEEDSCOPE,
};

struct render_opts {
	enum render_format_id format;
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
	/* several units (byunit.c) */
	bool unit_picked;		/* only unit_pick's samples; else the
					 * first unit seen */
	enum cpa_unit unit_pick;
	const char *unit_files;		/* other units' graphs: NAME.UNIT.EXT */
	bool input_again;		/* read input_fd from input_off instead */
	int input_fd;
	uint64_t input_off;
	/* --tui: the terminal UI (tui.h) */
	bool tui;
	bool follow;			/* new windows as the store commits */
	uint64_t tui_from, tui_to;	/* the history; 0 the store's own */
	uint64_t tui_last;		/* or the last so long up to now */
};

struct render_format;

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
	uint32_t units_seen;		/* bit per enum cpa_unit in the input */
	/* the output format, and what it keeps of a stream (its own) */
	const struct render_format *format;
	void *acc;
};

/*
 * How a format holds a profile of several units (byunit.c decides and
 * runs it; a stream says each sample's unit by its kind):
 *   UNITS_GRAPHS    one graph per unit: the lowest unit's (samples, then
 *                   ns, count, bytes, pages) in the output, each other's
 *                   in NAME.UNIT.EXT beside it (svg, html, speedscope)
 *   UNITS_SECTIONS  one report per unit, one after another (text)
 *   UNITS_MARKED    one profile, each kind under its root marker (folded)
 *   UNITS_COLUMNS   one profile, a column per unit, a stack keeping to one
 *                   (pprof's sample types)
 */
enum render_units {
	UNITS_GRAPHS = 0,
	UNITS_SECTIONS,
	UNITS_MARKED,
	UNITS_COLUMNS,
};

/*
 * An output format. Input merges every sample into the profile's tree;
 * a format that needs more of a stream (each sample's time, its labels,
 * a unit per stack) keeps it in its accumulator, which input feeds
 * through these calls, any of which may be NULL:
 *
 *   new     the accumulator, before the input is read; NULL (or a NULL
 *           accumulator) keeps nothing, and the others are not called
 *   entry   a stream sample of a stack, kind and label set not seen yet,
 *           at leaf: what the format keeps for all of them (a pprof key,
 *           a speedscope profile) into *tag, handed back to sample; 0, or
 *           -1 with err set ("byte N: ...") to refuse the input
 *   sample  each stream sample once merged (or, flagged free, not: its
 *           weight is then taken off at the end)
 *   finish  the stream read to its end, frees netted in the tree
 *   free    the accumulator
 *
 * Folded text feeds no accumulator: the tree is all it has. Then a write
 * writes the profile, to a stream (write) or to a file descriptor
 * (write_fd); each returns 0 or -1 after reporting the error.
 */
struct render_format {
	const char *name;
	/* samples that differ in any label are kept apart (the format keeps
	 * each sample's labels), whatever --labels draws */
	bool every_label;
	/* several units: UNITS_COLUMNS has the accumulator's entry check
	 * that a stack keeps to one */
	enum render_units units;
	void *(*new)(const struct render_opts *o);
	int (*entry)(void *acc, const struct cpa_dict *d,
		     const struct cpa_sample *s, uint32_t leaf, uint32_t *tag,
		     uint64_t offset, char *err, size_t errlen);
	void (*sample)(void *acc, const struct cpa_sample *s, uint32_t leaf,
		       uint32_t tag);
	void (*finish)(void *acc, struct profile *p);
	void (*free)(void *acc);
	int (*write)(FILE *f, struct profile *p, const struct render_opts *o);
	int (*write_fd)(int fd, struct profile *p,
			const struct render_opts *o);
};

extern const struct render_format svg_format, html_format, text_format,
	folded_format, pprof_format, speedscope_format;
/* The format of o->format. */
const struct render_format *render_format_of(const struct render_opts *o);
/* Writes p in its format to fd: a format that writes streams writes to a
 * FILE on fd, closed with it; one that writes to fd leaves it open. 0, or
 * -1 after reporting the error. */
int render_write(int fd, struct profile *p, const struct render_opts *o);

/* byunit.c: reads the input and writes it, a graph per unit where the
 * format needs one unit. 0, or -1 after reporting the error. */
int render_run(struct render_opts *o);

/* input.c: reads o->input (or stdin) into p, for format: with
 * UNITS_GRAPHS or UNITS_SECTIONS only the samples of one unit
 * (o->unit_pick, else the first seen), noting all in p->units_seen */
int input_read(struct profile *p, const struct render_opts *o,
	       const struct render_format *format);
void profile_free(struct profile *p);

/*
 * timeline.c: samples kept with their times, for the formats that draw
 * time (the html heat map, speedscope, svg --flamechart), in arrival order.
 */
struct timed {
	uint64_t time_ns;
	uint64_t weight;
	uint32_t leaf;			/* node in profile.tree */
	uint32_t group;			/* speedscope: profile id, 0 none */
};

struct timeline {
	struct timed *t;
	size_t n, cap;
};

void timeline_add(struct timeline *tl, uint64_t time_ns, uint64_t weight,
		  uint32_t leaf, uint32_t group);
void timeline_free(struct timeline *tl);
/* the samples sorted by time, arrival order kept among equal times */
void timeline_sort(struct timeline *tl);

/* flamechart.c: rebuilds p's tree in time order from the timeline */
void flamechart_build(struct profile *p, struct timeline *tl);

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

#endif
