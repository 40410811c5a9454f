/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of cpa-unwind's pieces that can be checked exactly without a
 * real process: the DWARF walker over a hand-made CFI table and stack,
 * symbol lookup, perf map parsing, HotSpot's map names and display names.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cpa-unwind/demangle.h"
#include "../../cpa-unwind/jvm.h"
#include "../../cpa-unwind/output.h"
#include "../../cpa-unwind/node.h"
#include "../../cpa-unwind/perfmap.h"
#include "../../cpa-unwind/pycode.h"
#include "../../cpa-unwind/walk.h"
#include "../hostile/hostile.h"
#include "unit.h"

#define MAP_START 0x400000ull
#define STACK 0x7fff0000ull

static struct cfi_row row(uint32_t pc, uint8_t cfa_rule, int32_t cfa_off,
			  uint8_t ra_rule, int16_t ra_off, uint8_t bp_rule,
			  int16_t bp_off)
{
	struct cfi_row r = {
		.pc = pc, .cfa_off = cfa_off, .ra_off = ra_off,
		.bp_off = bp_off, .cfa_rule = cfa_rule, .ra_rule = ra_rule,
		.bp_rule = bp_rule,
	};
	return r;
}

/* A process with one mapping of an object whose CFI (built in setup)
 * describes:
 *   0x1000 leaf A:  CFA = rsp+8,  RA at CFA-8
 *   0x2000 B:       CFA = rsp+16, RA at CFA-8, rbp at CFA-16
 *   0x3000 root C:  CFA = rsp+8,  RA undefined
 *   0x4000 D:       CFA = rsp+0 (no progress)
 *   0x5000 PLT:     CFA = rsp+8 (+8 once rip&15 >= 11), RA at CFA-8
 *   0x6000 E:       CFA = rbp+16, RA at CFA-8, rbp at CFA-16
 * each followed by a gap. */

struct fixture {
	struct proctab *procs;
	struct proc *p;
	struct elf_obj obj;
	struct cfi_row table[16];
	uint64_t stack[64];
};

static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	unsigned n = 0;
	f->table[n++] = row(0x1000, CFI_CFA_SP, 8, CFI_REG_AT_CFA, -8, CFI_REG_SAME, 0);
	f->table[n++] = row(0x1100, CFI_CFA_NONE, 0, 0, 0, 0, 0);
	f->table[n++] = row(0x2000, CFI_CFA_SP, 16, CFI_REG_AT_CFA, -8, CFI_REG_AT_CFA, -16);
	f->table[n++] = row(0x2100, CFI_CFA_NONE, 0, 0, 0, 0, 0);
	f->table[n++] = row(0x3000, CFI_CFA_SP, 8, CFI_REG_UNDEFINED, 0, CFI_REG_SAME, 0);
	f->table[n++] = row(0x3100, CFI_CFA_NONE, 0, 0, 0, 0, 0);
	f->table[n++] = row(0x4000, CFI_CFA_SP, 0, CFI_REG_AT_CFA, 0, CFI_REG_SAME, 0);
	f->table[n++] = row(0x4100, CFI_CFA_NONE, 0, 0, 0, 0, 0);
	f->table[n] = row(0x5000, CFI_CFA_PLT, 8, CFI_REG_AT_CFA, -8, CFI_REG_SAME, 0);
	f->table[n++].flags = 11 << 4;
	f->table[n++] = row(0x5100, CFI_CFA_NONE, 0, 0, 0, 0, 0);
	f->table[n++] = row(0x6000, CFI_CFA_BP, 16, CFI_REG_AT_CFA, -8, CFI_REG_AT_CFA, -16);
	f->table[n++] = row(0x6100, CFI_CFA_NONE, 0, 0, 0, 0, 0);
	f->obj.cfi.base = 0;
	f->obj.cfi.end = 0x6100;
	f->obj.cfi.n = n;
	f->obj.cfi.rows = f->table;
	f->obj.loaded = true;
	f->obj.nsegs = 1;
	f->obj.segs[0] = (struct elf_seg){ .offset = 0, .vaddr = 0, .filesz = 0x10000 };

	f->procs = proctab_new(NULL, 16, 24u << 20);
	f->p = proctab_get(f->procs, 42);
	proc_add_mapping(f->procs, f->p, MAP_START, MAP_START + 0x10000, 0,
			 "/bin/fake", 9, 0, NULL, 0);
	f->p->maps[0].obj = &f->obj;
	f->p->maps[0].state = MAPPING_RESOLVED;
}

