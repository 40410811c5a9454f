/*
 * What the browser tests share: Debian's Chromium through playwright-core,
 * headless and offline, and TAP output.
 */
"use strict";
const { chromium } = require("playwright-core");

function launch() {
	return chromium.launch({
		executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		args: ["--headless", "--no-sandbox", "--disable-gpu",
		       "--disable-background-networking",
		       "--disable-component-update", "--disable-sync",
		       "--disable-quic", "--no-first-run"],
	});
}

let n = 0;

/* One TAP line; a failure ends the run (main's catch). */
function ok(cond, what, detail) {
	n++;
	if (!cond) {
		console.log(`not ok ${n} - ${what}` + (detail !== undefined ?
			`\n# got: ${JSON.stringify(detail)}` : ""));
		throw new Error(what);
	}
	console.log(`ok ${n} - ${what}`);
}

/* Runs body(browser), prints the plan, exits 1 if anything failed. */
function main(body) {
	(async () => {
		const browser = await launch();
		let failed = false;
		try {
			await body(browser);
		} catch (e) {
			failed = true;
			console.log("# " + e.message);
		} finally {
			await browser.close();
		}
		console.log(`1..${n}`);
		process.exit(failed ? 1 : 0);
	})();
}

module.exports = { launch, ok, main };
