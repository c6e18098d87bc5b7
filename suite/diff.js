// lumina diff's page script: per quantity, BASE's and NEW's values as dots
// (with the median and the quartiles) and their empirical CDFs, drawn with
// the embedded uPlot from #diff-data (see html.go). Tests read
// window.lumina (cmd/lumina's TestDiffBrowser).
"use strict";
(function () {
	const P = JSON.parse(document.getElementById("diff-data").textContent);
	const L = (window.lumina = { ready: false, plots: [] });
	const SIDES = [["BASE", "#4a6ec8"], ["NEW", "#dc5a1e"]];

	function ub(a, v) {
		let lo = 0, hi = a.length;
		while (lo < hi) {
			const m = (lo + hi) >>> 1;
			if (a[m] <= v) lo = m + 1;
			else hi = m;
		}
		return lo;
	}
	function quantile(s, q) {
		const i = (s.length - 1) * q, lo = Math.floor(i), hi = Math.ceil(i);
		return s[lo] + (s[hi] - s[lo]) * (i - lo);
	}
	function fmt(v) {
		const a = Math.abs(v);
		if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
		return +v.toPrecision(6) + "";
	}

	function plot(p, root) {
		const samples = [p.base.slice().sort((a, b) => a - b), p.new.slice().sort((a, b) => a - b)];
		let lo = Infinity, hi = -Infinity;
		for (const s of samples) if (s.length) { lo = Math.min(lo, s[0]); hi = Math.max(hi, s[s.length - 1]); }
		// A constant or tiny sample gets a range around its values, never a
		// zero-width axis.
		const span = hi - lo || Math.max(Math.abs(lo) * 0.2, 1);
		const left = lo - span * 0.08, right = hi + span * 0.08;
		const w = Math.max(320, Math.floor((root.clientWidth - 24) / 2));
		const title = document.createElement("h4");
		title.textContent = p.name + " (" + p.unit + ")";
		root.appendChild(title);
		const xaxis = { label: p.unit, values: (u, sp) => sp.map((v) => (v == null ? "" : fmt(v))) };

		// Dots: BASE at y = 1, NEW at y = 0, jittered so that equal values
		// stay countable.
		const all = [];
		samples.forEach((s, k) => s.forEach((v, i) => all.push([v, k, i])));
		all.sort((a, b) => a[0] - b[0]);
		const xs = all.map((e) => e[0]);
		const ys = samples.map(() => new Array(all.length).fill(null));
		all.forEach(([v, k, i], j) => (ys[k][j] = (k === 0 ? 1 : 0) + ((i * 0.618034) % 1 - 0.5) * 0.4));
		const stats = samples.map((s) => (s.length ? [quantile(s, 0.25), quantile(s, 0.5), quantile(s, 0.75)] : null));
		const dots = new uPlot({
			width: w, height: 220,
			scales: { x: { time: false, range: () => [left, right] }, y: { range: [-0.6, 1.6] } },
			axes: [xaxis, { splits: () => [0, 1], size: 90, values: (u, sp) => sp.map((v) => (v === 1 ? "BASE n=" + samples[0].length : v === 0 ? "NEW n=" + samples[1].length : "")) }],
			series: [{}, ...SIDES.map(([name, col]) => ({ label: name, stroke: col, paths: () => null, points: { show: true, size: 6, fill: col + "99", stroke: col, width: 1 } }))],
			legend: { show: false },
			hooks: {
				draw: [(u) => {
					const ctx = u.ctx;
					ctx.save();
					stats.forEach((st, k) => {
						if (!st) return;
						const y = k === 0 ? 1 : 0, col = SIDES[k][1];
						const x1 = u.valToPos(st[0], "x", true), x2 = u.valToPos(st[2], "x", true), xm = u.valToPos(st[1], "x", true);
						const y0 = u.valToPos(y + 0.32, "y", true), y1 = u.valToPos(y - 0.32, "y", true);
						ctx.strokeStyle = col;
						ctx.lineWidth = 1.5 * devicePixelRatio;
						ctx.strokeRect(x1, y0, Math.max(1, x2 - x1), y1 - y0);
						ctx.lineWidth = 3 * devicePixelRatio;
						ctx.beginPath();
						ctx.moveTo(xm, y0);
						ctx.lineTo(xm, y1);
						ctx.stroke();
					});
					ctx.restore();
				}],
			},
		}, [xs, ...ys], root);

		// Empirical CDFs, each from 0 to 1 between the anchors.
		const cx = Float64Array.from(new Set([left, right, ...xs])).sort();
		const cdf = new uPlot({
			width: w, height: 220,
			scales: { x: { time: false, range: () => [left, right] }, y: { range: [0, 1.04] } },
			axes: [xaxis, { label: "fraction ≤ x", values: (u, sp) => sp.map((v) => Math.round(v * 100) + "%") }],
			series: [{}, ...SIDES.map(([name, col], k) => ({ label: name + " (n=" + samples[k].length + ")",
				// BASE wide and light under NEW: equal CDFs stay both visible.
				stroke: k === 0 ? col + "88" : col, width: k === 0 ? 5 : 1.75,
				show: samples[k].length > 0, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } }))],
			legend: { live: false },
		}, [cx, ...samples.map((s) => Array.from(cx, (x) => (s.length ? ub(s, x) / s.length : null)))], root);
		L.plots.push({ id: p.id, dots, cdf, base: p.base, new: p.new });
	}

	try {
		for (const p of P) {
			const root = document.getElementById(p.id);
			if (root) plot(p, root);
		}
		L.loadMs = performance.now();
		L.ready = true;
	} catch (e) {
		L.error = String((e && e.stack) || e);
		console.error("lumina diff:", e);
	}
})();
