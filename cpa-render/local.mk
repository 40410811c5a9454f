# cpa-render: see docs/man/cpa-render.1
# The input, the tree and every output format are one library, linked by
# the program and its fuzz target. The terminal UI (cpa-render/tui/) is
# another: its data, model and state need no terminal (tests/unit/tui_test
# drives them); only its screen needs ncurses, and configure
# --without-ncurses leaves it out.
noinst_LIBRARIES += cpa-render/librender.a
cpa_render_librender_a_SOURCES = \
	cpa-render/render.h \
	cpa-render/input.c \
	cpa-render/byunit.c \
	cpa-render/stackpath.c cpa-render/stackpath.h \
	cpa-render/tree.c cpa-render/tree.h \
	cpa-render/timeline.c \
	cpa-render/formats.c \
	cpa-render/units.c \
	cpa-render/palette.c \
	cpa-render/xml.c cpa-render/xml.h \
	cpa-render/svg.c \
	cpa-render/flamechart.c \
	cpa-render/html.c \
	cpa-render/text.c \
	cpa-render/folded_out.c \
	cpa-render/pprof_out.c \
	cpa-render/speedscope.c
nodist_cpa_render_librender_a_SOURCES = cpa-render/assets.c
RENDER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/cpa-render \
	-I$(top_srcdir)/cpa-render/tui
RENDER_LIBS = cpa-render/librender.a $(LIBCPA_ANALYSIS) $(ZLIB_LIBS) $(M_LIBS)
cpa_render_librender_a_CPPFLAGS = $(RENDER_CPPFLAGS)

noinst_LIBRARIES += cpa-render/libtui.a
cpa_render_libtui_a_SOURCES = \
	cpa-render/tui/tui.h \
	cpa-render/tui/data.c \
	cpa-render/tui/model.c \
	cpa-render/tui/state.c
cpa_render_libtui_a_CPPFLAGS = $(RENDER_CPPFLAGS)
TUI_LIBS = cpa-render/libtui.a $(RENDER_LIBS)

bin_PROGRAMS += cpa-render/cpa-render
cpa_render_cpa_render_SOURCES = cpa-render/main.c
cpa_render_cpa_render_CPPFLAGS = $(RENDER_CPPFLAGS)
cpa_render_cpa_render_CFLAGS = $(AM_CFLAGS)
cpa_render_cpa_render_LDADD = $(TUI_LIBS)
if WITH_NCURSES
cpa_render_cpa_render_SOURCES += cpa-render/tui/screen.c
cpa_render_cpa_render_CFLAGS += $(NCURSES_CFLAGS)
cpa_render_cpa_render_LDADD += $(NCURSES_LIBS)
endif

# Unit tests of the terminal UI without a terminal: keys, window, zoom,
# labels, filters and search on a stream of known samples.
check_PROGRAMS += tests/unit/tui_test
tests_unit_tui_test_SOURCES = tests/unit/tui_test.c tests/unit/unit.h
tests_unit_tui_test_CPPFLAGS = $(RENDER_CPPFLAGS)
tests_unit_tui_test_LDADD = $(TUI_LIBS)
TESTS += tests/unit/tui_test

# The browser code is kept as plain .js files and built into the program
# as C strings, so every SVG and HTML page is self-contained.
CPA_RENDER_JS = cpa-render/flame.js cpa-render/heatmap.js
cpa-render/assets.c: $(CPA_RENDER_JS) cpa-render/js2c.sh
	$(AM_V_GEN)$(MKDIR_P) cpa-render && \
	$(SHELL) $(srcdir)/cpa-render/js2c.sh \
		cpa_flame_js $(srcdir)/cpa-render/flame.js \
		cpa_heatmap_js $(srcdir)/cpa-render/heatmap.js > $@-t && mv $@-t $@
BUILT_SOURCES += cpa-render/assets.c
CLEANFILES += cpa-render/assets.c
EXTRA_DIST += $(CPA_RENDER_JS) cpa-render/js2c.sh

dist_man1_MANS += docs/man/cpa-render.1

TESTS += tests/bats/render.bats tests/bats/render-browser.bats \
	tests/bats/tui.bats
TESTS += tests/bats/pprof-labels.bats
EXTRA_DIST += tests/bats/pprof-labels.bats
TESTS += tests/bats/render-views.bats tests/bats/kinds-export.bats
EXTRA_DIST += tests/bats/render-views.bats tests/browser/hour.test.js \
	tests/browser/tap.js tests/browser/speedscope.test.js \
	docs/img/render-html-hour.png docs/img/render-speedscope.png
dist_check_DATA += tests/bats/browser_helper.bash
EXTRA_DIST += tests/bats/render.bats tests/bats/render-browser.bats \
	tests/bats/tui.bats \
	tests/data/render/README \
	tests/data/render/perf-collapsed.folded \
	tests/data/render/bpftrace-collapsed.folded \
	tests/browser/package.json tests/browser/render.test.js \
	tests/browser/screenshot.js tests/browser/render-images \
	tests/browser/tui-image bench/tui docs/img/render-tui.png \
	bench/render-gen bench/render-bench \
	docs/render.md docs/img/render-svg.png docs/img/render-svg-zoom.png \
	docs/img/render-icicle.png docs/img/render-diff.png \
	docs/img/render-html.png docs/img/render-text.png \
	docs/img/render-pprof.png docs/img/render-folded.png

# Fuzz target: any bytes through input, tree and every output format.
# `make check` replays its corpus (tests/bats/render.bats); `make fuzz`
# runs it under libFuzzer with the other targets.
check_PROGRAMS += tests/fuzz/render_replay
tests_fuzz_render_replay_SOURCES = tests/fuzz/render_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_render_replay_CPPFLAGS = $(RENDER_CPPFLAGS)
tests_fuzz_render_replay_LDADD = $(RENDER_LIBS)
FUZZ_TARGETS += render
FUZZ_TOOL_render = render
FUZZ_CFLAGS_render = -I$(srcdir)/cpa-render
EXTRA_DIST += tests/fuzz/render_fuzz.c