static void teardown(struct fixture *f)
{
	f->p->maps[0].obj = NULL;	/* not the cache's */
	proctab_free(f->procs);
}

static void sample(struct fixture *f, struct cpa_raw_sample *s, uint64_t ip,
		   unsigned words, uint64_t bp)
{
	memset(s, 0, sizeof(*s));
	s->pid = 42;
	s->n_regs = 3;
	s->regs[CPA_REG_IP] = ip;
	s->regs[CPA_REG_SP] = STACK;
	s->regs[CPA_REG_BP] = bp;
	s->stack_len = words * 8;
	s->stack = (const uint8_t *)f->stack;
}

static struct walk_result r;

static void test_walk(void)
{
	struct fixture f;
	struct cpa_raw_sample s;

	/* A (leaf) -> B -> C (root): the whole chain, outermost */
	setup(&f);
	f.stack[0] = MAP_START + 0x2050;	/* A's return into B */
	f.stack[1] = 0x1234;			/* B's saved rbp */
	f.stack[2] = MAP_START + 0x3020;	/* B's return into C */
	sample(&f, &s, MAP_START + 0x1010, 8, 0);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_OUTERMOST);
	CHECK(r.n == 3);
	CHECK(r.ips[0] == MAP_START + 0x1010);
	CHECK(r.ips[1] == MAP_START + 0x2050);
	CHECK(r.ips[2] == MAP_START + 0x3020);

	/* the same stack cut after one word: truncated when the capture
	 * says it cut the copy, a bad stack when it did not */
	sample(&f, &s, MAP_START + 0x1010, 1, 0);
	s.flags = CPA_RAW_USER_TRUNCATED;
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_TRUNCATED);
	CHECK(r.n == 2);
	s.flags = 0;
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_BAD_STACK);

	/* a return address outside every mapping is not a frame */
	f.stack[0] = 0xdeadbeef;
	sample(&f, &s, MAP_START + 0x1010, 8, 0);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_NO_MAPPING);
	CHECK(r.n == 1);

	/* a CFA that does not move up ends the walk */
	sample(&f, &s, MAP_START + 0x4010, 8, 0);
	f.stack[0] = MAP_START + 0x4010;
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_NO_PROGRESS);

	/* a PC in a gap and no usable rbp: no CFI */
	sample(&f, &s, MAP_START + 0x1800, 8, 0);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_NO_CFI);
	CHECK(r.n == 1);

	/* ...but with rbp pointing at a frame record, one FP step */
	f.stack[4] = 0;				/* saved rbp: end of chain */
	f.stack[5] = MAP_START + 0x3020;	/* return into C */
	sample(&f, &s, MAP_START + 0x1800, 8, STACK + 32);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.fp_steps == 1);
	/* 0x1800 by the frame record, then C, whose CFI says outermost */
	CHECK(r.n == 2);
	CHECK(r.end == WALK_OUTERMOST);
	CHECK(r.ips[1] == MAP_START + 0x3020);

	/* PLT: before the push (rip & 15 < 11) CFA = rsp+8; after, +16 */
	memset(f.stack, 0, sizeof(f.stack));
	f.stack[0] = MAP_START + 0x3020;
	sample(&f, &s, MAP_START + 0x5004, 8, 0);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.n == 2 && r.ips[1] == MAP_START + 0x3020);
	f.stack[0] = 77;			/* the pushed argument */
	f.stack[1] = MAP_START + 0x3020;
	sample(&f, &s, MAP_START + 0x500b, 8, 0);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.n == 2 && r.ips[1] == MAP_START + 0x3020);

	/* CFA from rbp, and rbp restored for the caller */
	memset(f.stack, 0, sizeof(f.stack));
	f.stack[4] = 0x5555;			/* saved rbp at CFA-16 */
	f.stack[5] = MAP_START + 0x3020;	/* RA at CFA-8 */
	sample(&f, &s, MAP_START + 0x6010, 8, STACK + 32);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_OUTERMOST);
	CHECK(r.n == 2 && r.ips[1] == MAP_START + 0x3020);

	/* no snapshot: just the PC */
	sample(&f, &s, MAP_START + 0x1010, 0, 0);
	walk_dwarf(f.procs, f.p, &s, &r);
	CHECK(r.end == WALK_NO_SNAPSHOT);
	CHECK(r.n == 1);

	/* random registers and stack: any end, never a crash */
	uint64_t x = 88172645463325252ull;
	int out_of_range = 0;
	for (int i = 0; i < 20000; i++) {
		for (unsigned k = 0; k < 64; k++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			f.stack[k] = (k & 1) ? MAP_START + (x & 0xffff)
					     : STACK + (x & 0x3ff);
		}
		sample(&f, &s, MAP_START + (x & 0x7fff), (unsigned)(x >> 58),
		       STACK + (x >> 20 & 0x1ff));
		walk_dwarf(f.procs, f.p, &s, &r);
		if (!(r.n >= 1 && r.n <= WALK_MAX_FRAMES &&
		      r.end < WALK_END_COUNT) && out_of_range++ == 0)
			unit_diag("random walk %d: n %u, end %d", i, r.n, r.end);
	}
	/* every one of the 20000 walks */
	CHECK(out_of_range == 0);
	teardown(&f);
}

