// report.html's script: time-sequence graphs and latency distributions
// drawn with uPlot from the columns in #lumina-data (see page.go). The Go
// tests drive it through window.lumina (report_browser_test.go in
// cmd/lumina).
"use strict";
(function () {
	const tStart = performance.now();
	const D = JSON.parse(document.getElementById("lumina-data").textContent);
	// timing: ms spent parsing the JSON, inflating the columns, making the graphs.
	const L = (window.lumina = { ready: false, graphs: [], data: D, loadMs: 0, timing: { parse: performance.now() - tStart },
		show: async () => -1, showAll: async () => {} }); // show, showAll: see more()
	// Class colors and point sizes, in ClassNames order: data, retransmission,
	// drop, corrupt, ECN mark, delay/reorder/duplicate, ACK, NAK, CNP.
	const COLORS = ["#4a6ec8", "#1a9e3c", "#e01b1b", "#9b00a8", "#f29900", "#00a3b4", "#a8a8a8", "#c8007a", "#111111"];
	const SIZES = [3, 4, 7, 7, 6, 6, 3, 7, 6];
	// DRAW is the drawing order of the classes (later on top): ACK, NAK,
	// CNP, data, retransmission, other event, ECN mark, corrupt, drop.
	const DRAW = [6, 7, 8, 0, 1, 5, 4, 3, 2];
	const SERIES = []; // class -> uPlot series index
	DRAW.forEach((k, s) => (SERIES[k] = s + 1));
	// LIMIT is the number of packets in view up to which every packet is
	// drawn; beyond it, packets sharing a pixel (and class) are drawn once.
	const LIMIT = 100000;
	const TYPES = { f64: Float64Array, i32: Int32Array, u32: Uint32Array, u16: Uint16Array, u8: Uint8Array };
	const HEIGHT = 340;
	// Watchdog firings (the pfc analyzer's, docs/pfc.md): marker colour and
	// label by kind.
	const WATCHDOG = {
		"switch-storm": ["#d00000", "switch storm"],
		"switch-restore": ["#008a00", "switch restore"],
		nic: ["#7b2fbf", "NIC watchdog"],
	};
	const wdStyle = (w) => WATCHDOG[w.kind] || ["#555555", w.kind];

	function lb(a, v, lo, hi) {
		while (lo < hi) {
			const m = (lo + hi) >>> 1;
			if (a[m] < v) lo = m + 1;
			else hi = m;
		}
		return lo;
	}
	function ub(a, v, lo, hi) {
		while (lo < hi) {
			const m = (lo + hi) >>> 1;
			if (a[m] <= v) lo = m + 1;
			else hi = m;
		}
		return lo;
	}

	// fmtNs formats a duration in ns with a readable unit.
	function fmtNs(v, digits) {
		const a = Math.abs(v);
		const d = digits === undefined ? 3 : digits;
		if (a < 1e3) return +v.toFixed(0) + " ns";
		if (a < 1e6) return +(v / 1e3).toFixed(d) + " µs";
		if (a < 1e9) return +(v / 1e6).toFixed(d) + " ms";
		return +(v / 1e9).toFixed(d) + " s";
	}
	// timeTicks labels ticks with one unit chosen from the visible span and
	// as many decimals as the tick step needs.
	function timeTicks(u, splits, ax, space, incr) {
		const sc = u.scales[u.axes[ax].scale];
		const span = Math.max(Math.abs(sc.max), Math.abs(sc.min), incr);
		const [unit, div] = span < 2e3 ? ["ns", 1] : span < 2e6 ? ["µs", 1e3] : span < 2e9 ? ["ms", 1e6] : ["s", 1e9];
		const dec = Math.min(6, Math.max(0, Math.ceil(-Math.log10(incr / div) - 1e-9)));
		return splits.map((v) => (v / div).toLocaleString("en-US", { minimumFractionDigits: dec, maximumFractionDigits: dec }) + " " + unit);
	}

	async function inflate(b64) {
		// A data: URL has the browser decode the base64 natively.
		const blob = await (await fetch("data:application/octet-stream;base64," + b64)).blob();
		return new Response(blob.stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
	}

	// load decodes a connection's columns and undoes the delta coding.
	async function load(pc) {
		const buf = pc.n ? await inflate(pc.data) : new ArrayBuffer(0);
		const c = { id: pc.id, title: pc.title, n: pc.n, counts: pc.counts, rethOf: new Map(), c0: BigInt(pc.c0 || "0") };
		for (const [name, type, off] of pc.cols) c[name] = new TYPES[type](buf, off, pc.n);
		for (let i = 1; i < c.n; i++) {
			c.t[i] += c.t[i - 1];
			c.cap[i] += c.cap[i - 1];
			c.seq[i] += c.seq[i - 1];
			c.ts[i] += c.ts[i - 1];
			c.idx[i] += c.idx[i - 1];
		}
		for (const r of pc.reth) c.rethOf.set(r.i, r);
		return c;
	}

	function secs(ns) {
		let neg = ns < 0n;
		if (neg) ns = -ns;
		return (neg ? "-" : "") + (ns / 1000000000n).toString() + "." + (ns % 1000000000n).toString().padStart(9, "0");
	}

	// line is packet i's `lumina decode` text line (decoder.appendText in
	// cmd/lumina/decode.go); TestReportBrowser checks it against the Go
	// decoder for every packet of its traces.
	// RNR_US is the minimum RNR NAK delay of each timer code in µs (IBA
	// Table 45, roce.RNRTimer): decode prints it after the code.
	const RNR_US = [655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680,
		10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520];
	function line(c, i) {
		const fl = c.fl[i];
		const tup = D.tuples[c.tup[i]];
		let s = c.idx[i] + " " + secs(c.c0 + BigInt(c.cap[i])) + " " + tup.p + D.ops[c.op[i]] + " qp=0x" + tup.q + " psn=" + c.psn[i];
		if (fl & 1) s += " A";
		if (fl & 2) s += " BECN";
		const ecn = (fl >> 2) & 3;
		if (ecn) s += " ecn=" + ecn;
		if (fl & 0x200) {
			const a = c.aeth[i], syn = a >>> 24, ty = (syn & 0x60) >> 5, v = syn & 0x1f;
			s += " " + D.ackTypes[ty] + "(";
			if (ty === 3) s += v < D.naks.length ? D.naks[v] : String(v);
			else if (ty === 0) s += "credit=" + v;
			else if (ty === 1) s += "timer=" + v + " " + (RNR_US[v] * 1000) / 1e6 + "ms";
			else s += v;
			s += ") msn=" + (a & 0xffffff);
		}
		if (fl & 0x400) {
			const r = c.rethOf.get(i);
			s += " va=0x" + r.va + " rkey=0x" + r.rkey + " dlen=" + r.dlen;
		}
		s += " len=" + c.len[i];
		const pad = (fl >> 5) & 3;
		if (pad) s += " pad=" + pad;
		s += " icrc=" + D.icrc[(fl >> 7) & 3];
		if (fl & 0x10) {
			s += " [mirror seq=" + c.seq[i] + " ts=" + c.ts[i] + " event=" + D.events[c.ev[i]];
			const h = c.hold[i];
			if (h && (c.ev[i] === 4 || c.ev[i] === 5)) {
				// roce.HoldCode: 13-bit mantissa << 3 × 3-bit exponent
				const unit = 2 ** (3 * (h >>> 13)), ns = (h & 0x1fff) * unit;
				s += " hold=" + ns + (unit > 1 ? ".." + (ns + unit - 1) : "") + "ns";
			}
			s += "]";
		}
		return s;
	}
	L.line = (k, i) => line(L.graphs[k].c, i);

	function lossOf(c, i) {
		const idx = c.idx[i];
		for (const l of D.losses) if (l.conn === c.id && (l.index === idx || l.retx_index === idx)) return l;
		return null;
	}

	function el(tag, cls, text) {
		const e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined) e.textContent = text;
		return e;
	}

	class Graph {
		constructor(c, root) {
			this.c = c;
			this.shown = COLORS.map(() => true);
			this.hover = -1;
			this.box = el("div", "graph");
			root.appendChild(this.box);
			this.box.appendChild(el("h3", "", c.title));
			this.bar = el("div", "bar");
			this.box.appendChild(this.bar);
			this.legend = el("div", "legend");
			this.box.appendChild(this.legend);
			this.plot = el("div");
			this.box.appendChild(this.plot);
			this.tip = el("div", "tip");
			this.tip.hidden = true;
			this.box.appendChild(this.tip);
			this.detail = el("div", "loss");
			this.detail.hidden = true;
			this.box.appendChild(this.detail);
			const t = c.t;
			this.full = c.n ? [t[0], t[c.n - 1]] : [0, 1];
			const pad = Math.max(10, (this.full[1] - this.full[0]) * 0.01);
			this.full = [this.full[0] - pad, this.full[1] + pad];
			this.range = this.full.slice();
			this.w = Math.max(300, root.clientWidth);
			this.grid = null;
			// marks: the watchdog markers drawn in the last redraw (tests).
			this.marks = 0;
			this.makeLegend();
			this.make();
			this.makePeriods();
		}

		// makePeriods offers a button per busy period when long idle gaps
		// (a timeout, say) would squeeze the traffic into a few pixels.
		makePeriods() {
			const c = this.c, t = c.t;
			if (c.n < 2) return;
			const span = t[c.n - 1] - t[0];
			let gaps = [];
			for (let i = 1; i < c.n; i++) if (t[i] - t[i - 1] > span * 0.05) gaps.push(i);
			if (!gaps.length) return;
			gaps = gaps.sort((a, b) => (t[b] - t[b - 1]) - (t[a] - t[a - 1])).slice(0, 7).sort((a, b) => a - b);
			const box = el("div", "bar", "Busy periods: ");
			let start = 0;
			for (const end of [...gaps, c.n]) {
				const a = t[start], b = t[end - 1], pad = Math.max(10, (b - a) * 0.02);
				const btn = el("button", "", (a === b ? fmtNs(a) : fmtNs(a) + " – " + fmtNs(b)) + " (" + (end - start).toLocaleString("en-US") + " packets)");
				btn.onclick = () => this.zoom(a - pad, b + pad);
				box.appendChild(btn);
				start = end;
			}
			this.box.insertBefore(box, this.legend);
		}

		makeLegend() {
			D.classes.forEach((name, k) => {
				if (!this.c.counts[k]) return;
				const s = el("span");
				const dot = el("i");
				dot.style.background = COLORS[k];
				s.appendChild(dot);
				s.appendChild(document.createTextNode(name + " " + this.c.counts[k].toLocaleString("en-US")));
				s.onclick = () => {
					this.shown[k] = !this.shown[k];
					s.classList.toggle("off", !this.shown[k]);
					this.u.setSeries(SERIES[k], { show: this.shown[k] });
				};
				this.legend.appendChild(s);
			});
			if (D.pauses.length) {
				const s = el("span", "", "PFC pause (any port)");
				const dot = el("i");
				dot.style.background = "rgba(255,140,0,.35)";
				dot.style.borderRadius = "0";
				s.prepend(dot);
				this.legend.appendChild(s);
			}
			const kinds = [...new Set(D.watchdogs.map((w) => w.kind))];
			for (const k of kinds) {
				const [col, name] = wdStyle({ kind: k });
				const s = el("span", "wd", "PFC watchdog: " + name + " (" + D.watchdogs.filter((w) => w.kind === k).length + ")");
				const dot = el("i");
				dot.style.background = col;
				dot.style.borderRadius = "0";
				dot.style.width = "3px";
				s.prepend(dot);
				this.legend.appendChild(s);
			}
		}

		make() {
			const g = this;
			const series = [{}];
			for (const k of DRAW)
				series.push({ label: D.classes[k], stroke: COLORS[k], paths: () => null, points: { show: true, size: SIZES[k], fill: COLORS[k], stroke: COLORS[k], width: 0 } });
			const opts = {
				width: this.w,
				height: HEIGHT,
				legend: { show: false },
				scales: {
					x: { time: false, range: () => g.range },
					y: { range: () => { const p = Math.max(1, (g.ymax - g.ymin) * 0.05); return [g.ymin - p, g.ymax + p]; } },
				},
				axes: [
					{ values: timeTicks, label: "time since trace start (switch timestamps)", space: 90 },
					{ label: "PSN − IPSN", size: 70 },
				],
				series,
				cursor: {
					drag: { x: true, y: false, setScale: false },
					points: { show: false },
					bind: {
						mousedown: (u, targ, handler) => (e) => {
							if (e.shiftKey || e.button === 1) {
								g.startPan(e);
								return null;
							}
							return handler(e);
						},
						dblclick: () => () => {
							g.zoom(g.full[0], g.full[1]);
							return null;
						},
					},
				},
				hooks: {
					setSelect: [(u) => {
						const s = u.select;
						if (s.width > 3) {
							const a = u.posToVal(s.left, "x"), b = u.posToVal(s.left + s.width, "x");
							u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
							g.zoom(a, b);
						}
					}],
					setCursor: [() => g.onCursor()],
					drawClear: [(u) => g.drawPauses(u)],
					draw: [(u) => g.drawWatchdogs(u)],
				},
			};
			this.u = new uPlot(opts, this.view(), this.plot);
			const over = this.u.over;
			over.addEventListener("wheel", (e) => {
				e.preventDefault();
				const x = this.u.posToVal(e.offsetX, "x");
				const f = e.deltaY < 0 ? 0.7 : 1 / 0.7;
				const [a, b] = this.range;
				this.zoom(x - (x - a) * f, x + (b - x) * f);
			}, { passive: false });
			over.addEventListener("click", () => this.onClick());
			over.addEventListener("mouseleave", () => { this.tip.hidden = true; this.hover = -1; });
			this.updateBar();
		}

		// view selects the packets in the visible time range and returns
		// uPlot's data: x, then one y array per class (null elsewhere).
		view() {
			const c = this.c, [a, b] = this.range;
			const i0 = lb(c.t, a, 0, c.n), i1 = ub(c.t, b, i0, c.n);
			let ymin = Infinity, ymax = -Infinity;
			for (let i = i0; i < i1; i++) {
				const y = c.rel[i];
				if (y < ymin) ymin = y;
				if (y > ymax) ymax = y;
			}
			if (i1 <= i0) { ymin = 0; ymax = 1; }
			this.ymin = ymin;
			this.ymax = ymax;
			const n = i1 - i0;
			let sel;
			if (n <= LIMIT) {
				sel = new Uint32Array(n);
				for (let k = 0; k < n; k++) sel[k] = i0 + k;
				this.sampled = false;
			} else {
				const W = Math.max(100, Math.round(this.w)), H = HEIGHT;
				const size = D.classes.length * W * H;
				if (!this.grid || this.grid.length !== size) this.grid = new Uint8Array(size);
				const grid = this.grid;
				grid.fill(0);
				const sx = (W - 1) / (b - a || 1), sy = (H - 1) / (ymax - ymin || 1);
				const out = new Uint32Array(Math.min(n, size));
				let m = 0;
				for (let i = i0; i < i1; i++) {
					const key = (c.cls[i] * H + (((c.rel[i] - ymin) * sy) | 0)) * W + (((c.t[i] - a) * sx) | 0);
					if (!grid[key]) {
						grid[key] = 1;
						out[m++] = i;
					}
				}
				sel = out.subarray(0, m);
				this.sampled = true;
			}
			this.sel = sel;
			this.inView = n;
			const xs = new Float64Array(sel.length);
			const ys = D.classes.map(() => new Array(sel.length).fill(null));
			for (let k = 0; k < sel.length; k++) {
				const i = sel[k];
				xs[k] = c.t[i];
				ys[c.cls[i]][k] = c.rel[i];
			}
			this.xs = xs;
			this.drawn = sel.length;
			return [xs, ...DRAW.map((k) => ys[k])];
		}

		zoom(a, b) {
			const fs = this.full[1] - this.full[0];
			if (b - a > fs) { a = this.full[0]; b = this.full[1]; }
			if (b - a < 10) { const m = (a + b) / 2; a = m - 5; b = m + 5; }
			this.range = [a, b];
			this.u.setData(this.view());
			this.updateBar();
		}

		startPan(e) {
			const x0 = e.clientX, [a0, b0] = this.range, w = this.u.over.clientWidth;
			const move = (ev) => {
				const dv = ((ev.clientX - x0) * (b0 - a0)) / w;
				this.zoom(a0 - dv, b0 - dv);
			};
			const up = () => {
				window.removeEventListener("mousemove", move);
				window.removeEventListener("mouseup", up);
			};
			window.addEventListener("mousemove", move);
			window.addEventListener("mouseup", up);
		}

		updateBar() {
			const [a, b] = this.range;
			this.bar.textContent = this.c.n.toLocaleString("en-US") + " packets; showing " + fmtNs(Math.max(0, a)) + " to " + fmtNs(b) +
				" (" + this.inView.toLocaleString("en-US") + " packets in view, " +
				(this.sampled ? this.drawn.toLocaleString("en-US") + " points drawn: one per pixel and class" : "every packet drawn") + ")";
			const btn = el("button", "", "whole trace");
			btn.onclick = () => this.zoom(this.full[0], this.full[1]);
			this.bar.appendChild(btn);
		}

		drawPauses(u) {
			if (!D.pauses.length) return;
			const ctx = u.ctx, { left, top, width, height } = u.bbox;
			ctx.save();
			ctx.fillStyle = "rgba(255,140,0,0.16)";
			for (const p of D.pauses) {
				let x0 = u.valToPos(p.s, "x", true), x1 = u.valToPos(p.e, "x", true);
				if (x1 < left || x0 > left + width) continue;
				x0 = Math.max(x0, left);
				x1 = Math.min(x1, left + width);
				ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
			}
			ctx.restore();
		}

		// drawWatchdogs draws each PFC watchdog firing in view as a dashed
		// vertical line labelled with its kind.
		drawWatchdogs(u) {
			this.marks = 0;
			if (!D.watchdogs.length) return;
			const ctx = u.ctx, { left, top, width, height } = u.bbox;
			ctx.save();
			ctx.lineWidth = 2 * devicePixelRatio;
			ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
			ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
			ctx.textBaseline = "top";
			ctx.textAlign = "left";
			for (const w of D.watchdogs) {
				const x = u.valToPos(w.t, "x", true);
				if (x < left || x > left + width) continue;
				const [col, name] = wdStyle(w);
				ctx.strokeStyle = col;
				ctx.fillStyle = col;
				ctx.beginPath();
				ctx.moveTo(x, top);
				ctx.lineTo(x, top + height);
				ctx.stroke();
				const tw = ctx.measureText(name).width;
				ctx.fillText(name, x + tw + 4 > left + width ? x - tw - 4 : x + 4, top + 2 + (this.marks % 3) * 13 * devicePixelRatio);
				this.marks++;
			}
			ctx.restore();
		}

		// watchdogAt returns the watchdog firing drawn within r px of
		// cursor position l, or null.
		watchdogAt(l, r) {
			const u = this.u;
			let best = null, bd = r + 1e-9;
			for (const w of D.watchdogs) {
				const d = Math.abs(u.valToPos(w.t, "x") - l);
				if (d < bd) { bd = d; best = w; }
			}
			return best;
		}

		// nearest returns the drawn packet nearest the cursor within r px, or -1.
		nearest(l, t, r) {
			const u = this.u, c = this.c, xs = this.xs;
			const j0 = lb(xs, u.posToVal(l - r, "x"), 0, xs.length), j1 = ub(xs, u.posToVal(l + r, "x"), j0, xs.length);
			let best = -1, bd = r * r + 1e-9;
			for (let j = j0; j < j1; j++) {
				const i = this.sel[j];
				if (!this.shown[c.cls[i]]) continue;
				const dx = u.valToPos(xs[j], "x") - l, dy = u.valToPos(c.rel[i], "y") - t;
				const d = dx * dx + dy * dy;
				if (d < bd) { bd = d; best = i; }
			}
			return best;
		}

		onCursor() {
			const u = this.u, l = u.cursor.left, t = u.cursor.top;
			if (l == null || l < 0) {
				this.tip.hidden = true;
				this.hover = -1;
				return;
			}
			const i = this.nearest(l, t, 8);
			this.hover = i;
			const tip = this.tip;
			tip.textContent = "";
			if (i < 0) {
				const x = u.posToVal(l, "x");
				const w = this.watchdogAt(l, 5);
				const p = D.pauses.find((p) => p.s <= x && x <= p.e);
				if (w) {
					tip.appendChild(el("b", "", "PFC watchdog: " + wdStyle(w)[1] + " at " + fmtNs(w.t, 6) + ", port " + w.port + (w.host ? " (" + w.host + ")" : "") +
						", priority " + w.prio));
					tip.appendChild(el("div", "wd", w.detail));
				} else if (p) {
					tip.appendChild(el("b", "", "PFC pause " + p.dir + ", port " + p.port + (p.host ? " (" + p.host + ")" : "") + ", priority " + p.prio));
					tip.appendChild(el("div", "", fmtNs(p.s) + " to " + fmtNs(p.e) + " (" + fmtNs(p.e - p.s) + ")"));
				} else {
					tip.hidden = true;
					return;
				}
			} else {
				const c = this.c;
				tip.appendChild(el("b", "", D.classes[c.cls[i]] + " at " + fmtNs(c.t[i], 6) + ", PSN − IPSN " + c.rel[i]));
				tip.appendChild(el("div", "line", line(c, i)));
				if (c.fl[i] & 0x10) tip.appendChild(el("div", "meta", "mirror seq " + c.seq[i] + ", switch timestamp " + c.ts[i] + " ns, frame " + c.idx[i]));
				else tip.appendChild(el("div", "meta", "frame " + c.idx[i] + " (no mirror metadata)"));
				if (lossOf(c, i)) tip.appendChild(el("div", "", "click for the loss's latency breakdown"));
			}
			tip.hidden = false;
			const ob = u.over.getBoundingClientRect(), bb = this.box.getBoundingClientRect();
			let x = ob.left - bb.left + l + 14, y = ob.top - bb.top + t + 14;
			if (x + tip.offsetWidth > bb.width) x = Math.max(0, ob.left - bb.left + l - tip.offsetWidth - 14);
			tip.style.left = x + "px";
			tip.style.top = y + "px";
		}

		onClick() {
			const i = this.hover;
			if (i < 0) return;
			const l = lossOf(this.c, i);
			if (!l) return;
			this.showLoss(l);
		}

		showLoss(l) {
			const d = this.detail;
			d.textContent = "";
			d.hidden = false;
			d.appendChild(el("b", "", "Lost packet: conn " + l.conn + ", PSN − IPSN " + l.rel + " (" + l.event + ", iteration " + l.iter + ", " + l.kind +
				" retransmission), frame " + l.index + (l.retx_index >= 0 ? ", retransmitted in frame " + l.retx_index : "")));
			const parts = [["NACK generation", l.gen, "#4a6ec8"], ["NACK reaction", l.react, "#dc7820"]];
			let rest = null;
			if (l.retx != null) rest = Math.max(0, l.retx - (l.gen || 0) - (l.react || 0));
			parts.push(["rest of the retransmission", rest, "#a0a0a0"]);
			const stack = el("div", "stack");
			const legend = el("div");
			for (const [name, v, col] of parts) {
				const sw = el("span", "sw");
				sw.style.background = col;
				legend.appendChild(sw);
				legend.appendChild(document.createTextNode(name + ": " + (v == null ? "n/a" : fmtNs(v))));
				if (v != null && l.retx > 0) {
					const b = el("div");
					b.style.background = col;
					b.style.width = (100 * v) / l.retx + "%";
					stack.appendChild(b);
				}
			}
			d.appendChild(stack);
			d.appendChild(legend);
			d.appendChild(el("div", "", "retransmission latency (loss to retransmission): " + (l.retx == null ? "n/a" : fmtNs(l.retx))));
			L.lastLoss = l;
		}

		resize(w) {
			this.w = w;
			this.u.setSize({ width: w, height: HEIGHT });
			this.u.setData(this.view());
			this.updateBar();
		}

		// pos returns packet i's position in client coordinates (tests).
		pos(i) {
			const r = this.u.over.getBoundingClientRect();
			return { x: r.left + this.u.valToPos(this.c.t[i], "x"), y: r.top + this.u.valToPos(this.c.rel[i], "y") };
		}
	}

	function cdfs() {
		const pick = (f) => D.losses.map(f).filter((v) => v != null);
		const samples = [
			["NACK generation", pick((l) => (l.kind === "fast" ? l.gen : null)), "#4a6ec8"],
			["NACK reaction", pick((l) => (l.kind === "fast" ? l.react : null)), "#dc7820"],
			["fast retransmission", pick((l) => (l.kind === "fast" ? l.retx : null)), "#1a9e3c"],
			["timeout retransmission", pick((l) => (l.kind === "timeout" ? l.retx : null)), "#9b00a8"],
			["timeout interval", D.timeouts.slice(), "#e01b1b"],
		].filter((s) => s[1].length);
		if (!samples.length) return;
		let lo = Infinity, hi = -Infinity;
		for (const s of samples) {
			s[1].sort((a, b) => a - b);
			lo = Math.min(lo, s[1][0]);
			hi = Math.max(hi, s[1][s[1].length - 1]);
		}
		const log = lo > 0 && hi / lo > 50;
		// Anchors left and right of every sample, so that each CDF is
		// drawn from 0 to 1, a constant sample as one vertical step.
		const span = hi - lo || Math.max(1, Math.abs(lo) * 0.2);
		const left = log ? 10 ** Math.floor(Math.log10(lo) - 1e-9) : lo - span * 0.05;
		const right = log ? 10 ** Math.ceil(Math.log10(hi) + 1e-9) : hi + span * 0.05;
		const xsSet = new Set([left, right]);
		for (const s of samples) for (const v of s[1]) xsSet.add(v);
		const xs = Float64Array.from(xsSet).sort();
		const data = [xs];
		for (const [, v] of samples) data.push(Array.from(xs, (x) => ub(v, x, 0, v.length) / v.length));
		const sec = document.getElementById("cdf-section");
		sec.hidden = false;
		const root = document.getElementById("cdfs");
		const series = [{}];
		// Earlier series wider and lighter underneath: equal CDFs (timeout
		// intervals and timeout retransmissions, say) stay all visible.
		samples.forEach(([name, v, col], k) =>
			series.push({ label: name + " (n=" + v.length + ")", stroke: col + (k < samples.length - 1 ? "aa" : ""), width: 1.75 + 2 * (samples.length - 1 - k),
				paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } }));
		L.cdf = new uPlot({
			width: Math.max(300, root.clientWidth), height: 300,
			scales: {
				x: log ? { time: false, distr: 3, range: () => [left, right] } : { time: false, range: () => [left, right] },
				y: { range: [0, 1.02] },
			},
			axes: [{ values: (u, sp) => sp.map((v) => (v == null ? "" : fmtNs(v, 2))), label: "latency (switch timestamps)" + (log ? ", log scale" : ""), space: 80 },
				{ label: "fraction ≤ x", values: (u, sp) => sp.map((v) => Math.round(v * 100) + "%") }],
			series,
			legend: { live: false },
		}, data, root);
	}

	// EAGER is the number of graphs made when the page opens; the other
	// connections' graphs are made on demand (their columns inflated then),
	// so that a test of thousands of QPs opens as fast as one of 16.
	const EAGER = 16;
	// MANY: beyond this many other connections there is no "Show all"
	// button (each graph costs the browser tens of ms).
	const MANY = 48;

	// more offers the connections beyond the first EAGER: pick one (or, up
	// to MANY of them, all) to add its graph below. L.show(id) adds
	// connection id's graph and resolves to its index in L.graphs;
	// L.showAll() adds every one left.
	function more(root, rest) {
		const pending = new Map(rest.map((pc) => [pc.id, pc]));
		L.show = async (id) => {
			const pc = pending.get(id);
			if (!pc) return L.graphs.findIndex((g) => g.c.id === id);
			pending.delete(id);
			const opt = sel.querySelector('option[value="' + id + '"]');
			if (opt) opt.remove();
			label.textContent = count();
			if (!pending.size) box.hidden = true;
			if (loading) {
				loading.textContent = "Loading " + pc.title + " (" + pc.n.toLocaleString("en-US") + " packets)…";
				loading.hidden = false;
			}
			try {
				L.graphs.push(new Graph(await load(pc), root));
			} finally {
				if (loading) loading.hidden = true;
			}
			return L.graphs.length - 1;
		};
		L.showAll = async () => {
			for (const id of [...pending.keys()]) await L.show(id);
		};
		if (!rest.length) return;
		const count = () => pending.size.toLocaleString("en-US") + " more connection" + (pending.size === 1 ? "" : "s") + ": ";
		const box = el("div", "more");
		const label = el("span", "", count());
		const sel = el("select");
		for (const pc of rest) {
			const o = el("option", "", pc.title + " (" + pc.n.toLocaleString("en-US") + " packets)");
			o.value = String(pc.id);
			sel.appendChild(o);
		}
		const one = el("button", "", "Show");
		const all = el("button", "", "Show all");
		const fail = (e) => console.error("lumina report:", e);
		one.onclick = () => {
			if (sel.value !== "") L.show(Number(sel.value)).then((k) => L.graphs[k].box.scrollIntoView()).catch(fail);
		};
		all.onclick = () => L.showAll().catch(fail);
		box.append(label, sel, one);
		if (rest.length <= MANY) box.append(all);
		root.appendChild(box);
	}

	// loading is the page's loading indicator (#loading, shown from the
	// start by the HTML): hidden once the graphs are drawn, the error said
	// in it if they fail.
	const loading = document.getElementById("loading");
	function loaded(err) {
		if (!loading) return;
		if (err) {
			loading.textContent = "The graphs failed: " + err;
			loading.className = "fail";
			return;
		}
		loading.hidden = true;
	}

	async function main() {
		const root = document.getElementById("graphs");
		if (root) {
			const t0 = performance.now();
			const conns = await Promise.all(D.conns.slice(0, EAGER).map(load));
			const t1 = performance.now();
			L.timing.inflate = t1 - t0;
			for (const c of conns) L.graphs.push(new Graph(c, root));
			more(root, D.conns.slice(EAGER));
			L.timing.graphs = performance.now() - t1;
			let w = root.clientWidth;
			window.addEventListener("resize", () => {
				if (root.clientWidth !== w) {
					w = root.clientWidth;
					for (const g of L.graphs) g.resize(Math.max(300, w));
				}
			});
		}
		cdfs();
		L.loadMs = performance.now();
		L.ready = true;
		loaded();
	}
	main().catch((e) => {
		L.error = String(e && e.stack || e);
		loaded(String(e));
		console.error("lumina report:", e);
	});
})();
