#!/usr/bin/env node
/*
 * Screenshots of cpa-render output for docs/render.md, taken with the
 * same headless Chromium as the browser tests (tests/browser/render-images
 * runs it for every picture).
 *
 * usage: screenshot.js IN OUT.png [--search RE] [--zoom NAME]
 *                      [--select FROM-TO] [--text] [--ansi]
 *   IN        an .svg or .html from cpa-render, or with --text any text
 *             file, shown as a terminal would
 *   --search  search for RE (through the URL, as a shared link would)
 *   --zoom    click the first frame named NAME
 *   --select  drag across heatmap seconds FROM to TO (html)
 *   --ansi    IN is a terminal screen with its colours (tmux
 *             capture-pane -e), drawn as the terminal drew it
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
		opt[args[i].slice(2)] = args[i] === "--text" ||
			args[i] === "--ansi" ? true : args[++i];
	else
		pos.push(args[i]);
}
if (pos.length !== 2) {
	console.error("usage: screenshot.js IN OUT.png [--search RE] [--zoom NAME] [--select FROM-TO] [--text]");
	process.exit(2);
}
const [input, out] = pos;

/* SGR colours of an 8-colour terminal, dark theme, to HTML spans */
const PALETTE = ["#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8",
		 "#bc3fbc", "#11a8cd", "#e5e5e5"];
function ansiToHtml(text) {
	let fg = null, bg = null, bold = false, rev = false, dim = false;
	let html = "";
	const esc = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;");
	for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
		const m = /^\x1b\[([0-9;]*)m$/.exec(part);
		if (!m) {
			if (!part)
				continue;
			let f = fg === null ? "#ddd" : PALETTE[fg];
			let b = bg === null ? "transparent" : PALETTE[bg];
			if (rev)
				[f, b] = [b === "transparent" ? "#1e1e1e" : b, f];
			html += `<span style="color:${f};background:${b}` +
				`${bold ? ";font-weight:bold" : ""}` +
				`${dim ? ";opacity:.6" : ""}">${esc(part)}</span>`;
			continue;
		}
		const codes = m[1] === "" ? [0] : m[1].split(";").map(Number);
		for (let i = 0; i < codes.length; i++) {
			const c = codes[i];
			if (c === 0) { fg = bg = null; bold = rev = dim = false; }
			else if (c === 1) bold = true;
			else if (c === 2) dim = true;
			else if (c === 7) rev = true;
			else if (c === 22) bold = dim = false;
			else if (c === 27) rev = false;
			else if (c >= 30 && c <= 37) fg = c - 30;
			else if (c === 39) fg = null;
			else if (c >= 40 && c <= 47) bg = c - 40;
			else if (c === 49) bg = null;
			else if (c >= 90 && c <= 97) fg = c - 90;
			else if (c >= 100 && c <= 107) bg = c - 100;
			else if (c === 38 || c === 48) i += codes[i + 1] === 5 ? 2 : 4;
		}
	}
	return html;
}

(async () => {
	const browser = await launch();
	const page = await browser.newPage({ viewport: { width: 1220, height: 400 } });
	let url = "file://" + path.resolve(input);
	let tmp = null;
	if (opt.text || opt.ansi) {
		const raw = fs.readFileSync(input, "utf8");
		const esc = opt.ansi ? ansiToHtml(raw) : raw.replace(/&/g, "&amp;")
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
	}, !!(opt.text || opt.ansi));
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
