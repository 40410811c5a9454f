EXTRA_DIST += scripts/quickstart scripts/check
