#!/usr/bin/env node
/*
 * An hour of stored history in `cpa show --format html`'s page, in
 * headless Chromium: the heatmap has one cell per stored second, a
 * column per minute, and fills the picture; selecting cells redraws the
 * flame graph for exactly their seconds.
 *
 * usage: hour.test.js HTML EXPECT [SHOT.png]
 *   HTML    the page, of an hour starting on a minute (UTC)
 *   EXPECT  lines "NAME TOTAL", the weights tests/bats/render-views.bats
 *           summed from the history it generated: all (the hour),
 *           minute25 (column 25), cell600 (second 600 alone),
 *           cron300 (seconds 300 to 302)
 *   SHOT    where to save a picture of the page with minutes 20 to 34
 *           selected (for docs/render.md)
 * Prints TAP; exits non-zero on the first failure.
 */
"use strict";
const fs = require("fs");
const path = require("path");
const { ok, main } = require("./tap");

const [htmlPath, expectPath, shotPath] = process.argv.slice(2);
if (!htmlPath || !expectPath) {
	console.error("usage: hour.test.js HTML EXPECT [SHOT.png]");
	process.exit(2);
}
const expect = {};
for (const line of fs.readFileSync(expectPath, "utf8").split("\n")) {
	const [k, v] = line.split(" ");
	if (k)
		expect[k] = parseInt(v, 10);
}

/* The weight the flame graph's root shows, and whether frame `name` is
 * drawn. */
async function drawn(page, name) {
	return page.evaluate((name) => {
		let total = -1, has = false;
		for (const g of document.querySelectorAll("#frames > g")) {
			const t = g.querySelector("title").textContent;
			const m = /^(.*) \(([0-9,]+) samples/.exec(t);
			if (!m)
				continue;
			if (m[1] === "all")
				total = parseInt(m[2].replace(/,/g, ""), 10);
			if (m[1] === name)
				has = true;
		}
		return { total, has };
	}, name);
}

/* Presses on cell (col, row) and releases on (col2, row2). */
async function drag(page, col, row, col2, row2) {
	const hm = await page.locator("#heatmap").boundingBox();
	const g = await page.evaluate(() => ({ x0: cpaHeat.x0, y0: cpaHeat.y0,
		cw: cpaHeat.cw, ch: cpaHeat.ch }));
	const at = (c, r) => [hm.x + g.x0 + c * g.cw + g.cw / 2,
			      hm.y + g.y0 + r * g.ch + g.ch / 2];
	await page.mouse.move(...at(col, row));
	await page.mouse.down();
	await page.mouse.move(...at(col2, row2), { steps: 4 });
	await page.mouse.up();
}

main(async (browser) => {
	const page = await browser.newPage({ timezoneId: "UTC",
		viewport: { width: 1220, height: 600 } });
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto("file://" + path.resolve(htmlPath));

	const grid = await page.evaluate(() => ({
		cols: cpaData.cols, rows: cpaData.rows,
		cell_ms: cpaData.cell_ms, col_ms: cpaData.col_ms,
		cells: document.querySelectorAll("#heatmap rect[data-cell]").length,
		max: Math.max.apply(null, Array.from(
			document.querySelectorAll("#heatmap rect[data-cell]"),
			(r) => parseInt(r.getAttribute("data-cell"), 10))),
	}));
	ok(grid.cols === 60 && grid.rows === 60 && grid.cell_ms === 1000 &&
	   grid.col_ms === 60000, "a column per minute, a cell per second", grid);
	ok(grid.cells === 3600 && grid.max === 3599,
	   "every second of the hour has its cell", grid);
	const box = await page.locator("#heatmap").boundingBox();
	ok(box.width >= 1000 && box.height >= 300,
	   "the hour fills the picture", box);

	let d = await drawn(page, "batch");
	ok(d.total === expect.all && d.has, "the whole hour drawn first", d);

	/* minute 25, top to bottom: batch runs from minute 20 to 34 */
	await drag(page, 25, 0, 25, 59);
	d = await drawn(page, "batch");
	ok(d.total === expect.minute25 && d.has,
	   "selecting minute 25 draws exactly its 60 seconds", d);
	const range = await page.evaluate(() =>
		document.getElementById("range").textContent);
	ok(/^Selected 2023-11-14 22:38:00 to 2023-11-14 22:39:00: /.test(range),
	   "the selection is told in wall-clock seconds", range);

	/* one cell: second 600, minute 10 row 0, web alone */
	await drag(page, 10, 0, 10, 0);
	d = await drawn(page, "batch");
	ok(d.total === expect.cell600 && !d.has,
	   "one cell is one second, without batch", d);
	ok((await drawn(page, "gzip")).has === false, "nor cron's gzip");

	/* seconds 300 to 302: cron's burst */
	await drag(page, 5, 0, 5, 2);
	d = await drawn(page, "gzip");
	ok(d.total === expect.cron300 && d.has,
	   "three cells of minute 5 draw cron's burst", d);

	await page.click("#showall");
	d = await drawn(page, "batch");
	ok(d.total === expect.all, "show all goes back to the hour", d);
	ok(errors.length === 0, "no script errors", errors);

	if (shotPath) {
		await drag(page, 20, 0, 34, 59);
		await page.screenshot({ path: shotPath, fullPage: true });
	}
	await page.close();
});
