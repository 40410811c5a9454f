/* SPDX-License-Identifier: MIT */
/*
 * Reading the stores CPA wrote (cpastore.h says what is read and what is
 * tolerated). Three passes, each over one file: conf when the segment is
 * listed, stack.bin's frames and records when it is indexed, strmap and
 * idsmap when a reader opens it; a block then decodes the one or two
 * zstd frames its record lies in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "intern.h"
#include "le.h"
#include "log.h"
#include "cpastore.h"

#define HEADER_LEN (2 + 8 + 8 + 8)
#define ENTRY_LEN (4 + 8)
#define LOST_ID "<# STRMAP LOST ID #>"

static uint64_t local_midnight_ns(int y, int mo, int d)
{
	struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			.tm_isdst = -1};
	time_t t = mktime(&tm);
	return t < 0 ? 0 : (uint64_t)t * 1000000000ull;
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool cpa_cpastore_day_name(const char *name, uint64_t *day_ns)
{
	/* cpa_YYMMDD, then nothing or _start_HHMMSS (CPA's same-day
	 * restarts) */
	if (strncmp(name, "cpa_", 4) || strlen(name) < 10 ||
	    !digits(name + 4, 6))
		return false;
	const char *rest = name + 10;
	if (*rest && (strncmp(rest, "_start_", 7) || strlen(rest) != 13 ||
		      !digits(rest + 7, 6)))
		return false;
	int y = (name[4] - '0') * 10 + name[5] - '0';
	int mo = (name[6] - '0') * 10 + name[7] - '0';
	int d = (name[8] - '0') * 10 + name[9] - '0';
	if (mo < 1 || mo > 12 || d < 1 || d > 31)
		return false;
	if (day_ns)
		*day_ns = local_midnight_ns(2000 + y, mo, d);
	return true;
}

static const char *const cpa_files[] = {"conf", "strmap", "idsmap",
					"stack.bin"};

bool cpa_cpastore_is_day(const char *path)
{
	char file[4200];
	struct stat st;
	for (size_t i = 0; i < 4; i++) {
		snprintf(file, sizeof(file), "%s/%s", path, cpa_files[i]);
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode))
			return true;
	}
	return false;
}

/* ---- conf ---------------------------------------------------------------- */

static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' ||
			   (*e)[-1] == '\r'))
		(*e)--;
}

static uint32_t conf_u32(const char *v, size_t n)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || x > UINT32_MAX / 10)
			return 0;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	return x > UINT32_MAX ? 0 : (uint32_t)x;
}

int cpa_cpastore_conf_parse(const char *text, size_t len,
			    struct cpa_cpastore_conf *c, char *err,
			    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *colon = memchr(p, ':', (size_t)(le - p));
		if (colon) {
			const char *ks = p, *ke = colon, *vs = colon + 1, *ve = le;
			trim(&ks, &ke);
			trim(&vs, &ve);
			size_t kn = (size_t)(ke - ks), vn = (size_t)(ve - vs);
#define KEY(k) (kn == sizeof(k) - 1 && !memcmp(ks, k, kn))
			if (KEY("version"))
				snprintf(c->version, sizeof(c->version), "%.*s",
					 (int)vn, vs);
			else if (KEY("freq"))
				c->freq = conf_u32(vs, vn);
			else if (KEY("cpu_num"))
				c->cpu_num = conf_u32(vs, vn);
			else if (KEY("record_interval"))
				c->record_interval = conf_u32(vs, vn);
			else if (KEY("kernel_stack"))
				c->kernel_stack = conf_u32(vs, vn);
			else if (KEY("record_env_name"))
				snprintf(c->record_env_name,
					 sizeof(c->record_env_name), "%.*s",
					 (int)vn, vs);
#undef KEY
			/* readers ignore keys they do not know (CPA's rule) */
		}
		p = le + 1;
	}
	/* the layout is version 1's; a conf of no version is CPA's too */
	if (c->version[0] && strncmp(c->version, "1.", 2) &&
	    strcmp(c->version, "1"))
		return cpa_fail(err, errlen, "CPA store version %s; this build "
				"reads CPA's version 1 stores", c->version);
	return 0;
}

/* ---- stack.bin: frames and records ------------------------------------------ */

static void push_frame(struct cpa_cpastore_index *ix, uint64_t comp,
		       uint64_t raw)
{
	CPA_GROW(ix->frames, ix->capframes, ix->nframes + 1);
	ix->frames[ix->nframes++] = (struct cpa_cpastore_frame){comp, raw};
}

/* The record parser, fed decompressed bytes in whatever pieces they come. */
struct rec_parser {
	uint8_t head[HEADER_LEN];
	size_t have;		/* header bytes, or footer bytes in stage 2 */
	uint64_t skip;		/* entry bytes left to skip */
	int stage;		/* 0 header, 1 entries, 2 footer, 3 stopped */
	uint64_t rec_off;	/* raw offset of the record being read */
	struct cpa_cpastore_record cur;
};

