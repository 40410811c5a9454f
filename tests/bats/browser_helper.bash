# Shared by the headless-browser suites: Debian's chromium, node, and
# playwright-core from `npm install` in tests/browser (or CPA_NODE_MODULES,
# for a build from a tarball, e.g. make distcheck).

load helper

BROWSER_DIR="$CPA_SRCDIR/tests/browser"
export NODE_PATH="${CPA_NODE_MODULES:-$BROWSER_DIR/node_modules}"

# need_browser: returns when the browser tests can run; else skips, or
# fails under CI (CI=true) or with CPA_REQUIRE_BROWSER=1.
need_browser() {
	local why=""
	if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
		why="no chromium (apt-get install chromium)"
	elif ! command -v node >/dev/null; then
		why="no node (apt-get install nodejs)"
	elif [ ! -d "$NODE_PATH/playwright-core" ]; then
		why="no playwright-core in $NODE_PATH (cd tests/browser && npm install)"
	fi
	if [ -n "$why" ]; then
		if [ "${CPA_REQUIRE_BROWSER:-0}" = 1 ] || [ "${CI:-}" = true ]; then
			echo "browser test required (CI or CPA_REQUIRE_BROWSER=1): $why" >&2
			return 1
		fi
		skip "$why"
	fi
}