static void test_cfi_lookup(void)
{
	struct fixture f;
	setup(&f);
	CHECK(cfi_lookup(&f.obj.cfi, 0x0fff) == NULL);
	CHECK(cfi_lookup(&f.obj.cfi, 0x1000) == &f.table[0]);
	CHECK(cfi_lookup(&f.obj.cfi, 0x10ff) == &f.table[0]);
	CHECK(cfi_lookup(&f.obj.cfi, 0x1100) == NULL);
	CHECK(cfi_lookup(&f.obj.cfi, 0x20ff) == &f.table[2]);
	CHECK(cfi_lookup(&f.obj.cfi, 0x6100) == NULL);
	CHECK(cfi_lookup(&f.obj.cfi, ~0ull) == NULL);
	teardown(&f);
}

static void test_symtab(void)
{
	struct symtab t = { 0 };
	CHECK(symtab_add(&t, 0x2000, 0x10, "sized", 5) == 0);
	CHECK(symtab_add(&t, 0x1000, 0, "unsized", 7) == 0);
	CHECK(symtab_add(&t, 0x2000, 0, "alias", 5) == 0);
	symtab_finish(&t);
	CHECK(t.n == 2);
	CHECK(symtab_lookup(&t, 0x0fff) == -1);
	CHECK_STR(symtab_name(&t, symtab_lookup(&t, 0x1500)), "unsized");
	CHECK_STR(symtab_name(&t, symtab_lookup(&t, 0x200f)), "sized");
	CHECK(symtab_lookup(&t, 0x2010) == -1);	/* past its size */
	symtab_free(&t);
}

static void test_perfmap(void)
{
	struct perfmap m;
	char err[128];
	memset(&m, 0, sizeof(m));
	const char *text = "7f0000001000 40 LazyCompile:*hot /a.js:3\n"
			   "0x7f0000002000 0x20 JS:~cold\r\n"
			   "zz not a line\n"
			   "7f0000003000 10\n"
			   "\n";
	CHECK(perfmap_parse(&m, text, strlen(text), err, sizeof(err)) == 2);
	CHECK(m.bad_lines == 2);
	CHECK_STR(err, "line 3: expected 'START SIZE NAME'");
	CHECK_STR(symtab_name(&m.syms, symtab_lookup(&m.syms, 0x7f000000103f)),
		  "LazyCompile:*hot /a.js:3");
	CHECK_STR(symtab_name(&m.syms, symtab_lookup(&m.syms, 0x7f0000002000)),
		  "JS:~cold");
	CHECK(symtab_lookup(&m.syms, 0x7f0000001040) == -1);
	perfmap_free(&m);
}

/* A map read in pieces, as perfmap_load.c reads one that grows: whole
 * lines only, a bound that cuts it, the newest line winning at an
 * address, and the pieces merged. */