static void feed(struct rec_parser *rp, struct cpa_cpastore_index *ix,
		 const uint8_t *p, size_t n, uint64_t raw_off)
{
	size_t i = 0;
	while (i < n && rp->stage != 3) {
		if (rp->stage == 0) {
			if (!rp->have)
				rp->rec_off = raw_off + i;
			size_t take = HEADER_LEN - rp->have;
			if (take > n - i)
				take = n - i;
			memcpy(rp->head + rp->have, p + i, take);
			rp->have += take;
			i += take;
			if (rp->have < HEADER_LEN)
				break;
			rp->have = 0;
			if (rp->head[0] != 0xFA || rp->head[1] != 0xFB) {
				snprintf(ix->torn_why, sizeof(ix->torn_why),
					 "decompressed byte %llu: no record "
					 "header (FA FB)",
					 (unsigned long long)rp->rec_off);
				rp->stage = 3;
				break;
			}
			rp->cur.start_ms = cpa_get_le64(rp->head + 2);
			rp->cur.end_ms = cpa_get_le64(rp->head + 10);
			rp->cur.n = cpa_get_le64(rp->head + 18);
			rp->cur.raw_off = rp->rec_off + HEADER_LEN;
			/* a record is one window of one host: more entries
			 * than 2^32 is damage */
			if (rp->cur.n > UINT32_MAX) {
				snprintf(ix->torn_why, sizeof(ix->torn_why),
					 "decompressed byte %llu: a record of "
					 "%llu entries",
					 (unsigned long long)rp->rec_off,
					 (unsigned long long)rp->cur.n);
				rp->stage = 3;
				break;
			}
			rp->skip = rp->cur.n * ENTRY_LEN;
			rp->stage = 1;
		}
		if (rp->stage == 1) {
			uint64_t take = rp->skip < n - i ? rp->skip : n - i;
			rp->skip -= take;
			i += take;
			if (rp->skip)
				break;
			rp->stage = 2;
		}
		if (rp->stage == 2) {
			while (i < n && rp->have < 2)
				rp->head[rp->have++] = p[i++];
			if (rp->have < 2)
				break;
			rp->have = 0;
			if (rp->head[0] != 0xFC || rp->head[1] != 0xFD) {
				snprintf(ix->torn_why, sizeof(ix->torn_why),
					 "decompressed byte %llu: record "
					 "without its footer (FC FD)",
					 (unsigned long long)rp->rec_off);
				rp->stage = 3;
				break;
			}
			rp->stage = 0;
			if (!rp->cur.n && rp->cur.start_ms == rp->cur.end_ms) {
				ix->guards++;	/* the time wheel's guard */
				continue;
			}
			CPA_GROW(ix->rec, ix->caprec, ix->nrec + 1);
			ix->rec[ix->nrec++] = rp->cur;
		}
	}
}

int cpa_cpastore_index_stack(const uint8_t *comp, size_t len,
			     struct cpa_cpastore_index *ix, char *err,
			     size_t errlen)
{
	memset(ix, 0, sizeof(*ix));
	if (!len)
		return 0;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	if (!dctx)
		return cpa_fail(err, errlen, "zstd: out of memory");
	size_t outcap = ZSTD_DStreamOutSize();
	uint8_t *out = cpa_malloc(outcap);
	struct rec_parser rp = {0};
	ZSTD_inBuffer in = {comp, len, 0};
	uint64_t frame_start = 0;
	bool in_frame = false;
	int ret = 0;
	while (rp.stage != 3) {
		if (!in_frame) {
			if (in.pos >= in.size)
				break;
			frame_start = in.pos;
			push_frame(ix, in.pos, ix->raw_len);
			in_frame = true;
		}
		ZSTD_outBuffer o = {out, outcap, 0};
		size_t r = ZSTD_decompressStream(dctx, &o, &in);
		if (ZSTD_isError(r)) {
			if (frame_start == 0 && ix->raw_len == 0) {
				ret = cpa_fail(err, errlen, "byte 0: not zstd "
					       "(%s)", ZSTD_getErrorName(r));
				break;
			}
			snprintf(ix->torn_why, sizeof(ix->torn_why),
				 "byte %llu: zstd frame damaged (%s)",
				 (unsigned long long)frame_start,
				 ZSTD_getErrorName(r));
			ix->nframes--;	/* trusted only up to its start */
			break;
		}
		feed(&rp, ix, out, o.pos, ix->raw_len);
		ix->raw_len += o.pos;
		if (r == 0) {
			in_frame = false;
			ix->comp_good = in.pos;
			continue;
		}
		if (in.pos >= in.size && o.pos < o.size) {
			/* no input left, the frame unfinished: a write cut
			 * short by a crash or still under way */
			snprintf(ix->torn_why, sizeof(ix->torn_why),
				 "byte %llu: zstd frame cut short",
				 (unsigned long long)frame_start);
			break;
		}
	}
	if (!ret && !ix->torn_why[0] && (rp.stage != 0 || rp.have))
		snprintf(ix->torn_why, sizeof(ix->torn_why),
			 "decompressed byte %llu: record cut short",
			 (unsigned long long)rp.rec_off);
	free(out);
	ZSTD_freeDCtx(dctx);
	return ret;
}

