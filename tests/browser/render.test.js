#!/usr/bin/env node
/*
 * Opens cpa-render's SVG and HTML output in headless Chromium and works
 * them as a person would: hover for the tooltip, search (through the
 * prompt and through the URL), toggle case, click to zoom, reset, reload
 * a zoomed URL, and on the HTML page drag across the heatmap to select a
 * time range. After each step it checks what is drawn.
 *
 * usage: render.test.js SVG HTML ICICLE
 *   SVG     from the folded profile in tests/bats/render-browser.bats
 *   HTML    from that test's stream (samples at known seconds)
 *   ICICLE  the folded profile again, with --inverted
 * Prints TAP; exits non-zero on the first failure.
 */
"use strict";
const path = require("path");
const { ok, main } = require("./tap");

const [svgPath, htmlPath, iciclePath] = process.argv.slice(2);
if (!svgPath || !htmlPath || !iciclePath) {
	console.error("usage: render.test.js SVG HTML ICICLE");
	process.exit(2);
}


/* Geometry and state of the frame whose name is `name` (first match). */
async function frame(page, name) {
	return page.evaluate((name) => {
		for (const g of document.querySelectorAll("#frames > g")) {
			const t = g.querySelector("title").textContent;
			if (t.replace(/ \([^(]*\)$/, "") !== name)
				continue;
			const r = g.querySelector("rect");
			return {
				title: t,
				x: parseFloat(r.getAttribute("x")),
				y: parseFloat(r.getAttribute("y")),
				w: parseFloat(r.getAttribute("width")),
				fill: r.getAttribute("fill"),
				label: g.querySelector("text").textContent,
				hidden: g.classList.contains("hide"),
				parent: g.classList.contains("parent"),
				shown: getComputedStyle(g).display !== "none",
			};
		}
		return null;
	}, name);
}

/* The <rect> of the frame named `name`, for clicking and hovering. */
async function rectOf(page, name) {
	const i = await page.evaluate((name) => {
		const gs = document.querySelectorAll("#frames > g");
		for (let i = 0; i < gs.length; i++)
			if (gs[i].querySelector("title").textContent
				.replace(/ \([^(]*\)$/, "") === name)
				return i;
		return -1;
	}, name);
	if (i < 0)
		throw new Error("no frame " + name);
	return page.locator("#frames > g").nth(i).locator("rect");
}

async function text(page, id) {
	return page.evaluate((id) => document.getElementById(id).textContent, id);
}

const near = (a, b) => Math.abs(a - b) < 0.02;

async function testSvg(browser) {
	const page = await browser.newPage();
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	const url = "file://" + path.resolve(svgPath);
	await page.goto(url);

	const count = await page.evaluate(() =>
		document.querySelectorAll("#frames > g").length);
	ok(count === 7, "svg: all 7 frames drawn", count);
	let run = await frame(page, "run");
	ok(run && run.title === "run (90 samples, 90.00%)" && near(run.x, 128) &&
	   near(run.w, 1062), "svg: run frame has its title, x and width", run);

	/* tooltip line */
	const box = await (await rectOf(page, "level_b")).boundingBox();
	await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
	ok(await text(page, "details") ===
	   "Function: level_b (20 samples, 20.00%)",
	   "svg: hovering shows the frame's details", await text(page, "details"));

	/* search through the prompt, as a user does */
	page.once("dialog", (d) => d.accept("^level_"));
	await page.click("#search");
	ok(await text(page, "matched") === "Matched: 90.00%",
	   "svg: search ^level_ matches 90%", await text(page, "matched"));
	const la = await frame(page, "level_a");
	const idle = await frame(page, "idle");
	ok(la.fill === "rgb(230,0,230)" && idle.fill !== "rgb(230,0,230)",
	   "svg: matched frames are highlighted, others not", [la, idle]);
	ok(/[?&]s=%5Elevel_/.test(page.url()), "svg: search kept in the URL",
	   page.url());

	/* case toggle: HOT matches nothing until ignoring case */
	await page.click("#search");	/* now "Reset Search": no prompt */
	ok((await frame(page, "level_a")).fill !== "rgb(230,0,230)",
	   "svg: reset search restores colors");
	page.once("dialog", (d) => d.accept("HOT"));
	await page.click("#search");
	ok(await text(page, "matched") === "Matched: 0.00%",
	   "svg: case-sensitive search for HOT matches nothing");
	await page.click("#ignorecase");
	ok(await text(page, "matched") === "Matched: 70.00%",
	   "svg: ignoring case, HOT matches hot (70%)",
	   await text(page, "matched"));

	/* zoom into run */
	await (await rectOf(page, "run")).click();
	run = await frame(page, "run");
	ok(near(run.x, 10) && near(run.w, 1180), "svg: zoomed frame fills the width",
	   run);
	const lvA = await frame(page, "level_a");
	ok(near(lvA.w, 826 * 1180 / 1062) && near(lvA.x, 10),
	   "svg: callees scale with the zoom", lvA);
	ok((await frame(page, "idle")).hidden && !(await frame(page, "idle")).shown,
	   "svg: frames outside the zoom are hidden");
	ok((await frame(page, "main")).parent, "svg: callers are dimmed");
	ok(!(await page.evaluate(() =>
		document.getElementById("unzoom").classList.contains("hide"))),
	   "svg: Reset Zoom appears");
	ok(await text(page, "matched") === "Matched: 77.78%",
	   "svg: search percentage follows the zoom",
	   await text(page, "matched"));
	const zoomedUrl = page.url();
	ok(/[?&]x=128\.00/.test(zoomedUrl) && /[?&]y=/.test(zoomedUrl) &&
	   /[?&]i=1/.test(zoomedUrl), "svg: zoom and case kept in the URL",
	   zoomedUrl);

	/* reset */
	await page.click("#unzoom");
	run = await frame(page, "run");
	ok(near(run.x, 128) && near(run.w, 1062) &&
	   !(await frame(page, "idle")).hidden, "svg: reset zoom restores all");

	/* a link to a zoomed, searched view opens that view */
	await page.goto(zoomedUrl);
	run = await frame(page, "run");
	ok(near(run.w, 1180) && (await frame(page, "idle")).hidden &&
	   await text(page, "matched") === "Matched: 77.78%",
	   "svg: reopened URL restores zoom and search", run);
	ok(errors.length === 0, "svg: no script errors", errors);
	await page.close();
}

/* An icicle graph zooms the same way, upside down. */
async function testIcicle(browser) {
	const page = await browser.newPage();
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto("file://" + path.resolve(iciclePath));
	const before = await frame(page, "level_a");
	await (await rectOf(page, "run")).click();
	const run = await frame(page, "run"), la = await frame(page, "level_a");
	ok(near(run.x, 10) && near(run.w, 1180) && near(la.w, 826 * 1180 / 1062),
	   "icicle: zoom fills the width and scales callees", [run, la]);
	ok((await frame(page, "main")).parent && (await frame(page, "all")).parent,
	   "icicle: callers above are dimmed");
	ok((await frame(page, "idle")).hidden, "icicle: others hidden");
	ok(near(la.y, before.y) && before.y > run.y,
	   "icicle: callees stay below their caller", [before, la, run]);
	await (await rectOf(page, "all")).click();
	ok(near((await frame(page, "run")).w, 1062) &&
	   !(await frame(page, "idle")).hidden,
	   "icicle: clicking the root resets the zoom");
	ok(errors.length === 0, "icicle: no script errors", errors);
	await page.close();
}

async function heatCells(page) {
	return page.evaluate(() => Array.from(
		document.querySelectorAll("#heatmap rect[data-cell]"))
		.map((r) => parseInt(r.getAttribute("data-cell"), 10)));
}

async function testHtml(browser) {
	const page = await browser.newPage();
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto("file://" + path.resolve(htmlPath));

	/* the stream: 60 samples in second 0 (app), 30 in second 1 (db),
	 * 10 in second 2 (app;idle); rows are 20 ms */
	const cells = await heatCells(page);
	ok(cells.length > 0 && cells.every((c) => c < 3 * 50),
	   "html: heatmap cells in 3 columns", cells);
	let all = await frame(page, "all");
	ok(all && all.title === "all (100 samples, 100%)",
	   "html: whole profile drawn first", all);
	ok((await frame(page, "db")) !== null, "html: db drawn in the whole view");

	/* drag from the top of second 1 to the bottom of second 1 */
	const hm = await page.locator("#heatmap").boundingBox();
	const geo = await page.evaluate(() => ({ x0: cpaHeat.x0, y0: cpaHeat.y0,
		cw: cpaHeat.cw, ch: cpaHeat.ch, rows: cpaData.rows }));
	const cx = hm.x + geo.x0 + 1 * geo.cw + geo.cw / 2;
	await page.mouse.move(cx, hm.y + geo.y0 + 1);
	await page.mouse.down();
	await page.mouse.move(cx, hm.y + geo.y0 + geo.rows * geo.ch / 2);
	await page.mouse.move(cx, hm.y + geo.y0 + geo.rows * geo.ch - 1);
	await page.mouse.up();
	all = await frame(page, "all");
	ok(all.title === "all (30 samples, 100%)",
	   "html: selecting second 1 redraws with its 30 samples", all);
	ok((await frame(page, "app")) === null && (await frame(page, "db")) !== null,
	   "html: only the selected range's stacks are drawn");
	ok(/Selected .* 30 samples/.test(await text(page, "range")),
	   "html: the selection is described", await text(page, "range"));
	const sel = await page.evaluate(() =>
		document.querySelectorAll("#heatmap rect.sel").length);
	ok(sel > 0, "html: selected cells are marked", sel);
	ok(/[?&]r=50-99/.test(page.url()), "html: range kept in the URL",
	   page.url());

	/* search and zoom work on the redrawn graph */
	page.once("dialog", (d) => d.accept("sort"));
	await page.click("#search");
	ok(await text(page, "matched") === "Matched: 66.67%",
	   "html: search in the range (sort is 20 of 30)",
	   await text(page, "matched"));
	await (await rectOf(page, "scan")).click();
	const scan = await frame(page, "scan");
	ok(near(scan.w, 1180) && (await frame(page, "sort")).hidden,
	   "html: zoom in the range", scan);

	/* back to everything */
	await page.click("#showall");
	all = await frame(page, "all");
	ok(all.title === "all (100 samples, 100%)", "html: show all", all);

	/* a click on one cell selects just that cell's 20 ms */
	const first = Math.min.apply(null, cells);
	const col = Math.floor(first / geo.rows), row = first % geo.rows;
	await page.mouse.click(hm.x + geo.x0 + col * geo.cw + geo.cw / 2,
			       hm.y + geo.y0 + row * geo.ch + geo.ch / 2);
	const one = await page.evaluate(() => cpaHeat.range);
	ok(one && one[0] === first && one[1] === first,
	   "html: a click selects one cell", one);
	ok(errors.length === 0, "html: no script errors", errors);
	await page.close();
}

main(async (browser) => {
	await testSvg(browser);
	await testIcicle(browser);
	await testHtml(browser);
});
