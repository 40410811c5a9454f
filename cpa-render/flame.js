"use strict";
/*
 * The interactive part of a cpa flame graph, shared by the SVG file and
 * the HTML page: tooltips in the details line, click to zoom, reset,
 * regex search with "Matched: x%", a case toggle, and the zoom and search
 * kept in the URL (?x=..&y=..&s=..&i=1) so a link shows the same view.
 *
 * The DOM it drives: <g id="frames"> holding one <g> per frame with a
 * <title> ("name (value, pct%)"), a <rect> and a <text>; and the controls
 * #details, #unzoom, #search, #ignorecase, #matched. Frame positions are
 * read once from the rects, and every zoom is computed from those
 * originals, so zooming never accumulates rounding.
 */
function CpaFlame(cfg) {
	this.cfg = cfg;
	this.frames = [];
	this.zoomed = null;
	this.term = null;
	this.ignorecase = false;
	this.el = function (id) { return document.getElementById(id); };
}

CpaFlame.prototype.load = function () {
	var groups = this.el("frames").children;
	this.frames = [];
	for (var i = 0; i < groups.length; i++) {
		var g = groups[i];
		var rect = g.querySelector("rect"), text = g.querySelector("text");
		var title = g.querySelector("title").textContent;
		var fr = {
			g: g, rect: rect, text: text, title: title,
			name: title.replace(/ \([^(]*\)$/, ""),
			x: parseFloat(rect.getAttribute("x")),
			w: parseFloat(rect.getAttribute("width")),
			y: parseFloat(rect.getAttribute("y")),
			fill: rect.getAttribute("fill")
		};
		g.cpaFrame = fr;
		this.frames.push(fr);
	}
	this.zoomed = null;
};

CpaFlame.prototype.frameOf = function (node) {
	for (; node && node.parentNode; node = node.parentNode)
		if (node.cpaFrame)
			return node.cpaFrame;
	return null;
};

/* Text that fits w pixels: the name, cut with ".." when too long. */
CpaFlame.prototype.fit = function (name, w) {
	var chars = Math.floor(w / (this.cfg.fontsize * this.cfg.fontwidth));
	if (chars < 3)
		return "";
	if (name.length <= chars)
		return name;
	return name.substring(0, chars - 2) + "..";
};

CpaFlame.prototype.place = function (fr, x, w) {
	fr.rect.setAttribute("x", x.toFixed(2));
	fr.rect.setAttribute("width", w.toFixed(2));
	fr.text.setAttribute("x", (x + 3).toFixed(2));
	fr.text.textContent = this.fit(fr.name, w);
};

/* Is a closer to the root than b? Flames grow up, icicles down. */
CpaFlame.prototype.below = function (a, b) {
	return this.cfg.inverted ? a.y < b.y : a.y > b.y;
};

CpaFlame.prototype.zoom = function (target) {
	var cfg = this.cfg, eps = 0.005;
	var full = cfg.width - 2 * cfg.xpad;
	var ratio = full / target.w;
	for (var i = 0; i < this.frames.length; i++) {
		var fr = this.frames[i];
		var inside = fr.x >= target.x - eps &&
			fr.x + fr.w <= target.x + target.w + eps;
		var covers = fr.x <= target.x + eps &&
			fr.x + fr.w >= target.x + target.w - eps;
		fr.g.classList.remove("hide", "parent");
		if (this.below(fr, target) && covers) {
			fr.g.classList.add("parent");
			this.place(fr, cfg.xpad, full);
		} else if (!this.below(fr, target) && inside) {
			this.place(fr, cfg.xpad + (fr.x - target.x) * ratio,
				   fr.w * ratio);
		} else {
			fr.g.classList.add("hide");
		}
	}
	this.zoomed = target;
	this.el("unzoom").classList.remove("hide");
	if (this.term !== null)
		this.search(this.term);
	this.saveUrl();
};

CpaFlame.prototype.reset = function () {
	for (var i = 0; i < this.frames.length; i++) {
		var fr = this.frames[i];
		fr.g.classList.remove("hide", "parent");
		this.place(fr, fr.x, fr.w);
	}
	this.zoomed = null;
	this.el("unzoom").classList.add("hide");
	if (this.term !== null)
		this.search(this.term);
	this.saveUrl();
};

/*
 * Highlights frames whose name matches the regex and shows how much of
 * the view they cover, counting nested matches once. Returns the
 * matched percentage.
 */
CpaFlame.prototype.search = function (term) {
	var re;
	try {
		re = new RegExp(term, this.ignorecase ? "i" : "");
	} catch (e) {
		this.el("matched").textContent = "bad regex: " + e.message;
		return -1;
	}
	this.term = term;
	var spans = [];
	for (var i = 0; i < this.frames.length; i++) {
		var fr = this.frames[i];
		if (re.test(fr.name)) {
			fr.rect.setAttribute("fill", this.cfg.searchcolor);
			if (!fr.g.classList.contains("hide") &&
			    !fr.g.classList.contains("parent"))
				spans.push([parseFloat(fr.rect.getAttribute("x")),
					    parseFloat(fr.rect.getAttribute("width"))]);
		} else {
			fr.rect.setAttribute("fill", fr.fill);
		}
	}
	spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
	var covered = 0, end = -Infinity;
	for (var k = 0; k < spans.length; k++) {
		var s = spans[k][0], e = s + spans[k][1];
		if (e <= end)
			continue;	/* nested in a match already counted */
		covered += e - Math.max(s, end);
		end = e;
	}
	var pct = 100 * covered / (this.cfg.width - 2 * this.cfg.xpad);
	this.el("search").classList.add("show");
	this.el("search").textContent = "Reset Search";
	this.el("matched").textContent = "Matched: " +
		(pct > 99.995 ? "100" : pct.toFixed(2)) + "%";
	this.el("matched").classList.remove("hide");
	this.saveUrl();
	return pct;
};

CpaFlame.prototype.clearSearch = function () {
	this.term = null;
	for (var i = 0; i < this.frames.length; i++)
		this.frames[i].rect.setAttribute("fill", this.frames[i].fill);
	this.el("search").classList.remove("show");
	this.el("search").textContent = "Search";
	this.el("matched").classList.add("hide");
	this.saveUrl();
};

CpaFlame.prototype.toggleCase = function () {
	this.ignorecase = !this.ignorecase;
	this.el("ignorecase").classList.toggle("show", this.ignorecase);
	if (this.term !== null)
		this.search(this.term);
	else
		this.saveUrl();
};

CpaFlame.prototype.prompt = function () {
	if (this.term !== null) {
		this.clearSearch();
		return;
	}
	var term = window.prompt("Enter a search term (regexp allowed, " +
		"e.g. ^ext4_)" + (this.ignorecase ? ", ignoring case" : ""), "");
	if (term)
		this.search(term);
};

/* ---- state in the URL ---------------------------------------------- */

CpaFlame.prototype.params = function () {
	var out = {}, q = window.location.search.substring(1).split("&");
	for (var i = 0; i < q.length; i++) {
		var kv = q[i].split("=");
		if (kv[0] && kv.length > 1)
			out[kv[0]] = decodeURIComponent(kv[1]);
	}
	return out;
};

CpaFlame.prototype.saveUrl = function () {
	if (!window.history || !history.replaceState || this.restoring)
		return;
	var p = this.params();
	delete p.x; delete p.y; delete p.s; delete p.i;
	if (this.zoomed) {
		p.x = this.zoomed.x.toFixed(2);
		p.y = this.zoomed.y.toFixed(2);
	}
	if (this.term !== null)
		p.s = this.term;
	if (this.ignorecase)
		p.i = "1";
	var q = [];
	for (var k in p)
		q.push(k + "=" + encodeURIComponent(p[k]));
	try {
		history.replaceState(null, "", q.length ? "?" + q.join("&") :
				     window.location.pathname);
	} catch (e) {
		/* file: URLs in some browsers refuse; the view still works */
	}
};

CpaFlame.prototype.restoreUrl = function () {
	var p = this.params();
	this.restoring = true;
	if (p.i === "1")
		this.toggleCase();
	if (p.x !== undefined && p.y !== undefined) {
		for (var i = 0; i < this.frames.length; i++) {
			var fr = this.frames[i];
			if (Math.abs(fr.x - parseFloat(p.x)) < 0.006 &&
			    Math.abs(fr.y - parseFloat(p.y)) < 0.006) {
				this.zoom(fr);
				break;
			}
		}
	}
	if (p.s)
		this.search(p.s);
	this.restoring = false;
};

/* ---- events -------------------------------------------------------- */

CpaFlame.prototype.listen = function () {
	var self = this;
	window.addEventListener("click", function (e) {
		var fr = self.frameOf(e.target);
		if (fr) {
			if (fr === self.zoomed)
				return;
			if (fr.g.classList.contains("parent") && fr.w >= self.cfg.width - 2 * self.cfg.xpad - 0.01)
				self.reset();
			else
				self.zoom(fr);
		} else if (e.target.id === "unzoom") {
			self.reset();
		} else if (e.target.id === "search") {
			self.prompt();
		} else if (e.target.id === "ignorecase") {
			self.toggleCase();
		}
	}, false);
	window.addEventListener("mouseover", function (e) {
		var fr = self.frameOf(e.target);
		if (fr)
			self.el("details").textContent = self.cfg.nametype + " " + fr.title;
	}, false);
	window.addEventListener("mouseout", function (e) {
		if (self.frameOf(e.target))
			self.el("details").textContent = " ";
	}, false);
	window.addEventListener("keydown", function (e) {
		if (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) {
			e.preventDefault();	/* F3 or ctrl-F: search */
			self.prompt();
		} else if (e.ctrlKey && e.keyCode === 73) {
			e.preventDefault();	/* ctrl-I: case */
			self.toggleCase();
		} else if (e.keyCode === 27) {
			self.reset();		/* Esc: reset zoom */
		}
	}, false);
};

/* ---- drawing from data (the HTML page) ----------------------------- */

/*
 * Draws the frames of a profile given the self weight of every node.
 * model: names[], colors[] (per name), node_name[], parent[] (nodes in
 * depth-first drawing order, so a parent comes before its children).
 * Returns the total weight drawn.
 */
CpaFlame.prototype.draw = function (model, self) {
	var cfg = this.cfg, n = model.parent.length;
	var tot = new Float64Array(n), x = new Float64Array(n);
	var off = new Float64Array(n), depth = new Int32Array(n);
	var i;
	for (i = 0; i < n; i++)
		tot[i] = self[i] || 0;
	for (i = n - 1; i > 0; i--)
		tot[model.parent[i]] += tot[i];
	var total = tot[0];
	var full = cfg.width - 2 * cfg.xpad;
	var per = total > 0 ? full / total : 0;
	var minw = cfg.minwidth_pct ? total * cfg.minwidth / 100 :
		(per > 0 ? cfg.minwidth / per : 0);
	var maxdepth = 0;
	for (i = 1; i < n; i++) {
		var p = model.parent[i];
		x[i] = off[p];
		off[p] += tot[i];
		off[i] = x[i];
		depth[i] = depth[p] + 1;
		if (tot[i] > 0 && tot[i] >= minw && depth[i] > maxdepth)
			maxdepth = depth[i];
	}
	var fh = cfg.frameheight;
	var height = (maxdepth + 1) * fh + cfg.ypad1 + cfg.ypad2;
	var svg = this.el("frames").ownerSVGElement;
	svg.setAttribute("height", height);
	svg.setAttribute("viewBox", "0 0 " + cfg.width + " " + height);
	this.el("bg").setAttribute("height", height);
	this.el("details").setAttribute("y", height - cfg.ypad2 / 2);
	this.el("matched").setAttribute("y", height - cfg.ypad2 / 2);
	var ns = "http://www.w3.org/2000/svg";
	var frag = document.createDocumentFragment();
	for (i = 0; i < n; i++) {
		if (tot[i] <= 0 || tot[i] < minw)
			continue;
		var y1 = cfg.inverted ? cfg.ypad1 + depth[i] * fh :
			height - cfg.ypad2 - (depth[i] + 1) * fh + 1;
		var w = tot[i] * per, rx = cfg.xpad + x[i] * per;
		var name = i ? model.names[model.node_name[i]] : "all";
		var g = document.createElementNS(ns, "g");
		var t = document.createElementNS(ns, "title");
		t.textContent = name + " (" + this.value(tot[i]) + ", " +
			(i ? (100 * tot[i] / total).toFixed(2) : "100") + "%)";
		var r = document.createElementNS(ns, "rect");
		r.setAttribute("x", rx.toFixed(2));
		r.setAttribute("y", y1.toFixed(2));
		r.setAttribute("width", w.toFixed(2));
		r.setAttribute("height", (fh - 1).toFixed(1));
		r.setAttribute("fill", i ? model.colors[model.node_name[i]] :
			       "rgb(250,250,250)");
		r.setAttribute("rx", "2");
		r.setAttribute("ry", "2");
		var tx = document.createElementNS(ns, "text");
		tx.setAttribute("x", (rx + 3).toFixed(2));
		tx.setAttribute("y", (y1 + fh / 2 + 2.5).toFixed(2));
		tx.textContent = this.fit(name, w);
		g.appendChild(t);
		g.appendChild(r);
		g.appendChild(tx);
		frag.appendChild(g);
	}
	var frames = this.el("frames");
	while (frames.firstChild)
		frames.removeChild(frames.firstChild);
	frames.appendChild(frag);
	var term = this.term;
	this.load();
	this.el("unzoom").classList.add("hide");
	if (term !== null)
		this.search(term);
	return total;
};

/* A weight as the tooltips write it: "1,234 samples", "12.50 ms" or
 * "1.50 MiB" (units.c's format_value). */
CpaFlame.prototype.value = function (v) {
	if (this.cfg.unit === "bytes" && !this.cfg.countname_set && v >= 1024) {
		var big = ["KiB", "MiB", "GiB", "TiB"], i = 0;
		v /= 1024;
		for (; v >= 1024 && i < 3; i++)
			v /= 1024;
		return v.toFixed(2) + " " + big[i];
	}
	if (this.cfg.unit === "ns" && !this.cfg.countname_set) {
		if (v >= 1e9) return (v / 1e9).toFixed(2) + " s";
		if (v >= 1e6) return (v / 1e6).toFixed(2) + " ms";
		if (v >= 1e3) return (v / 1e3).toFixed(2) + " us";
		return Math.round(v) + " ns";
	}
	var s = String(Math.round(v)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
	return s + " " + this.cfg.countname;
};