void cpa_cpastore_index_free(struct cpa_cpastore_index *ix)
{
	free(ix->frames);
	free(ix->rec);
	memset(ix, 0, sizeof(*ix));
}

/* ---- strmap and idsmap ----------------------------------------------------- */

/* Decompresses comp into b, keeping what precedes a damaged or cut frame
 * (a torn tail); 0, or -1 with err when comp is not zstd at all. */
static int unzstd(const uint8_t *comp, size_t len, struct cpa_buf *b,
		  char *err, size_t errlen)
{
	b->len = 0;
	if (!len)
		return 0;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	if (!dctx)
		return cpa_fail(err, errlen, "zstd: out of memory");
	ZSTD_inBuffer in = {comp, len, 0};
	int ret = 0;
	for (;;) {
		cpa_buf_reserve(b, 1 << 16);
		ZSTD_outBuffer o = {b->p + b->len, b->cap - b->len, 0};
		size_t r = ZSTD_decompressStream(dctx, &o, &in);
		if (ZSTD_isError(r)) {
			if (!b->len && !in.pos)
				ret = cpa_fail(err, errlen, "byte 0: not zstd "
					       "(%s)", ZSTD_getErrorName(r));
			break;
		}
		b->len += o.pos;
		if (b->len > CPA_CPASTORE_TEXT_MAX) {
			ret = cpa_fail(err, errlen, "more than %llu bytes "
				       "decompressed",
				       (unsigned long long)CPA_CPASTORE_TEXT_MAX);
			break;
		}
		if (in.pos >= in.size && (r == 0 || o.pos < o.size))
			break;
	}
	ZSTD_freeDCtx(dctx);
	return ret;
}

struct sid_map {
	uint32_t cpa, ours;
};

static int sid_cmp(const void *a, const void *b)
{
	const struct sid_map *x = a, *y = b;
	return x->cpa < y->cpa ? -1 : x->cpa > y->cpa;
}

static int ids_cmp(const void *a, const void *b)
{
	const struct cpa_cpastore_ids *x = a, *y = b;
	return x->ids_id < y->ids_id ? -1 : x->ids_id > y->ids_id;
}

/* A decimal u32 of s[0..n), all of it. */
static bool parse_u32(const char *s, size_t n, uint32_t *v)
{
	if (!n || n > 10 || !digits(s, n))
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++)
		x = x * 10 + (uint64_t)(s[i] - '0');
	if (x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

struct loader {
	struct cpa_store_dict *sd;
	struct cpa_cpastore_dict *cd;
	struct sid_map *sids;
	size_t nsids, capsids;
	struct cpa_strtab *extra;	/* names made here: comm, env, ... */
	uint32_t *extra_ids;		/* their dictionary ids */
	size_t capextra;
	struct cpa_stacktab *stacks, *lsets;	/* and their ids in sd: */
	uint32_t *stack_ids, *lset_ids;
	size_t capstack, caplset, capids;
	uint32_t lost_id;
};

static void bad_line(struct loader *l, const char *file, size_t line,
		     const char *why)
{
	if (!l->cd->bad_lines++)
		snprintf(l->cd->first_bad, sizeof(l->cd->first_bad),
			 "%s: line %zu: %s", file, line, why);
}

/* Dictionary id of a name made here (not one of strmap's). */
static uint32_t extra(struct loader *l, const char *s, size_t n)
{
	bool is_new;
	uint32_t k = cpa_strtab_intern(l->extra, s, n, &is_new);
	if (is_new) {
		CPA_GROW(l->extra_ids, l->capextra, (size_t)k + 1);
		l->extra_ids[k] = cpa_dict_add_string(&l->sd->d, s,
						      (uint32_t)n);
	}
	return l->extra_ids[k];
}

static uint32_t our_sid(const struct loader *l, uint32_t cpa)
{
	size_t lo = 0, hi = l->nsids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->sids[mid].cpa < cpa)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->nsids && l->sids[lo].cpa == cpa ? l->sids[lo].ours : 0;
}

/*
 * The lines of strmap and idsmap, "TEXT ID\n": the next whole line at
 * *p (a last line without its newline is the torn tail, not a line),
 * its text [*p, *sp) and its id; false at the end. *p moves past it.
 * A line without a blank and a decimal id after its last blank has
 * *sp NULL.
 */
static bool next_line(const char **p, const char *end, const char **text,
		      const char **sp, uint32_t *id)
{
	const char *nl = *p < end ? memchr(*p, '\n', (size_t)(end - *p)) : NULL;
	if (!nl)
		return false;
	const char *le = nl;
	if (le > *p && le[-1] == '\r')
		le--;
	*text = *p;
	*sp = NULL;
	for (const char *q = le; q > *p; q--)
		if (q[-1] == ' ') {
			*sp = q - 1;
			break;
		}
	if (*sp && !parse_u32(*sp + 1, (size_t)(le - *sp - 1), id))
		*sp = NULL;
	*p = nl + 1;
	return true;
}

