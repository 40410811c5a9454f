# docs/: formats, design notes and man pages. Tool-specific pages are listed
# by their tool's local.mk.
EXTRA_DIST += docs/stream-format.md docs/architecture.md docs/security.md \
	docs/options.md docs/fleet.md docs/metrics.md
dist_man1_MANS += docs/man/cpa.1
