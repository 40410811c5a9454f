EXTRA_DIST += docs/stream-format.md docs/architecture.md