static void test_perfmap_pieces(void)
{
	struct symtab a = { 0 }, b = { 0 }, m;
	uint64_t bad = 0;
	bool cut;
	const char *text = "1000 10 old_at_1000\n"
			   "2000 10 two\n"
			   "junk\n"
			   "1000 10 newer_at_1000\n"
			   "3000 10 half-writ";
	size_t used = perfmap_add_lines(&a, text, strlen(text), 1 << 20, &bad,
					&cut);
	CHECK(used == strlen(text) - strlen("3000 10 half-writ"));
	CHECK(!cut && bad == 1);
	symtab_finish_newest(&a);
	CHECK(a.n == 2);
	CHECK_STR(symtab_name(&a, symtab_lookup(&a, 0x1000)), "newer_at_1000");
	/* the next piece: the rest of the last line, and a new one at 0x2000 */
	const char *more = "3000 10 half-written\n2000 10 two_again\n";
	CHECK(perfmap_add_lines(&b, more, strlen(more), 1 << 20, &bad, &cut) ==
	      strlen(more));
	symtab_finish_newest(&b);
	CHECK(symtab_merge(&m, &a, &b) == 0);
	CHECK(m.n == 3);
	CHECK_STR(symtab_name(&m, symtab_lookup(&m, 0x1008)), "newer_at_1000");
	CHECK_STR(symtab_name(&m, symtab_lookup(&m, 0x2000)), "two_again");
	CHECK_STR(symtab_name(&m, symtab_lookup(&m, 0x300f)), "half-written");
	CHECK(symtab_lookup(&m, 0x3010) == -1);
	symtab_free(&m);
	symtab_free(&b);
	/* a bound: lines stop being added once the table holds that much */
	CHECK(perfmap_add_lines(&b, text, strlen(text), 1, &bad, &cut) > 0);
	CHECK(cut && b.n == 1);
	symtab_free(&b);
	symtab_free(&a);
}

/* --interpreted-frames-native-stack, on the command line or in
 * NODE_OPTIONS, as V8 spells it either way. */
static void test_node_flags(void)
{
	static const char with[] = "node\0--perf-basic-prof\0"
				   "--interpreted_frames_native_stack\0app.js";
	static const char without[] = "node\0--perf-basic-prof\0app.js";
	static const char no[] = "node\0--no-interpreted-frames-native-stack";
	const char *opts = "--max-old-space-size=64 --interpreted-frames-native-stack";
	CHECK(node_has_native_stack(with, sizeof(with), NULL, 0));
	CHECK(!node_has_native_stack(without, sizeof(without), NULL, 0));
	CHECK(!node_has_native_stack(no, sizeof(no), NULL, 0));
	CHECK(node_has_native_stack(without, sizeof(without), opts, strlen(opts)));
	CHECK(!node_has_native_stack(without, sizeof(without), opts, 20));
}

static void check_java(const char *raw, const char *want)
{
	const char *start;
	size_t n = jvm_method_name(raw, strlen(raw), &start);
	char got[256];
	snprintf(got, sizeof(got), "%.*s", (int)n, start);
	CHECK_STR(got, want);
}

/* HotSpot's Compiler.perfmap names: return type, qualified name, the
 * parameters; stubs kept whole. */
static void test_java_names(void)
{
	check_java("long cpatest.JavaChain.hotLeaf(long)",
		   "cpatest.JavaChain.hotLeaf");
	check_java("java.lang.Object jdk.internal.misc.Unsafe."
		   "getReferenceVolatile(java.lang.Object, long)",
		   "jdk.internal.misc.Unsafe.getReferenceVolatile");
	check_java("void a.B$$Lambda$14/0x0000000800c03000.run()",
		   "a.B$$Lambda$14/0x0000000800c03000.run");
	check_java("int[] p.Q.lambda$main$0(java.lang.String[])",
		   "p.Q.lambda$main$0");
	check_java("Interpreter", "Interpreter");
	check_java("StubRoutines (1)", "StubRoutines (1)");
	check_java("Shared Runtime wrong_method_blob",
		   "Shared Runtime wrong_method_blob");
	check_java("noreturn()", "noreturn()");
	check_java("(x.y)", "(x.y)");
}

static void check_name(const char *raw, bool demangle, bool go_short,
		       const char *want)
{
	struct name_opts o = { .demangle = demangle, .go_short = go_short };
	char *got = display_name(raw, &o);
	CHECK_STR(got, want);
	free(got);
}