static void load_strmap(struct loader *l, const char *t, size_t len)
{
	size_t line = 0;
	const char *p = t, *text, *sp;
	uint32_t id;
	while (next_line(&p, t + len, &text, &sp, &id)) {
		line++;
		if (!sp) {
			bad_line(l, "strmap", line, "no ' ID' at its end");
			continue;
		}
		CPA_GROW(l->sids, l->capsids, l->nsids + 1);
		l->sids[l->nsids++] = (struct sid_map){
			id, cpa_dict_add_string(&l->sd->d, text,
						(uint32_t)(sp - text))};
	}
	/* by CPA id, the first of a repeated id kept */
	if (l->nsids)
		qsort(l->sids, l->nsids, sizeof(*l->sids), sid_cmp);
	size_t k = 0;
	for (size_t i = 0; i < l->nsids; i++)
		if (!k || l->sids[k - 1].cpa != l->sids[i].cpa)
			l->sids[k++] = l->sids[i];
	l->nsids = k;
}

/* CPA's metadata string into a label set; false when it is not one. */
static bool parse_meta(struct loader *l, const char *s, size_t n,
		       struct cpa_store_labelset *ls)
{
	const char *bar = memchr(s, '|', n);
	if (!bar)
		return false;
	size_t base = (size_t)(bar - s);
	size_t dash[3], nd = 0;
	for (size_t i = base; i > 0 && nd < 3; i--)
		if (s[i - 1] == '-')
			dash[nd++] = i - 1;
	/* dash[0] before pid, dash[1] before cpu, dash[2] before cgroup */
	if (nd != 3 || dash[2] < 30)
		return false;
	uint32_t pid, cpu, cg;
	if (!parse_u32(s + dash[0] + 1, base - dash[0] - 1, &pid) ||
	    !parse_u32(s + dash[1] + 1, dash[0] - dash[1] - 1, &cpu) ||
	    !parse_u32(s + dash[2] + 1, dash[1] - dash[2] - 1, &cg))
		return false;
	/* CPA prints the cgroup id with %d: one past 2^31 comes out
	 * negative ("...--N-CPU-PID"), its low 32 bits the id's */
	uint64_t cgroup = cg;
	if (dash[2] > 30 && s[dash[2] - 1] == '-')
		cgroup = (uint32_t)(0u - cg);
	size_t ce = 15, ge = 30;
	while (ce > 0 && s[ce - 1] == ' ')
		ce--;
	while (ge > 15 && s[ge - 1] == ' ')
		ge--;
	memset(ls, 0, sizeof(*ls));
	ls->pid = pid;
	ls->cpu = cpu;
	ls->cgroup_id = cgroup;
	ls->comm = ge > 15 ? extra(l, s + 15, ge - 15) : 0;
	ls->thread = ce ? extra(l, s, ce) : 0;
	size_t en = n - base - 1;
	ls->env = en ? extra(l, bar + 1, en) : 0;
	return true;
}

/* The event kind a CPA marker frame stands for, or -1. */
static int marker_kind(const char *s)
{
	if (!strncmp(s, "<# OFFCPU SAMPLE: (", 19))
		return s[19] == 'R' ? CPA_KIND_SCHED_PREEMPTED
				    : CPA_KIND_OFFCPU_BLOCKED;
	if (!strncmp(s, "<# IRQOFF SAMPLE ON CPU ", 24))
		return CPA_KIND_IRQOFF;
	return -1;
}

static uint32_t labelset_id(struct loader *l, const struct cpa_store_labelset *ls)
{
	uint32_t key[8] = {ls->comm, ls->thread, ls->env, ls->pid, ls->cpu,
			   (uint32_t)ls->cgroup_id,
			   (uint32_t)(ls->cgroup_id >> 32), ls->kind};
	bool is_new;
	uint32_t k = cpa_stacktab_intern(l->lsets, key, 8, &is_new);
	if (is_new) {
		struct cpa_store_dict *sd = l->sd;
		CPA_GROW(l->lset_ids, l->caplset, (size_t)k + 1);
		CPA_GROW(sd->labelsets, sd->caplabelsets,
			 (size_t)sd->nlabelsets + 1);
		sd->labelsets[sd->nlabelsets] = *ls;
		l->lset_ids[k] = sd->nlabelsets++;
	}
	return l->lset_ids[k];
}

