"use strict";
/*
 * The HTML page's time heatmap, after FlameScope: each cell as dark as the
 * weight that fell in it, time running down a column (earliest at the
 * top) and across the columns. Cells are as fine as the data: from a live
 * stream a column per second of 20 ms cells, from stored windows a
 * column per minute of 1 s cells (data.cell_ms, data.col_ms). Press on
 * one cell and release on another (or
 * click one cell) to select that time range; the flame graph below is
 * redrawn for it. "show all", Escape or a click outside the cells go back
 * to the whole profile. The range is kept in the URL as r=FIRST-LAST.
 * A page that embeds this one in a frame (cpa-serve's /ui) is told each
 * range as a message, {type: "cpa-range", from_ms, to_ms} (to exclusive;
 * no times for the whole profile), and nothing else.
 */
function CpaHeatmap(flame, data) {
	this.flame = flame;
	this.data = data;
	this.cells = [];	/* {cell, off, k, sum, rect} */
	this.byCell = {};
	this.range = null;
}

CpaHeatmap.prototype.start = function () {
	var d = this.data;
	if (!d.cells) {
		this.flame.draw(d, d.self);
		this.flame.restoreUrl();
		return;
	}
	var c = d.cells, i = 0, max = 0;
	while (i < c.length) {
		var k = c[i + 1], sum = 0;
		for (var j = 0; j < k; j++)
			sum += c[i + 3 + 2 * j];
		var cell = { cell: c[i], off: i + 2, k: k, sum: sum, rect: null };
		this.cells.push(cell);
		this.byCell[c[i]] = cell;
		if (sum > max)
			max = sum;
		i += 2 + 2 * k;
	}
	this.max = max;
	this.drawHeatmap();
	this.listen();
	var r = this.flame.params().r, m = r ? /^(\d+)-(\d+)$/.exec(r) : null;
	if (m)
		this.select(parseInt(m[1], 10), parseInt(m[2], 10));
	else
		this.showAll();
	this.flame.restoreUrl();
};

CpaHeatmap.prototype.drawHeatmap = function () {
	var d = this.data, ns = "http://www.w3.org/2000/svg";
	var svg = document.getElementById("heatmap");
	this.cw = Math.max(3, Math.min(40, Math.floor(1100 / d.cols)));
	this.ch = 6;
	this.x0 = 40;
	this.y0 = 4;
	var w = this.x0 + d.cols * this.cw + 10, h = this.y0 + d.rows * this.ch + 16;
	svg.setAttribute("width", w);
	svg.setAttribute("height", h);
	svg.setAttribute("viewBox", "0 0 " + w + " " + h);
	var frag = document.createDocumentFragment();
	for (var i = 0; i < this.cells.length; i++) {
		var cell = this.cells[i];
		var col = Math.floor(cell.cell / d.rows), row = cell.cell % d.rows;
		var v = cell.sum / this.max;
		var g = Math.round(255 * (1 - v)), rect = document.createElementNS(ns, "rect");
		rect.setAttribute("x", this.x0 + col * this.cw);
		rect.setAttribute("y", this.y0 + row * this.ch);
		rect.setAttribute("width", this.cw - 1);
		rect.setAttribute("height", this.ch - 1);
		/* even the lightest non-empty cell stays visibly tinted */
		rect.setAttribute("fill", "rgb(255," + Math.min(g, 230) + "," +
				  Math.min(g, 230) + ")");
		rect.setAttribute("data-cell", cell.cell);
		var title = document.createElementNS(ns, "title");
		title.textContent = this.when(cell.cell) + ": " +
			this.flame.value(cell.sum);
		rect.appendChild(title);
		cell.rect = rect;
		frag.appendChild(rect);
	}
	/* column marks along the bottom, about every 100 px: seconds from
	 * the start, or the local time of minute and hour columns */
	var every = Math.max(1, Math.ceil(100 / this.cw));
	for (var s = 0; s < d.cols; s += every) {
		var t = document.createElementNS(ns, "text");
		t.setAttribute("class", "axis");
		t.setAttribute("x", this.x0 + s * this.cw);
		t.setAttribute("y", h - 3);
		t.textContent = d.col_ms < 60000 ? "+" + s * d.col_ms / 1000 + "s" :
			this.when(s * d.rows).substring(11, 16);
		frag.appendChild(t);
	}
	var lab = document.createElementNS(ns, "text");
	lab.setAttribute("class", "axis");
	lab.setAttribute("x", 2);
	lab.setAttribute("y", this.y0 + 8);
	lab.textContent = d.col_ms < 60000 ? "0 ms" : "0 s";
	frag.appendChild(lab);
	lab = lab.cloneNode();
	lab.setAttribute("y", this.y0 + d.rows * this.ch);
	lab.textContent = this.span(d.col_ms);
	frag.appendChild(lab);
	svg.appendChild(frag);
};

/* "1 s", "1 min", "1 h": the length of a column. */
CpaHeatmap.prototype.span = function (ms) {
	return ms < 1000 ? ms + " ms" : ms < 60000 ? ms / 1000 + " s" :
		ms < 3600000 ? ms / 60000 + " min" : ms / 3600000 + " h";
};