static void test_names(void)
{
	check_name("_ZN3app3runEl", true, false, "app::run(long)");
	check_name("_ZN3app3runEl", false, false, "_ZN3app3runEl");
	check_name("_ZN3app6detail7level_bIlEET_S2_", true, false,
		   "long app::detail::level_b<long>(long)");
	/* Rust legacy, hash dropped; Rust v0 */
	check_name("_ZN10rust_chain4work3run17h0123456789abcdefE", true, false,
		   "rust_chain::work::run");
	check_name("_RNvNtCs1234_10rust_chain4work3run", true, false,
		   "rust_chain::work::run");
	check_name("__libc_start_main@@GLIBC_2.34", true, false,
		   "__libc_start_main");
	check_name("github.com/acme/svc/handler.(*Server).Serve", true, true,
		   "handler.(*Server).Serve");
	check_name("github.com/acme/svc/handler.(*Server).Serve", true, false,
		   "github.com/acme/svc/handler.(*Server).Serve");
	check_name("runtime.main", true, true, "runtime.main");
	/* the display name is the symbol's own; cleaning it is the
	 * output's job (output_string, lib/base/name.h) */
	check_name("a;b\nc", true, false, "a;b\nc");

	/* every name entering the output comes out clean, the same id
	 * for the same name */
	struct output out;
	struct cpa_labels lb;
	cpa_labels_default(&lb);
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	CHECK(output_init(&out, fd, false, &lb) == 0);
	uint32_t len, id = output_string(&out, "A 999999999999\n", 15);
	CHECK_STR(output_get_string(&out, id, &len), "A 999999999999_");
	CHECK(output_string(&out, "A 999999999999\n", 15) == id);
	CHECK(output_string(&out, "main", 4) != id && out.names_cleaned == 2);
	output_free(&out);
	close(fd);
}

/*
 * The one-pass interpreter (cfi_exec.c) must compile exactly the table
 * libdw's interpretation gives, row for row, on real objects.
 */
static void compare_engines(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		CHECK(fd >= 0);
		return;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct cfi_table fast, ref;
	CHECK(cfi_compile_engine(elf, elf, &fast, CFI_ENGINE_FAST) == 0);
	CHECK(cfi_compile_engine(elf, elf, &ref, CFI_ENGINE_LIBDW) == 0);
	CHECK(fast.n > 0);
	CHECK(fast.n == ref.n && fast.base == ref.base && fast.end == ref.end);
	uint32_t n = fast.n < ref.n ? fast.n : ref.n, bad = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!memcmp(&fast.rows[i], &ref.rows[i], sizeof(fast.rows[i])))
			continue;
		if (bad++ < 3) {
			const struct cfi_row *a = &fast.rows[i], *b = &ref.rows[i];
			fprintf(stderr, "%s: row %u pc 0x%llx: fast %u/%d ra %u/%d bp %u/%d f%x, "
				"libdw pc 0x%llx %u/%d ra %u/%d bp %u/%d f%x\n", path, i,
				(unsigned long long)(fast.base + a->pc), a->cfa_rule, a->cfa_off,
				a->ra_rule, a->ra_off, a->bp_rule, a->bp_off, a->flags,
				(unsigned long long)(ref.base + b->pc), b->cfa_rule, b->cfa_off,
				b->ra_rule, b->ra_off, b->bp_rule, b->bp_off, b->flags);
		}
	}
	CHECK(bad == 0);
	unit_diag("%s: %u rows, %u FDEs, %u through libdw", path, fast.n,
	       fast.fdes, fast.slow_fdes);
	cfi_table_free(&fast);
	cfi_table_free(&ref);
	elf_end(elf);
	close(fd);
}

/* Writes a hostile-elf object (tests/hostile/) to path; false when the
 * generator is not built next to this test. */
static bool hostile(const char *args, const char *path)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "tests/hostile/hostile-elf %s %s", args, path);
	if (access("tests/hostile/hostile-elf", X_OK) != 0 || system(cmd) != 0) {
		fprintf(stderr, "unwind_test: cannot run %s\n", cmd);
		return false;
	}
	return true;
}

static int compile_file(const char *path, struct cfi_table *t, size_t budget,
			bool reference)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	int rc = -1;
	if (elf)
		rc = reference ? cfi_compile_engine(elf, elf, t, CFI_ENGINE_LIBDW)
			       : cfi_compile(elf, elf, t, budget);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * Long CFI programs: one FDE of 100k rows compiles in one pass, no row
 * through libdw (which would re-run the FDE per row: minutes); a table
 * over its budget is refused whole; a remember_state flood is one refused
 * FDE, not a stack of copies.
 */
