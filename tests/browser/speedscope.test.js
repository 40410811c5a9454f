#!/usr/bin/env node
/*
 * cpa-render --format speedscope opened in speedscope itself (the npm
 * package's page, as its command line opens a file), in headless
 * Chromium: speedscope imports the file, and the workload's frames are
 * what its canvas draws. The labels speedscope draws are caught where
 * they are drawn, at CanvasRenderingContext2D.fillText.
 *
 * usage: speedscope.test.js INDEX THREADS PROCESSES [SHOT.png]
 *   INDEX      speedscope's dist/release/index.html
 *   THREADS    --format speedscope of a capture of chain_fp --threads 1
 *   PROCESSES  the same with --profile-by process
 *   SHOT       where to save a picture of the process's left heavy view
 *              (for docs/render.md)
 * Prints TAP; exits non-zero on the first failure.
 */
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { ok, main } = require("./tap");

const [indexPath, threadsPath, processesPath, shotPath] = process.argv.slice(2);
if (!indexPath || !threadsPath || !processesPath) {
	console.error("usage: speedscope.test.js INDEX THREADS PROCESSES");
	process.exit(2);
}

/* Opens file in speedscope: a script beside it hands speedscope the
 * file's bytes, as speedscope's own command line does. */
async function open(browser, file) {
	const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.addInitScript(() => {
		window.cpaDrawn = new Set();
		const fill = CanvasRenderingContext2D.prototype.fillText;
		CanvasRenderingContext2D.prototype.fillText = function (t) {
			window.cpaDrawn.add(String(t));
			return fill.apply(this, arguments);
		};
	});
	const js = path.join(os.tmpdir(), `cpa-speedscope-${process.pid}-${path.basename(file)}.js`);
	fs.writeFileSync(js, "speedscope.loadFileFromBase64(" +
		JSON.stringify(path.basename(file)) + ", " +
		JSON.stringify(fs.readFileSync(file).toString("base64")) + ")");
	await page.goto("file://" + path.resolve(indexPath) +
			"#localProfilePath=" + js);
	page.cpaErrors = errors;
	page.cpaScript = js;
	return page;
}

/* The view after key (1 time order, 2 left heavy, n next profile): the
 * toolbar's profile name and the labels drawn once drawing settled. */
async function view(page, key) {
	/* the first view is drawn as the page loads */
	if (key) {
		await page.evaluate(() => window.cpaDrawn.clear());
		await page.keyboard.press(key);
	}
	await page.waitForFunction(() => window.cpaDrawn.size > 0 &&
		document.title.endsWith(" - speedscope"), null, { timeout: 20000 });
	/* one more frame, so both canvases have drawn */
	await page.evaluate(() => new Promise((r) =>
		requestAnimationFrame(() => requestAnimationFrame(r))));
	return page.evaluate(() => ({
		drawn: Array.from(window.cpaDrawn),
		toolbar: document.body.innerText.split("\n").find((l) =>
			/\(\d+\/\d+\)/.test(l)) || "",
	}));
}

const chain = ["main", "run", "level_a", "level_b", "hot_leaf"];
const has = (v, names) => names.every((f) => v.drawn.includes(f));

main(async (browser) => {
	const threads = JSON.parse(fs.readFileSync(threadsPath, "utf8"));
	const pid = /\(pid (\d+), tid \1\)/.exec(threads.profiles[0].name);
	ok(threads.profiles.length === 2 && pid &&
	   threads.profiles.every((p) => p.type === "evented"),
	   "a thread profile each, evented, the main thread first",
	   threads.profiles.map((p) => [p.type, p.name]));

	let page = await open(browser, threadsPath);
	let v = await view(page, null);
	ok(v.toolbar.includes(`chain_fp (pid ${pid[1]}, tid ${pid[1]}) (1/2)`),
	   "speedscope opens the main thread's profile, one of two", v.toolbar);
	v = await view(page, "2");
	ok(has(v, chain), "left heavy: the main thread's chain is drawn", v.drawn);
	ok(!v.drawn.includes("worker_main"), "and not the worker's", v.drawn);
	v = await view(page, "n");
	ok(/\(pid \d+, tid \d+\) \(2\/2\)/.test(v.toolbar) &&
	   has(v, ["worker_main", "run", "level_a", "level_b", "hot_leaf"]),
	   "the next profile is the worker thread's chain", v);
	/* the samples' own times: the 2 s capture on a time axis (its
	 * 5 ms spans are too narrow for labels at this zoom) */
	v = await view(page, "1");
	ok(v.drawn.includes("1.00s"), "time order: a time axis of seconds",
	   v.drawn);
	ok(page.cpaErrors.length === 0, "no script errors", page.cpaErrors);
	fs.unlinkSync(page.cpaScript);
	await page.close();

	const procs = JSON.parse(fs.readFileSync(processesPath, "utf8"));
	ok(procs.profiles.length === 1 && procs.profiles[0].type === "sampled" &&
	   procs.profiles[0].name === `chain_fp (pid ${pid[1]})`,
	   "--profile-by process: one sampled profile",
	   procs.profiles.map((p) => [p.type, p.name]));
	page = await open(browser, processesPath);
	v = await view(page, "2");
	ok(has(v, chain) && v.drawn.includes("worker_main"),
	   "left heavy: both threads' chains in the process", v.drawn);
	if (shotPath)
		await page.screenshot({ path: shotPath, clip: { x: 0, y: 0,
			width: 1200, height: 420 } });
	ok(page.cpaErrors.length === 0, "no script errors", page.cpaErrors);
	fs.unlinkSync(page.cpaScript);
	await page.close();
});