static void load_idsmap(struct loader *l, const char *t, size_t len)
{
	uint32_t *sids = NULL, *frames = NULL;
	size_t capsids = 0, capframes = 0, line = 0;
	const char *p = t, *text, *sp;
	uint32_t ids_id;
	while (next_line(&p, t + len, &text, &sp, &ids_id)) {
		line++;
		size_t n = 0;
		bool ok = sp != NULL;
		for (const char *q = text; ok && q < sp;) {
			const char *semi = memchr(q, ';', (size_t)(sp - q));
			uint32_t v;
			if (!semi || !parse_u32(q, (size_t)(semi - q), &v)) {
				ok = false;
				break;
			}
			CPA_GROW(sids, capsids, n + 1);
			sids[n++] = v;
			q = semi + 1;
		}
		if (!ok || !n) {
			bad_line(l, "idsmap", line,
				 "not 'SID;SID;...; IDS_ID'");
			continue;
		}
		/* the first id: CPA's metadata, the label set */
		struct cpa_store_labelset ls = {0};
		uint32_t first = our_sid(l, sids[0]);
		const char *ms = first ? cpa_dict_string(&l->sd->d, first, NULL)
				       : NULL;
		size_t i = 1;
		CPA_GROW(frames, capframes, n + 1);
		uint32_t nf = 0;
		if (ms && ms[0] == '#')
			continue;	/* CPA's show drops these stacks */
		if (!ms || !parse_meta(l, ms, strlen(ms), &ls))
			i = 0;	/* not metadata: a frame, as CPA shows it */
		for (; i < n; i++) {
			uint32_t f = our_sid(l, sids[i]);
			if (!f) {
				l->cd->lost_strings++;
				if (!l->lost_id)
					l->lost_id = extra(l, LOST_ID,
							   strlen(LOST_ID));
				f = l->lost_id;
			} else if (!nf && i <= 3) {
				int k = marker_kind(cpa_dict_string(
					&l->sd->d, f, NULL));
				if (k >= 0) {
					ls.kind = (uint16_t)k;
					continue;
				}
			}
			frames[nf++] = f;
		}
		bool is_new;
		uint32_t k = cpa_stacktab_intern(l->stacks, frames, nf,
						 &is_new);
		if (is_new) {
			CPA_GROW(l->stack_ids, l->capstack, (size_t)k + 1);
			l->stack_ids[k] = cpa_dict_add_stack(&l->sd->d, frames,
							     nf);
		}
		uint32_t st = l->stack_ids[k];
		CPA_GROW(l->cd->ids, l->capids, l->cd->nids + 1);
		l->cd->ids[l->cd->nids++] = (struct cpa_cpastore_ids){
			ids_id, labelset_id(l, &ls), st};
	}
	free(sids);
	free(frames);
	if (l->cd->nids)
		qsort(l->cd->ids, l->cd->nids, sizeof(*l->cd->ids), ids_cmp);
	size_t k = 0;
	for (size_t i = 0; i < l->cd->nids; i++)
		if (!k || l->cd->ids[k - 1].ids_id != l->cd->ids[i].ids_id)
			l->cd->ids[k++] = l->cd->ids[i];
	l->cd->nids = k;
}

int cpa_cpastore_dict_load(const uint8_t *strmap, size_t strmap_len,
			   const uint8_t *idsmap, size_t idsmap_len,
			   struct cpa_store_dict *sd,
			   struct cpa_cpastore_dict *cd, char *err,
			   size_t errlen)
{
	memset(cd, 0, sizeof(*cd));
	struct cpa_buf b = {0};
	char why[160];
	if (unzstd(strmap, strmap_len, &b, why, sizeof(why)) < 0) {
		cpa_buf_free(&b);
		return cpa_fail(err, errlen, "strmap: %s", why);
	}
	struct loader l = {.sd = sd, .cd = cd, .extra = cpa_strtab_new(),
			   .stacks = cpa_stacktab_new(),
			   .lsets = cpa_stacktab_new()};
	load_strmap(&l, (const char *)b.p, b.len);
	int ret = 0;
	if (unzstd(idsmap, idsmap_len, &b, why, sizeof(why)) < 0)
		ret = cpa_fail(err, errlen, "idsmap: %s", why);
	else
		load_idsmap(&l, (const char *)b.p, b.len);
	cpa_buf_free(&b);
	free(l.sids);
	free(l.extra_ids);
	free(l.stack_ids);
	free(l.lset_ids);
	cpa_strtab_free(l.extra);
	cpa_stacktab_free(l.stacks);
	cpa_stacktab_free(l.lsets);
	return ret;
}

void cpa_cpastore_dict_free(struct cpa_cpastore_dict *cd)
{
	free(cd->ids);
	memset(cd, 0, sizeof(*cd));
}

/* ---- the segment -------------------------------------------------------------- */


/* Maps path read-only (NULL for an empty file). 0 or -1 with err. */
static int map_file(const char *path, const uint8_t **map, size_t *len,
		    uint64_t *bytes, char *err, size_t errlen)
{
	*map = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cpa_fail(err, errlen, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cpa_fail(err, errlen, "%s: not a regular file", path);
	}
	if (bytes)
		*bytes += (uint64_t)st.st_size;
	if (st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			       fd, 0);
		if (m == MAP_FAILED) {
			close(fd);
			return cpa_fail(err, errlen, "%s: %s", path,
					strerror(errno));
		}
		*map = m;
		*len = (size_t)st.st_size;
	}
	close(fd);
	return 0;
}