static void test_hostile_cfi(void)
{
	char dir[] = "/tmp/cpa-unwind-test.XXXXXX", path[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/h.so", dir);
	struct cfi_table t;
	const uint64_t spin = HOSTILE_SPIN_OFFSET;

	CHECK(hostile("--rows 100000", path));
	CHECK(compile_file(path, &t, SIZE_MAX, false) == 0);
	CHECK(t.n > 100000);
	CHECK(t.slow_fdes == 0);
	CHECK(t.refused_fdes == 0);
	const struct cfi_row *at = cfi_lookup(&t, spin);
	CHECK(at && at->cfa_rule == CFI_CFA_SP && at->cfa_off == 8);
	at = cfi_lookup(&t, spin + HOSTILE_SPIN_LEN);
	CHECK(at && at->cfa_rule == CFI_CFA_SP && at->cfa_off == 16);
	at = cfi_lookup(&t, spin + HOSTILE_SPIN_LEN + 99999);
	CHECK(at && at->cfa_rule == CFI_CFA_SP && at->cfa_off == 8);
	cfi_table_free(&t);
	/* 100k rows cost 4 MB while compiling */
	CHECK(compile_file(path, &t, 1u << 20, false) == CFI_OVER_BUDGET);
	CHECK(t.n == 0 && t.rows == NULL);
	cfi_table_free(&t);

	/* past the old 1024-row cap, row for row what libdw says */
	struct cfi_table ref;
	CHECK(hostile("--rows 3000", path));
	CHECK(compile_file(path, &t, SIZE_MAX, false) == 0);
	CHECK(compile_file(path, &ref, 0, true) == 0);
	CHECK(t.n > 3000 && t.n == ref.n && t.slow_fdes == 0);
	/* no rows at all failed above; memcmp must not see their NULLs */
	CHECK(t.n == ref.n && t.n > 0 &&
	      !memcmp(t.rows, ref.rows, t.n * sizeof(*t.rows)));
	cfi_table_free(&t);
	cfi_table_free(&ref);

	/* .debug_frame beside DWARF that inflates to 128 MB: refused before
	 * libdw opens (and inflates) it */
	CHECK(hostile("--debug-bomb 128", path));
	CHECK(compile_file(path, &t, 64u << 20, false) == CFI_OVER_BUDGET);
	cfi_table_free(&t);
	CHECK(compile_file(path, &t, SIZE_MAX, false) == 0);
	CHECK(t.n > 0 && t.fdes == 1);
	cfi_table_free(&t);

	CHECK(hostile("--remember 1000000", path));
	CHECK(compile_file(path, &t, SIZE_MAX, false) == 0);
	CHECK(t.refused_fdes == 1 && t.slow_fdes == 0);
	at = cfi_lookup(&t, spin);
	CHECK(at && at->cfa_rule == CFI_CFA_UNSUPPORTED);
	cfi_table_free(&t);

	unlink(path);
	rmdir(dir);
}

/* Every object mapped into this process, by the loader's own list: the
 * paths are whatever this system's libc, ld.so and libdw are, so none can
 * be missing. */
static int compare_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_name && info->dlpi_name[0] == '/')
		compare_engines(info->dlpi_name);
	return 0;
}

/* A walk cut by its snapshot continues with the FP chain where they meet. */
static void test_splice(void)
{
	/* leaf in libc, libc frame, caller (FP), its caller... */
	const uint64_t fp[] = { 0x100, 0x300, 0x400, 0x500 };

	/* stopped with the sampled frame pointer: fp[1..] follow */
	r = (struct walk_result){ .n = 3, .end = WALK_TRUNCATED,
				  .bp_known = true, .bp = 0x7ff0 };
	r.ips[0] = 0x100; r.ips[1] = 0x200; r.ips[2] = 0x280;
	CHECK(splice_fp(&r, fp, 4, 0x7ff0));
	CHECK(r.n == 6 && r.end == WALK_SPLICED);
	CHECK(r.ips[2] == 0x280 && r.ips[3] == 0x300 && r.ips[5] == 0x500);

	/* past the first frame-pointer frame: joined at 0x400 */
	r = (struct walk_result){ .n = 4, .end = WALK_TRUNCATED,
				  .bp_known = true, .bp = 0x7f00 };
	r.ips[0] = 0x100; r.ips[1] = 0x200; r.ips[2] = 0x300; r.ips[3] = 0x400;
	CHECK(splice_fp(&r, fp, 4, 0x7ff0));
	CHECK(r.n == 5 && r.ips[4] == 0x500);

	/* nowhere to meet, a whole walk, another sample's chain */
	r = (struct walk_result){ .n = 2, .end = WALK_TRUNCATED,
				  .bp_known = true, .bp = 0x7f00 };
	r.ips[0] = 0x100; r.ips[1] = 0x200;
	CHECK(!splice_fp(&r, fp, 4, 0x7ff0));
	CHECK(r.n == 2 && r.end == WALK_TRUNCATED);
	r.bp = 0x7ff0;
	r.end = WALK_OUTERMOST;
	CHECK(!splice_fp(&r, fp, 4, 0x7ff0));
	r.end = WALK_TRUNCATED;
	r.ips[0] = 0x104;
	CHECK(!splice_fp(&r, fp, 4, 0x7ff0));
	CHECK(!splice_fp(&r, fp, 1, 0x7ff0));
}

