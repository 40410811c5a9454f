EXTRA_DIST += scripts/quickstart scripts/check scripts/install-deps
