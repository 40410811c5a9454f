#!/usr/bin/env node
/*
 * cpa-serve's fleet page (GET /ui) in headless Chromium, over a server
 * whose history holds two hosts (tests/bats/serve-ui.bats): refused
 * without the token and loaded with it, a time range picked on the
 * heatmap redraws the flame graph with the workload's frames, a host
 * filter leaves the other host's frames out, two ranges compared give a
 * differential flame graph.
 *
 * usage: ui.test.js URL TOKEN HOST1 COMM1 HOST2 COMM2 [SHOT.png]
 *   URL     the server, http://127.0.0.1:PORT
 *   HOST1   a host whose workload is COMM1, HOST2 one running COMM2;
 *           HOST1 and HOST2 "-": a server over one host's store, whose
 *           workloads are COMM1 and COMM2 (no host filter to try)
 *   SHOT    where to save a picture of the page (for docs/api.md)
 * Prints TAP; exits non-zero on the first failure.
 */
"use strict";
const { ok, main } = require("./tap");

const [url, token, host1, comm1, host2, comm2, shotPath] =
	process.argv.slice(2);
if (!comm2) {
	console.error("usage: ui.test.js URL TOKEN HOST1 COMM1 HOST2 COMM2 [SHOT.png]");
	process.exit(2);
}
const LEAF = "hot_leaf";

/* The frame showing the picture, once its document has frames. */
async function view(page) {
	const h = await page.waitForSelector("#view");
	const f = await h.contentFrame();
	await f.waitForSelector("#frames > g", { state: "attached" });
	return f;
}

/* Names drawn in the view's flame graph, and the root's weight. */
async function drawn(f) {
	return f.evaluate(() => {
		const names = [];
		let total = -1;
		for (const g of document.querySelectorAll("#frames > g")) {
			const t = g.querySelector("title").textContent;
			const m = /^(.*) \(([0-9,]+) samples/.exec(t);
			if (!m)
				continue;
			names.push(m[1]);
			if (m[1] === "all")
				total = parseInt(m[2].replace(/,/g, ""), 10);
		}
		return { names, total, titles: Array.from(
			document.querySelectorAll("#frames > g > title"),
			(t) => t.textContent) };
	});
}

async function status(page) {
	return page.evaluate(() => document.getElementById("status").textContent);
}

/* Waits for the status line to say what (a string it contains). */
async function statusSays(page, what) {
	await page.waitForFunction((w) =>
		document.getElementById("status").textContent.indexOf(w) >= 0,
		what, { timeout: 30000 });
}

main(async (browser) => {
	const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));

	/* no token: the page says so, and shows no picture */
	await page.goto(url + "/ui");
	await statusSays(page, "token");
	ok(await page.isVisible("#token"), "without a token the page asks for one");

	/* a wrong token: the server's 401 */
	await page.goto(url + "/ui#token=not-the-token-0123456789");
	await statusSays(page, "401");
	ok(true, "a wrong token is refused with the server's 401");

	/* with the token: the last hour of every host */
	await page.goto(url + "/ui#token=" + encodeURIComponent(token));
	await statusSays(page, "Showing");
	ok(!/token/.test(page.url()), "the token leaves the address bar", page.url());
	let f = await view(page);
	let d = await drawn(f);
	ok(d.names.includes(comm1) && d.names.includes(comm2) &&
	   d.names.includes(LEAF), "both hosts' workloads are drawn", d.names);

	/* a range on the heatmap: its cells' weight, with the workload's
	 * frames; the page is told the range */
	const cells = await f.evaluate(() => cpaHeat.cells.map((c) =>
		({ cell: c.cell, sum: c.sum })));
	ok(cells.length >= 3, "the heatmap has a cell per stored second", cells.length);
	const lo = cells[0].cell, hi = cells[Math.floor(cells.length / 2)].cell;
	const want = cells.filter((c) => c.cell >= lo && c.cell <= hi)
		.reduce((s, c) => s + c.sum, 0);
	await drag(page, f, lo, hi);
	await page.waitForFunction(() => !document.getElementById("baseline").disabled);
	d = await drawn(f);
	ok(d.total === want, "the selected range's flame graph is its cells' weight",
	   { total: d.total, want });
	ok(d.names.includes(LEAF) && d.names.includes("level_b"),
	   "the selected range shows the workload's frames", d.names);
	const sel = await page.evaluate(() =>
		document.getElementById("selection").textContent);
	ok(/^Selected /.test(sel), "the page shows the range selected", sel);

	/* that range as the baseline, the rest compared with it */
	await page.click("#baseline");
	const last = cells[cells.length - 1].cell;
	await drag(page, f, hi + 1 <= last ? hi + 1 : hi, last);
	await page.waitForFunction(() => !document.getElementById("compare").disabled);
	await page.click("#compare");
	await statusSays(page, "Differential");
	f = await view(page);
	d = await drawn(f);
	ok(d.titles.some((t) => /; [+-]?[0-9.]+%\)$/.test(t)) &&
	   d.names.includes(LEAF), "compared, the view is a differential flame graph",
	   d.titles.slice(0, 4));
	await page.click("#back");
	await statusSays(page, "Showing");
	if (host1 === "-") {
		ok(errors.length === 0, "no script errors", errors);
		return;
	}

	/* a host filter: the other host's workload is gone */
	await page.fill("#host", host2);
	await page.click("#show");
	await page.waitForFunction((h) => window.location.search.indexOf("host=" + h) >= 0,
		host2);
	await statusSays(page, "filtered");
	f = await view(page);
	d = await drawn(f);
	ok(d.names.includes(comm2) && d.names.includes(LEAF),
	   "filtered to " + host2 + ", its workload is drawn", d.names);
	ok(!d.names.includes(comm1), "and " + host1 + "'s " + comm1 + " is not", d.names);

	/* the address keeps the query: a reload shows the same */
	await page.reload();
	await statusSays(page, "filtered");
	ok(await page.inputValue("#host") === host2, "a reload keeps the filter");

	if (shotPath) {
		await page.fill("#host", "");
		await page.click("#show");
		await statusSays(page, "Showing");
		f = await view(page);
		const c2 = await f.evaluate(() => cpaHeat.cells.map((c) => c.cell));
		await drag(page, f, c2[0], c2[Math.floor(c2.length * 2 / 3)]);
		await page.waitForFunction(() => !document.getElementById("baseline").disabled);
		await page.screenshot({ path: shotPath });
	}
	ok(errors.length === 0, "no script errors", errors);
});

/* Presses on heatmap cell `from` and releases on cell `to`, in the view
 * frame (cells numbered as cpaData's: column * rows + row). */
async function drag(page, f, from, to) {
	const hm = await (await f.$("#heatmap")).boundingBox();
	const g = await f.evaluate(() => ({ x0: cpaHeat.x0, y0: cpaHeat.y0,
		cw: cpaHeat.cw, ch: cpaHeat.ch, rows: cpaData.rows }));
	const at = (c) => [hm.x + g.x0 + Math.floor(c / g.rows) * g.cw + g.cw / 2,
			   hm.y + g.y0 + (c % g.rows) * g.ch + g.ch / 2];
	await page.mouse.move(...at(from));
	await page.mouse.down();
	await page.mouse.move(...at(to), { steps: 4 });
	await page.mouse.up();
}