static void unmap(const uint8_t *map, size_t len)
{
	if (map)
		munmap((void *)map, len);
}

/* A time of the store: its day plus ms, on the next day when it lies
 * behind the first record's (cpastore.h). */
static uint64_t at_ns(const struct cpa_cpastore *cs, uint64_t ms,
		      uint64_t first_ms)
{
	if (ms < first_ms)
		ms += CPA_CPASTORE_DAY_MS;
	if (ms > 40 * CPA_CPASTORE_DAY_MS)
		ms = 40 * CPA_CPASTORE_DAY_MS;	/* damage: bounded, not wrapped */
	return cs->day_ns + ms * 1000000ull;
}

int cpa_cpastore_info_read(const char *path, struct cpa_segment_info *si,
			   char *err, size_t errlen)
{
	memset(si, 0, sizeof(*si));
	si->path = cpa_strdup(path);
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	snprintf(si->name, sizeof(si->name), "%s", name);

	char file[4200];
	struct stat st;
	for (size_t i = 0; i < 4; i++) {
		snprintf(file, sizeof(file), "%s/%s", path, cpa_files[i]);
		if (stat(file, &st) < 0 || !S_ISREG(st.st_mode))
			return cpa_fail(err, errlen, "%s: a CPA store without "
					"%s (CPA writes conf, strmap, idsmap "
					"and stack.bin)", path, cpa_files[i]);
	}
	struct cpa_cpastore *cs = cpa_calloc(1, sizeof(*cs));
	si->cpa = cs;

	struct cpa_buf b = {0};
	snprintf(file, sizeof(file), "%s/conf", path);
	int r = cpa_buf_read_file(&b, file, CPA_STORE_META_MAX);
	char why[200];
	if (r < 0) {
		cpa_buf_free(&b);
		return cpa_fail(err, errlen, "%s: %s", file,
				r == -EFBIG ? "larger than a CPA conf can be"
					    : strerror(-r));
	}
	r = cpa_cpastore_conf_parse((char *)b.p, b.len, &cs->conf, why,
				    sizeof(why));
	cpa_buf_free(&b);
	if (r < 0)
		return cpa_fail(err, errlen, "%s: %s", file, why);
	if (!cpa_cpastore_day_name(name, &cs->day_ns)) {
		/* a copy CPA's --split_path wrote, or a renamed day: the day
		 * conf was written */
		stat(file, &st);
		struct tm tm;
		time_t t = st.st_mtime;
		localtime_r(&t, &tm);
		cs->day_ns = local_midnight_ns(tm.tm_year + 1900, tm.tm_mon + 1,
					       tm.tm_mday);
	}
	uint64_t interval_s = cs->conf.record_interval ? cs->conf.record_interval
						       : 1;
	si->interval_ns = interval_s * 1000000000ull;
	si->start_ns = cs->day_ns;
	si->major = 1;
	if (cs->conf.freq)
		cs->period_ns = 1000000000ull / cs->conf.freq;

	snprintf(file, sizeof(file), "%s/stack.bin", path);
	if (map_file(file, &cs->map, &cs->map_len, &si->bytes, err, errlen) < 0)
		return -1;
	if (cpa_cpastore_index_stack(cs->map, cs->map_len, &cs->ix, why,
				     sizeof(why)) < 0)
		return cpa_fail(err, errlen, "%s: %s", file, why);
	if (cs->ix.torn_why[0]) {
		snprintf(si->torn_why, sizeof(si->torn_why), "stack.bin: %s",
			 cs->ix.torn_why);
		si->torn_bytes = cs->map_len > cs->ix.comp_good
					 ? cs->map_len - cs->ix.comp_good : 1;
	}
	for (size_t i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s/%s", path, cpa_files[i]);
		if (stat(file, &st) == 0)
			si->bytes += (uint64_t)st.st_size;
	}

	/* One index entry per record, one window each. */
	const struct cpa_cpastore_index *ix = &cs->ix;
	si->idx = cpa_calloc(ix->nrec ? ix->nrec : 1, sizeof(*si->idx));
	si->n_idx = ix->nrec;
	uint64_t first_ms = ix->nrec ? ix->rec[0].start_ms : 0;
	for (size_t i = 0; i < ix->nrec; i++) {
		struct cpa_store_index_entry *e = &si->idx[i];
		uint64_t s = at_ns(cs, ix->rec[i].start_ms, first_ms);
		uint64_t t = at_ns(cs, ix->rec[i].end_ms, first_ms);
		if (t <= s)
			t = s + si->interval_ns;
		e->cover_from = e->min_start = s;
		e->cover_to = t;
		e->max_end = t > s + si->interval_ns ? t : s + si->interval_ns;
		e->n_windows = 1;
		if (!si->min_start || s < si->min_start)
			si->min_start = s;
		if (e->max_end > si->max_end)
			si->max_end = e->max_end;
	}

	/* Meta as a segment's, so --list, pprof's period and the stream
	 * meta say what CPA's conf said. */
	char m[1024];
	int mn = snprintf(m, sizeof(m), "format=cpa-%s\nsource=continue-"
			  "profiling-agent\ninterval_ns=%llu\n"
			  "segment_start_ns=%llu\n",
			  cs->conf.version[0] && !strpbrk(cs->conf.version,
							  "=\n")
				  ? cs->conf.version : "1",
			  (unsigned long long)si->interval_ns,
			  (unsigned long long)si->start_ns);
	if (cs->conf.freq)
		mn += snprintf(m + mn, sizeof(m) - (size_t)mn,
			       "stream.frequency=%u\n", cs->conf.freq);
	if (cs->conf.cpu_num)
		mn += snprintf(m + mn, sizeof(m) - (size_t)mn,
			       "stream.cpus=%u\n", cs->conf.cpu_num);
	if (cs->conf.record_env_name[0] &&
	    !strpbrk(cs->conf.record_env_name, "=\n"))
		mn += snprintf(m + mn, sizeof(m) - (size_t)mn,
			       "cpa.record_env_name=%s\n",
			       cs->conf.record_env_name);
	r = cpa_store_meta_parse(m, strlen(m), &si->meta, why, sizeof(why));
	if (r < 0)
		return cpa_fail(err, errlen, "%s: %s", path, why);
	return 0;
}