/* The FP chain read from a snapshot: frames {next bp, return address} */
static void test_walk_fp(void)
{
	uint64_t stack[8] = { 0 }, ips[8];
	const uint64_t sp = 0x7000;
	struct cpa_raw_sample s = {
		.n_regs = 3, .stack_len = sizeof(stack),
		.stack = (const uint8_t *)stack,
		.regs = { 0x100, sp, sp + 16 },
	};

	stack[2] = sp + 32; stack[3] = 0x200;	/* frame at sp + 16 */
	stack[4] = sp + 48; stack[5] = 0x300;	/* frame at sp + 32 */
	stack[6] = 0; stack[7] = 0x400;		/* outermost: bp 0 */
	CHECK(walk_fp(&s, ips, 8) == 4);
	CHECK(ips[0] == 0x100 && ips[1] == 0x200 && ips[3] == 0x400);
	CHECK(walk_fp(&s, ips, 2) == 2);
	/* a chain that points back down ends there, a return address of
	 * 0 ends it, a frame past the snapshot ends it */
	stack[4] = sp + 16;
	CHECK(walk_fp(&s, ips, 8) == 3);
	stack[4] = sp + 48; stack[5] = 0;
	CHECK(walk_fp(&s, ips, 8) == 2);
	stack[5] = 0x300; s.stack_len = 48;
	CHECK(walk_fp(&s, ips, 8) == 3);
	s.stack_len = 0;
	CHECK(walk_fp(&s, ips, 8) == 1);
	s.n_regs = 0;
	CHECK(walk_fp(&s, ips, 8) == 0);
}

/* A line table of each format, with a range that has no line. */
static int32_t py_line(uint8_t format, int32_t first, const uint8_t *t,
		       size_t n, uint32_t instr)
{
	struct pycode pc = { .lines = (uint8_t *)t, .nlines = (uint32_t)n,
			     .firstlineno = first, .format = format };

	return pycode_line(&pc, instr);
}

static void test_py_lines(void)
{
	/* 3.9 co_lnotab: +6 bytes +1 line, +8 +2, +4 -1 */
	static const uint8_t lnotab[] = { 6, 1, 8, 2, 4, 0xff };
	static const struct { uint32_t at; int32_t line; } l9[] = {
		{ 0, 10 }, { 5, 10 }, { 6, 11 }, { 13, 11 }, { 14, 13 },
		{ 17, 13 }, { 18, 12 }, { 100, 12 },
	};
	for (size_t i = 0; i < sizeof(l9) / sizeof(l9[0]); i++)
		CHECK(py_line(CPA_PY_LNOTAB, 10, lnotab, sizeof(lnotab),
			      l9[i].at) == l9[i].line);
	/* 3.10 co_linetable: [0,4) +1, [4,10) no line, [10,12) +2, an
	 * empty range +1, [12,20) +0 */
	static const uint8_t lt10[] = { 4, 1, 6, 0x80, 2, 2, 0, 1, 8, 0 };
	static const struct { uint32_t at; int32_t line; } l10[] = {
		{ 0, 21 }, { 3, 21 }, { 4, 20 }, { 9, 20 }, { 10, 23 },
		{ 11, 23 }, { 12, 24 }, { 19, 24 }, { 20, 20 },
	};
	for (size_t i = 0; i < sizeof(l10) / sizeof(l10[0]); i++)
		CHECK(py_line(CPA_PY_LINETABLE, 20, lt10, sizeof(lt10),
			      l10[i].at) == l10[i].line);
	/* 3.11+ locations: 2 units +2 (form 13), 1 unit +0 (form 10), 1
	 * without a line (15), 3 units +1 (11); offsets in bytes */
	static const uint8_t loc[] = { 0xe9, 0x04, 0xd0, 1, 2, 0xf8,
				       0xda, 1, 2 };
	static const struct { uint32_t at; int32_t line; } l11[] = {
		{ 0, 32 }, { 2, 32 }, { 4, 32 }, { 6, 30 }, { 8, 33 },
		{ 13, 33 }, { 14, 30 },
	};
	for (size_t i = 0; i < sizeof(l11) / sizeof(l11[0]); i++)
		CHECK(py_line(CPA_PY_LOCATIONS, 30, loc, sizeof(loc),
			      l11[i].at) == l11[i].line);
	/* a table cut in the middle of a pair ends the lookup */
	CHECK(py_line(CPA_PY_LNOTAB, 10, lnotab, 3, 100) == 11);
	CHECK(py_line(CPA_PY_LINETABLE, 20, lt10, 1, 0) == 20);
}