/* The start of a cell, in ms since the epoch. */
CpaHeatmap.prototype.cellMs = function (cell) {
	var d = this.data;
	return d.start_ms + Math.floor(cell / d.rows) * d.col_ms +
		Math.round((cell % d.rows) * d.cell_ms);
};

/* Local wall-clock time of the start of a cell, to the millisecond
 * where cells are shorter than a second. */
CpaHeatmap.prototype.when = function (cell) {
	var d = this.data;
	var t = new Date(this.cellMs(cell));
	function two(n) { return (n < 10 ? "0" : "") + n; }
	var frac = d.cell_ms < 1000 ?
		"." + String(t.getMilliseconds() + 1000).substring(1) : "";
	return t.getFullYear() + "-" + two(t.getMonth() + 1) + "-" +
		two(t.getDate()) + " " + two(t.getHours()) + ":" +
		two(t.getMinutes()) + ":" + two(t.getSeconds()) + frac;
};

/* The cell under a mouse event, or -1 outside the grid. */
CpaHeatmap.prototype.cellAt = function (e) {
	var d = this.data, svg = document.getElementById("heatmap");
	var box = svg.getBoundingClientRect();
	var col = Math.floor((e.clientX - box.left - this.x0) / this.cw);
	var row = Math.floor((e.clientY - box.top - this.y0) / this.ch);
	if (col < 0 || col >= d.cols || row < 0 || row >= d.rows)
		return -1;
	return col * d.rows + row;
};

CpaHeatmap.prototype.mark = function (lo, hi) {
	for (var i = 0; i < this.cells.length; i++) {
		var c = this.cells[i];
		c.rect.classList.toggle("sel", c.cell >= lo && c.cell <= hi);
	}
};

/* Redraws the flame graph for cells lo..hi (time order, inclusive). */
CpaHeatmap.prototype.select = function (lo, hi) {
	var d = this.data;
	if (lo > hi) { var t = lo; lo = hi; hi = t; }
	var self = new Float64Array(d.parent.length), c = d.cells;
	for (var i = 0; i < this.cells.length; i++) {
		var cell = this.cells[i];
		if (cell.cell < lo || cell.cell > hi)
			continue;
		for (var j = 0; j < cell.k; j++)
			self[c[cell.off + 2 * j]] += c[cell.off + 2 * j + 1];
	}
	this.range = [lo, hi];
	this.mark(lo, hi);
	var total = this.flame.draw(d, self);
	document.getElementById("range").textContent = "Selected " +
		this.when(lo) + " to " + this.when(hi + 1) + ": " +
		this.flame.value(total);
	this.saveRange();
};

CpaHeatmap.prototype.showAll = function () {
	this.range = null;
	this.mark(1, 0);
	var total = this.flame.draw(this.data, this.data.self);
	document.getElementById("range").textContent = "All of " +
		this.when(0) + " to " + this.when(this.data.cols * this.data.rows) +
		": " + this.flame.value(total) +
		". Drag across the heatmap to select a time range.";
	this.saveRange();
};

/* Tells the page embedding this one, if any, the range shown. */
CpaHeatmap.prototype.tell = function () {
	var r = this.range, msg = { type: "cpa-range" };
	if (window.parent === window)
		return;
	if (r) {
		msg.from_ms = this.cellMs(r[0]);
		msg.to_ms = this.cellMs(r[1] + 1);
	}
	window.parent.postMessage(msg, "*");
};

CpaHeatmap.prototype.saveRange = function () {
	var f = this.flame, r = this.range;
	this.tell();
	if (f.restoring || !window.history || !history.replaceState)
		return;
	var url = window.location.search.replace(/([?&])r=[^&]*&?/, "$1")
		.replace(/[?&]$/, "");
	if (r)
		url += (url ? "&" : "?") + "r=" + r[0] + "-" + r[1];
	try {
		history.replaceState(null, "", url || window.location.pathname);
	} catch (e) {
		/* some browsers refuse on file: URLs */
	}
	f.saveUrl();
};

CpaHeatmap.prototype.listen = function () {
	var self = this, svg = document.getElementById("heatmap");
	var from = -1;
	svg.addEventListener("mousedown", function (e) {
		from = self.cellAt(e);
		if (from >= 0)
			self.mark(from, from);
		e.preventDefault();
	});
	svg.addEventListener("mousemove", function (e) {
		if (from < 0)
			return;
		var to = self.cellAt(e);
		if (to >= 0)
			self.mark(Math.min(from, to), Math.max(from, to));
	});
	svg.addEventListener("mouseup", function (e) {
		var to = self.cellAt(e);
		if (from >= 0 && to >= 0)
			self.select(from, to);
		else if (from < 0 && to < 0)
			self.showAll();
		from = -1;
	});
	document.getElementById("showall").addEventListener("click", function () {
		self.showAll();
	});
	window.addEventListener("keydown", function (e) {
		if (e.keyCode === 27 && self.range)
			self.showAll();
	});
};