void cpa_cpastore_close(struct cpa_cpastore *cs)
{
	if (!cs)
		return;
	unmap(cs->map, cs->map_len);
	cpa_cpastore_index_free(&cs->ix);
	free(cs);
}

static int reader_open(struct cpa_segment_reader *r, char *err, size_t errlen)
{
	const struct cpa_segment_info *si = r->si;
	struct cpa_cpastore_reader *cr = r->cpa;
	char file[4200], why[200];
	const uint8_t *sm, *im;
	size_t sl, il;
	snprintf(file, sizeof(file), "%s/strmap", si->path);
	if (map_file(file, &sm, &sl, NULL, err, errlen) < 0)
		return -1;
	snprintf(file, sizeof(file), "%s/idsmap", si->path);
	if (map_file(file, &im, &il, NULL, err, errlen) < 0) {
		unmap(sm, sl);
		return -1;
	}
	int ret = cpa_cpastore_dict_load(sm, sl, im, il, &r->dict, &cr->cd,
					 why, sizeof(why));
	unmap(sm, sl);
	unmap(im, il);
	if (ret < 0)
		return cpa_fail(err, errlen, "%s/%s", si->path, why);
	if (cr->cd.bad_lines)
		cpa_warn("%s: %llu lines skipped, the first: %s", si->path,
			 (unsigned long long)cr->cd.bad_lines,
			 cr->cd.first_bad);
	if (cr->cd.lost_strings)
		cpa_warn("%s: %llu frames name strings strmap lacks (shown as "
			 "%s)", si->path,
			 (unsigned long long)cr->cd.lost_strings, LOST_ID);
	cr->dctx = ZSTD_createDCtx();
	if (!cr->dctx)
		return cpa_fail(err, errlen, "zstd: out of memory");
	return 0;
}

int cpa_cpastore_reader_open(struct cpa_segment_reader *r, char *err,
			     size_t errlen)
{
	r->dict_fd = r->data_fd = -1;
	cpa_store_dict_init(&r->dict);
	r->dict_upto = r->si->n_idx;
	r->cpa = cpa_calloc(1, sizeof(*r->cpa));
	r->cpa->frame = SIZE_MAX;
	if (reader_open(r, err, errlen) < 0) {
		cpa_segment_reader_close(r);	/* as a failed open leaves none */
		return -1;
	}
	return 0;
}

/* Decodes zstd frame f of stack.bin into cr->raw (what of it there is,
 * for the torn last one). 0 or -1 with err. */
static int decode_frame(struct cpa_cpastore_reader *cr,
			const struct cpa_cpastore *cs, size_t f, char *err,
			size_t errlen)
{
	if (cr->frame == f)
		return 0;
	const struct cpa_cpastore_index *ix = &cs->ix;
	uint64_t from = ix->frames[f].comp_off;
	uint64_t to = f + 1 < ix->nframes ? ix->frames[f + 1].comp_off
					  : cs->map_len;
	uint64_t raw = (f + 1 < ix->nframes ? ix->frames[f + 1].raw_off
					    : ix->raw_len) -
		       ix->frames[f].raw_off;
	if (raw > CPA_STORE_BLOCK_MAX)
		return cpa_fail(err, errlen, "byte %llu: a zstd frame of %llu "
				"bytes, more than a block can be",
				(unsigned long long)from,
				(unsigned long long)raw);
	cr->frame = SIZE_MAX;
	cr->raw.len = 0;
	cpa_buf_reserve(&cr->raw, (size_t)raw + 1);
	ZSTD_DCtx_reset(cr->dctx, ZSTD_reset_session_only);
	ZSTD_inBuffer in = {cs->map + from, (size_t)(to - from), 0};
	while (cr->raw.len < raw) {
		ZSTD_outBuffer o = {cr->raw.p + cr->raw.len,
				    (size_t)raw - cr->raw.len, 0};
		size_t z = ZSTD_decompressStream(cr->dctx, &o, &in);
		cr->raw.len += o.pos;
		if (ZSTD_isError(z))
			return cpa_fail(err, errlen, "byte %llu: zstd: %s",
					(unsigned long long)from,
					ZSTD_getErrorName(z));
		if (!o.pos && in.pos >= in.size)
			break;
	}
	if (cr->raw.len < raw)
		return cpa_fail(err, errlen, "byte %llu: the zstd frame changed "
				"since it was indexed",
				(unsigned long long)from);
	cr->frame = f;
	return 0;
}