/* HotSpot's UNSIGNED5 (CompressedReadStream) and the PcDesc lookup. */
static void test_jvm_debug_info(void)
{
	/* 5, then 192 + (3 << 6) = 384, then five bytes (each adds its
	 * value shifted by 6 more bits, as HotSpot reads it) */
	const uint8_t u5[] = { 5, 192, 3, 255, 255, 255, 255, 255 };
	uint32_t pos = 0, v = 0;
	CHECK(jvm_u5_read(u5, sizeof(u5), &pos, 0, &v) && v == 5 && pos == 1);
	CHECK(jvm_u5_read(u5, sizeof(u5), &pos, 0, &v) && v == 384 && pos == 3);
	CHECK(jvm_u5_read(u5, sizeof(u5), &pos, 0, &v) && pos == 8);
	CHECK(v == (uint32_t)(255u + (255u << 6) + (255u << 12) + (255u << 18) +
			      (255u << 24)));
	CHECK(!jvm_u5_read(u5, sizeof(u5), &pos, 0, &v));
	/* JDK 20 on: every byte one more, a zero byte invalid */
	const uint8_t x1[] = { 6, 193, 4, 0 };
	pos = 0;
	CHECK(jvm_u5_read(x1, sizeof(x1), &pos, 1, &v) && v == 5);
	CHECK(jvm_u5_read(x1, sizeof(x1), &pos, 1, &v) && v == 384);
	CHECK(!jvm_u5_read(x1, sizeof(x1), &pos, 1, &v));
	/* cut in the middle of a value */
	const uint8_t cut[] = { 200, 200 };
	pos = 0;
	CHECK(!jvm_u5_read(cut, sizeof(cut), &pos, 0, &v));

	/* pc offset, scope offset pairs: the first at or after target */
	const int32_t pcs[] = { -1, 0, 10, 7, 20, 9, 30, 0 };
	CHECK(jvm_pcdesc_find(pcs, 4, 5) == 7);
	CHECK(jvm_pcdesc_find(pcs, 4, 10) == 7);
	CHECK(jvm_pcdesc_find(pcs, 4, 11) == 9);
	CHECK(jvm_pcdesc_find(pcs, 4, 25) == 0);	/* no scope there */
	CHECK(jvm_pcdesc_find(pcs, 4, 31) == 0);	/* past the last */
	CHECK(jvm_pcdesc_find(pcs, 0, 1) == 0);
}

int main(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			compare_engines(argv[i]);
		return unit_done("unwind_test");
	}
	compare_engines("/proc/self/exe");
	/* C++ code has the LSDA and personality augmentations C lacks; g++
	 * is a build dependency, so its runtime is there. */
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (!cxx)
		fprintf(stderr, "libstdc++.so.6: %s\n", dlerror());
	CHECK(cxx != NULL);
	dl_iterate_phdr(compare_loaded, NULL);
	if (cxx)
		dlclose(cxx);
	test_cfi_lookup();
	test_hostile_cfi();
	test_walk();
	test_splice();
	test_walk_fp();
	test_symtab();
	test_perfmap();
	test_perfmap_pieces();
	test_node_flags();
	test_java_names();
	test_jvm_debug_info();
	test_names();
	test_py_lines();
	return unit_done("unwind_test");
}
