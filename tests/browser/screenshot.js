#!/usr/bin/env node
/*
 * Screenshots of cpa-render output for docs/render.md, taken with the
 * same headless Chromium as the browser tests (tests/browser/render-images
 * runs it for every picture).
 *
 * usage: screenshot.js IN OUT.png [--search RE] [--zoom NAME]
 *                      [--select FROM-TO] [--text]
 *   IN        an .svg or .html from cpa-render, or with --text any text
 *             file, shown as a terminal would
 *   --search  search for RE (through the URL, as a shared link would)
 *   --zoom    click the first frame named NAME
 *   --select  drag across heatmap seconds FROM to TO (html)
 */
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { launch } = require("./tap");

const args = process.argv.slice(2);
const opt = {};
const pos = [];
for (let i = 0; i < args.length; i++) {
	if (args[i].startsWith("--"))
		opt[args[i].slice(2)] = args[i] === "--text" ? true : args[++i];
	else
		pos.push(args[i]);
}
if (pos.length !== 2) {
	console.error("usage: screenshot.js IN OUT.png [--search RE] [--zoom NAME] [--select FROM-TO] [--text]");
	process.exit(2);
}
const [input, out] = pos;

(async () => {
	const browser = await launch();
	const page = await browser.newPage({ viewport: { width: 1220, height: 400 } });
	let url = "file://" + path.resolve(input);
	let tmp = null;
	if (opt.text) {
		const esc = fs.readFileSync(input, "utf8").replace(/&/g, "&amp;")
			.replace(/</g, "&lt;");
		tmp = path.join(os.tmpdir(), `shot-${process.pid}.html`);
		fs.writeFileSync(tmp, "<!DOCTYPE html><meta charset=utf-8><body " +
			"style='margin:0;background:#1e1e1e'><pre style='margin:0;" +
			"padding:10px;color:#ddd;font:13px monospace;display:inline-block'>" +
			esc + "</pre>");
		url = "file://" + tmp;
	}
	if (opt.search)
		url += "?s=" + encodeURIComponent(opt.search);
	await page.goto(url);
	if (opt.select) {
		const [from, to] = opt.select.split("-").map(Number);
		const hm = await page.locator("#heatmap").boundingBox();
		const g = await page.evaluate(() => ({ x0: cpaHeat.x0, y0: cpaHeat.y0,
			cw: cpaHeat.cw, ch: cpaHeat.ch, rows: cpaData.rows }));
		await page.mouse.move(hm.x + g.x0 + from * g.cw + 1, hm.y + g.y0 + 1);
		await page.mouse.down();
		await page.mouse.move(hm.x + g.x0 + to * g.cw + g.cw - 2,
				      hm.y + g.y0 + g.rows * g.ch - 2, { steps: 5 });
		await page.mouse.up();
	}
	if (opt.zoom) {
		const i = await page.evaluate((name) => {
			const gs = document.querySelectorAll("#frames > g");
			for (let i = 0; i < gs.length; i++)
				if (gs[i].querySelector("title").textContent
					.replace(/ \([^(]*\)$/, "") === name)
					return i;
			return -1;
		}, opt.zoom);
		if (i < 0)
			throw new Error("no frame " + opt.zoom);
		await page.locator("#frames > g").nth(i).locator("rect").click();
		await page.mouse.move(0, 0);
	}
	/* size the viewport to the drawing, then shoot the viewport */
	const size = await page.evaluate((text) => {
		const el = text ? document.querySelector("pre") :
			document.documentElement;
		if (el.tagName === "svg")	/* a standalone SVG: its own size */
			return { width: Math.ceil(el.width.baseVal.value),
				 height: Math.ceil(el.height.baseVal.value) };
		const r = el.getBoundingClientRect();
		return { width: Math.ceil(Math.max(r.width, el.scrollWidth)),
			 height: Math.ceil(Math.max(r.height, el.scrollHeight)) };
	}, !!opt.text);
	await page.setViewportSize({ width: Math.min(size.width, 1600),
				     height: Math.min(size.height, 2000) });
	await page.screenshot({ path: out });
	await browser.close();
	if (tmp)
		fs.unlinkSync(tmp);
})().catch((e) => {
	console.error("screenshot.js: " + e.message);
	process.exit(1);
});