/* Copies raw stack.bin bytes [off, off + len) into out. */
static int raw_bytes(struct cpa_cpastore_reader *cr,
		     const struct cpa_cpastore *cs, uint64_t off, uint64_t len,
		     struct cpa_buf *out, char *err, size_t errlen)
{
	const struct cpa_cpastore_index *ix = &cs->ix;
	out->len = 0;
	cpa_buf_reserve(out, (size_t)len + 1);
	/* the last frame starting at or before off */
	size_t lo = 0, hi = ix->nframes;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->frames[mid].raw_off <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t f = lo; len && f < ix->nframes; f++) {
		if (decode_frame(cr, cs, f, err, errlen) < 0)
			return -1;
		uint64_t base = ix->frames[f].raw_off;
		if (off < base || off - base >= cr->raw.len)
			continue;
		uint64_t take = cr->raw.len - (off - base);
		if (take > len)
			take = len;
		memcpy(out->p + out->len, cr->raw.p + (off - base), take);
		out->len += (size_t)take;
		off += take;
		len -= take;
	}
	if (len)
		return cpa_fail(err, errlen, "decompressed byte %llu: past the "
				"frames indexed", (unsigned long long)off);
	return 0;
}

static const struct cpa_cpastore_ids *find_ids(const struct cpa_cpastore_dict *cd,
					       uint32_t id)
{
	size_t lo = 0, hi = cd->nids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cd->ids[mid].ids_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cd->nids && cd->ids[lo].ids_id == id ? &cd->ids[lo] : NULL;
}

int cpa_cpastore_reader_block(struct cpa_segment_reader *r, size_t entry,
			      cpa_store_window_fn fn, void *arg, char *err,
			      size_t errlen)
{
	const struct cpa_segment_info *si = r->si;
	const struct cpa_cpastore *cs = si->cpa;
	struct cpa_cpastore_reader *cr = r->cpa;
	if (entry >= si->n_idx || entry >= cs->ix.nrec)
		return cpa_fail(err, errlen, "%s: no block %zu", si->path,
				entry);
	const struct cpa_cpastore_record *rec = &cs->ix.rec[entry];
	struct cpa_buf *b = &r->scratch;
	char why[200];
	if (raw_bytes(cr, cs, rec->raw_off, rec->n * ENTRY_LEN, b, why,
		      sizeof(why)) < 0)
		return cpa_fail(err, errlen, "%s/stack.bin: %s", si->path, why);
	cr->entries.len = 0;
	cpa_buf_reserve(&cr->entries, (size_t)rec->n * sizeof(struct cpa_store_entry) + 1);
	struct cpa_store_entry *e = (struct cpa_store_entry *)cr->entries.p;
	uint32_t n = 0;
	for (uint64_t i = 0; i < rec->n; i++) {
		const uint8_t *p = b->p + i * ENTRY_LEN;
		uint64_t count = cpa_get_le64(p + 4);
		const struct cpa_cpastore_ids *ids = find_ids(&cr->cd,
							      cpa_get_le32(p));
		if (!ids) {
			cr->missing++;
			continue;
		}
		if (!count)
			continue;
		if (r->dict.labelsets[ids->labelset].kind == CPA_KIND_IRQOFF &&
		    cs->period_ns)
			count *= cs->period_ns;	/* periods to ns */
		e[n++] = (struct cpa_store_entry){ids->labelset, ids->stack,
						  count};
	}
	return fn(arg, si->idx[entry].min_start, e, n);
}

void cpa_cpastore_reader_close(struct cpa_segment_reader *r)
{
	struct cpa_cpastore_reader *cr = r->cpa;
	if (!cr)
		return;
	if (cr->missing)
		cpa_warn("%s: %llu counts name stacks idsmap lacks; left out",
			 r->si->path, (unsigned long long)cr->missing);
	cpa_cpastore_dict_free(&cr->cd);
	ZSTD_freeDCtx(cr->dctx);
	cpa_buf_free(&cr->raw);
	cpa_buf_free(&cr->entries);
	free(cr);
	r->cpa = NULL;
}
